"""Benchmark of the trust boundary (issue 9): what the sandbox and one instance per seat cost.

Each figure is measured beside its baseline in the same run, the two alternating round by round:

* **start-up**: a small Python bot (``tests/sandbox/packages/pybot``) started until it serves, in its
  sandbox (bubblewrap, cgroups, the Unix socket) against as a plain child process on a loopback port;
* **per decision**: the median wall-clock round trip of the bot's decisions in a match, through the
  sandbox's Unix socket against loopback TCP to the same bot unsandboxed;
* **matches/s**: the arena runner playing duplicate pairs (heuristic against random, ``--deals`` deals per
  leg) with one instance per seat and fresh instances per leg (eight processes a pair, warm between
  matches, never given a seed twice), against the former arrangement: one process per bot for all its
  seats and both legs (``run_match`` on two warm endpoints).

and for protocol version 2 in the sandbox (issue 16), version 1 and version 2 alternating round by round,
both sandboxed bots the same SDK bot, the referee offering version 1 only or both (``--versions-only``: just
this part):

* **v2 per decision**: ``bench_referee.bench_decision`` through the sandbox's Unix socket: the referee's
  decision against a raw exchange of the same bytes with the same sandboxed bot (a unary round trip for
  version 1; a stream echo on one raw stream per seat for version 2: the SDK's eight server threads hold
  the referee's four streams and four raw ones);
* **v2 matches/s**: duplicate pairs between two sandboxed bots on warm channels, version 2 over version 1.

and for issue 23 (``--isolation-only``: just this part): what copying the package and the Python runtime
costs each instance start (each instance gets copies of its own, no inode shared with another), and what
the seccomp filter adds to a system call (``getppid`` from Python in a bare sandbox, with and without it).

Usage: ``python bench/bench_sandbox.py [--rounds 3] [--matches 8] [--deals 2] [--versions-only |
--isolation-only]``; ends with one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))

from bench_referee import bench_decision  # noqa: E402

from arena.bots.inputs import manifest_dict  # noqa: E402
from arena.bots.packages import parse_package_manifest  # noqa: E402
from arena.bots.registry import Registry  # noqa: E402
from arena.model import MatchSpec  # noqa: E402
from arena.play.runner import ArenaRunner  # noqa: E402
from arena.sandbox import Sandbox, SandboxedBot, probe  # noqa: E402
from arena.sandbox.cgroups import Limits, make_tree  # noqa: E402
from arena.sandbox.command import SandboxCommand, bwrap_argv, namespaces  # noqa: E402
from arena.sandbox.copies import instance_copy  # noqa: E402
from arena.sandbox.lifetime import with_parent_death  # noqa: E402
from arena.sandbox.pool import launch  # noqa: E402
from arena.sandbox.seccomp import program, program_fd  # noqa: E402
from arena.store.redis_server import EmbeddedRedis, connect  # noqa: E402
from referee.match import MatchSettings, run_match  # noqa: E402
from referee.match.bots import load_manifest, parse_manifest, wait_serving  # noqa: E402
from referee.match.transport import BotLinks  # noqa: E402

PYBOT = REPO / "tests" / "sandbox" / "packages" / "pybot"
SAMPLES = REPO / "sample_bots"


def plain_manifest() -> Any:
    """The same bot as an unsandboxed child process on a port."""
    raw = json.loads((PYBOT / "manifest.json").read_text())
    raw = {k: v for k, v in raw.items() if k != "runtime"}
    return parse_manifest({**raw, "port": {"arg": "--port"}}, PYBOT)


def start_sandboxed(sandbox: Sandbox, logs: Path) -> Any:
    pm = parse_package_manifest(json.loads((PYBOT / "manifest.json").read_text()), PYBOT)
    return sandbox.launch(pm.manifest, pm.command, PYBOT, logs)


def timed_start(start: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    bot = start()
    why = bot.wait_socket(30) if isinstance(bot, SandboxedBot) else None
    why = why or wait_serving(bot.endpoint, 30, bot.process)
    if why is not None:
        raise SystemExit(f"bench: the bot did not start: {why}")
    return time.perf_counter() - t, bot


def decision_ms(endpoint: str, other: str, deals: int) -> float:
    out = run_match([endpoint, other], MatchSettings(seed=3, deals=deals, options={"target": 100_000}), "bench")
    return statistics.median(out.bots[0].latencies_ms)


def pairs_per_s(runner: ArenaRunner, ids: tuple[str, str], matches: int, deals: int, seed0: int) -> float:
    t = time.perf_counter()
    for i in range(matches):
        spec = MatchSpec(f"m-{seed0 + i}", "bench", "pilotta", seed0 + i, ids, deals=deals, options={"target": 10**5})
        runner(spec)
    return matches / (time.perf_counter() - t)


def pooled_pairs_per_s(endpoints: list[str], matches: int, deals: int, seed0: int) -> float:
    t = time.perf_counter()
    for i in range(matches):
        settings = MatchSettings(seed=seed0 + i, deals=deals, duplicate=True, options={"target": 100_000})
        run_match(endpoints, settings, f"p-{seed0 + i}")
    return matches / (time.perf_counter() - t)


def versions_in_sandbox(sandbox: Sandbox, logs: Path, rounds: int, matches: int, deals: int) -> dict[str, Any]:
    """Protocol version 1 against version 2 with both bots in the sandbox (see the module docstring)."""
    bots = [timed_start(lambda: start_sandboxed(sandbox, logs))[1] for _ in range(2)]
    endpoints = [b.endpoint for b in bots]
    runs: dict[str, list[Any]] = {"decision_v1": [], "decision_v2": [], "pairs_per_s_v1": [], "pairs_per_s_v2": []}
    try:
        for rnd in range(rounds):
            for version in (1, 2) if rnd % 2 == 0 else (2, 1):
                runs[f"decision_v{version}"].append(bench_decision(endpoints[0], 2000, version, one_stream=False))
                links = BotLinks(versions=(1,) if version == 1 else (1, 2))
                try:
                    seed = 30_000 + 1000 * rnd
                    run_match(endpoints, MatchSettings(seed=seed, deals=deals, duplicate=True), "warm", links=links)
                    t = time.perf_counter()
                    for i in range(matches):
                        settings = MatchSettings(
                            seed=seed + i + 1, deals=deals, duplicate=True, options={"target": 10**5}
                        )
                        out = run_match(endpoints, settings, f"v{version}-{seed + i}", links=links)
                        assert out.forfeit is None, out.forfeit_reason
                    runs[f"pairs_per_s_v{version}"].append(matches / (time.perf_counter() - t))
                finally:
                    links.close()
    finally:
        for b in bots:
            b.stop()
    keys = ("overhead_ratio", "overhead_ratio_one_stream", "referee_decision_us", "raw_exchange_us", "referee_work_us")
    med: dict[str, Any] = {
        f"{d}_{k}": statistics.median(r[k] for r in runs[d])
        for d in ("decision_v1", "decision_v2")
        for k in keys
        if k in runs[d][0]
    }
    med |= {k: statistics.median(runs[k]) for k in ("pairs_per_s_v1", "pairs_per_s_v2")}
    med["v2_over_v1_pairs_per_s"] = med["pairs_per_s_v2"] / med["pairs_per_s_v1"]
    return {"medians": med, "runs": runs}


def print_versions(v: dict[str, Any]) -> None:
    m = v["medians"]
    for version in (1, 2):
        d = f"decision_v{version}"
        print(
            f"sandbox, version {version}: a decision through the referee {m[d + '_referee_decision_us']:7.1f} us, raw "
            f"{m[d + '_raw_exchange_us']:7.1f} us: overhead {m[d + '_overhead_ratio'] * 100:+.1f} %"
            + f"; the referee's own work {m[d + '_referee_work_us']:.1f} us"
        )
    print(
        f"sandbox duplicate pairs/s: version 2 {m['pairs_per_s_v2']:.2f}, version 1 {m['pairs_per_s_v1']:.2f}: "
        f"{m['v2_over_v1_pairs_per_s']:.2f}x"
    )


_SYSCALLS = (
    "import os, time\n"
    "n = 300000\n"
    "t = time.perf_counter()\n"
    "for _ in range(n):\n"
    "    os.getppid()\n"
    "print((time.perf_counter() - t) / n * 1e9)\n"
)


def syscall_ns(sandbox: Sandbox, filtered: bool) -> float:
    """ns per ``getppid`` from Python in a bare sandbox (namespaces, the python runtime's system tree, the
    sandbox uid), with or without the seccomp filter: what the filter adds to every system call."""
    cg = make_tree(f"bench-seccomp-{time.monotonic_ns()}", Limits(), "auto")
    fds: list[int] = []
    try:
        options = [*namespaces(), *sandbox.system_tree(SandboxCommand("python", ("{python}",), socket_arg="--socket"))]
        if filtered:
            fds.append(program_fd())
            options += ["--seccomp", str(fds[-1])]
        bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
        argv, args_fd = bwrap_argv(cg, Limits(), bwrap, options, ["/usr/bin/python3", "-S", "-c", _SYSCALLS])
        fds.append(args_fd)
        done = subprocess.run(argv, capture_output=True, timeout=120, env={}, check=True, pass_fds=tuple(fds))
        return float(done.stdout.decode().split()[-1])
    finally:
        for fd in fds:
            os.close(fd)
        cg.remove()


def isolation_costs(sandbox: Sandbox, rounds: int) -> dict[str, Any]:
    """Issue 23's costs: copying a package and the Python runtime for each instance start (the copies
    every instance now gets of its own, instead of hard links), and the seccomp filter's per-call cost
    (filtered and bare alternating round by round)."""
    work = Path(tempfile.mkdtemp(prefix="bench-copies-", dir=sandbox.work_dir))
    files = sum(1 for f in sandbox.runtime.rglob("*") if f.is_file())
    size = sum(f.stat().st_size for f in sandbox.runtime.rglob("*") if f.is_file())
    copy_ms, package_ms = [], []
    for i in range(max(5, rounds * 3)):
        t = time.perf_counter()
        instance_copy(PYBOT, work / f"p{i}")
        t1 = time.perf_counter()
        instance_copy(sandbox.runtime, work / f"r{i}")
        t2 = time.perf_counter()
        package_ms.append((t1 - t) * 1000)
        copy_ms.append((t2 - t) * 1000)
        shutil.rmtree(work / f"p{i}")
        shutil.rmtree(work / f"r{i}")
    shutil.rmtree(work)
    filtered, bare = [], []
    for rnd in range(rounds):
        for f in (True, False) if rnd % 2 == 0 else (False, True):
            (filtered if f else bare).append(syscall_ns(sandbox, f))
    return {
        "runtime_files": files,
        "runtime_bytes": size,
        "filter_instructions": len(program()) // 8,
        "copy_per_instance_ms": statistics.median(copy_ms),
        "copy_package_ms": statistics.median(package_ms),
        "getppid_ns_filtered": statistics.median(filtered),
        "getppid_ns_bare": statistics.median(bare),
    }


def print_isolation(c: dict[str, Any]) -> None:
    print(
        f"copies per instance     {c['copy_per_instance_ms']:7.1f} ms   (package {c['copy_package_ms']:.1f} ms; "
        f"runtime {c['runtime_files']} files, {c['runtime_bytes'] / 1e6:.1f} MB)"
    )
    print(
        f"getppid under seccomp   {c['getppid_ns_filtered']:7.0f} ns   bare  {c['getppid_ns_bare']:7.0f} ns"
        f"   ({c['filter_instructions']} instructions)"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--matches", type=int, default=8)
    p.add_argument("--deals", type=int, default=2)
    p.add_argument("--versions-only", action="store_true", help="only protocol version 1 against version 2")
    p.add_argument("--isolation-only", action="store_true", help="only the per-instance copies and the filter")
    a = p.parse_args()
    found = probe()
    if not found.ok:
        print(f"bench_sandbox: cannot sandbox here: {found.reason}", file=sys.stderr)
        return 1
    logs = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    sandbox = Sandbox()
    if a.isolation_only:
        c = isolation_costs(sandbox, a.rounds)
        print_isolation(c)
        print(json.dumps({"isolation": c}))
        return 0
    if a.versions_only:
        v = versions_in_sandbox(sandbox, logs, a.rounds, a.matches, a.deals)
        print_versions(v)
        print(json.dumps({"protocol_versions": v, "deals_per_leg": a.deals, "matches": a.matches}))
        return 0
    figures: dict[str, list[float]] = {
        k: [] for k in ("start_sandbox_s", "start_plain_s", "rtt_socket_ms", "rtt_tcp_ms")
    }
    figures |= {"pairs_per_s_seat_instances": [], "pairs_per_s_one_process": []}
    heuristic = load_manifest(SAMPLES / "heuristic")
    _took, other_bot = timed_start(lambda: launch(heuristic, logs, with_parent_death))
    redis_srv = EmbeddedRedis(logs / "redis").start()
    r = connect(redis_srv.url)
    reg = Registry(r)
    ids = tuple(
        reg.register(n, "bench", manifest=manifest_dict(load_manifest(SAMPLES / n)), manifest_dir=str(SAMPLES / n))[
            0
        ].bot_id
        for n in ("heuristic", "random")
    )
    runner = ArenaRunner(reg, log_dir=logs / "runner", pool_size=16)
    pooled = [
        timed_start(lambda n=n: launch(load_manifest(SAMPLES / n), logs, with_parent_death))[1]
        for n in ("heuristic", "random")
    ]
    try:
        pairs_per_s(runner, ids, 2, a.deals, 10_000)  # warm the per-seat instances up
        pooled_pairs_per_s([b.endpoint for b in pooled], 1, a.deals, 20_000)
        for rnd in range(a.rounds):
            for kind in ("sandbox", "plain") if rnd % 2 == 0 else ("plain", "sandbox"):
                start = (
                    (lambda: start_sandboxed(sandbox, logs))
                    if kind == "sandbox"
                    else (lambda: launch(plain_manifest(), logs, with_parent_death))
                )
                took, bot = timed_start(start)
                try:
                    rtt = decision_ms(bot.endpoint, other_bot.endpoint, a.deals * 2)
                finally:
                    bot.stop()
                figures[f"start_{kind}_s"].append(took)
                figures["rtt_socket_ms" if kind == "sandbox" else "rtt_tcp_ms"].append(rtt)
            seed = 1000 * (rnd + 1)
            figures["pairs_per_s_seat_instances"].append(pairs_per_s(runner, ids, a.matches, a.deals, seed))
            figures["pairs_per_s_one_process"].append(
                pooled_pairs_per_s([b.endpoint for b in pooled], a.matches, a.deals, seed + 500)
            )
    finally:
        runner.close()
        for b in pooled:
            b.stop()
        other_bot.stop()
        r.close()
        redis_srv.stop()
    versions = versions_in_sandbox(sandbox, logs, a.rounds, a.matches, a.deals)
    isolation = isolation_costs(sandbox, a.rounds)
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(
        f"sandbox start-up        {med['start_sandbox_s'] * 1000:7.0f} ms   plain {med['start_plain_s'] * 1000:7.0f} ms"
        f"   ratio {med['start_sandbox_s'] / med['start_plain_s']:.2f}"
    )
    print(
        f"decision round trip     {med['rtt_socket_ms']:7.2f} ms   TCP   {med['rtt_tcp_ms']:7.2f} ms"
        f"   ratio {med['rtt_socket_ms'] / med['rtt_tcp_ms']:.2f}"
    )
    print(
        f"duplicate pairs/s       {med['pairs_per_s_seat_instances']:7.2f}      one process per bot "
        f"{med['pairs_per_s_one_process']:7.2f}   ratio "
        f"{med['pairs_per_s_seat_instances'] / med['pairs_per_s_one_process']:.2f}"
    )
    print_versions(versions)
    print_isolation(isolation)
    print(
        json.dumps(
            {
                "medians": med,
                "isolation": isolation,
                "runs": figures,
                "protocol_versions": versions,
                "deals_per_leg": a.deals,
                "matches": a.matches,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
