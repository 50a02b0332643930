"""Hostile uploaded bots on a running ladder (issue 9): a real worker plays a ladder's matches in which
hostile packages (reaching out, a fork bomb, memory without end, megabytes of stderr, a detached child,
sleeping past every deadline) meet well-behaved bots. Every match is recorded, none is dead-lettered,
each hostile bot's ends with a clear outcome on it, the others play on, and nothing is left running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sandbox_helpers import hostile_package

from arena.bots.packages import PackageCache, PackageStore, pack, read_manifest
from arena.bots.registry import Registry
from arena.model import MatchSpec, VersionState
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.sandbox import Limits, Sandbox, probe
from referee.match.bots import REPO_ROOT

HERE = Path(__file__).resolve().parent
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
MODES = ("probe", "forkbomb", "memory", "stderr", "detach", "sleep")


@pytest.mark.timeout(600)
def test_hostile_packages_on_a_ladder_end_with_clear_outcomes_and_every_match_completes(tmp_path, r):
    reg = Registry(r)
    store = PackageStore(r)

    def upload(name: str, data: bytes) -> str:
        pm = read_manifest(data)
        bot, _ = reg.register_package(name, "mallory", store.put(data), pm.raw, pm.manifest.games)
        # Taken as validated here: a hostile bot may behave in its check and misbehave later.
        reg.set_state(bot.bot_id, 1, VersionState("validated"))
        return bot.bot_id

    hostile = {mode: upload(f"h-{mode}", hostile_package(tmp_path, mode, "--mode", mode)) for mode in MODES}
    good = upload("pyup", pack(HERE / "packages" / "pybot"))
    heuristic = json.loads((REPO_ROOT / "sample_bots" / "heuristic" / "manifest.json").read_text())
    manifest_dir = str(REPO_ROOT / "sample_bots" / "heuristic")
    ref = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=manifest_dir)[0].bot_id
    queue = MatchQueue(r)
    specs = [MatchSpec(f"m-{mode}", "lad", "pilotta", 3, (b, ref), deals=1) for mode, b in hostile.items()]
    specs.append(MatchSpec("m-good", "lad", "pilotta", 4, (good, ref), deals=2))
    for spec in specs:
        queue.enqueue(spec)
    limits = Limits(memory_mb=160, pids=48)
    sandbox = Sandbox(limits=limits)
    runner = ArenaRunner(
        reg,
        log_dir=tmp_path / "logs",
        # 2 s a decision: the stderr bot's 8 MB go through a pipe the worker drains and caps, which a loaded
        # machine (a run at load 20 on 2 cores) once stretched past a 300 ms deadline and its bank four times,
        # forfeiting a bot that is contained, not slow. The sleeper still times out (it sleeps an hour).
        deadline_ms=2000,
        time_bank_ms=1000,
        # No mode here is about starting (they misbehave at their first decision): a generous start bound. With
        # the default 15 s, a parallel run at load 13 on 2 cores once ended the fork bomb's match with "could not
        # be started" instead of its process limit (most likely its sandbox's start outlasting the bound).
        startup_timeout_s=60.0,
        sandbox=sandbox,
        packages=PackageCache(store),
    )
    worker = Worker(r, runner, "w-hostile", block_ms=200)
    try:
        stats = worker.run(max_matches=len(specs), idle_exit_s=60)
    finally:
        runner.close()
    assert stats.recorded == len(specs) and queue.dead_letter_count() == 0
    results = {s.match_id: queue.get_result(s.match_id) for s in specs}
    assert all(res is not None for res in results.values())
    good_result = results["m-good"]
    assert good_result is not None and good_result.forfeit is None and good_result.deals_played >= 2
    outcome = {m: (res.winner, res.forfeit) for m, res in results.items() if res is not None}
    assert outcome["m-forkbomb"][0] == 1 and outcome["m-memory"][0] == 1 and outcome["m-sleep"][0] == 1
    assert outcome["m-memory"][1] == "bot h-memory crashed: out of memory"
    assert outcome["m-sleep"][1] == "bot h-sleep exceeded 3 strikes (4 timeouts)"
    assert outcome["m-forkbomb"][1] == "bot h-forkbomb crashed: process limit"
    for mode in ("probe", "stderr", "detach"):  # contained: they play on, the match completes
        assert outcome[f"m-{mode}"][1] is None, (mode, outcome[f"m-{mode}"])
    # Nothing of theirs is left running: every instance's cgroup is gone (this sandbox's: others may be
    # running on the same machine).
    assert not list(Path("/sys/fs/cgroup").glob(f"*/**/pilotta-sandbox/{sandbox.work_dir.name}-run-*"))
