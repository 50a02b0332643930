"""The bot's early stops: a card play stops once its choice is settled, and never before; a decision with no
time for ``min_worlds`` worlds gives the heuristic's answer at once, except every fourth time.

The expected values are worked out by hand in each test; the rule itself is ``bot.settled`` (the leading
card beats every other by ``stop_z`` standard errors of their paired difference over at least
``stop_after`` worlds, or ties it in every world)."""

from __future__ import annotations

import random

import pilotta_bot
from rules.helpers import auto_declare, new_deal, play

from referee.cards import parse_card
from referee.deal import Deal
from sample_bots.heuristic.bot import HeuristicBot
from sample_bots.pimc.bot import PROBE_EVERY, PimcBot, Settings, leader, settled
from sample_bots.pimc.local import sdk_observation
from sample_bots.pimc.sampler import Sampler, Seen
from sample_bots.pimc.world import solve
from tests.pimc.positions import RULESETS, position_with_cards_left

A, B, C = int(parse_card("7H")), int(parse_card("8H")), int(parse_card("9H"))


def test_a_card_better_in_every_world_is_settled_after_stop_after_worlds_and_not_before() -> None:
    # A beats B by 10 in each world: the paired difference is 10 with no spread.
    assert not settled({A: [10] * 7, B: [0] * 7}, 2.58, 8)
    assert settled({A: [10] * 8, B: [0] * 8}, 2.58, 8)


def test_a_small_steady_lead_is_settled() -> None:
    # Differences 4, 6, 4, 6, ... over 8 worlds: mean 5, standard deviation sqrt(8 * 1 / 7) = 1.069, standard
    # error 1.069 / sqrt(8) = 0.378; 5 - 2.58 * 0.378 = 4.02 > 0.
    assert settled({A: [4, 6] * 4, B: [0] * 8}, 2.58, 8)


def test_a_lead_from_one_world_or_an_even_split_is_not_settled() -> None:
    # One world of 20 and seven of 0: mean 2.5, sd sqrt((17.5^2 + 7 * 2.5^2) / 7) = sqrt(50) = 7.07, standard
    # error 2.5; 2.5 - 2.58 * 2.5 < 0: a single world's lead is not enough.
    assert not settled({A: [20] + [0] * 7, B: [0] * 8}, 2.58, 8)
    # +10 and -10 in turn: A leads by nothing on average (the lower card leads a tie).
    assert not settled({A: [10, 0] * 8, B: [0, 10] * 8}, 2.58, 8)
    assert not settled({A: [10, 0] * 32, B: [0, 10] * 32}, 2.58, 8)


def test_ties_in_every_world_are_settled_but_every_other_card_must_still_lose_clearly() -> None:
    # B ties A everywhere (the choice between them does not matter in any world seen); C loses by 30 always.
    assert settled({A: [5, 9] * 4, B: [5, 9] * 4, C: [-25, -21] * 4}, 2.58, 8)
    # The same but C loses only in half the worlds: a mean of 15, sd 16.04, standard error 5.67; 15 - 2.58 *
    # 5.67 = 0.37 > 0: settled. With 30 in one world of eight: not (as above).
    assert settled({A: [5, 9] * 4, B: [5, 9] * 4, C: [-25, 9] * 4}, 2.58, 8)
    assert not settled({A: [5] * 8, B: [5] * 8, C: [-25] + [5] * 7}, 2.58, 8)


def test_the_leader_is_the_best_total_and_the_lowest_card_of_a_tie() -> None:
    assert leader({A: [1, 2], B: [2, 2], C: [0, 0]}) == B
    assert leader({C: [3], B: [3], A: [1]}) == B


def capot_position() -> Deal:
    """Pilotta, dealer seat 3, each seat dealt one whole suit: seat 0 the hearts, seat 1 the clubs, seat 2
    the diamonds, seat 3 the spades. Seat 0 bids 80 H; everyone passes. Seat 0 leads six trumps (JH 9H AH
    TH KH QH) and takes each trick, the others discarding from the bottom of their suits. Seat 0 is to
    lead trick 7 with 7H 8H; unseen: KC AC KD AD KS AS, two to each other seat, in 6! / (2! 2! 2!) = 90
    ways (all it knows is that they hold no heart). In every one of them seat 0's two trumps take both
    tricks whatever the order: a capot, the same score for 7H and 8H."""
    deal = capot_position_trick_one()
    lows = {1: "C", 2: "D", 3: "S"}
    for trump, rank in zip(("JH", "9H", "AH", "TH", "KH", "QH"), "789TJQ", strict=True):
        for seat in range(4):
            auto_declare(deal)
            play(deal, f"play {trump}" if seat == 0 else f"play {rank}{lows[seat]}")
    assert deal.to_act == 0 and bin(deal.hands[0]).count("1") == 2
    return deal


def decide_on(deal: Deal, settings: Settings) -> tuple[str, int]:
    bot = PimcBot(settings)
    obs = sdk_observation(deal, deal.to_act)
    legal = [deal.code(a) for a in deal.legal_actions()]
    code = bot.decide(obs, legal)
    assert code in legal
    return code, bot.last_worlds


def test_it_stops_after_stop_after_worlds_when_every_world_agrees() -> None:
    deal = capot_position()
    settings = Settings(budget_ms=60_000, max_worlds=24, seed=1)
    # Early stop: stop_after (16) worlds, all tied; without it all 24. The same answer: the lower of the tied
    # cards.
    assert settings.stop_after == 16
    assert decide_on(deal, settings) == ("play 7H", 16)
    assert decide_on(deal, settings.as_1_0()) == ("play 7H", 24)


def test_one_consistent_world_is_solved_once_and_its_best_card_played() -> None:
    """Positions where the observation leaves a single deal of the unseen cards (two tricks left, the
    voids shown pinning every card): one world, and the card the exact solution of the true deal values
    best (its lowest such card)."""
    found = 0
    for name, options in RULESETS:
        rng = random.Random(f"exact-{name}-{sorted(options)}")
        for _ in range(40):
            deal = position_with_cards_left(name, options, rng, rng.choice((5, 6, 7, 9, 10, 11)))
            obs = sdk_observation(deal, deal.to_act)
            sampler = Sampler(Seen.from_observation(obs, deal.ruleset.options_json()))
            legal = [deal.code(a) for a in deal.legal_actions()]
            if sampler.count(0, sampler.need) != 1 or len({code.split()[1] for code in legal}) < 2:
                continue
            world = sampler.world_of(tuple(deal.hands))
            assert world is not None
            values = solve(world).values
            best = max(values.values())
            bot = PimcBot(Settings(budget_ms=60_000, seed=2))
            bot.on_match_start(pilotta_bot.MatchInfo("m", name, dict(options), 0, ("a",) * 4, 1000, 0))
            code = bot.decide(obs, legal)
            assert bot.last_worlds == 1
            assert values[int(parse_card(code.split()[1]))] == best
            found += 1
    assert found >= 5, found


def test_no_time_for_min_worlds_gives_the_heuristic_answer_at_once_but_probes_every_fourth_time() -> None:
    """A card play with no time at all (budget 0): no world can be solved. The first decision searches
    (and finds nothing: the heuristic's answer, its pace now known); the next PROBE_EVERY - 1 skip the
    search; the PROBE_EVERY-th searches again, and so on."""
    deal = capot_position_trick_one()
    obs = sdk_observation(deal, deal.to_act)
    legal = [deal.code(a) for a in deal.legal_actions()]
    bot = PimcBot(Settings(budget_ms=0, seed=3))
    expected = HeuristicBot().decide(obs, legal)
    searched = []
    for _ in range(2 * PROBE_EVERY):
        assert bot.decide(obs, list(legal)) == expected
        searched.append(bot.last_searched)
    assert searched == [True, False, False, False, True, False, False, False]


def capot_position_trick_one() -> Deal:
    """The deal of ``capot_position`` at its first card: seat 0 to lead, eight hearts in hand."""
    hands = {
        0: "7H 8H 9H TH JH QH KH AH",
        1: "7C 8C 9C TC JC QC KC AC",
        2: "7D 8D 9D TD JD QD KD AD",
        3: "7S 8S 9S TS JS QS KS AS",
    }
    deal = new_deal("pilotta", hands, dealer=3)
    play(deal, "bid 80 H", "pass", "pass", "pass", "pass", "pass")
    auto_declare(deal)
    return deal
