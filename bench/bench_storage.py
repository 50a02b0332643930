"""Benchmark of how much Redis a finished match costs: the old storage (the whole result, record included, as
JSON in ``pa:result:<id>``) beside the new (``arena.store.archive``: the result without its record, the record
zlib-compressed in ``pa:record:<id>``, then archived to disk and released from Redis).

The record is a real one: one duplicate match of ``--deals`` deals per leg between the sample bots random and
heuristic, played by the real referee (``arena match``, real bot processes over gRPC), stored for ``--matches``
match ids.  Each setting runs in its own embedded Redis (a fresh ``redis-server``), the two alternating round by
round (``--rounds``) on the same machine.  Every result is rated (``Ratings.process``), as in the arena.

For each setting it prints the Redis bytes per finished match, two ways:

* ``used_memory`` (INFO memory) after the matches minus before, divided by the matches (everything: keys,
  stream entries, rating history, allocator overhead), and
* the sum of ``MEMORY USAGE`` of the match's own keys (result, record, rated marker) plus its share of the
  results stream,

and the time per recorded result and per full read (``load_result``), with the ratios new / old.  Ends with
one JSON object holding every figure.

Usage: ``python bench/bench_storage.py [--matches 300] [--deals 8] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import json
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

from arena.model import BotStats, LatencySummary, MatchResult  # noqa: E402
from arena.play.queue import MatchQueue  # noqa: E402
from arena.rating.ratings import Ratings  # noqa: E402
from arena.store import keys  # noqa: E402
from arena.store.archive import Archive, load_result  # noqa: E402
from arena.store.archiver import Archiver, Retention  # noqa: E402
from arena.store.redis_server import EmbeddedRedis, connect  # noqa: E402

A, B = "b-random", "b-heuristic"
# What the arena's record script did before records were compressed: the whole result in the gate key.
_OLD_RECORD_LUA = """
if not redis.call('SET', KEYS[1], ARGV[2], 'NX') then return false end
return redis.call('XADD', KEYS[2], '*', 'match_id', ARGV[1], 'ladder', ARGV[3])
"""


def real_record(deals: int, workdir: Path) -> str:
    out = workdir / "match.json"
    cmd = [sys.executable, "-m", "arena.cli", "match", str(REPO / "sample_bots" / "random")]
    cmd += [str(REPO / "sample_bots" / "heuristic"), "--duplicate", "--deals", str(deals), "--seed", "7"]
    subprocess.run([*cmd, "--out", str(out), "--quiet"], check=True, timeout=300, capture_output=True)
    return json.dumps(json.loads(out.read_text()), separators=(",", ":"))


def result_of(match_id: str, record_json: str) -> MatchResult:
    record = json.loads(record_json)
    scores = record["result"]["scores"]
    deals = sum(len(leg["deals"]) for leg in record["legs"])
    stats = {
        bot: BotStats(deals=deals, points=scores[side], latency=LatencySummary.from_samples([3.0, 9.0, 40.0]))
        for side, bot in enumerate((A, B))
    }
    return MatchResult(
        match_id=match_id,
        ladder="bench",
        seats=(A, B, A, B),
        winner=None if scores[0] == scores[1] else int(scores[1] > scores[0]),
        points=(scores[0], scores[1]),
        deals_played=deals,
        stats=stats,
        record=record_json,
        finished=time.time(),
        ruleset="pilotta",
    )


def used(r: Any) -> int:
    return int(r.info("memory")["used_memory"])


def own_bytes(r: Any, ids: list[str]) -> float:
    per_key = [keys.result, keys.record, keys.rated]
    total = sum(int(r.memory_usage(k(m), samples=0) or 0) for m in ids for k in per_key)
    return (total + int(r.memory_usage(keys.RESULTS_STREAM, samples=0) or 0)) / len(ids)


def run(setting: str, matches: int, record_json: str, workdir: Path) -> dict[str, float]:
    srv = EmbeddedRedis(workdir / f"redis-{setting}")
    srv.start()
    r = connect(srv.url)
    try:
        q, ratings = MatchQueue(r), Ratings(r)
        old = r.register_script(_OLD_RECORD_LUA)
        results = [result_of(f"m-{i:05d}", record_json) for i in range(matches)]
        ids = [res.match_id for res in results]
        before = used(r)
        t0 = time.perf_counter()
        for res in results:
            if setting == "old":
                old(keys=[keys.result(res.match_id), keys.RESULTS_STREAM], args=[res.match_id, res.to_json(), "bench"])
            else:
                q.record_result(res)
        record_s = time.perf_counter() - t0
        while ratings.process("bench", count=500):
            pass
        t0 = time.perf_counter()
        for m in ids:
            load_result(r, m)
        read_s = time.perf_counter() - t0
        out = {
            "used_bytes_per_match": (used(r) - before) / matches,
            "own_bytes_per_match": own_bytes(r, ids),
            "record_ms": 1000 * record_s / matches,
            "read_ms": 1000 * read_s / matches,
        }
        if setting == "new":
            archive = Archive(workdir / f"archive-{setting}")
            expired = int(r.info("stats")["expired_keys"])
            t0 = time.perf_counter()
            Archiver(r, archive, Retention(max_age_s=0, keep=None)).run_once(max_batches=10**6)
            archive_s = time.perf_counter() - t0
            deadline = time.monotonic() + 30  # Redis's expiry cycle frees the expired records' memory
            while int(r.info("stats")["expired_keys"]) < expired + matches and time.monotonic() < deadline:
                time.sleep(0.05)
            t0 = time.perf_counter()
            for m in ids:
                load_result(r, m, archive)
            out |= {
                "archived_used_bytes_per_match": (used(r) - before) / matches,
                "archived_own_bytes_per_match": own_bytes(r, ids),
                "archive_ms": 1000 * archive_s / matches,
                "archived_read_ms": 1000 * (time.perf_counter() - t0) / matches,
            }
        return out
    finally:
        r.close()
        srv.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=300)
    ap.add_argument("--deals", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        workdir = Path(tmp)
        record_json = real_record(args.deals, workdir)
        print(f"record: {len(record_json)} bytes of JSON ({args.deals} deals per leg, two legs)", flush=True)
        runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for i in range(args.rounds):
            for setting in ("old", "new") if i % 2 == 0 else ("new", "old"):
                runs[setting].append(run(setting, args.matches, record_json, workdir / f"round-{i}"))
                print(f"round {i + 1} {setting}: {json.dumps(runs[setting][-1])}", flush=True)
    med = {s: {k: statistics.median(run[k] for run in rs) for k in rs[0]} for s, rs in runs.items()}
    old, new = med["old"], med["new"]
    print(f"\nRedis bytes per finished match ({args.matches} matches, medians of {args.rounds} rounds):")
    print(f"{'':34}{'used_memory':>14}{'MEMORY USAGE':>14}")
    print(f"{'old (JSON, record inside)':34}{old['used_bytes_per_match']:>14.0f}{old['own_bytes_per_match']:>14.0f}")
    print(f"{'new (record compressed)':34}{new['used_bytes_per_match']:>14.0f}{new['own_bytes_per_match']:>14.0f}")
    archived = (new["archived_used_bytes_per_match"], new["archived_own_bytes_per_match"])
    print(f"{'new, once archived':34}{archived[0]:>14.0f}{archived[1]:>14.0f}")
    ratios = {
        "compressed/old_used": new["used_bytes_per_match"] / old["used_bytes_per_match"],
        "archived/old_used": new["archived_used_bytes_per_match"] / old["used_bytes_per_match"],
        "record_ms new/old": new["record_ms"] / old["record_ms"],
        "read_ms new/old": new["read_ms"] / old["read_ms"],
        "archived_read_ms/old_read_ms": new["archived_read_ms"] / old["read_ms"],
    }
    print(f"ms per result recorded: old {old['record_ms']:.3f}, new {new['record_ms']:.3f}")
    reads = f"old {old['read_ms']:.3f}, new {new['read_ms']:.3f}, archived {new['archived_read_ms']:.3f}"
    print(f"ms per result read: {reads}")
    print(f"ms per result archived: {new['archive_ms']:.3f}")
    print("ratios: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    print(json.dumps({"matches": args.matches, "deals": args.deals, "old": old, "new": new, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
