"""scheduler.py: pure pair selection (fairness, similarity) and the Redis side."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from arena_testkit import play
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.bots.registry import Registry
from arena.model import RetiredBotError, UnknownLadderError, ValidationError
from arena.play.pairing import FAIRNESS_SLACK, Candidate, PairHold, held_by_pairs, holding, pick_pairs, priority
from arena.play.queue import MatchQueue
from arena.play.scheduler import LadderConfig, Scheduler
from arena.rating.ratings import Ratings
from arena.store import keys

NOW = 1_700_000_000.0


def test_new_and_uncertain_bots_go_first():
    veteran = Candidate("vet", mu=30, sigma=1.0, games=500, last_scheduled=NOW - 10)
    rookie = Candidate("new", sigma=25 / 3, games=0, last_scheduled=None)
    unsure = Candidate("unsure", mu=30, sigma=6.0, games=20, last_scheduled=NOW - 10)
    assert priority(rookie, NOW) > priority(unsure, NOW) > priority(veteran, NOW)
    [(anchor, _)] = pick_pairs([veteran, unsure, rookie], 1, NOW, random.Random(1))
    assert anchor == "new"


def test_opponent_has_similar_rating():
    anchor = Candidate("a", mu=40, sigma=2, games=50, last_scheduled=NOW - 600)
    near = Candidate("near", mu=39, sigma=2, games=50, last_scheduled=NOW - 5)
    far = Candidate("far", mu=10, sigma=2, games=50, last_scheduled=NOW - 5)
    assert pick_pairs([anchor, far, near], 1, NOW, random.Random(0)) == [("a", "near")]


def test_in_flight_limit_and_batch_spreads_bots():
    cands = [Candidate(f"b{i}", games=10, last_scheduled=NOW - 60) for i in range(6)]
    pairs = pick_pairs(cands, 10, NOW, random.Random(0), max_in_flight=1)
    assert len(pairs) == 3  # six bots, one match each
    assert sorted(b for p in pairs for b in p) == [f"b{i}" for i in range(6)]
    busy = [Candidate("x", in_flight=1), Candidate("y"), Candidate("z", in_flight=3)]
    assert pick_pairs(busy, 5, NOW, random.Random(0)) == []


@settings(max_examples=25, deadline=None)
@given(
    mus=st.lists(st.floats(0, 50), min_size=3, max_size=9),
    seed=st.integers(0, 1000),
)
def test_no_bot_starves(mus, seed):
    """Simulate rounds of one match each: every bot plays within a bounded number of rounds,
    even a bot whose rating is far from everyone else's."""
    rng = random.Random(seed)
    n = len(mus)
    cands = {f"b{i}": Candidate(f"b{i}", mu=m, sigma=2.0, games=100, last_scheduled=NOW) for i, m in enumerate(mus)}
    last_play = dict.fromkeys(cands, 0)
    worst_gap = 0
    for rnd in range(1, 30 * n):
        now = NOW + rnd * 60
        [(a, b)] = pick_pairs(list(cands.values()), 1, now, rng)
        for bot in (a, b):
            worst_gap = max(worst_gap, rnd - last_play[bot])
            last_play[bot] = rnd
            cands[bot] = Candidate(bot, cands[bot].mu, 2.0, cands[bot].games + 1, now)
    for rnd in last_play.values():
        worst_gap = max(worst_gap, 30 * n - rnd)
    assert worst_gap <= 2 * n  # with one match per round, at most ~n/2 rounds apart in steady state


def test_ladder_id_is_stable_and_settings_are_validated():
    a = LadderConfig("cypriot", {"belote": True}, target=1000)
    assert a.ladder_id == LadderConfig("cypriot", {"belote": True}, target=1000).ladder_id
    assert a.ladder_id != LadderConfig("cypriot", {"belote": False}, target=1000).ladder_id
    assert a.ladder_id.startswith("cypriot-")
    with pytest.raises(ValidationError, match="exactly one of deals or target"):
        LadderConfig("cypriot", deals=4, target=1000)
    with pytest.raises(ValidationError, match="invalid ruleset"):
        LadderConfig("bad variant")


def test_schedule_enqueues_duplicate_pairs_and_tracks_in_flight(r):
    reg, rt, q = Registry(r), Ratings(r), MatchQueue(r)
    sched = Scheduler(r, reg, rt, q)
    lad = sched.create_ladder(LadderConfig("cypriot", {"belote": True}, deals=4, target=None))
    assert sched.create_ladder(LadderConfig("cypriot", {"belote": True}, deals=4, target=None)) == lad
    bots = [reg.register(f"bot{i}", "o", endpoint=f"localhost:{5000 + i}")[0] for i in range(5)]
    for b in bots:
        sched.join(lad, b.bot_id)
    retired, token = reg.register("oldie", "o", endpoint="localhost:6000")
    sched.join(lad, retired.bot_id)
    reg.retire(retired.bot_id, token)
    with pytest.raises(RetiredBotError):
        sched.join(lad, retired.bot_id)
    with pytest.raises(UnknownLadderError):
        sched.schedule("nope", 1)

    specs = sched.schedule(lad, n=10, now=NOW, rng=random.Random(3))
    assert len(specs) == 2  # five active bots, one match each at a time: two pairs
    for s in specs:
        assert s.duplicate and len(s.bots) == 2 and s.deals == 4 and s.options == {"belote": True}
        assert retired.bot_id not in s.bots
    assert q.depth() == 2
    inflight = Counter({k: int(v) for k, v in r.hgetall(keys.ladder_inflight(lad)).items()})
    assert sum(inflight.values()) == 4 and max(inflight.values()) == 1
    # Nothing more until a match finishes; the fifth bot goes first afterwards.
    assert sched.schedule(lad, n=10, now=NOW + 1) == []
    idle = {b.bot_id for b in bots} - {b for s in specs for b in s.bots}
    q.record_result(play(specs[0]), specs[0].distinct_bots())
    [nxt] = sched.schedule(lad, n=10, now=NOW + 2, rng=random.Random(0))
    assert idle & set(nxt.bots)


# ------------------------------------------------------------------ games played kept even


def _simulate(speeds, max_in_flight, per_tick, ticks, seed, mus=None):
    """A ladder run tick by tick: each tick the feeder asks for ``per_tick`` matches, and a match ends
    after as many ticks as its slower bot takes (``speeds``).  Yields the scheduled and the played
    count per bot after every tick."""
    rng = random.Random(seed)
    bots = [f"b{i}" for i in range(len(speeds))]
    speed = dict(zip(bots, speeds, strict=True))
    mus = mus or [25.0] * len(bots)
    cands = {b: Candidate(b, mu=m, sigma=3.0) for b, m in zip(bots, mus, strict=True)}
    played = dict.fromkeys(bots, 0)
    running: list[tuple[int, str, str]] = []
    for tick in range(ticks):
        now = NOW + tick
        for a, b in pick_pairs(list(cands.values()), per_tick, now, rng, max_in_flight=max_in_flight):
            for x in (a, b):
                c = cands[x]
                cands[x] = Candidate(x, c.mu, c.sigma, c.games, now, c.in_flight + 1, c.scheduled + 1)
            running.append((tick + max(speed[a], speed[b]), a, b))
        for end, a, b in [m for m in running if m[0] <= tick]:
            running.remove((end, a, b))
            for x in (a, b):
                c = cands[x]
                cands[x] = replace(c, games=c.games + 1, in_flight=c.in_flight - 1)
                played[x] += 1
        yield {b: c.scheduled for b, c in cands.items()}, dict(played)


@settings(max_examples=40, deadline=None)
@given(
    speeds=st.lists(st.integers(1, 12), min_size=2, max_size=9),
    max_in_flight=st.integers(1, 4),
    per_tick=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    mus=st.lists(st.floats(0, 50), min_size=9, max_size=9),
)
def test_games_played_stay_within_the_slack_over_a_long_ladder(speeds, max_in_flight, per_tick, seed, mus):
    """The bound: scheduled counts never spread more than FAIRNESS_SLACK + 1 (3) apart, at any tick; the
    played counts (results in) not more than FAIRNESS_SLACK + 1 + max_in_flight, however slow one bot
    is and however far apart the ratings are."""
    last = None
    for scheduled, played in _simulate(speeds, max_in_flight, per_tick, 600, seed, mus[: len(speeds)]):
        assert max(scheduled.values()) - min(scheduled.values()) <= FAIRNESS_SLACK + 1
        assert max(played.values()) - min(played.values()) <= FAIRNESS_SLACK + 1 + max_in_flight
        last = played
    assert min(last.values()) >= 600 // (13 * len(speeds))  # and the ladder did not stall: everyone plays


def test_an_uneven_ladder_from_before_is_evened_out():
    """The 155/155/43 ladder of the issue: three bots, the third far below in rating.  Every match picked
    from then on goes to the bot with the fewest games until it is level."""
    cands = [
        Candidate("a", mu=40, sigma=1.5, games=155, scheduled=155, last_scheduled=NOW - 5),
        Candidate("b", mu=39, sigma=1.5, games=155, scheduled=155, last_scheduled=NOW - 5),
        Candidate("c", mu=5, sigma=1.5, games=43, scheduled=43, last_scheduled=NOW - 5),
    ]
    pairs = pick_pairs(cands, 4, NOW, random.Random(0), max_in_flight=4)
    # c is alone at the floor: it plays the least-played of the others, b first (mu 39 is nearer to 5:
    # 34 / sqrt(1.5^2 + 1.5^2) = 16.0 against a's 16.5), then a, who now has fewer, and so on.
    assert pairs == [("c", "b"), ("c", "a"), ("c", "b"), ("c", "a")]


def test_a_slow_bot_at_the_floor_holds_the_queue():
    # "slow" has played least and its match is still on; the two others are 3 matches ahead (the slack
    # of 2, plus the one they just got): they wait for it.
    cands = [
        Candidate("slow", scheduled=10, in_flight=1),
        Candidate("x", scheduled=13),
        Candidate("y", scheduled=13),
    ]
    assert pick_pairs(cands, 5, NOW, random.Random(0), max_in_flight=1) == []
    assert holding(cands, max_in_flight=1) == ["slow"]
    # Its match over, it plays at once (and, alone at the floor, may play the bots ahead of it).
    free = [replace(cands[0], in_flight=0), *cands[1:]]
    assert holding(free, max_in_flight=1) == []
    assert [a for a, _b in pick_pairs(free, 1, NOW, random.Random(0), max_in_flight=1)] == ["slow"]


def test_a_bot_joining_late_starts_level_with_the_least_played(r):
    reg, rt, q = Registry(r), Ratings(r), MatchQueue(r)
    sched = Scheduler(r, reg, rt, q)
    lad = sched.create_ladder(LadderConfig("pilotta", deals=1, target=None))
    a, b, c = (reg.register(f"bot-{n}", "o", endpoint=f"localhost:{5100 + i}")[0] for i, n in enumerate("abc"))
    sched.join_all(lad, [a, b])
    for i in range(5):
        sched.create_match(lad, (a.bot_id, b.bot_id), seed=i + 1, now=NOW + i)
    assert r.hgetall(keys.ladder_games(lad)) == {a.bot_id: "5", b.bot_id: "5"}
    sched.join(lad, c.bot_id)
    assert r.hget(keys.ladder_games(lad), c.bot_id) == "5"
    sched.join(lad, c.bot_id)  # joining again changes nothing
    assert {x.bot_id: x.scheduled for x in sched.candidates(lad)} == {a.bot_id: 5, b.bot_id: 5, c.bot_id: 5}


# The pair rule (pairing, 5.): a pair may meet at most PAIR_SLACK (2) more times than the least-met opponent of
# either of its bots. In both cases below every bot is within the games' slack, so only the pair rule holds.
def _met(**pairs: int) -> dict[frozenset[str], int]:
    """``CD=4`` -> {frozenset({"C", "D"}): 4}."""
    return {frozenset(name): n for name, n in pairs.items()}


def test_the_pair_rule_holding_back_the_only_free_pair_is_counted():
    # A and B play each other; C and D are free, but have met 4 times, and each has met A and B once: 4 > 1 + 2,
    # so the scheduler pairs nobody, where without the rule it would pair C with D.
    cands = [
        Candidate("A", scheduled=4, in_flight=1),
        Candidate("B", scheduled=4, in_flight=1),
        Candidate("C", scheduled=6),
        Candidate("D", scheduled=6),
    ]
    met = _met(AB=2, AC=1, AD=1, BC=1, BD=1, CD=4)
    assert pick_pairs(cands, 1, NOW, random.Random(0), max_in_flight=1, met=met) == []
    assert holding(cands, max_in_flight=1) == []  # the games' slack holds nobody: A and B are not why
    assert held_by_pairs(cands, met, max_in_flight=1) == PairHold(1, ("C", "D"))
    # Once they are even again (CD 3 = 1 + 2), nothing is held back and the scheduler pairs them.
    even = {**met, frozenset("CD"): 3}
    assert held_by_pairs(cands, even, max_in_flight=1) == PairHold()
    assert pick_pairs(cands, 1, NOW, random.Random(0), max_in_flight=1, met=even) == [("C", "D")]


def test_the_pair_rule_holding_back_one_of_two_matches_names_the_bots_it_leaves_idle():
    # C, D, E, F free; C has met each of them 4 times (its least-met, A and B, once): no pair with C. D pairs
    # with E (mu 25 like D; F's 40 is further), and F, left with C only, waits: 1 match of 2 held back.
    cands = [
        Candidate("A", scheduled=5, in_flight=1),
        Candidate("B", scheduled=5, in_flight=1),
        Candidate("C", scheduled=5),
        Candidate("D", scheduled=5),
        Candidate("E", scheduled=5),
        Candidate("F", mu=40.0, scheduled=5),
    ]
    met = _met(AB=1, AC=1, AD=1, AE=1, AF=1, BC=1, BD=1, BE=1, BF=1, CD=4, CE=4, CF=4, DE=1, DF=1, EF=1)
    assert pick_pairs(cands, 2, NOW, random.Random(0), max_in_flight=1, met=met) == [("D", "E")]
    assert len(pick_pairs(cands, 2, NOW, random.Random(0), max_in_flight=1)) == 2
    assert held_by_pairs(cands, met, max_in_flight=1) == PairHold(1, ("C", "F"))
    # Asked for one match only (a budget's last), the rule holds back none: D-E is that one.
    assert held_by_pairs(cands, met, max_in_flight=1, n=1) == PairHold()
