"""Benchmark of the whole arena: real matches per second with 1 and 2 worker processes, for bots speaking
protocol version 1 and version 2.

Real ``arena worker`` processes, the real runner, the real sample bots (random vs heuristic, Python
manifest bots the workers start) and a local embedded Redis.  Matches are short: a duplicate pair of
exactly ``--deals`` deals per leg.  The same bots speak version 1 (unary calls; ``PILOTTA_BOT_PROTOCOL=1``
in their environment keeps the SDK there) or version 2 (a stream per seat, what the SDK chooses), the two
alternating run by run (``--rounds``) so that both see the same machine.  For each setting it prints

* matches/s from the workers' start to the last recorded result (includes starting the bots), and
* steady matches/s from the first to the last recorded result (warm bots), and the mean match time;

plus one run with ``--fresh-bots`` (bots started anew for every match) to show what warm bots save, and
the ratio version 2 / version 1 of the steady figures (medians over the rounds).  ``--baseline DIR``
(another checkout of the repository, e.g. ``git worktree add /tmp/base main``) plays every run with
that checkout's workers and bots too, right after this one's, and adds the ratios this code / baseline.
Each run records the load average before it.  Ends with one JSON object holding every figure.

Usage: ``python bench/bench_arena.py [--matches 60] [--deals 2] [--rounds 2] [--quick] [--baseline DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Runnable as a plain script from anywhere: make the repo importable.
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from arena.bots.inputs import manifest_dict  # noqa: E402
from arena.bots.registry import Registry  # noqa: E402
from arena.model import MatchSpec  # noqa: E402
from arena.play.queue import MatchQueue  # noqa: E402
from arena.store import keys  # noqa: E402
from arena.store.redis_server import EmbeddedRedis, connect  # noqa: E402
from referee.match.bots import load_manifest  # noqa: E402
from referee.match.cputime import descendants  # noqa: E402


def setup(r: Any, matches: int, deals: int) -> None:
    """A fresh arena: the two sample bots registered, ``matches`` matches queued."""
    r.flushall()
    reg = Registry(r)
    ids = []
    for name in ("random", "heuristic"):
        m = load_manifest(REPO / "sample_bots" / name)
        ids.append(reg.register(name, "bench", manifest=manifest_dict(m), manifest_dir=str(m.directory))[0].bot_id)
    queue = MatchQueue(r)
    for i in range(matches):
        a, b = (ids[0], ids[1]) if i % 2 == 0 else (ids[1], ids[0])
        # A target no one reaches: every match is exactly ``deals`` deals per leg, whoever plays.
        queue.enqueue(
            MatchSpec(
                f"m-{i:05d}",
                "bench",
                "pilotta",
                1000 + i,
                (a, b),
                deals=deals,
                options={"target": 1_000_000},
                created=time.time(),
            )
        )


# ``setup`` of another checkout's bench_arena, run with that checkout's code.
_SETUP = (
    "import sys; sys.path.insert(0, sys.argv[1] + '/bench'); import bench_arena as b; "
    "from arena.store.redis_server import connect; b.setup(connect(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))"
)


def cpu_ms(workers: list[int]) -> tuple[float, float]:
    """CPU time so far (user + system, ms) of the worker processes, and of every process below them (their
    bots), from /proc: the steady window's split between referee and bots is the difference of two of these.
    (Bots that ended in between are not counted; in the steady window warm bots do not end.)"""
    tick = 1000.0 / os.sysconf("SC_CLK_TCK")

    def own(pid: int) -> float:
        try:
            text = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            return 0.0
        fields = text[text.rfind(b")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) * tick

    worker_ms = sum(own(p) for p in workers)
    bots_ms = sum(own(b) for p in workers for b in descendants(p)[1:])  # (descendants() lists p first)
    return worker_ms, bots_ms


def run(
    url: str,
    r: Any,
    workers: int,
    matches: int,
    deals: int,
    fresh: bool,
    logs: Path,
    protocol: int,
    root: Path = REPO,
) -> dict[str, Any]:
    """One run with the workers and bots of the checkout at ``root`` (this one by default)."""
    load = os.getloadavg()[0]
    env = {**os.environ, "PILOTTA_BOT_PROTOCOL": str(protocol)}  # the workers pass it on to their bots
    if root == REPO:
        setup(r, matches, deals)
    else:  # that checkout's code first (the workers' bots put their own checkout first too)
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "sample_bots" / "python")])
        # Its own registry writes the bots and matches: the stored format may differ between versions.
        subprocess.run(
            [sys.executable, "-c", _SETUP, str(root), url, str(matches), str(deals)], cwd=root, env=env, check=True
        )
    extra = ["--fresh-bots"] if fresh else []
    t0 = time.monotonic()
    cmds = [
        [
            sys.executable,
            "-m",
            "arena.cli",
            "worker",
            "--redis",
            url,
            "--worker-id",
            f"bench-{i}",
            "--health-port",
            "-1",
            "--idle-exit-s",
            "2",
            "--log-level",
            "WARNING",
            "--bot-logs",
            str(logs),
            *extra,
        ]
        for i in range(workers)
    ]
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root, env=env) for c in cmds]
    first = None
    cpu_first = cpu_last = (0.0, 0.0)
    deadline = time.monotonic() + 30 + matches * (5 if fresh else 1)
    try:
        while True:
            n = int(r.xlen(keys.RESULTS_STREAM))
            if n and first is None:
                first = time.monotonic()
                cpu_first = cpu_ms([p.pid for p in procs])
            if n >= matches:
                cpu_last = cpu_ms([p.pid for p in procs])
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"bench: only {n}/{matches} matches after the time limit")
            time.sleep(0.01)
        last = time.monotonic()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
    assert first is not None
    deals_played = sum(json.loads(r.get(keys.result(f"m-{i:05d}")))["deals_played"] for i in range(matches))
    steady = (matches - 1) / (last - first) if last > first else float("nan")
    return {
        "code": "this" if root == REPO else str(root),
        "load_before": load,
        "workers": workers,
        "protocol_version": protocol,
        "fresh_bots": fresh,
        "matches": matches,
        "matches_per_s": matches / (last - t0),
        "steady_matches_per_s": steady,
        "first_result_s": first - t0,
        "deals_per_match": deals_played / matches,
        "deals_per_s_steady": steady * deals_played / matches,
        # CPU per match in the steady window: the workers (referee, runner, Redis client) and their bots.
        "worker_cpu_ms_per_match": (cpu_last[0] - cpu_first[0]) / max(matches - 1, 1),
        "bots_cpu_ms_per_match": (cpu_last[1] - cpu_first[1]) / max(matches - 1, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=60)
    ap.add_argument("--deals", type=int, default=2, help="deals per leg (default 2)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the version 1 / version 2 runs (default 2)")
    ap.add_argument("--quick", action="store_true", help="fewer matches, one round")
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout to run beside this one")
    args = ap.parse_args()
    roots = [REPO] if args.baseline is None else [REPO, args.baseline.resolve()]
    matches = 20 if args.quick else args.matches
    rounds = 1 if args.quick else args.rounds
    print(
        f"bench_arena: {os.cpu_count()} CPUs; random vs heuristic, duplicate matches of {args.deals} "
        f"deals per leg; {matches} matches per run; {rounds} rounds of version 1 and version 2 runs"
    )
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-arena-") as tmp, EmbeddedRedis(Path(tmp) / "redis") as srv:
        r = connect(srv.url)
        plan = [(w, False, matches, v, root) for _ in range(rounds) for w in (1, 2) for root in roots for v in (1, 2)]
        plan.append((1, True, max(6, matches // 6), 2, REPO))
        for workers, fresh, n, protocol, root in plan:
            res = run(srv.url, r, workers, n, args.deals, fresh, Path(tmp) / "bot-logs", protocol, root)
            out.append(res)
            print(
                f"  {'' if root == REPO else 'baseline '}{workers} worker{'s' if workers > 1 else ' '} "
                f"version {protocol} {'fresh bots' if fresh else 'warm bots '}: "
                f"{res['matches_per_s']:5.2f} matches/s overall, {res['steady_matches_per_s']:5.2f} steady "
                f"({res['deals_per_match']:.1f} deals/match, {res['deals_per_s_steady']:.0f} deals/s; "
                f"first result after {res['first_result_s']:.1f} s; load {res['load_before']:.1f}; CPU per match: "
                f"workers {res['worker_cpu_ms_per_match']:.0f} ms, bots {res['bots_cpu_ms_per_match']:.0f} ms)",
                flush=True,
            )
        r.close()
    ratios: dict[str, float] = {}
    for root in roots:
        code = "this" if root == REPO else str(root)
        for workers in (1, 2):
            steady = {
                v: statistics.median(
                    x["steady_matches_per_s"]
                    for x in out
                    if x["workers"] == workers
                    and x["protocol_version"] == v
                    and not x["fresh_bots"]
                    and x["code"] == code
                )
                for v in (1, 2)
            }
            key = f"{workers}_workers" if root == REPO else f"baseline_{workers}_workers"
            ratios[key] = round(steady[2] / steady[1], 3)
            print(
                f"  {'' if root == REPO else 'baseline '}{workers} worker{'s' if workers > 1 else ''}: version 2 "
                f"{steady[2]:.2f} / version 1 {steady[1]:.2f} steady matches/s = {steady[2] / steady[1]:.2f}x "
                f"(medians of {rounds} runs each; target at least 1.5x on one worker)"
            )
            if root != REPO:
                for v in (1, 2):
                    mine = statistics.median(
                        x["steady_matches_per_s"]
                        for x in out
                        if x["workers"] == workers
                        and x["protocol_version"] == v
                        and not x["fresh_bots"]
                        and x["code"] == "this"
                    )
                    ratios[f"this_over_baseline_{workers}_workers_v{v}"] = round(mine / steady[v], 3)
                    print(f"    this code / baseline, version {v}: {mine / steady[v]:.2f}x")
    print(json.dumps({"bench": "arena", "runs": out, "v2_over_v1_steady": ratios}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
