"""The search kernel against the engine, on random positions of every ruleset: legal cards, what a legal
play reveals, trick winners, card points, and the value of the rest of the deal (the engine's own minimax
over ``legal_actions``/``apply`` on small endgames)."""

from __future__ import annotations

import random

import pytest

from referee.actions import BELOTE_FLAG, Action
from referee.deal import Deal
from sample_bots.pimc.local import sdk_observation
from sample_bots.pimc.sampler import Sampler, Seen
from sample_bots.pimc.world import World, rules_for, solve, solve_points
from tests.pimc.positions import IDS, RULESETS, advance, announcing, play_phase_deal, position_with_cards_left


def legal_mask(deal: Deal) -> int:
    return sum(1 << a for a in deal.legal_actions() if a < 32)


def trick_state(deal: Deal, rules: object) -> tuple[int, int, int, int]:
    """k, led suit, best card and its seat of the trick being played (from the observation)."""
    obs = sdk_observation(deal, deal.to_act)
    from referee.cards import parse_card

    cards = [parse_card(n) for n in obs.trick.cards]
    if not cards:
        return 0, 0, 0, obs.trick.leader
    best, best_seat = cards[0], obs.trick.leader
    for i, c in enumerate(cards[1:], 1):
        if rules.beats(c, best):  # type: ignore[attr-defined]
            best, best_seat = c, (obs.trick.leader + i) & 3
    return len(cards), cards[0] >> 3, best, best_seat


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_legal_cards_winners_and_points_match_the_engine(name: str, options: dict[str, object]) -> None:
    rng = random.Random(f"kernel-{name}-{sorted(options)}")
    for _ in range(40):
        deal = play_phase_deal(name, options, rng)
        assert deal.contract is not None
        rules = rules_for(deal.ruleset, deal.contract, deal.dealer)
        points = [0, 0]
        while not deal.is_over:
            actions = deal.legal_actions()
            if any(a >= 64 for a in actions):  # a choice of declarations
                deal.apply(rng.choice(actions))
                continue
            seat = deal.to_act
            k, led, best, best_seat = trick_state(deal, rules)
            assert rules.legal(deal.hands[seat], seat, k, led, best, best_seat) == legal_mask(deal)
            action = announcing(actions, rng)
            card = action & 31
            trick_before = len(deal.tricks)
            deal.apply(action)
            if len(deal.tricks) > trick_before:
                trick = deal.tricks[-1]
                winner = trick.leader
                top = trick.cards[0]
                for i, c in enumerate(trick.cards[1:], 1):
                    if rules.beats(c, top):
                        top, winner = c, (trick.leader + i) & 3
                assert winner == trick.winner
                points[winner & 1] += sum(rules.points[c] for c in trick.cards)
            del card
        points[deal.tricks[-1].winner & 1] += rules.last_bonus
        assert points == deal.card_points


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_exclusion_is_exactly_what_a_legal_play_reveals(name: str, options: dict[str, object]) -> None:
    """For a card played in a trick: a hand holding it may legally play it iff it holds none of
    ``exclusion``; checked with the engine's legal_actions on the same trick and random hands."""
    rng = random.Random(f"exclusion-{name}-{sorted(options)}")
    checked = 0
    for _ in range(60):
        deal = play_phase_deal(name, options, rng)
        advance(deal, rng.randrange(4, 30), rng)
        if deal.is_over or not deal.trick or any(a >= 64 for a in deal.legal_actions()):
            continue
        assert deal.contract is not None
        rules = rules_for(deal.ruleset, deal.contract, deal.dealer)
        seat = deal.to_act
        k, led, best, best_seat = trick_state(deal, rules)
        pool = deal.hands[seat] | deal.hands[(seat + 1) & 3] | deal.hands[(seat + 2) & 3] | deal.hands[(seat + 3) & 3]
        pool_cards = [c for c in range(32) if pool >> c & 1]
        for _ in range(20):
            size = rng.randrange(1, min(8, len(pool_cards)) + 1)
            hand_cards = rng.sample(pool_cards, size)
            card = hand_cards[0]
            hand = sum(1 << c for c in hand_cards)
            probe = deal.clone()
            probe.hands[seat] = hand
            engine_legal = legal_mask(probe) >> card & 1 == 1
            excluded = rules.exclusion(seat, k, led, best, best_seat, card)
            assert engine_legal == (hand & excluded == 0), (hand_cards, deal.trick)
            checked += 1
    assert checked > 200


def engine_value(deal: Deal) -> int:
    """Side 0's written points minus side 1's, both sides playing their best (belote always announced)."""
    if deal.is_over:
        assert deal.score is not None
        return deal.score.written[0] - deal.score.written[1]
    actions = deal.legal_actions()
    choices = [a for a in actions if not (a < 32 and Action(a | BELOTE_FLAG) in actions)]
    values = []
    for a in choices:
        child = deal.clone()
        child.apply(a)
        values.append(engine_value(child))
    return max(values) if deal.to_act & 1 == 0 else min(values)


def world_of_deal(deal: Deal) -> World:
    """The true world, read through the seat to act's observation (so the observation's reading is tested
    too: the true hands must be a consistent world)."""
    seen = Seen.from_observation(sdk_observation(deal, deal.to_act), deal.ruleset.options_json())
    world = Sampler(seen).world_of(tuple(deal.hands))
    assert world is not None
    return world


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
@pytest.mark.parametrize("left", [4, 5, 8, 10])
def test_solver_value_is_the_engine_minimax(name: str, options: dict[str, object], left: int) -> None:
    rng = random.Random(f"solve-{name}-{sorted(options)}-{left}")
    for _ in range(8 if left <= 8 else 3):
        deal = position_with_cards_left(name, options, rng, left)
        world = world_of_deal(deal)
        solution = solve(world)
        assert set(solution.values) == {a & 31 for a in deal.legal_actions()}
        sign = 1 if deal.to_act & 1 == 0 else -1
        best = max(solution.values.values())
        assert sign * best == engine_value(deal)
        # Each card's value is the engine's value after it.
        for card, value in solution.values.items():
            child = deal.clone()
            actions = child.legal_actions()
            child.apply(Action(card | BELOTE_FLAG) if Action(card | BELOTE_FLAG) in actions else Action(card))
            assert sign * value == engine_value(child), card


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_card_point_search_agrees_with_the_card_point_solver(name: str, options: dict[str, object]) -> None:
    """``solve_points`` (one search by bisection) gives the card points of the best card of
    ``solve(objective="points")``, exactly, or at most ``resolution`` points below."""
    rng = random.Random(f"points-{name}-{sorted(options)}")
    for left in (8, 12, 16):
        deal = position_with_cards_left(name, options, rng, left)
        world = world_of_deal(deal)
        values = solve(world, objective="points").values.values()
        exact = max(values) if deal.to_act & 1 == 0 else -max(values)
        assert solve_points(world) == exact
        assert exact - 5 <= solve_points(world, resolution=5) <= exact
