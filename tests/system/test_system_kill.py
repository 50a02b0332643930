"""A worker SIGKILLed in the middle of a real match: another worker takes the match over, completes
it, and it counts once (one result, one rating update); the killed worker's bots die with it.  With one
of two workers SIGKILLed under a running ladder, the ladder does not stall."""

from __future__ import annotations

import itertools
import json
import signal
import time

import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import SAMPLES, TIMEOUT, alive, children, last_json_line, register, wait_until, worker_proc

from arena.bots.inputs import manifest_dict
from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.queue import MatchQueue
from arena.play.worker import RECLAIM_SCAN_S
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.store.keys import WORKER_LIVE_S
from arena.store.streams import server_ms
from referee.match.bots import load_manifest

STALE_MS = 2000


def _bot(reg, sample):
    m = load_manifest(SAMPLES / sample)
    return reg.register(sample, "tests", manifest=manifest_dict(m), manifest_dir=str(m.directory))[0].bot_id


@pytest.mark.timeout(120)
def test_sigkilled_worker_mid_match_is_completed_by_another_and_counted_once(r, module_redis, tmp_path):
    reg = Registry(r)
    # uniform, not random: random passes with a weak hand, and a deal all four pass is thrown in, which
    # counts towards the 80 boards but not the deals played.
    h, rnd = _bot(reg, "heuristic"), _bot(reg, "uniform")
    queue = MatchQueue(r)
    # Long enough to be caught mid-play: 40 deals per leg, a target no one reaches.
    spec = MatchSpec("m-kill", "lad", "pilotta", 5, (h, rnd), deals=40, options={"target": 1_000_000})
    queue.enqueue(spec)

    a = worker_proc(
        module_redis.url, "w-a", tmp_path / "a.log", "--stale-ms", str(STALE_MS), "--bot-logs", str(tmp_path / "bots-a")
    )
    b = None
    try:

        def playing():
            beat = r.get(keys.worker_heartbeat("w-a"))
            return beat is not None and json.loads(beat)["match_id"] == "m-kill"

        wait_until(playing, 30, "worker A to claim the match")
        # Its two bots serving (started by the runner) means the match itself is under way.
        bots = wait_until(
            lambda: [p for p in children(a.pid) if alive(p)] if len(children(a.pid)) >= 2 else None,
            30,
            "worker A's bots",
        )
        time.sleep(1.0)
        assert not queue.is_recorded("m-kill"), "the match ended before the kill: make it longer"
        a.send_signal(signal.SIGKILL)
        assert a.wait(timeout=10) == -signal.SIGKILL
        # PR_SET_PDEATHSIG: the killed worker's bots go with it, nothing is left running.
        wait_until(lambda: not any(alive(p) for p in bots), 10, "worker A's bots to die")

        b = worker_proc(
            module_redis.url,
            "w-b",
            tmp_path / "b.log",
            "--stale-ms",
            str(STALE_MS),
            "--max-matches",
            "1",
            "--bot-logs",
            str(tmp_path / "bots-b"),
        )
        assert b.wait(timeout=90) == 0
    finally:
        for p in (a, b):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)

    stats = last_json_line(tmp_path / "b.log")
    assert stats["recorded"] == 1 and stats["duplicates"] == 0 and stats["failures"] == 0
    result = queue.get_result("m-kill")
    assert result is not None and result.forfeit is None and result.deals_played == 80
    assert queue.results_count() == 1 and queue.duplicate_results() == 0
    assert queue.depth() == 0 and queue.pending() == 0 and queue.dead_letters() == []
    ratings = Ratings(r)
    assert ratings.process("tests", block_ms=100) == 1
    assert ratings.process("tests", block_ms=100) == 0
    assert ratings.get("lad", h).games == 1 and ratings.get("lad", rnd).games == 1


# A dead worker's matches are taken over once its heartbeat is WORKER_LIVE_S old, by the next scan of a live
# worker (RECLAIM_SCAN_S later at most), and then played: the longest stretch without a finished match is
# bounded by that plus the longest match (a few seconds here) and a margin for a shared 2-core machine.
TAKEOVER_BOUND_S = WORKER_LIVE_S + RECLAIM_SCAN_S + 1.0
STALL_BOUND_S = TAKEOVER_BOUND_S + 9.0


def _finished_at(r) -> list[float]:
    """Server time (s) of every recorded result: the results stream's entry ids are its clock in ms."""
    return [int(entry_id.split("-")[0]) / 1000 for entry_id, _f in r.xrange(keys.RESULTS_STREAM)]


@pytest.mark.timeout(150)
def test_sigkilled_worker_of_two_does_not_stall_the_ladder(r, admin, api, stub, module_redis, tmp_path):
    for name, sample in (("heuristic", "heuristic"), ("random", "random"), ("random-b", "random")):
        register(stub, admin, name, sample)
    # The workers' default stale_ms (60 s): only the heartbeat take-over can keep the ladder going.
    workers = {
        wid: worker_proc(module_redis.url, wid, tmp_path / f"{wid}.log", "--bot-logs", str(tmp_path / wid))
        for wid in ("w-a", "w-b")
    }
    ladder = stub.StartLadder(
        # One match per bot at a time: the dead worker's match holds two of the three bots, so no other
        # match can be scheduled until it is taken over (the 44.8 s stall).
        arena_pb2.StartLadderRequest(token=admin, ruleset="pilotta", deals=3, max_in_flight=1),
        timeout=TIMEOUT,
    ).ladder
    try:
        wait_until(lambda: len(_finished_at(r)) >= 4, 60, "the first matches to finish")

        def playing() -> str | None:  # a match worker A has claimed and not finished
            claims = r.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, "-", "+", 1, consumername="w-a")
            entry = r.xrange(keys.MATCH_STREAM, claims[0]["message_id"], claims[0]["message_id"]) if claims else []
            return entry[0][1]["match_id"] if entry and not r.exists(keys.result(entry[0][1]["match_id"])) else None

        match_id = wait_until(playing, 60, "worker A to be mid-match", poll_s=0.02)
        workers["w-a"].send_signal(signal.SIGKILL)
        killed_at = server_ms(r) / 1000
        assert workers["w-a"].wait(timeout=10) == -signal.SIGKILL
        # Watch the ladder for a while after the kill: long enough for the take-over and more.
        wait_until(lambda: server_ms(r) / 1000 > killed_at + STALL_BOUND_S + 10, 60, "the watch window", poll_s=0.5)
        wait_until(lambda: r.exists(keys.result(match_id)), 30, f"the killed worker's match {match_id} recorded")
        watched_until = server_ms(r) / 1000
    finally:
        stub.StopLadder(arena_pb2.StopLadderRequest(token=admin, ladder=ladder), timeout=TIMEOUT)
        for p in workers.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(10)

    finished = [t for t in _finished_at(r) if t <= watched_until]
    times = [killed_at, *[t for t in finished if t > killed_at], watched_until]
    longest = max(b - a for a, b in itertools.pairwise(times))
    assert longest < STALL_BOUND_S, f"longest stretch without a finished match: {longest:.1f} s"
    # The killed worker's match was taken over by w-b (a second delivery) well before the 60 s stale_ms.
    result_id = next(i for i, f in r.xrange(keys.RESULTS_STREAM) if f["match_id"] == match_id)
    taken_over_in = int(result_id.split("-")[0]) / 1000 - killed_at
    assert taken_over_in < STALL_BOUND_S, f"the killed worker's match finished {taken_over_in:.1f} s after the kill"
    assert MatchQueue(r).duplicate_results() == 0
    print(f"\ndead worker: longest stretch {longest:.1f} s, its match finished {taken_over_in:.1f} s after the kill")
