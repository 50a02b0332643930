"""The PIMC bot's time by importance (sample_bots/pimc/clock.py): each figure below is worked out by hand
from the rule in the module's docstring (a budget per decision of the deal, the card plays sharing what is
left by the weights 4, 3, 2, 1.5, 1, 0.5, 0.25, 0 of tricks 1 to 8, within half a budget and ``cap``)."""

from __future__ import annotations

import dataclasses
import random

import pilotta_bot
import pytest

from referee.actions import parse_action
from referee.match.wire import legal_codes
from referee.rules import get_ruleset
from sample_bots.heuristic.bot import HeuristicBot
from sample_bots.pimc.bot import PimcBot, Settings
from sample_bots.pimc.clock import DealClock
from sample_bots.pimc.local import play_deal, random_deck, sdk_observation
from tests.pimc.positions import IDS, RULESETS
from tests.pimc.test_bot import SLACK_MS, Timed


def seat_views(seed: int) -> list[pilotta_bot.Observation]:
    """Seat 1's observations at each of its eight cards in a Coinche deal (80 hearts bid by seat 1, three
    passes, the play by the heuristic bot): its hand holds 8, 7, ... 1 cards."""
    deal = get_ruleset("coinche").new_deal(0, random_deck(random.Random(seed)))
    for code in ("bid 80 H", "pass", "pass", "pass"):
        deal.apply(parse_action(code, deal.declaration_codes[deal.to_act]))
    views, heuristic = [], HeuristicBot()
    while not deal.is_over:
        obs = sdk_observation(deal, deal.to_act)
        legal = list(legal_codes(deal))
        if obs.seat == 1 and not any(c.startswith("declare ") for c in legal):
            views.append(obs)
        deal.apply(parse_action(heuristic.decide(obs, legal), deal.declaration_codes[deal.to_act]))
    assert [len(v.hand) for v in views] == list(range(8, 0, -1))
    return views


VIEWS = seat_views(3)


def with_hand(obs: pilotta_bot.Observation, cards: int) -> pilotta_bot.Observation:
    """Seat 1's view at its card with ``cards`` cards in hand (the trick number is read from the hand's size)."""
    found = next(v for v in VIEWS if len(v.hand) == cards)
    assert found.seat == obs.seat
    return found


def coinche_play_obs() -> pilotta_bot.Observation:
    return VIEWS[0]


def test_flat_gives_the_budget_to_every_decision() -> None:
    clock, obs = DealClock("flat", 0.1), coinche_play_obs()
    for cards in (8, 5, 2):
        assert clock.allowance(with_hand(obs, cards), card_play=True) == 0.1
        clock.spent(with_hand(obs, cards), 0.09)
    assert clock.allowance(obs, card_play=False) == 0.1


def test_the_first_tricks_take_what_the_auction_and_the_last_tricks_leave() -> None:
    obs = coinche_play_obs()
    clock = DealClock("importance", 0.1, cap=5.0)
    auction = dataclasses.replace(obs, phase="auction", auction=())
    for _ in range(3):  # three calls of 10 ms each
        assert clock.allowance(auction, card_play=False) == 0.1  # the auction keeps the flat budget
        clock.spent(auction, 0.01)
    # Trick 1: three decisions and eight card plays, 1.1 s less 0.03 spent = 1.07 s; its weight 4 of 12.25.
    first = with_hand(obs, 8)
    assert clock.allowance(first, card_play=True) == pytest.approx(1.07 * 4 / 12.25)  # 0.349 s
    clock.spent(first, 0.30)
    # Trick 2: four decisions and seven card plays, 1.1 s less 0.33 = 0.77 s; weight 3 of 8.25: 0.28 s.
    assert clock.allowance(with_hand(obs, 7), card_play=True) == pytest.approx(0.28)
    clock.spent(with_hand(obs, 7), 0.28)
    # Trick 3: 1.1 s less 0.61 = 0.49 s, weight 2 of 5.25: 0.1867 s.
    assert clock.allowance(with_hand(obs, 6), card_play=True) == pytest.approx(0.49 * 2 / 5.25)


def test_a_decision_gets_at_most_cap_and_at_least_half_a_budget() -> None:
    obs = coinche_play_obs()
    clock = DealClock("importance", 0.1, cap=2.0)
    assert clock.allowance(with_hand(obs, 8), card_play=True) == pytest.approx(0.2)  # not 0.8 * 4 / 12.25 = 0.26
    clock.spent(with_hand(obs, 8), 2.0)  # a decision far over (a slow machine): the deal's pool is spent
    assert clock.allowance(with_hand(obs, 7), card_play=True) == pytest.approx(0.05)


def test_a_new_deal_with_the_same_numbers_starts_a_new_ledger() -> None:
    clock = DealClock("importance", 0.1, cap=10.0)
    clock.spent(with_hand(VIEWS[0], 3), 5.0)  # late in one deal, far over its budget
    other = seat_views(4)  # another pack, dealt by the same dealer, numbered the same (as the bench's boards)
    assert (other[0].dealer, other[0].deal_number, other[0].match_id) == (VIEWS[0].dealer, 0, "")
    # Its first card comes earlier in a deal, with other cards: a new ledger, nothing spent.
    assert clock.allowance(other[0], card_play=True) == pytest.approx(0.8 * 4 / 12.25)
    clock.spent(other[0], 0.1)
    # And the same deal goes on in it: one decision of 0.1 s made, seven card plays to come.
    assert clock.allowance(other[1], card_play=True) == pytest.approx((0.1 * 8 - 0.1) * 3 / 8.25)


def test_the_trick_weights_share_exactly_the_pool() -> None:
    # With nothing spent and the cap out of reach, each trick takes its weight's part of the pool left, so
    # spending each allowance in full uses the eight card plays' budgets exactly.
    obs = coinche_play_obs()
    clock, total = DealClock("importance", 0.1, cap=100.0, floor=0.0), 0.0
    for cards in range(8, 0, -1):
        allowed = clock.allowance(with_hand(obs, cards), card_play=True)
        clock.spent(with_hand(obs, cards), allowed)
        total += allowed
    assert total == pytest.approx(0.8)


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
@pytest.mark.usefixtures("own_heap")
def test_by_importance_the_bot_stays_legal_and_within_its_cap(name: str, options: dict[str, object]) -> None:
    budget_ms, cap = 30, 3.0
    bot = PimcBot(Settings(budget_ms=budget_ms, seed=5, spend="importance", spend_cap=cap, bidder="search"))
    bot.on_match_start(pilotta_bot.MatchInfo("m", name, dict(options), 0, ("a",) * 4, 1000, 0))
    timed = Timed(bot)
    rng = random.Random(f"clock-{name}")
    for dealer in range(2):
        play_deal(get_ruleset(name, options), dealer, random_deck(rng), [timed, HeuristicBot(), timed, HeuristicBot()])
    assert max(t for t, _ in timed.times) * 1000 <= cap * budget_ms + SLACK_MS
