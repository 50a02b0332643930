"""The model of the calls (sample_bots/pimc/calls.py): the heuristic's counts on masks against the heuristic
bot's own, the cold model against the heuristic bot's calls, likelihoods worked out by hand, the floor."""

from __future__ import annotations

import math
import random

import pytest

from referee.actions import parse_action
from referee.cards import card_name, parse_card
from referee.match.wire import legal_codes
from referee.rules import get_ruleset
from sample_bots.heuristic.bot import HeuristicBot, defensive_estimate, estimate
from sample_bots.pimc.calls import FLOOR, JUMP, TEMPERATURE, HeuristicCallModel, auction_of, defences, estimates
from sample_bots.pimc.local import random_deck, sdk_observation
from tests.pimc.positions import IDS, RULESETS

STRAINS = ("C", "D", "H", "S", "NT", "AT")


def mask(*cards: str) -> int:
    return sum(1 << parse_card(c) for c in cards)


def test_the_counts_on_masks_are_the_heuristics() -> None:
    rng = random.Random(1)
    for _ in range(3000):
        size = rng.choice((5, 6, 8, 9))
        cards = rng.sample(range(32), size)
        hand = [card_name(c) for c in cards]
        m = sum(1 << c for c in cards)
        assert estimates(m) == tuple(estimate(hand, s) for s in STRAINS), hand
        assert defences(m) == tuple(defensive_estimate(hand, s) for s in STRAINS), hand


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_the_cold_model_calls_as_the_heuristic_bot(name: str, options: dict[str, object]) -> None:
    """At a temperature near 0, no floor and no jumps, the model's likeliest call is the heuristic bot's
    call (a tie between two strains' margins splits the probability: those points are left out)."""
    ruleset = get_ruleset(name, options)
    rng = random.Random(f"cold-{name}-{sorted(options)}")
    bot = HeuristicBot()
    compared = 0
    for _ in range(60):
        deal = ruleset.new_deal(rng.randrange(4), random_deck(rng))
        model = HeuristicCallModel(ruleset, deal.dealer, deal.turned_card, temperature=0.01, floor=1e-12, jump=0.0)
        while deal.contract is None and not deal.is_over:
            seat = deal.to_act
            legal = legal_codes(deal)
            obs = sdk_observation(deal, seat)
            call = bot.decide(obs, list(legal))
            dist = model.distribution(mask(*obs.hand), auction_of(obs.auction), seat)
            assert set(dist) == set(legal)
            assert math.isclose(sum(dist.values()), 1.0, rel_tol=1e-9)
            likeliest = max(dist, key=dist.__getitem__)
            if dist[likeliest] > 0.99:
                assert likeliest == call, (obs.hand, obs.auction, call, likeliest)
                compared += 1
            # Mostly the heuristic's calls, sometimes any legal one, for auctions of every shape.
            deal.apply(parse_action(call if rng.random() < 0.7 else rng.choice(legal)))
    assert compared >= 100


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_every_call_has_at_least_the_floor(name: str, options: dict[str, object]) -> None:
    ruleset = get_ruleset(name, options)
    rng = random.Random(f"floor-{name}")
    for _ in range(20):
        deal = ruleset.new_deal(rng.randrange(4), random_deck(rng))
        model = HeuristicCallModel(ruleset, deal.dealer, deal.turned_card)
        while deal.contract is None and not deal.is_over:
            seat = deal.to_act
            legal = legal_codes(deal)
            hand = sum(1 << c for c in rng.sample(range(32), 8))  # any hand at all
            dist = model.distribution(hand, auction_of(sdk_observation(deal, seat).auction), seat)
            assert math.isclose(sum(dist.values()), 1.0, rel_tol=1e-9)
            assert min(dist.values()) >= FLOOR / len(legal) * (1 - 1e-12)
            deal.apply(parse_action(rng.choice(legal)))


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_a_first_bid_worked_by_hand() -> None:
    """Coinche, dealer 3: seat 0 calls first, holding J 9 A T of hearts, the ace of spades, 7 8 of clubs and
    the 7 of diamonds. The heuristic's counts (its ``estimate``; a partner's share of 30 in each):

    * hearts: 30 + trumps J 28 + 9 18 + A 12 + T 10 + a fourth trump 12 + the ace of spades 15 + half the
      run 9-T-J of hearts (10 / 2 = 5) = 130;
    * clubs: 30 + 7 and 8 of trumps 3 + 3 + the ace and ten of hearts 25 + the ace of spades 15 + 5 = 81;
    * diamonds: 30 + 3 + one trump only -25 + 25 + 15 + 5 = 53;
    * spades: 30 + the ace 12 - 25 + 25 + 5 = 47.

    41 calls are legal: pass, 80 to 160 in four suits, the capot in four suits. Against the lowest bid
    (80) the margins are hearts 50, clubs 1, diamonds -27, spades -33; pass has 0.
    """
    ruleset = get_ruleset("coinche")
    model = HeuristicCallModel(ruleset, dealer=3)
    hand = mask("JH", "9H", "AH", "TH", "AS", "7C", "8C", "7D")
    t = TEMPERATURE
    first = {"pass": 0, "H": 50, "C": 1, "D": -27, "S": -33}
    total = sum(math.exp(u / t) for u in first.values())
    hearts = math.exp(50 / t) / total

    def call(p_model: float) -> float:
        return (1 - FLOOR) * p_model + FLOOR / 41

    # "bid 80 H", the lowest level: the heuristic's level (1 - J), or a value of about 80 (between 80 and 90).
    at_80 = (1 - JUMP) + JUMP * (sigmoid(50 / t) - sigmoid(40 / t)) / sigmoid(50 / t)
    assert model.likelihood(hand, (), 0, "bid 80 H") == pytest.approx(call(hearts * at_80), rel=1e-12)
    # "bid 120 H", a jump: the hand is worth between 120 and 130 with its logistic noise.
    at_120 = JUMP * (sigmoid(10 / t) - sigmoid(0)) / sigmoid(50 / t)
    assert model.likelihood(hand, (), 0, "bid 120 H") == pytest.approx(call(hearts * at_120), rel=1e-12)
    # The capot (the top level): the hand reaching 250, from 130.
    capot = JUMP * sigmoid(-120 / t) / sigmoid(50 / t)
    assert model.likelihood(hand, (), 0, "bid 250 H") == pytest.approx(call(hearts * capot), rel=1e-12)
    assert model.likelihood(hand, (), 0, "pass") == pytest.approx(call(1 / total), rel=1e-12)
    # A suit the hand is short in, 80 spades: a margin of -33.
    spades = math.exp(-33 / t) / total * ((1 - JUMP) + JUMP * (sigmoid(-3.3) - sigmoid(-4.3)) / sigmoid(-3.3))
    assert model.likelihood(hand, (), 0, "bid 80 S") == pytest.approx(call(spades), rel=1e-12)


def test_after_a_partners_bid_and_the_opponents_contra() -> None:
    """Coinche, dealer 3: seat 0 bids 80 hearts, seat 1 coinches; seat 2, seat 0's partner, may pass or
    surcoinche (the coinche closes the auction to the bidders). The heuristic never surcoinches: the model
    gives it nothing, and the floor alone keeps it, F / 2, whatever the hand; pass has the rest."""
    model = HeuristicCallModel(get_ruleset("coinche"), dealer=3)
    before = ((0, "bid 80 H"), (1, "contra"))
    for hand in (
        mask("JH", "9H", "AH", "TH", "KH", "QH", "AS", "AC"),
        mask("7C", "8C", "7D", "8D", "7S", "8S", "9S", "9D"),
    ):
        assert model.likelihood(hand, before, 2, "surcontra") == pytest.approx(FLOOR / 2, rel=1e-12)
        assert model.likelihood(hand, before, 2, "pass") == pytest.approx(1 - FLOOR / 2, rel=1e-12)


def test_a_contra_worked_by_hand() -> None:
    """Coinche, dealer 3: seat 0 bids 140 spades; seat 1 holds J 9 A of spades, the aces of hearts and clubs,
    K 8 of diamonds and the 7 of clubs. Its defensive count (``defensive_estimate``): 30 + trumps J 22 + 9 14
    + A 8 + two side aces 14 each = 102; the heuristic coinches when 140 > 162 + 20 - 102 = 80: by 60. Its
    estimates against the lowest legal bid (150): spades 30 + J 28 + 9 18 + A 12 + the aces of hearts and
    clubs 15 each = 118, so -32; clubs 30 + A 12 + 7 3 + two side aces 30 = 75, so -75; diamonds 30 + K 6 +
    8 3 + three side aces 45 = 84, so -66; hearts 30 + A 12 - 25 (one trump) + two side aces 30 = 47, so
    -103. No strain makes its bid, so contra's utility is its 60; pass 0. Legal: pass, 150 and 160 in four
    suits, the capot in four suits, contra: 14 calls."""
    model = HeuristicCallModel(get_ruleset("coinche"), dealer=3)
    before = ((0, "bid 140 S"),)
    assert len(legal_codes_after(before)) == 14
    hand = mask("JS", "9S", "AS", "AH", "AC", "KD", "7C", "8D")
    assert estimates(hand)[:4] == (75, 84, 47, 118)
    t = TEMPERATURE
    total = sum(math.exp(u / t) for u in (0, 60, -75, -66, -103, -32))
    got = model.likelihood(hand, before, 1, "contra")
    assert got == pytest.approx((1 - FLOOR) * math.exp(60 / t) / total + FLOOR / 14, rel=1e-12)
    # With the ace of diamonds for the king: four aces, half of their 100 in every suit's estimate, and
    # spades (183) now makes 150 by 33. A making strain comes first: contra's utility is put below it and
    # below pass (-33), though the bid is out of reach (140 - (182 - 116) = 74).
    four_aces = mask("JS", "9S", "AS", "AH", "AC", "AD", "7C", "8D")
    assert estimates(four_aces)[:4] == (140, 140, 112, 183)
    total = sum(math.exp(u / t) for u in (0, -33, -10, -10, -38, 33))
    got = model.likelihood(four_aces, before, 1, "contra")
    assert got == pytest.approx((1 - FLOOR) * math.exp(-33 / t) / total + FLOOR / 14, rel=1e-12)


def legal_codes_after(calls: tuple[tuple[int, str], ...]) -> list[str]:
    deal = get_ruleset("coinche").new_deal(3, tuple(range(32)))  # type: ignore[arg-type]
    for _, code in calls:
        deal.apply(parse_action(code))
    return legal_codes(deal)
