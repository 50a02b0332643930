"""A worker: claim a match, play it, record the result, acknowledge it.

The match is played by an injected ``runner: Callable[[MatchSpec], MatchResult]``
(the real one drives gRPC bots through the referee; tests pass small local
runners).  The loop in ``Worker.run_once`` reads top to bottom:

    claim (a stale match of a dead worker first, else a new one)
    -> already recorded? (crash between record and ack) -> just ack
    -> delivered too often? -> dead letter
    -> count the attempt (a match played again deals boards of its own: the first attempt's may
       have been seen, by its bots or live on its page)
    -> run, while a background thread keeps the claim alive and heartbeats
    -> record (exactly once by match id) -> ack

Failure handling: a runner exception is counted (``MatchQueue.fail``) and the
match is left pending; once idle for ``stale_ms`` any worker reclaims it.  A
worker that dies (its heartbeat stops) has its matches taken over much sooner:
once it has not beaten for ``WORKER_LIVE_S`` (10 s), the next scan of any
live worker (at most 1 s later) claims them, so within about 11 s.
After ``max_deliveries`` it goes to the dead-letter stream with the reason.
Redis being down (restart) is waited out with bounded backoff; a result that
cannot be recorded within ``record_patience_s`` is dropped and the match is
replayed later rather than blocking forever.

Shutdown: the first SIGTERM/SIGINT is warm (finish the current match, then
exit); the second is cold (raise SystemExit now; the claim goes stale and
another worker replays the match).

Run as a process::

    python -m arena.play.worker --redis redis://127.0.0.1:6379/0 \\
        --runner mypkg.runner:run_match   (or path/to/file.py:function)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

import redis

from arena import metrics
from arena.bots.trust import Seeds
from arena.model import MatchResult, MatchSpec
from arena.play import live
from arena.play.queue import Claimed, MatchQueue
from arena.store import keys
from arena.store.keys import HEARTBEAT_INTERVAL_S, WORKER_LIVE_S
from arena.store.redis_server import connect
from arena.store.retry import REDIS_DOWN, Backoff, patiently

log = logging.getLogger(__name__)
Runner = Callable[[MatchSpec], MatchResult]
T = TypeVar("T")


__all__ = ["WORKER_LIVE_S", "Worker", "WorkerStats", "live_workers", "load_runner"]

# How often a worker scans for matches to take over (a dead worker's, or stale ones) while it finds none.
RECLAIM_SCAN_S = 1.0


def live_workers(r: redis.Redis, now: float | None = None) -> dict[str, float]:
    """Worker id -> unix time of its last heartbeat, for every live worker (``WORKER_LIVE_S``): the one
    definition of a live worker, for the feeder, the API, the gauges and the CLI.  One Redis call."""
    now = time.time() if now is None else now
    # Any: zrangebyscore's reply type is not known to redis-py's stubs.
    seen: Any = r.zrangebyscore(keys.WORKERS, now - WORKER_LIVE_S, "+inf", withscores=True)
    return {str(wid): float(ts) for wid, ts in seen}


def snapshot(r: redis.Redis) -> dict[str, float]:
    """Queue, worker and rating figures as one flat dict (cheap: one call per figure)."""
    q = MatchQueue(r)
    out: dict[str, float] = {
        "queue_depth": float(q.depth()),
        "dead_letters": float(q.dead_letter_count()),
        "results": float(q.results_count()),
        "duplicate_results": float(q.duplicate_results()),
        "queue_pending": float(q.pending()),
        "oldest_pending_age_s": q.oldest_pending_age(),
        "ratings_lag": float(q.ratings_lag()),
        "workers_alive": float(len(live_workers(r))),
    }
    return out


@dataclass
class WorkerStats:
    played: int = 0  # runner returned a result
    recorded: int = 0  # ... and it was the first result for that match
    duplicates: int = 0  # ... but another worker had recorded it already
    failures: int = 0  # runner raised
    dead_lettered: int = 0


class _Heartbeat(threading.Thread):
    """Writes the worker's heartbeat key and keeps the current claim alive."""

    def __init__(self, worker: Worker) -> None:
        super().__init__(name=f"heartbeat-{worker.worker_id}", daemon=True)
        self.w = worker
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.current: Claimed | None = None
        self.lost: bool = False  # another worker took the current match over

    def track(self, claimed: Claimed | None) -> None:
        # No beat here: XREADGROUP/XAUTOCLAIM just reset the entry's idle time,
        # and the next beat comes well within stale_ms.
        with self.lock:
            self.current, self.lost = claimed, False

    def beat(self) -> None:
        with self.lock:
            current = self.current
        try:
            state = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "ts": time.time(),
                "match_id": current.spec.match_id if current else None,
            }
            with self.w.r.pipeline(transaction=False) as p:
                p.set(keys.worker_heartbeat(self.w.worker_id), json.dumps(state), ex=self.w.heartbeat_ttl_s)
                p.zadd(keys.WORKERS, {self.w.worker_id: state["ts"]})
                p.execute()
            if current is not None and not self.w.queue.keep_alive(self.w.worker_id, current.msg_id):
                with self.lock:
                    if self.current is current and not self.lost:
                        self.lost = True
                        log.warning(
                            "%s: match %s was taken over by another worker", self.w.worker_id, current.spec.match_id
                        )
        except (redis.RedisError, OSError) as e:  # bounded by socket timeouts; try again next beat
            log.warning("%s: heartbeat failed: %s", self.w.worker_id, e)

    def run(self) -> None:
        self.beat()  # announce the worker at once, not one interval later
        while not self.stop_event.wait(self.w.keepalive_interval_s):
            self.beat()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=self.w.keepalive_interval_s + 10)


class Worker:
    def __init__(
        self,
        r: redis.Redis,
        runner: Runner,
        worker_id: str,
        *,
        stale_ms: int = 60_000,
        block_ms: int = 1000,
        max_deliveries: int = 3,
        heartbeat_ttl_s: int = int(WORKER_LIVE_S),
        keepalive_interval_s: float | None = None,
        record_patience_s: float = 120.0,
        start_patience_s: float = 120.0,
    ) -> None:
        self.r: Any = r  # Any: redis-py types replies as Awaitable | Any; with decode_responses=True they are str
        self.runner = runner
        self.worker_id = worker_id
        # A worker may start before its Redis is up, or while it restarts (a compose deployment, a remote
        # worker of `arena up`): it waits that out, bounded, rather than die with a traceback.
        self.queue = patiently(
            lambda: MatchQueue(r, max_deliveries=max_deliveries), start_patience_s, what=f"starting {worker_id}"
        )
        self.stale_ms = stale_ms
        self.block_ms = block_ms
        self.heartbeat_ttl_s = heartbeat_ttl_s
        # Beat every HEARTBEAT_INTERVAL_S (well within WORKER_LIVE_S) and refresh well within stale_ms, so
        # a live worker never looks dead and its claim never looks stale.
        default_interval = max(0.05, min(HEARTBEAT_INTERVAL_S, stale_ms / 3000, heartbeat_ttl_s / 3))
        self.keepalive_interval_s = keepalive_interval_s or default_interval
        if self.keepalive_interval_s * 2 > WORKER_LIVE_S:
            # Beating less often would make this live worker look dead, and its matches be taken over.
            raise ValueError(
                f"keepalive_interval_s must be at most {WORKER_LIVE_S / 2:g} s (half of WORKER_LIVE_S), "
                f"got {self.keepalive_interval_s:g}"
            )
        self.record_patience_s = record_patience_s
        self.stats = WorkerStats()
        self._next_reclaim = 0.0  # monotonic time of the next XAUTOCLAIM scan
        self._stop = threading.Event()
        self._signals = 0
        self._hb = _Heartbeat(self)
        self.seeds = Seeds(r)

    # lifecycle --------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        """First SIGTERM/SIGINT: warm stop.  Second: cold (SystemExit now)."""

        def handler(signum: int, _frame: FrameType | None) -> None:
            self._signals += 1
            if self._signals == 1:
                log.info("%s: signal %d, finishing the current match then exiting", self.worker_id, signum)
                self._stop.set()
            else:
                log.warning("%s: second signal, exiting now", self.worker_id)
                raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def stop(self) -> None:
        """Warm stop from another thread: the loop exits after the current match."""
        self._stop.set()

    def run(self, max_matches: int | None = None, idle_exit_s: float | None = None) -> WorkerStats:
        """Loop until stopped, ``max_matches`` handled, or idle for ``idle_exit_s``."""
        self._hb.start()
        handled, idle_since, backoff = 0, time.monotonic(), Backoff()
        try:
            while not self._stop.is_set():
                if max_matches is not None and handled >= max_matches:
                    break
                try:
                    did = self.run_once()
                    backoff.succeeded()
                except REDIS_DOWN as e:
                    log.warning("%s: redis unavailable (%s); retrying in %.1fs", self.worker_id, e, backoff.current)
                    backoff.wait(self._stop)
                    continue
                if did:
                    handled, idle_since = handled + 1, time.monotonic()
                elif idle_exit_s is not None and time.monotonic() - idle_since > idle_exit_s:
                    break
        finally:
            self._hb.stop()
            # Else the TTL and WORKER_LIVE_S retire the worker anyway.
            with contextlib.suppress(redis.RedisError), self.r.pipeline(transaction=False) as p:
                p.delete(keys.worker_heartbeat(self.worker_id))
                p.zrem(keys.WORKERS, self.worker_id)
                p.execute()
        return self.stats

    # one match --------------------------------------------------------------------

    def run_once(self) -> bool:
        """Handle at most one match.  Returns False if there was none to handle."""
        claimed = None
        if time.monotonic() >= self._next_reclaim:
            # Taken-over matches first (their bots are waiting longest): a dead worker's (its heartbeat is
            # older than WORKER_LIVE_S), then any left idle for stale_ms.  Checked at most every
            # RECLAIM_SCAN_S while none are found: a scan per match would cost more than the claim itself.
            claimed = self.queue.reclaim_orphaned(self.worker_id, live_workers(self.r), int(WORKER_LIVE_S * 1000))
            if claimed is None:
                claimed = self.queue.reclaim_stale(self.worker_id, self.stale_ms)
            if claimed is None:
                self._next_reclaim = time.monotonic() + min(RECLAIM_SCAN_S, self.stale_ms / 4000)
        if claimed is None:
            claimed = self.queue.claim(self.worker_id, self.block_ms)
        if claimed is None:
            return False
        spec = claimed.spec
        if self.queue.is_recorded(spec.match_id):
            # Its result was recorded but the worker died before acking.
            self.queue.ack(claimed)
            return True
        if claimed.deliveries > self.queue.max_deliveries:
            why = self.queue.last_error(spec.match_id) or "worker died or hung mid-match"
            reason = f"delivered {claimed.deliveries} times without a result; last error: {why}"
            if self.queue.dead_letter(claimed, self.worker_id, reason):
                self.stats.dead_lettered += 1
            return True

        log.info("%s: playing %s (delivery %d)", self.worker_id, spec.match_id, claimed.deliveries)
        # A match played again deals other boards: the first attempt's may have been seen (Seeds.for_attempt).
        attempt = self.queue.start_attempt(spec.match_id)
        spec = dataclasses.replace(spec, seed=self.seeds.for_attempt(spec.match_id, spec.seed, attempt))
        self._hb.track(claimed)
        error: Exception | None = None
        started = time.monotonic()
        try:
            result = self.runner(spec)
            if result.match_id != spec.match_id or result.ladder != spec.ladder:
                raise ValueError(f"runner returned a result for {result.match_id}/{result.ladder}")
            if result.ruleset is None:  # stored with the result, for the lists of matches (ArenaRunner sets it)
                result = dataclasses.replace(result, ruleset=spec.ruleset)
        except Exception as e:  # the runner is foreign code: any failure is the match's failure
            error = e
        finally:
            self._hb.track(None)  # also on SystemExit (cold stop): the claim then goes stale

        if error is not None:
            self.stats.failures += 1
            reason = f"{type(error).__name__}: {error}"
            # With its traceback: the runner raises only for what is not a match's result (a bug, Redis away
            # past the patience), which the operator needs to see whole.
            log.warning("%s: match %s failed: %s", self.worker_id, spec.match_id, reason, exc_info=error)
            live.discard(self.r, spec.match_id)  # this attempt is not the match's: its next one starts afresh
            if self._patiently(lambda: self.queue.fail(claimed, self.worker_id, reason), f"failing {spec.match_id}"):
                self.stats.dead_lettered += 1
            return True

        self.stats.played += 1
        metrics.observe_match_duration(spec.ruleset, time.monotonic() - started)
        recorded = self._patiently(
            lambda: self.queue.record_result(result, spec.in_flight_bots()), f"recording the result of {spec.match_id}"
        )
        live.discard(self.r, spec.match_id)  # its page shows the replay now, every hand in it
        if recorded:
            self.stats.recorded += 1
        else:
            self.stats.duplicates += 1
            log.warning("%s: %s already recorded elsewhere; not counted", self.worker_id, spec.match_id)
        self._patiently(lambda: self.queue.ack(claimed), f"acknowledging {spec.match_id}")
        return True

    def _patiently(self, fn: Callable[[], T], what: str) -> T:
        """Retry ``fn`` while Redis is down, for at most ``record_patience_s``.
        Work already done (a played match) is worth waiting a restart out."""
        return patiently(fn, self.record_patience_s, what=what)


def load_runner(spec: str) -> Runner:
    """``package.module:function`` or ``path/to/file.py:function``."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"runner must look like module:function or file.py:function, got {spec!r}")
    if target.endswith(".py"):
        mspec = importlib.util.spec_from_file_location(f"_arena_runner_{abs(hash(target))}", target)
        if mspec is None or mspec.loader is None:
            raise ValueError(f"cannot load runner file {target!r}")
        module = importlib.util.module_from_spec(mspec)
        mspec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{name!r} in {target!r} is not a callable runner")
    runner: Runner = fn
    return runner


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="pilotta-arena match worker")
    ap.add_argument("--redis", default=os.environ.get("ARENA_REDIS_URL", "redis://127.0.0.1:6379/0"))
    ap.add_argument("--redis-password-file", default=None, help="file holding the Redis password")
    ap.add_argument("--runner", required=True, help="module:function or file.py:function")
    ap.add_argument("--worker-id", default=f"{socket.gethostname()}-{os.getpid()}")
    ap.add_argument("--stale-ms", type=int, default=60_000, help="reclaim matches idle this long")
    ap.add_argument("--block-ms", type=int, default=1000)
    ap.add_argument("--max-deliveries", type=int, default=3)
    ap.add_argument("--max-matches", type=int, default=None)
    ap.add_argument("--idle-exit-s", type=float, default=None, help="exit after this long with no work")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker = Worker(
        connect(args.redis, password_file=args.redis_password_file),
        load_runner(args.runner),
        args.worker_id,
        stale_ms=args.stale_ms,
        block_ms=args.block_ms,
        max_deliveries=args.max_deliveries,
    )
    worker.install_signal_handlers()
    stats = worker.run(max_matches=args.max_matches, idle_exit_s=args.idle_exit_s)
    print(json.dumps({"worker": args.worker_id, **vars(stats)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
