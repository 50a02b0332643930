"""Failure drills with REAL worker processes (``python -m arena.play.worker``) and a real Redis:
SIGKILL mid-match, a frozen "zombie" worker, racing workers, warm/cold SIGTERM, and a
Redis restart (SHUTDOWN + start on the same AOF dir) in the middle of a ladder.

No timing is asserted; every wait is bounded by ``wait_until`` or a process timeout.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
from arena_testkit import make_spec, wait_until

from arena.play.queue import MatchQueue
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.store.redis_server import connect

pytestmark = pytest.mark.timeout(120)


def owner_of(r, match_msg_id: str) -> str | None:
    info = r.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, match_msg_id, match_msg_id, 1)
    return info[0]["consumer"] if info else None


def recorded_ids(r) -> list[str]:
    return [f["match_id"] for _id, f in r.xrange(keys.RESULTS_STREAM)]


def final_stats(procs, worker_id: str) -> dict:
    for line in procs.output(worker_id).splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no final stats from {worker_id}: {procs.output(worker_id)[-2000:]}")


def test_sigkilled_worker_match_is_completed_by_another_once(r, redis_server, procs, tmp_path):
    q = MatchQueue(r)
    spec = make_spec("m-kill", bots=("b-x", "b-y"))
    msg_id = q.enqueue(spec)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {"ARENA_TEST_SLEEP_S": "60", "ARENA_TEST_MARK_DIR": str(marks)}
    a = procs.worker(redis_server.url, "w-a", "sleepy", env, "--stale-ms", "500")
    wait_until(lambda: owner_of(r, msg_id) == "w-a" and any(marks.iterdir()), 30, "w-a to start the match")
    a.send_signal(signal.SIGKILL)
    assert a.wait(timeout=10) == -signal.SIGKILL
    assert q.results_count() == 0
    b = procs.worker(redis_server.url, "w-b", "sleepy", {"ARENA_TEST_MARK_DIR": str(marks)}, "--stale-ms", "500")
    wait_until(lambda: q.results_count() == 1, 30, "w-b to finish the match")
    b.send_signal(signal.SIGTERM)
    assert b.wait(timeout=20) == 0
    assert recorded_ids(r) == ["m-kill"]
    assert q.duplicate_results() == 0 and q.depth() == 0 and q.dead_letters() == []
    assert final_stats(procs, "w-b")["recorded"] == 1
    assert sorted(p.name.split(".")[0] for p in marks.iterdir()) == ["m-kill", "m-kill"]  # played twice
    rt = Ratings(r)
    assert rt.process("u", block_ms=10) == 1
    assert rt.get("cy-test", "b-x").games == 1 and rt.get("cy-test", "b-y").games == 1


def test_zombie_worker_result_is_detected_and_not_counted(r, redis_server, procs, tmp_path):
    """A worker frozen (SIGSTOP) past the stale time loses its match; when it wakes up and
    finishes, its result is a duplicate: detected, counted apart, never applied twice."""
    q = MatchQueue(r)
    msg_id = q.enqueue(make_spec("m-zombie"))
    # w-a's match lasts until the gate opens, after w-b has recorded it (not 3 s that a loaded machine
    # might spend before w-a is frozen). w-a is frozen once its runner has begun (the mark), not once it
    # has claimed: frozen between the claim and the runner, it would wake to find the match recorded and
    # only ack it, which CI's loaded run met.
    gate, marks = tmp_path / "gate", tmp_path / "marks"
    marks.mkdir()
    env = {"ARENA_TEST_GATE": str(gate), "ARENA_TEST_MARK_DIR": str(marks)}
    a = procs.worker(redis_server.url, "w-a", "sleepy", env, "--stale-ms", "500")
    wait_until(lambda: owner_of(r, msg_id) == "w-a" and any(marks.iterdir()), 30, "w-a to start the match")
    a.send_signal(signal.SIGSTOP)
    b = procs.worker(redis_server.url, "w-b", "sleepy", {}, "--stale-ms", "500")
    wait_until(lambda: q.results_count() == 1, 30, "w-b to take over and record")
    a.send_signal(signal.SIGCONT)
    gate.touch()
    wait_until(lambda: q.duplicate_results() == 1, 30, "the zombie's duplicate result")
    for p in (a, b):
        p.send_signal(signal.SIGTERM)
    assert a.wait(timeout=20) == 0 and b.wait(timeout=20) == 0
    assert recorded_ids(r) == ["m-zombie"]
    assert final_stats(procs, "w-a")["duplicates"] == 1
    assert final_stats(procs, "w-b")["recorded"] == 1
    assert q.depth() == 0 and q.pending() == 0


def test_two_workers_racing_record_each_match_once(r, redis_server, procs):
    q = MatchQueue(r)
    n = 40
    for i in range(n):
        q.enqueue(make_spec(f"m-{i:03d}", seed=i))
    env = {"ARENA_TEST_SLEEP_S": "0.02"}
    ws = [procs.worker(redis_server.url, f"w-{k}", "sleepy", env, "--stale-ms", "300") for k in range(2)]
    wait_until(lambda: q.results_count() == n, 60, "all matches recorded")
    for p in ws:
        p.send_signal(signal.SIGTERM)
    assert all(p.wait(timeout=20) == 0 for p in ws)
    ids = recorded_ids(r)
    assert sorted(ids) == [f"m-{i:03d}" for i in range(n)]  # each exactly once
    s0, s1 = final_stats(procs, "w-0"), final_stats(procs, "w-1")
    assert s0["recorded"] + s1["recorded"] == n
    assert s0["duplicates"] + s1["duplicates"] == q.duplicate_results()
    assert q.depth() == 0


def test_sigterm_is_warm_then_cold(r, redis_server, procs, tmp_path):
    q = MatchQueue(r)
    for i in range(3):
        q.enqueue(make_spec(f"m-{i}", seed=i))
    marks = tmp_path / "marks"
    marks.mkdir()
    # Each match lasts until the test opens its gate, and each signal is sent once the worker has logged
    # the one before (two signals before the handler has run are one): no step rests on a sleep's length.
    gate = tmp_path / "gate"
    env = {"ARENA_TEST_GATE": str(gate), "ARENA_TEST_MARK_DIR": str(marks)}
    warned = "finishing the current match then exiting"
    warm = procs.worker(redis_server.url, "w-warm", "sleepy", env, "--log-level", "INFO")
    wait_until(lambda: any(marks.iterdir()), 30, "first match to start")
    warm.send_signal(signal.SIGTERM)
    wait_until(lambda: warned in procs.output("w-warm"), 30, "w-warm to take the SIGTERM")
    gate.touch()
    assert warm.wait(timeout=30) == 0
    assert q.results_count() == 1 and q.depth() == 2 and q.pending() == 0  # finished it, took no other

    for m in marks.iterdir():
        m.unlink()
    gate.unlink()  # never opened again: the match would go on for 120 s
    cold = procs.worker(redis_server.url, "w-cold", "sleepy", env, "--log-level", "INFO")
    wait_until(lambda: any(marks.iterdir()), 30, "second match to start")
    cold.send_signal(signal.SIGTERM)
    wait_until(lambda: warned in procs.output("w-cold"), 30, "w-cold to take the first SIGTERM")
    cold.send_signal(signal.SIGTERM)
    assert cold.wait(timeout=30) == 128 + signal.SIGTERM
    assert q.results_count() == 1 and q.pending() == 1  # abandoned: left for another worker
    wait_until(lambda: q.reclaim_stale("w-next", min_idle_ms=100), 30, "abandoned match to be reclaimable")


def test_redis_restart_mid_ladder_loses_no_result(own_redis, procs):
    r = connect(own_redis.url)
    q = MatchQueue(r)
    n = 30
    for i in range(n):
        q.enqueue(make_spec(f"m-{i:03d}", bots=(f"b-{i % 3}", f"b-{(i + 1) % 3 + 3}"), seed=i))
    env = {"ARENA_TEST_SLEEP_S": "0.1"}
    ws = [procs.worker(own_redis.url, f"w-{k}", "sleepy", env, "--stale-ms", "2000") for k in range(2)]
    wait_until(lambda: q.results_count() >= 8, 60, "some results before the restart")
    before = set(recorded_ids(r))

    # SHUTDOWN (flushes the AOF), stay down a moment so the workers see connection
    # errors and back off, then start again on the same data dir and port.
    own_redis.stop()
    time.sleep(1.0)
    own_redis.start()
    r2 = connect(own_redis.url)
    assert before <= set(recorded_ids(r2))  # nothing recorded before the restart was lost

    q2 = MatchQueue(r2)
    wait_until(lambda: q2.results_count() == n, 90, "workers to reconnect and finish the ladder")
    for p in ws:
        p.send_signal(signal.SIGTERM)
    codes = [p.wait(timeout=30) for p in ws]
    assert codes == [0, 0], (codes, [procs.output(f"w-{k}")[-3000:] for k in range(2)])
    ids = recorded_ids(r2)
    assert sorted(ids) == [f"m-{i:03d}" for i in range(n)]  # all there, each once
    assert q2.depth() == 0 and q2.dead_letters() == []
    rt = Ratings(r2)
    wait_until(lambda: rt.process("u", block_ms=10) == 0 and all(rt.is_applied(i) for i in ids), 30, "ratings")
    assert sum(rt.get("cy-test", f"b-{k}").games for k in range(6)) == 2 * n


def test_worker_entry_point_rejects_a_bad_runner(procs, redis_server):
    p = procs.worker(redis_server.url, "w-bad", "no_such_function")
    assert p.wait(timeout=30) != 0
    assert "not a callable runner" in procs.output("w-bad")


def test_a_worker_started_while_redis_is_down_waits_for_it(own_redis, procs, tmp_path):
    """A worker that starts while its Redis is down (a deployment's start order, a hub restarting) waits it
    out and then plays, where it used to die at once with a traceback (seen in a loaded run: a worker slow
    to start met the restart test's outage). The worker's own log says it waits, and then that Redis is
    back."""
    own_redis.stop()
    w = procs.worker(own_redis.url, "w-early", "sleepy", {"ARENA_TEST_SLEEP_S": "0.05"})
    wait_until(lambda: "redis unavailable while starting w-early" in procs.output("w-early"), 60, "the wait logged")
    assert w.poll() is None  # still there, waiting
    own_redis.start()
    r = connect(own_redis.url)
    q = MatchQueue(r)
    q.enqueue(make_spec("m-early", bots=("b-0", "b-1"), seed=5))
    wait_until(lambda: q.results_count() == 1, 60, "the early worker to play the match")
    assert "redis back: done starting w-early" in procs.output("w-early")
    w.send_signal(signal.SIGTERM)
    assert w.wait(timeout=30) == 0, procs.output("w-early")[-3000:]
    assert recorded_ids(r) == ["m-early"]
