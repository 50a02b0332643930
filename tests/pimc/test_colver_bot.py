"""The colver adapter of the benchmark (bench/colver_bot.py): colver's agent seated at our Coinche table.

The numbers colver uses are worked out from its own names (``colver.Env.card_name``, ``action_name``): cards
suit by suit in the order spades, hearts, diamonds, clubs, ranks 7 8 9 J Q K 10 A within a suit; calls 0 pass,
then 80 to 160 with the four suits in that order, capot, coinche 41, surcoinche 42.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pilotta_bot
import pytest

colver = pytest.importorskip("colver", reason="colver is the bench extra (make venv installs it)")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from colver_bot import COLVER_OPTIONS, ColverBot, call_action, call_code, card_numbers  # noqa: E402

from referee.actions import parse_action  # noqa: E402
from referee.cards import parse_card  # noqa: E402
from referee.deal import Deal  # noqa: E402
from referee.match.wire import legal_codes  # noqa: E402
from referee.rules import get_ruleset  # noqa: E402
from sample_bots.heuristic.bot import HeuristicBot  # noqa: E402
from sample_bots.pimc.local import play_deal, random_deck, sdk_observation  # noqa: E402


def test_cards_are_matched_by_name() -> None:
    cards = card_numbers(colver)
    # J♥: hearts are colver's second suit (8..15), the jack its fourth rank (7 8 9 J): 8 + 3.
    assert cards[int(parse_card("JH"))] == 11
    assert cards[int(parse_card("7S"))] == 0
    assert cards[int(parse_card("TD"))] == 16 + 6  # diamonds third (16..23), the ten seventh (... K 10 A)
    assert cards[int(parse_card("AC"))] == 31
    assert sorted(cards.values()) == list(range(32))
    for ours, theirs in cards.items():
        assert parse_card(colver.Env.card_name(theirs)) == ours


def test_calls_both_ways() -> None:
    assert call_action("pass") == 0
    assert call_action("bid 80 S") == 1
    assert call_action("bid 80 C") == 4
    assert call_action("bid 90 H") == 6  # the second level's hearts: 1 + 4 + 1
    assert call_action("bid 160 C") == 36
    assert call_action("bid 250 H") == 38  # our capot bid is colver's capot, hearts second
    assert call_action("contra") == 41
    assert call_action("surcontra") == 42
    for action in range(43):
        assert call_action(call_code(action)) == action
    names = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
    for action in range(1, 37):  # colver's own name of each bid says the same value and suit
        _, value, suit = call_code(action).split()
        assert colver.Env.action_name(action, 0) == value + names[suit]
    with pytest.raises(ValueError, match="no call"):
        call_action("bid 85 H")
    with pytest.raises(ValueError, match="NT"):
        call_action("bid 90 NT")


def coinche_deal(seed: int, dealer: int) -> Deal:
    return get_ruleset("coinche", COLVER_OPTIONS).new_deal(dealer, random_deck(random.Random(seed)))


def apply(deal: Deal, *codes: str) -> None:
    for code in codes:
        deal.apply(parse_action(code, deal.declaration_codes[deal.to_act]))


def test_after_a_contra_the_bidders_partner_is_asked() -> None:
    # Ours: after a contra only the bidders may call (surcontra or pass), so seat 3 follows seat 1's pass;
    # colver's auction goes round, its seat 2 (a defender) passing. The environment steps that pass: before
    # the fix it had seat 2 to act where ours asked seat 3.
    deal = coinche_deal(1, dealer=0)
    apply(deal, "bid 120 H", "pass", "pass", "contra", "pass")
    assert deal.to_act == 3
    bot = ColverBot(worlds=2, seed=1)
    env, _agent = bot.environment(sdk_observation(deal, 3))
    assert env.current_player() == 3 and env.phase() == 0
    assert bot.decide(sdk_observation(deal, 3), ["pass", "surcontra"]) in ("pass", "surcontra")


def test_the_environment_holds_the_seats_cards_and_never_the_hidden_ones() -> None:
    deal = coinche_deal(7, dealer=2)
    apply(deal, "bid 80 C", "bid 100 S", "bid 110 H", "pass", "pass", "pass")
    heuristic = HeuristicBot()
    for _ in range(6):  # six cards of the first two tricks, declarations as the heuristic bot makes them
        obs = sdk_observation(deal, deal.to_act)
        apply(deal, heuristic.decide(obs, list(legal_codes(deal))))
    seat = deal.to_act
    obs = sdk_observation(deal, seat)
    assert obs.tricks or obs.trick.cards  # the play is under way
    cards = card_numbers(colver)
    bot = ColverBot(worlds=2, seed=3)
    drawn = set()
    for _ in range(8):
        env, _agent = bot.environment(obs)
        assert env.current_player() == seat and env.phase() == 1
        hands = env.get_hands()
        assert sorted(hands[seat]) == sorted(cards[int(parse_card(c))] for c in obs.hand)
        drawn.add(tuple(tuple(sorted(hands[s])) for s in range(4) if s != seat))
    # The other hands are drawn worlds, not the deal's: they vary from one decision to the next.
    true_others = tuple(
        tuple(sorted(cards[c] for c in range(32) if deal.hands[s] >> c & 1)) for s in range(4) if s != seat
    )
    assert len(drawn) == 8
    assert true_others not in drawn


def test_colver_plays_whole_deals_at_our_table() -> None:
    ruleset = get_ruleset("coinche", COLVER_OPTIONS)
    bot, heuristic = ColverBot(worlds=2, seed=5), HeuristicBot()
    for seed in range(4):
        rng = random.Random(seed)
        deck, dealer = random_deck(rng), rng.randrange(4)
        for seats in ([bot, heuristic, bot, heuristic], [heuristic, bot, heuristic, bot]):
            run = play_deal(ruleset, dealer, deck, seats)  # an illegal answer would raise
            assert run.deal.is_over
    assert bot.corrections == 0


def test_options_the_translation_cannot_hold_are_refused() -> None:
    bot = ColverBot(worlds=2)
    for options in ({"max_bid": 180}, {"no_trump_bids": True}, {"coinche_ends_auction": False}):
        with pytest.raises(ValueError, match="colver"):
            bot.on_match_start(pilotta_bot.MatchInfo("m", "coinche", options, 0, ("a",) * 4, 1000, 0))
    with pytest.raises(ValueError, match="Coinche only"):
        bot.on_match_start(pilotta_bot.MatchInfo("m", "pilotta", {}, 0, ("a",) * 4, 1000, 0))
    bot.on_match_start(pilotta_bot.MatchInfo("m", "coinche", dict(COLVER_OPTIONS), 0, ("a",) * 4, 1000, 0))
