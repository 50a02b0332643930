"""worker.py in-process: the full flow registration -> ladder -> queue -> worker -> ratings,
failures and dead letters, warm stop.  Runners are the small real ones in arena_testkit
(the gRPC runner is tested with the referee)."""

from __future__ import annotations

import json
import random
import threading

import pytest
from arena_testkit import always_fails, make_spec, play, wait_until

from arena.bots.registry import Registry
from arena.model import MatchResult, MatchSpec
from arena.play.queue import MatchQueue
from arena.play.scheduler import LadderConfig, Scheduler
from arena.play.worker import Worker, load_runner, snapshot
from arena.rating import stats
from arena.rating.ratings import Ratings
from arena.store import keys

pytestmark = pytest.mark.timeout(90)


def test_full_flow_ranks_the_stronger_bots_first(r):
    reg, rt, q = Registry(r), Ratings(r), MatchQueue(r)
    sched = Scheduler(r, reg, rt, q)
    lad = sched.create_ladder(LadderConfig("cypriot", {}, deals=4, target=None))
    bots = {
        name: reg.register(name, "team", endpoint=f"localhost:{6000 + i}")[0].bot_id
        for i, name in enumerate(["weak", "medium", "strong", "ace"])
    }
    for b in bots.values():
        sched.join(lad, b)
    # Skill gaps this large make the stronger side (almost) always win, so the
    # order is certain whatever pairs the scheduler picks (2 % of deals draw).
    skill = {bots["weak"]: 0.0, bots["medium"]: 10.0, bots["strong"]: 20.0, bots["ace"]: 30.0}
    worker = Worker(r, lambda spec: play(spec, skill), "w-inproc", block_ms=50, stale_ms=5_000)
    rng = random.Random(42)
    played = 0
    for rnd in range(60):
        specs = sched.schedule(lad, n=2, now=1_700_000_000.0 + rnd * 30, rng=rng)
        for _ in specs:
            assert worker.run_once()
            played += 1
        rt.process("updater", block_ms=10)
    assert played >= 100 and worker.stats.recorded == played and worker.stats.failures == 0
    board = rt.leaderboard(lad)
    order = [row.bot_id for row in board]
    # The strongest bot leads and the weakest trails whatever the pairings. The middle two may swap: the
    # scheduler pairs by rating, and which of them met the ace more often moves their ratings (bot ids,
    # and so the scheduler's tie-breaks, are random in each run).
    assert order[0] == bots["ace"] and order[-1] == bots["weak"]
    assert set(order[1:3]) == {bots["strong"], bots["medium"]}
    assert sum(row.games for row in board) == 2 * played
    assert all(row.sigma < 25 / 3 for row in board)
    assert len(rt.history(lad, bots["ace"])) == rt.get(lad, bots["ace"]).games
    st = stats.bot_stats(r, lad, bots["ace"])
    assert st.matches == rt.get(lad, bots["ace"]).games and st.deals > 0 and st.latency_p99_ms > 0
    assert q.depth() == 0 and q.results_count() == played
    assert r.hgetall(keys.ladder_inflight(lad)) == dict.fromkeys(bots.values(), "0")


def test_failing_match_is_retried_then_dead_lettered_with_reason(r):
    q = MatchQueue(r, max_deliveries=3)
    q.enqueue(make_spec("m-doomed"))
    q.enqueue(make_spec("m-fine", seed=3))
    w = Worker(
        r,
        lambda s: always_fails(s) if s.match_id == "m-doomed" else play(s),
        "w1",
        block_ms=50,
        stale_ms=100,
        max_deliveries=3,
    )
    wait_until(lambda: (w.run_once(), q.dead_letters())[1], 20, "dead letter")
    [dead] = q.dead_letters()
    assert dead.match_id == "m-doomed" and dead.deliveries == 3
    assert "failed 3 times" in dead.reason
    assert "RuntimeError: bot endpoint unreachable for m-doomed" in dead.reason
    assert w.stats.failures == 3 and w.stats.dead_lettered == 1
    assert q.get_result("m-fine") is not None and q.get_result("m-doomed") is None
    assert q.depth() == 0


def test_runner_returning_the_wrong_match_is_a_failure(r):
    q = MatchQueue(r, max_deliveries=1)
    q.enqueue(make_spec("m-1"))

    def confused(spec: MatchSpec) -> MatchResult:
        return play(make_spec("m-other"))

    w = Worker(r, confused, "w1", block_ms=50, max_deliveries=1)
    assert w.run_once()
    [dead] = q.dead_letters()
    assert "result for m-other" in dead.reason
    assert q.results_count() == 0


def test_result_recorded_but_not_acked_is_not_replayed(r):
    """Crash between record and ack: the next worker acks without running the match."""
    q = MatchQueue(r)
    spec = make_spec("m-1")
    q.enqueue(spec)
    c = q.claim("w-dead", block_ms=50)
    q.record_result(play(spec))
    calls: list[str] = []
    w = Worker(r, lambda s: calls.append(s.match_id) or play(s), "w2", block_ms=50, stale_ms=50)
    wait_until(lambda: w.run_once() and q.depth() == 0, 10, "ack of recorded match")
    assert calls == [] and c is not None and q.results_count() == 1


def test_warm_stop_finishes_the_current_match(r):
    q = MatchQueue(r)
    for i in range(3):
        q.enqueue(make_spec(f"m-{i}", seed=i))
    started, release = threading.Event(), threading.Event()

    def slow(spec: MatchSpec) -> MatchResult:
        started.set()
        assert release.wait(timeout=20)
        return play(spec)

    w = Worker(r, slow, "w1", block_ms=50, stale_ms=200)
    t = threading.Thread(target=w.run)
    t.start()
    assert started.wait(timeout=20)
    w.stop()  # what the first SIGTERM does
    release.set()
    t.join(timeout=20)
    assert not t.is_alive()
    assert q.results_count() == 1 and q.depth() == 2 and q.pending() == 0
    assert w.stats.recorded == 1
    assert not r.exists(keys.worker_heartbeat("w1"))


def test_heartbeat_key_has_ttl_while_running(r):
    w = Worker(r, play, "w-hb", block_ms=50, heartbeat_ttl_s=7)
    # Stopped by the test once it has looked (not by idling out after 2 s, which a loaded machine could
    # reach before the looking was done: the heartbeat goes with the worker).
    t = threading.Thread(target=w.run)
    t.start()
    wait_until(lambda: r.exists(keys.worker_heartbeat("w-hb")), 30, "heartbeat")
    assert 0 < r.ttl(keys.worker_heartbeat("w-hb")) <= 7
    assert snapshot(r)["workers_alive"] == 1
    w.stop()
    t.join(timeout=20)
    assert not t.is_alive()


def test_load_runner_by_module_and_bad_specs():
    assert load_runner("arena_testkit:play") is play
    with pytest.raises(ValueError, match="module:function"):
        load_runner("no_colon")
    with pytest.raises(ValueError, match="not a callable"):
        load_runner("arena_testkit:nothing_here")


def test_a_heartbeat_too_rare_to_look_live_is_refused(r):
    with pytest.raises(ValueError, match=r"keepalive_interval_s must be at most 5 s .*got 6"):
        Worker(r, play, "w-rare", keepalive_interval_s=6.0)


def test_a_match_played_again_deals_from_a_seed_of_its_own(r):
    """The first attempt deals from the match's seed; an attempt after it failed (and one after a dead
    letter's requeue) from HMAC(secret, "<match id>/<attempt>"), worked out here from the secret; a seed the
    challenger chose is kept at every attempt."""
    import hashlib
    import hmac

    from arena.bots.trust import Seeds, seed_secret

    def secret_seed(text: str) -> int:
        return int.from_bytes(hmac.new(seed_secret(r), text.encode(), hashlib.sha256).digest()[:8], "big") >> 1

    q = MatchQueue(r, max_deliveries=2)
    q.enqueue(make_spec("m-again", seed=Seeds(r).seed("m-again")))
    q.enqueue(make_spec("m-chosen", seed=12345))
    dealt: dict[str, list[int]] = {"m-again": [], "m-chosen": []}

    def fails_twice(spec: MatchSpec) -> MatchResult:
        dealt[spec.match_id].append(spec.seed)
        if len(dealt[spec.match_id]) <= 2:
            raise RuntimeError("the bot's host went away")
        return play(spec)

    w = Worker(r, fails_twice, "w1", block_ms=50, stale_ms=100, max_deliveries=2)
    wait_until(lambda: (w.run_once(), len(q.dead_letters()) == 2)[1], 30, "both matches dead-lettered")
    for dead in q.dead_letters():
        assert q.requeue_dead(dead.dead_id)
    wait_until(lambda: (w.run_once(), q.results_count() == 2)[1], 30, "both matches recorded")
    assert dealt["m-again"] == [secret_seed("m-again"), secret_seed("m-again/2"), secret_seed("m-again/3")]
    assert dealt["m-chosen"] == [12345, 12345, 12345]
    assert json.loads(q.get_result("m-again").record)["seed"] == secret_seed("m-again/3")  # the record says so
    assert r.hgetall(keys.ATTEMPTS) == {}  # cleared with each result
