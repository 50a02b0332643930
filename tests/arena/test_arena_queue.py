"""queue.py against a real Redis: claim, keep-alive, reclaim, exactly-once, dead letters."""

from __future__ import annotations

import time

import pytest
from arena_testkit import make_spec, play, wait_until
from prometheus_client import REGISTRY

from arena.play.queue import MatchQueue
from arena.store import keys

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def q(r):
    return MatchQueue(r, max_deliveries=2)


def test_enqueue_claim_record_ack(r, q):
    spec = make_spec("m-1")
    assert q.enqueue(spec)
    assert q.enqueue(spec) is None  # idempotent by match id
    assert q.depth() == 1
    c = q.claim("w1", block_ms=100)
    assert c is not None and c.spec == spec and c.deliveries == 1 and not c.reclaimed
    assert q.pending() == 1
    assert q.claim("w2", block_ms=50) is None  # nothing else to take
    assert q.record_result(play(spec))
    assert not q.record_result(play(spec))  # second run of the same match: not counted
    q.ack(c)
    assert (q.depth(), q.pending(), q.results_count(), q.duplicate_results()) == (0, 0, 1, 1)
    assert q.get_result("m-1") == play(spec)
    assert r.xrange(keys.RESULTS_STREAM)[0][1] == {"match_id": "m-1", "ladder": "cy-test"}


def test_oldest_pending_age_and_empty_queue(q):
    assert q.oldest_pending_age() == 0.0
    assert q.claim("w1", block_ms=10) is None
    q.enqueue(make_spec("m-1"))
    time.sleep(0.05)
    assert q.oldest_pending_age() > 0.0


def test_reclaim_after_idle_and_keep_alive(q):
    q.enqueue(make_spec("m-1"))
    c = q.claim("w1", block_ms=100)
    assert c is not None
    # Owner keeps it alive: a keep-alive a second (6 s in all, twice the 3 s idle that lets another worker
    # take it), so nobody can take it: each reclaim comes right after a keep-alive, and only a pause of the
    # test of 3 s between the two would let it through. (With 1 s of idle and keep-alives every 200 ms, a
    # loaded machine's pause did.)
    for _ in range(6):
        time.sleep(1.0)  # pacing: time passing, nothing waited for
        assert q.keep_alive("w1", c.msg_id)
        assert q.reclaim_stale("w2", min_idle_ms=3000) is None
    # Owner goes silent: another worker takes it over, delivery count goes up.
    stolen = wait_until(lambda: q.reclaim_stale("w2", min_idle_ms=3000), 30, "reclaim")
    assert stolen.msg_id == c.msg_id and stolen.deliveries == 2 and stolen.reclaimed
    assert not q.keep_alive("w1", c.msg_id)  # the old owner learns it lost the match
    assert q.keep_alive("w2", c.msg_id)


def test_failures_then_dead_letter_with_reason(r, q):
    spec = make_spec("m-bad", bots=("x", "y"))
    r.hset(keys.ladder_inflight(spec.ladder), mapping={"x": 1, "y": 1})
    q.enqueue(spec)
    c1 = q.claim("w1", block_ms=100)
    assert not q.fail(c1, "w1", "RuntimeError: boom 1")  # first failure: left for retry
    assert q.last_error("m-bad") == "RuntimeError: boom 1"
    assert q.depth() == 1
    c2 = wait_until(lambda: q.reclaim_stale("w2", min_idle_ms=50), 10, "retry")
    assert c2.deliveries == 2
    assert q.fail(c2, "w2", "RuntimeError: boom 2")  # max_deliveries reached
    assert (q.depth(), q.pending()) == (0, 0)
    [dead] = q.dead_letters()
    assert dead.match_id == "m-bad" and dead.deliveries == 2 and dead.worker == "w2"
    assert "failed 2 times" in dead.reason and "boom 2" in dead.reason
    assert q.last_error("m-bad") is None
    assert r.hgetall(keys.ladder_inflight(spec.ladder)) == {"x": "0", "y": "0"}  # bots released
    # Dead-lettering an entry that is no longer pending does nothing.
    assert not q.dead_letter(c2, "w3", "again")
    assert len(q.dead_letters()) == 1
    # After fixing the cause an operator can requeue it.
    assert q.requeue_dead(dead.dead_id)
    assert q.dead_letters() == [] and q.depth() == 1
    assert q.claim("w1", block_ms=100).spec == spec


def test_malformed_entry_goes_to_dead_letters(r, q):
    r.xadd(keys.MATCH_STREAM, {"match_id": "m-junk", "spec": '{"match_id": "m-junk"}'})
    assert q.claim("w1", block_ms=100) is None
    [dead] = q.dead_letters()
    assert dead.match_id == "m-junk" and "malformed spec" in dead.reason and "MatchSpec.bots" in dead.reason
    assert q.depth() == 0


def test_group_is_recreated_if_redis_was_wiped(r, q):
    r.flushall()
    q.enqueue(make_spec("m-1"))
    assert q.claim("w1", block_ms=100).spec.match_id == "m-1"


def test_record_result_releases_inflight_once(r, q):
    spec = make_spec("m-1", bots=("x", "y"))
    r.hset(keys.ladder_inflight(spec.ladder), mapping={"x": 1, "y": 2})
    assert q.record_result(play(spec))
    assert not q.record_result(play(spec))
    assert r.hgetall(keys.ladder_inflight(spec.ladder)) == {"x": "0", "y": "1"}


def _counter(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


def test_a_dead_workers_claims_are_taken_over_and_not_counted_by_the_feeder(r, q):
    for i in range(3):
        q.enqueue(make_spec(f"m-{i}"))
    first, second = q.claim("dead", 100), q.claim("dead", 100)
    assert first is not None and second is not None
    # Three entries, two claimed by "dead": the feeder sees 3 while it is live, 1 once it is not.
    assert q.live_depth({"dead", "other"}) == 3
    assert q.live_depth({"other"}) == 1 and q.live_depth(set()) == 1
    # Its owner live, or the claim fresher than the bound: nothing to take over.
    assert q.reclaim_orphaned("w2", {"dead"}, 0) is None
    assert q.reclaim_orphaned("w2", set(), 60_000) is None
    reclaimed, dead_lettered = (
        _counter("pilotta_matches_reclaimed_total"),
        _counter("pilotta_matches_dead_lettered_total"),
    )
    got = q.reclaim_orphaned("w2", set(), 0)
    assert got is not None and got.reclaimed and got.deliveries == 2 and got.spec.match_id == first.spec.match_id
    assert _counter("pilotta_matches_reclaimed_total") == reclaimed + 1
    # A worker never takes over its own claims this way (it is live: it is asking).
    assert q.reclaim_orphaned("dead", {"w2"}, 0) is None
    again = q.reclaim_orphaned("w2", set(), 0)
    assert again is not None and again.spec.match_id == second.spec.match_id
    assert q.reclaim_orphaned("w2", set(), 0) is None  # both are w2's now
    assert q.live_depth({"w2"}) == 3 and q.live_depth(set()) == 1
    # Every dead-lettering path counts: a malformed entry, buried on claim.
    r.xadd(keys.MATCH_STREAM, {"match_id": "m-bad", "spec": "{"})
    while q.claim("w3", 100) is not None:
        pass
    assert _counter("pilotta_matches_dead_lettered_total") == dead_lettered + 1
