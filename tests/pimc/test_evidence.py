"""Worlds weighted by the auction (sample_bots/pimc/evidence.py): a bidder's suit length over many weighted
worlds against the distribution worked out by hand, the floor keeping the worlds where the call is
"impossible", the uniform option giving back the uniform sampler's worlds, the hard facts never
contradicted, the auction hand of the games dealing in two parts, and the thinning's level."""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from math import comb

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.actions import parse_action
from referee.cards import parse_card
from referee.deal import Deal
from referee.rules import get_ruleset
from referee.rules.base import _packet_positions
from sample_bots.pimc.bot import PimcBot, Settings
from sample_bots.pimc.calls import Calls, auction_of
from sample_bots.pimc.evidence import Evidence, EvidenceSampler, Thinning, auction_hand_size, weighted_mean_se
from sample_bots.pimc.local import play_deal, random_deck, sdk_observation
from sample_bots.pimc.sampler import Sampler, Seen
from tests.pimc.consistency import world_contradiction
from tests.pimc.positions import IDS, RULESETS
from tests.pimc.test_sampler import chi_square_critical, consistent_worlds, played_position

HEARTS = 0xFF << 16


def mask(*cards: str) -> int:
    return sum(1 << parse_card(c) for c in cards)


class HeartsBid:
    """A bidder who bids hearts with three hearts or more, and otherwise only by the floor's ``floor``."""

    def __init__(self, call: str, floor: float) -> None:
        self.call, self.floor = call, floor

    def likelihood(self, hand: int, auction_so_far: Calls, seat: int, call: str) -> float:
        if call != self.call:
            return 1.0
        return 1.0 if bin(hand & HEARTS).count("1") >= 3 else self.floor


class Constant:
    def likelihood(self, hand: int, auction_so_far: Calls, seat: int, call: str) -> float:
        return 0.25


def coinche_deal(seat0: int, rng: random.Random) -> Deal:
    """A Coinche deal, dealer 3, seat 0 (the first to call and lead) holding ``seat0``, the rest at random."""
    ruleset = get_ruleset("coinche")
    rest = [c for c in range(32) if not seat0 >> c & 1]
    rng.shuffle(rest)
    hands = [[c for c in range(32) if seat0 >> c & 1], rest[0:8], rest[8:16], rest[16:24]]
    deck = [0] * 32
    for k, positions in enumerate(_packet_positions((3, 2, 3), 0)):
        for i, card in zip(positions, hands[k], strict=True):
            deck[i] = card
    deal = ruleset.new_deal(3, tuple(deck))  # type: ignore[arg-type]
    assert deal.hands[0] == seat0
    return deal


def hearts_posterior(hidden_hearts: int, unseen: int, size: int, floor: float) -> list[float]:
    """P(the bidder holds k hearts), k = 0..size: its ``size`` cards are a uniform draw of the ``unseen``
    ones (hypergeometric), weighted by 1 with three hearts or more and by ``floor`` with fewer."""
    prior = [
        comb(hidden_hearts, k) * comb(unseen - hidden_hearts, size - k) / comb(unseen, size) for k in range(size + 1)
    ]
    weighted = [p * (1.0 if k >= 3 else floor) for k, p in enumerate(prior)]
    return [w / sum(weighted) for w in weighted]


def test_a_hearts_bidders_length_over_weighted_worlds() -> None:
    """Coinche: seat 0 holds two hearts (7, 8) and no declaration; seat 1 bid 80 hearts, the others passed.
    Seen by seat 0 before its lead, the 24 other cards are dealt uniformly, so seat 1's hearts are
    hypergeometric: P(k) = C(6, k) C(18, 8 - k) / C(24, 8). A bidder that only bids hearts with three or
    more (else with the floor's 0.05) makes the posterior P(k) proportional to that times 1 for k >= 3 and
    0.05 below: P(k >= 3) = 0.302 a priori, 0.896 after the bid; P(k <= 2) = 0.104, not 0 (the floor)."""
    rng = random.Random(27)
    floor = 0.05
    deal = coinche_deal(mask("7H", "8H", "AS", "JS", "9S", "KC", "7C", "TD"), rng)
    for code in ("pass", "bid 80 H", "pass", "pass", "pass"):
        deal.apply(parse_action(code))
    obs = sdk_observation(deal, 0)
    seen = Seen.from_observation(obs, deal.ruleset.options_json())
    exact = hearts_posterior(6, 24, 8, floor)
    assert sum(exact[3:]) == pytest.approx(0.896, abs=1e-3)  # the figures of the docstring, by hand
    assert sum(exact[:3]) == pytest.approx(0.104, abs=1e-3)
    uniform = hearts_posterior(6, 24, 8, 1.0)
    assert sum(uniform[3:]) == pytest.approx(0.302, abs=1e-3)

    evidence = Evidence(HeartsBid("bid 80 H", floor), auction_of(obs.auction), 0, 8)
    weighted = EvidenceSampler(Sampler(seen), evidence)
    draws = list(weighted.worlds(4000, rng))
    # Once the thinning's level is the largest weight (1), every kept world weighs 1: plain draws of the
    # posterior (rejection sampling), which a chi-square test may count.
    assert weighted.thinning.tau == 1.0
    late = [w for w, weight in draws[100:] if weight == 1.0]
    assert len(late) == len(draws) - 100
    bins = [0, 1, 2, 3, 4, 5]  # 5: five or six (six has 5e-4)
    expected = [*exact[:5], exact[5] + exact[6]]
    counts = Counter(min(bin(w.hands[1] & HEARTS).count("1"), 5) for w in late)
    chi2 = sum((counts[k] - len(late) * p) ** 2 / (len(late) * p) for k, p in zip(bins, expected, strict=True))
    assert chi2 < chi_square_critical(len(bins) - 1), (chi2, counts)
    assert counts[0] + counts[1] + counts[2] > 0.07 * len(late)  # the floor keeps them: about 10.4%

    # The uniform sampler on the same position: the old, hypergeometric distribution.
    plain = list(Sampler(seen).worlds(3000, rng))
    counts = Counter(min(bin(w.hands[1] & HEARTS).count("1"), 5) for w in plain)
    expected = [*uniform[:5], uniform[5] + uniform[6]]
    chi2 = sum((counts[k] - len(plain) * p) ** 2 / (len(plain) * p) for k, p in zip(bins, expected, strict=True))
    assert chi2 < chi_square_critical(len(bins) - 1), (chi2, counts)


def test_a_model_that_says_nothing_gives_back_the_uniform_samplers_worlds() -> None:
    """Equal weights: every candidate is kept, no random draw is spent on thinning, and the worlds are the
    uniform sampler's, one for one, from the same seed."""
    rng = random.Random(5)
    for name, options in RULESETS:
        deal, _ = played_position(name, options, rng, rng.randrange(12))
        if deal.is_over:
            continue
        seen = Seen.from_observation(sdk_observation(deal, deal.to_act), deal.ruleset.options_json())
        auction = auction_of(sdk_observation(deal, deal.to_act).auction)
        evidence = Evidence(Constant(), auction, deal.to_act, 8)
        got = list(EvidenceSampler(Sampler(seen), evidence).worlds(30, random.Random(9)))
        assert [w.hands for w, _ in got] == [w.hands for w in Sampler(seen).worlds(30, random.Random(9))]
        assert len({weight for _, weight in got}) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(RULESETS) - 1), seed=st.integers(0, 2**32), steps=st.integers(0, 31))
def test_weighted_worlds_never_contradict_the_observation(which: int, seed: int, steps: int) -> None:
    name, options = RULESETS[which]
    rng = random.Random(seed)
    deal, history = played_position(name, options, rng, steps)
    if deal.is_over:
        return
    me = deal.to_act
    obs = sdk_observation(deal, me)
    seen = Seen.from_observation(obs, deal.ruleset.options_json())
    turned = parse_card(obs.turned_card) if obs.turned_card else None
    evidence = Evidence.of_deal(deal.ruleset, deal.dealer, me, auction_of(obs.auction), turned, seed)
    worlds = list(EvidenceSampler(Sampler(seen), evidence).worlds(6, rng))
    assert len(worlds) == 6
    for world, weight in worlds:
        assert weight > 0
        assert world_contradiction(deal, history, me, world.hands) is None


@pytest.mark.parametrize(
    ("name", "size"), [("pilotta", 8), ("coinche", 8), ("bulgarian", 5), ("french", 5), ("bela", 6)]
)
def test_the_cards_held_in_the_auction(name: str, size: int) -> None:
    """docs/rules: Pilotta and Coinche deal all eight cards before the auction, Bulgarian and French five
    (3 + 2), Bela six (3 + 3, the two others face down)."""
    for dealer in range(4):
        assert auction_hand_size(get_ruleset(name), dealer) == size


@pytest.mark.parametrize(("taker", "expected"), [(False, 5 / 8 + 3 / 8 * 0.1), (True, 5 / 7 + 2 / 7 * 0.1)])
def test_the_auction_hand_of_a_deal_in_two_parts(taker: bool, expected: float) -> None:
    """French: a seat held five of its eight cards when it called, a uniform five given the eight. A bidder
    with the jack of hearts among them calls with likelihood 1, else 0.1. Of a non-taker's eight with the
    jack, it is among the five in C(7, 4) / C(8, 5) = 5/8 of the subsets: 5/8 + 3/8 * 0.1. The taker got
    the turned card after the auction: its five are among the seven others, 5/7 + 2/7 * 0.1. The
    ``SUBSETS`` random fives estimate this without bias: their mean over many seeds is the figure."""
    turned = parse_card("9C")
    dealt = mask("JH", "7H", "AS", "KS", "8D", "TD", "QC") | (1 << turned if taker else mask("7C"))
    estimates = []
    for seed in range(3000):
        evidence = Evidence(HeartsJack(), ((1, "bid H"),), 0, 5, turned, seed)
        estimates.append(evidence.seat_likelihood(1, dealt))
    se = statistics.stdev(estimates) / math.sqrt(len(estimates))
    assert abs(statistics.fmean(estimates) - expected) < 4 * se + 1e-9
    assert 0 < se < 0.01


class HeartsJack:
    def likelihood(self, hand: int, auction_so_far: Calls, seat: int, call: str) -> float:
        return 1.0 if hand >> parse_card("JH") & 1 else 0.1


def test_the_thinnings_level_worked_by_hand() -> None:
    """Equal weights: tau is that weight, every candidate kept. Fifteen of 0.01 and one of 1 at a ratio of
    4 (four kept of the sixteen, in expectation): kept(tau) = 1 + 15 * 0.01 / tau = 4 gives tau = 0.05.
    Seven of 0.1 and one of 1 at a ratio of 8 (one kept of eight): the largest weight keeps 1 + 0.7 of
    them, more than one, so tau is that weight (exact rejection sampling)."""
    thinning = Thinning(8)
    thinning.seen = [0.3] * 10
    assert thinning.level() == 0.3
    thinning = Thinning(4)
    thinning.seen = [0.01] * 15 + [1.0]
    assert thinning.level() == pytest.approx(0.05)
    thinning = Thinning(8)
    thinning.seen = [0.1] * 7 + [1.0]
    assert thinning.level() == 1.0


def test_thinned_weights_estimate_the_weighted_mean() -> None:
    """Candidates weighing 1 (30%) or 0.01 (70%): the posterior share of the heavy ones is
    0.3 / (0.3 + 0.007) = 0.977; the kept candidates' weights estimate it (Horvitz-Thompson)."""
    rng = random.Random(3)
    thinning = Thinning()
    kept: list[tuple[bool, float]] = []
    for _ in range(40000):
        heavy = rng.random() < 0.3
        weight = thinning.offer(1.0 if heavy else 0.01, rng)
        if weight is not None:
            kept.append((heavy, weight))
    share = sum(w for h, w in kept if h) / sum(w for _, w in kept)
    assert share == pytest.approx(0.3 / 0.307, abs=0.004)
    assert len(kept) < 0.35 * 40000  # most light candidates thinned away


def test_weighted_mean_and_its_error_with_equal_weights_are_the_plain_ones() -> None:
    values = [3.0, -1.0, 4.0, 1.0, -5.0, 9.0]
    mean, se = weighted_mean_se(values, [2.0] * 6)
    assert mean == pytest.approx(statistics.fmean(values))
    assert se == pytest.approx(statistics.stdev(values) / math.sqrt(6))
    # One world counted twice as much as the others: the mean moves to it, the effective count is
    # (1 + 1 + 2) ** 2 / (1 + 1 + 4) = 8/3.
    mean, se = weighted_mean_se([0.0, 0.0, 6.0], [1.0, 1.0, 2.0])
    assert mean == pytest.approx(3.0)
    n = 16 / 6
    assert se == pytest.approx(math.sqrt((2 * 9 + 2 * 9) / 4 * n / (n - 1) / n))


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.parametrize(
    ("name", "options"), [r for r in RULESETS if r[0] in ("pilotta", "coinche")], ids=IDS[:2] + IDS[3:5]
)
def test_every_consistent_world_weighted_as_its_calls(name: str, options: dict[str, object]) -> None:
    """Small endgames: every consistent world (by brute force, the engine-based checker) gets the posterior
    share of the heuristic model's weight of its hands; the weighted worlds drawn match it world by world
    (each within 4.5 standard errors of a weighted frequency over the effective number of draws)."""
    rng = random.Random(f"weighted-{name}-{sorted(options)}")
    tested = 0
    for _ in range(200):
        deal, history = played_position(name, options, rng, 23 + rng.randrange(3))
        if deal.is_over or sum(bin(h).count("1") for h in deal.hands) > 9:
            continue
        me = deal.to_act
        truth = consistent_worlds(deal, history, me)
        if len(truth) < 3:
            continue
        obs = sdk_observation(deal, me)
        seen = Seen.from_observation(obs, deal.ruleset.options_json())
        evidence = Evidence.of_deal(deal.ruleset, deal.dealer, me, auction_of(obs.auction), None)
        played = seen.played
        weight = {h: evidence.weight([h[s] | played[s] for s in range(4)]) for h in truth}
        if max(weight.values()) < 1.5 * min(weight.values()):
            continue  # calls that hardly tell the worlds apart
        total = sum(weight.values())
        draws = list(EvidenceSampler(Sampler(seen), evidence).worlds(80 * len(truth), rng))
        assert {w.hands for w, _ in draws} <= truth
        mass = sum(w for _, w in draws)
        n = mass**2 / sum(w * w for _, w in draws)
        for hands in truth:
            p = weight[hands] / total
            got = sum(w for world, w in draws if world.hands == hands) / mass
            assert abs(got - p) < 4.5 * math.sqrt(p * (1 - p) / n) + 1e-9, (got, p, n)
        tested += 1
        if tested == 3:
            break
    assert tested >= 1


def test_the_uniform_bot_reads_no_evidence_and_the_evidence_bot_does() -> None:
    rng = random.Random(4)
    ruleset = get_ruleset("coinche")
    uniform = PimcBot(Settings(budget_ms=20, seed=1, evidence=False))
    evidence = PimcBot(Settings(budget_ms=20, seed=1, evidence=True))
    spent: list[float] = []

    class Watch:
        def __init__(self, bot: PimcBot, into: list[float]) -> None:
            self.bot, self.into = bot, into

        def decide(self, obs: object, legal: list[str]) -> str:
            code = self.bot.decide(obs, legal)  # type: ignore[arg-type]
            self.into.append(self.bot.last_evidence_seconds)
            return code

    nothing: list[float] = []
    for _ in range(2):
        play_deal(ruleset, rng.randrange(4), random_deck(rng), [Watch(evidence, spent), Watch(uniform, nothing)] * 2)
    assert uniform._evidence is None and not any(nothing)
    assert evidence._evidence is not None and any(spent)


def test_past_the_cap_every_world_is_kept_with_its_weight() -> None:
    """With no time for thinning (cap 0), every draw is kept and carries its weight: the weighted share of
    the hearts bidder's worlds with three hearts or more is still the posterior 0.896 (worked out above)."""
    rng = random.Random(28)
    deal = coinche_deal(mask("7H", "8H", "AS", "JS", "9S", "KC", "7C", "TD"), rng)
    for code in ("pass", "bid 80 H", "pass", "pass", "pass"):
        deal.apply(parse_action(code))
    obs = sdk_observation(deal, 0)
    seen = Seen.from_observation(obs, deal.ruleset.options_json())
    evidence = Evidence(HeartsBid("bid 80 H", 0.05), auction_of(obs.auction), 0, 8)
    weighted = EvidenceSampler(Sampler(seen), evidence, cap=0.0)
    draws = list(weighted.worlds(6000, rng))
    assert weighted.thinning.kept == weighted.thinning.offered >= 6000
    assert {w for _, w in draws[1:]} == {1.0, 0.05}
    heavy = sum(w for world, w in draws if bin(world.hands[1] & HEARTS).count("1") >= 3)
    share = heavy / sum(w for _, w in draws)
    # A ratio of binomial sums: about 0.006 of standard error at 6,000 draws (two thirds of them light).
    assert share == pytest.approx(sum(hearts_posterior(6, 24, 8, 0.05)[3:]), abs=0.025)
