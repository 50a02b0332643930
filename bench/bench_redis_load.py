"""What a ladder asks of Redis, per match and per idle worker: the figures behind docs/operating.md's estimate
of what a 100-worker deployment needs from its Redis.

A whole arena as ``arena up`` runs it (``arena.cli.stack``: an embedded Redis, the API with its ladder feeder
and ratings updater, ``--workers`` real worker processes), the sample ``random`` and ``heuristic`` bots, and
a duplicate ladder of ``--matches`` matches of ``--deals`` boards. Redis's own counters (``CONFIG
RESETSTAT``, then ``INFO commandstats`` and ``INFO stats``) are read over two windows:

* idle: the arena running, no ladder (``--idle-s`` seconds): what workers, API and feeder cost doing
  nothing (heartbeats, blocking reads that time out, the metrics' polls), per worker and second;
* ladder: from the ladder's start until every match is played and rated: commands, bytes in and out and the
  memory kept (records, results, logs' indexes), per match, with the commands that dominate.

It prints one JSON object. The estimate for N workers is then idle x N plus the per-match figures times the
matches a second they play (docs/operating.md measured 1.7 to 2.9 a core with these bots).

Usage: ``python bench/bench_redis_load.py [--matches 60] [--deals 2] [--workers 2] [--idle-s 10]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc  # noqa: E402

from arena.cli.stack import Stack, UpConfig  # noqa: E402
from arena.store import keys  # noqa: E402

CALL_TIMEOUT_S = 10.0


def counters(r: Any) -> dict[str, Any]:
    """Redis's command calls (by command), bytes in and out, and memory used, as of now."""
    stats = r.info("stats")
    calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in r.info("commandstats").items()}
    return {
        "calls": calls,
        "in": int(stats["total_net_input_bytes"]),
        "out": int(stats["total_net_output_bytes"]),
        "memory": int(r.info("memory")["used_memory"]),
    }


def window(r: Any, before: dict[str, Any], seconds: float, per: float) -> dict[str, Any]:
    """What happened in Redis since ``before``, divided by ``per`` (matches, or worker-seconds)."""
    now = counters(r)
    calls = {k: v - before["calls"].get(k, 0) for k, v in now["calls"].items()}
    calls = {k: v for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v > 0}
    total = sum(calls.values())
    return {
        "seconds": round(seconds, 1),
        "commands": round(total / per, 1),
        "commands_per_s": round(total / seconds, 1),
        "bytes_in": round((now["in"] - before["in"]) / per),
        "bytes_out": round((now["out"] - before["out"]) / per),
        "memory_kept": round((now["memory"] - before["memory"]) / per),
        "top_commands": {k: round(v / per, 1) for k, v in list(calls.items())[:12]},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=60)
    ap.add_argument("--deals", type=int, default=2, help="boards per duplicate match (default 2)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--idle-s", type=float, default=10.0, help="the idle window (default 10 s)")
    ap.add_argument("--timeout", type=float, default=600.0, help="give up after this long (s)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        stack = Stack(
            UpConfig(
                data_dir=Path(tmp) / "arena",
                workers=args.workers,
                api_port=0,
                web_port=0,
                metrics_port=None,
                worker_args=["--log-level", "WARNING"],
            )
        )
        stack.start()
        try:
            assert stack.api is not None and stack.r is not None
            r = stack.r
            with grpc.insecure_channel(stack.api.address) as channel:
                api = arena_pb2_grpc.ArenaStub(channel)
                for name in ("random", "heuristic"):
                    directory = REPO / "sample_bots" / name
                    api.RegisterBot(
                        arena_pb2.RegisterBotRequest(
                            name=name,
                            owner="bench",
                            token=stack.admin_token or "",
                            source=arena_pb2.BotSource(
                                manifest_json=(directory / "manifest.json").read_text(), manifest_dir=str(directory)
                            ),
                        ),
                        timeout=CALL_TIMEOUT_S,
                    )
                time.sleep(2.0)  # the workers' start-up (probes, first reads) out of the idle window
                r.config_resetstat()
                before, t0 = counters(r), time.monotonic()
                time.sleep(args.idle_s)
                idle = window(r, before, time.monotonic() - t0, per=args.workers * args.idle_s)

                r.config_resetstat()
                before, t0 = counters(r), time.monotonic()
                run = api.StartLadder(
                    arena_pb2.StartLadderRequest(
                        token=stack.admin_token or "",
                        ruleset="pilotta",
                        deals=args.deals,
                        matches=args.matches,
                        max_in_flight=args.workers,
                    ),
                    timeout=CALL_TIMEOUT_S,
                )
                deadline = t0 + args.timeout
                while True:
                    status = api.LadderStatus(arena_pb2.LadderStatusRequest(ladder=run.ladder), timeout=CALL_TIMEOUT_S)
                    board = api.Leaderboard(arena_pb2.LeaderboardRequest(ladder=run.ladder), timeout=CALL_TIMEOUT_S)
                    rated = sum(e.games for e in board.entries) // 2
                    if status.completed >= args.matches and rated >= args.matches:
                        break
                    if time.monotonic() > deadline:
                        raise SystemExit(f"bench: {status.completed}/{args.matches} played after {args.timeout} s")
                    time.sleep(2.0)
                # Our own polls (two calls every 2 s) are in the figures: a watching user costs the same.
                ladder = window(r, before, time.monotonic() - t0, per=args.matches)
                streams = {
                    "results_stream_length": int(r.xlen(keys.RESULTS_STREAM)),
                    "match_stream_length": int(r.xlen(keys.MATCH_STREAM)),
                }
        finally:
            stack.stop()
    print(
        json.dumps(
            {
                "workers": args.workers,
                "matches": args.matches,
                "deals_per_leg": args.deals,
                "idle_per_worker_second": idle,
                "per_match": ladder,
                "matches_per_s": round(args.matches / ladder["seconds"], 2),
                **streams,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
