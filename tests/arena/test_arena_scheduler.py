"""scheduler.py: pure pair selection (fairness, similarity) and the Redis side."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from arena_testkit import play
from hypothesis import given, settings
from hypothesis import strategies as st

from arena import keys
from arena.model import RetiredBotError, UnknownLadderError, ValidationError
from arena.queue import MatchQueue
from arena.ratings import Ratings
from arena.registry import Registry
from arena.scheduler import Candidate, LadderConfig, Scheduler, pick_pairs, priority

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
