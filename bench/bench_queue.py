"""Benchmark of the arena's Redis queue (runs in well under two minutes).

Prints human-readable lines, then one JSON object with every figure:

1. queue cost per match: enqueue + claim + record_result + ack, one process,
   a no-op match (the result is prebuilt), against a local embedded Redis;
2. matches/s with 1 and 2 worker processes (``python -m arena.play.worker``) on a
   trivial runner, measured from the first enqueue to the last result;
3. 10,000 queued matches: enqueue rate and Redis memory per queued match
   (``used_memory`` delta, includes the stream entry and the enqueued-id set).

Usage: ``python bench/bench_queue.py [--quick] [--baseline DIR]``

``--baseline DIR`` (a checkout of another commit, e.g. ``git worktree add /tmp/base main``) then measures
figures 1 and 2 (1 worker) for DIR's arena code and this checkout's, alternating, several rounds, each in
a fresh process with its own Redis, and prints each side's median and the median of the paired ratios
(this / baseline): on a shared machine only a ratio measured side by side means anything.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Runnable as a plain script from anywhere: make the repo importable; ``--code DIR`` measures the arena
# code of another checkout instead (what ``--baseline`` runs).
REPO = Path(__file__).resolve().parents[1]
CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve() if "--code" in sys.argv[:-1] else REPO
sys.path.insert(0, str(CODE))

from arena.model import MatchResult, MatchSpec  # noqa: E402
from arena.play.queue import MatchQueue  # noqa: E402
from arena.store import keys  # noqa: E402
from arena.store.redis_server import EmbeddedRedis, connect  # noqa: E402


def spec(i: int) -> MatchSpec:
    # From JSON with the ruleset under its old key "variant", which every version of the arena reads.
    d = {"match_id": f"m-{i:07d}", "ladder": "bench", "variant": "cypriot", "seed": i, "bots": ["b-aaaa", "b-bbbb"]}
    return MatchSpec.from_json(json.dumps({**d, "options": {"belote": True}, "deals": 8, "created": time.time()}))


def trivial(s: MatchSpec) -> MatchResult:
    """The no-op runner the worker processes use (loaded as bench_queue.py:trivial)."""
    # Where results store their ruleset (as the real runner does), give it, so that the worker has
    # nothing to add; arenas from before that field get the same result without it.
    stored: dict[str, Any] = (
        {"ruleset": getattr(s, "ruleset", None)} if "ruleset" in MatchResult.__dataclass_fields__ else {}
    )
    return MatchResult(
        match_id=s.match_id,
        ladder=s.ladder,
        seats=s.seats(),
        winner=s.seed % 2,
        points=(100, 62),
        deals_played=8,
        duplicate=s.duplicate,
        **stored,
    )


def wait_until(pred: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: timed out waiting for {what}")
        time.sleep(0.01)


def bench_queue_cost(url: str, n: int) -> float:
    r = connect(url)
    r.flushall()
    q = MatchQueue(r)
    specs = [spec(i) for i in range(n)]
    results = [trivial(s) for s in specs]  # prebuilt: measure the queue, not the dataclasses
    t0 = time.perf_counter()
    for s, res in zip(specs, results, strict=True):
        q.enqueue(s)
        c = q.claim("bench", block_ms=100)
        assert c is not None
        q.record_result(res)
        q.ack(c)
    dt = time.perf_counter() - t0
    assert q.results_count() == n and q.depth() == 0
    return dt / n


def bench_workers(url: str, n_workers: int, n: int, logs: Path) -> float:
    r = connect(url)
    r.flushall()
    q = MatchQueue(r)
    procs = []
    for k in range(n_workers):
        wid = f"bench-{n_workers}-{k}"
        with open(logs / f"{wid}.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "arena.play.worker",
                        "--redis",
                        url,
                        "--worker-id",
                        wid,
                        "--runner",
                        f"{Path(__file__).resolve()}:trivial",
                        "--block-ms",
                        "100",
                        "--log-level",
                        "ERROR",
                    ],
                    cwd=CODE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        wait_until(
            lambda: all(r.exists(keys.worker_heartbeat(f"bench-{n_workers}-{k}")) for k in range(n_workers)),
            30,
            "workers to start",
        )
        t0 = time.perf_counter()
        with r.pipeline(transaction=False) as p:  # enqueue fast so workers never starve
            for i in range(n):
                s = spec(i)
                p.sadd(keys.ENQUEUED, s.match_id)
                p.xadd(keys.MATCH_STREAM, {"match_id": s.match_id, "spec": s.to_json()})
            p.execute()
        wait_until(lambda: q.results_count() >= n, 90, "all matches to finish")
        dt = time.perf_counter() - t0
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
    assert q.results_count() == n and q.duplicate_results() == 0
    return n / dt


def bench_backlog(url: str, n: int) -> tuple[float, float]:
    r = connect(url)
    r.flushall()
    q = MatchQueue(r)
    specs = [spec(i) for i in range(n)]
    mem0 = int(r.info("memory")["used_memory"])
    t0 = time.perf_counter()
    for s in specs:
        q.enqueue(s)
    dt = time.perf_counter() - t0
    mem1 = int(r.info("memory")["used_memory"])
    assert q.depth() == n
    return n / dt, (mem1 - mem0) / n


def side_by_side(baseline: Path, rounds: int, quick: bool) -> dict[str, object]:
    """Figures 1 and 2 (1 worker) of ``baseline``'s code and this checkout's, alternating."""
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "this": []}
    for i in range(rounds):
        for side, code in (
            (("baseline", baseline), ("this", REPO)) if i % 2 == 0 else (("this", REPO), ("baseline", baseline))
        ):
            cmd = [sys.executable, __file__, "--one", "--code", str(code)] + (["--quick"] if quick else [])
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
            runs[side].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {i + 1} {side:<8} {runs[side][-1]}", flush=True)
    figures: dict[str, object] = {"rounds": rounds, "baseline": str(baseline)}
    for key in ("queue_cost_us_per_match", "matches_per_s_1_worker"):
        base = [r[key] for r in runs["baseline"]]
        this = [r[key] for r in runs["this"]]
        ratio = statistics.median(t / b for t, b in zip(this, base, strict=True))
        figures[key] = {"baseline": statistics.median(base), "this": statistics.median(this), "ratio": round(ratio, 3)}
        print(f"{key}: baseline {statistics.median(base):.1f}, this {statistics.median(this):.1f}, ratio {ratio:.3f}")
    return figures


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller counts (CI smoke run)")
    ap.add_argument("--baseline", type=Path, default=None, help="compare with the arena code of this checkout")
    ap.add_argument("--rounds", type=int, default=6, help="with --baseline: rounds per side (default 6)")
    ap.add_argument("--code", type=Path, default=None, help=argparse.SUPPRESS)  # read at import, see CODE
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # one side of --baseline
    args = ap.parse_args()
    if args.baseline is not None:
        print(json.dumps(side_by_side(args.baseline.resolve(), args.rounds, args.quick), sort_keys=True))
        return 0
    n_cost, n_workers_matches, n_backlog = (300, 300, 2000) if args.quick else (3000, 3000, 10_000)
    if args.one:
        with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis") as srv:
            cost = bench_queue_cost(srv.url, n_cost)
            rate1 = bench_workers(srv.url, 1, n_workers_matches, Path(tmp))
        print(json.dumps({"queue_cost_us_per_match": round(cost * 1e6, 1), "matches_per_s_1_worker": round(rate1, 1)}))
        return 0
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis") as srv:
        # Benchmarks measure the queue, not the disk: fsync stays "everysec" as in production.
        logs = Path(tmp)
        cost = bench_queue_cost(srv.url, n_cost)
        print(f"queue cost per match (enqueue+claim+record+ack, no-op match): {cost * 1e6:.0f} us")
        rate1 = bench_workers(srv.url, 1, n_workers_matches, logs)
        print(f"matches/s, 1 worker process, trivial runner:  {rate1:.0f}")
        rate2 = bench_workers(srv.url, 2, n_workers_matches, logs)
        print(f"matches/s, 2 worker processes, trivial runner: {rate2:.0f}")
        enq_rate, mem_per = bench_backlog(srv.url, n_backlog)
        print(
            f"{n_backlog} queued matches: enqueue {enq_rate:.0f}/s (one round trip each), "
            f"{mem_per:.0f} bytes of Redis memory per queued match"
        )
        figures = {
            "queue_cost_us_per_match": round(cost * 1e6, 1),
            "matches_per_s_1_worker": round(rate1, 1),
            "matches_per_s_2_workers": round(rate2, 1),
            "backlog_matches": n_backlog,
            "enqueue_per_s": round(enq_rate, 1),
            "redis_bytes_per_queued_match": round(mem_per, 1),
            "redis_executable": srv.executable,
            "cpu_count": os.cpu_count(),
        }
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
