"""A worker SIGKILLed in the middle of a real match: another worker takes the match over, completes
it, and it counts once (one result, one rating update); the killed worker's bots die with it."""

from __future__ import annotations

import json
import signal
import time

import pytest
from system_helpers import SAMPLES, alive, children, last_json_line, wait_until, worker_proc

from arena import keys
from arena.model import MatchSpec
from arena.queue import MatchQueue
from arena.ratings import Ratings
from arena.registry import Registry, manifest_dict
from referee.bots import load_manifest

STALE_MS = 2000


def _bot(reg, sample):
    m = load_manifest(SAMPLES / sample)
    return reg.register(sample, "tests", manifest=manifest_dict(m), manifest_dir=str(m.directory))[0].bot_id


@pytest.mark.timeout(120)
def test_sigkilled_worker_mid_match_is_completed_by_another_and_counted_once(r, module_redis, tmp_path):
    reg = Registry(r)
    h, rnd = _bot(reg, "heuristic"), _bot(reg, "random")
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
