"""How the sandbox keeps an instance's limits (``arena.sandbox.cgroups``), on this machine's real hierarchies:
cgroup v1, cgroup v2 where its controllers are there (skipped, saying why, where they are not), and rlimits only.

The machine these tests were written on is a hybrid: the v1 controllers hold memory, pids and cpu, and the
unified hierarchy at /sys/fs/cgroup/unified has only hugetlb, so ``auto`` takes v1 there, the v2 path is
refused with the reason, and the v2 limits themselves are tested only on a machine that has them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Sandbox, SandboxCommand, SandboxedBot, probe
from arena.sandbox.cgroups import DELEGATED_ENV, MODE_ENV, Cgroup, Limits, cgroup2_mount, default_mode, v2_parent
from referee.match import MatchOutcome, MatchSettings, run_match
from referee.match.bots import REPO_ROOT, launch_bots, load_manifest, wait_serving

PACKAGE = Path(__file__).resolve().parent / "package"
HEURISTIC = REPO_ROOT / "sample_bots" / "heuristic"
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
LIMITS = Limits(memory_mb=100, pids=10, cpus=0.5)  # 100 MB = 104857600 bytes; half a core: 50000 of 100000 us


def v2_missing() -> str | None:
    try:
        v2_parent()
    except OSError as e:
        return str(e)
    return None


def v1_missing() -> str | None:
    for controller in ("memory", "pids", "cpu", "cpuacct"):
        if not (Path("/sys/fs/cgroup") / controller / "cgroup.procs").exists():
            return f"no cgroup v1 {controller} controller"
    return None


def start(tmp_path: Path, mode: str, sandbox: Sandbox) -> SandboxedBot:
    manifest = parse_package_manifest(json.loads((PACKAGE / "manifest.json").read_text()), PACKAGE).manifest
    command = SandboxCommand("python", ("{python}", "hostile.py", "--mode", mode), socket_arg="--socket")
    return sandbox.launch(manifest, command, PACKAGE, tmp_path / "logs")


def play(bot: SandboxedBot, tmp_path: Path) -> MatchOutcome:
    settings = MatchSettings(seed=3, deals=1, deadline_ms=1000, time_bank_ms=500, log_dir=str(tmp_path))
    with launch_bots([load_manifest(HEURISTIC)], tmp_path / "other") as (eps, _procs):
        return run_match([bot.endpoint, eps[0]], settings, "m-limits")


@pytest.mark.skipif(v1_missing() is not None, reason=f"{v1_missing()}")
def test_cgroup_v1_holds_the_limits_asked_for():
    cg = Cgroup("test-v1", LIMITS, "cgroup1")
    try:
        assert cg.version == 1 and cg.kind == "cgroup v1"
        assert (cg.dirs["memory"] / "memory.limit_in_bytes").read_text().strip() == "104857600"
        assert (cg.dirs["pids"] / "pids.max").read_text().strip() == "10"
        assert (cg.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert (cg.dirs["cpu"] / "cpu.cfs_period_us").read_text().strip() == "100000"
    finally:
        cg.remove()
    assert not any(d.exists() for d in cg.dirs.values())


@pytest.mark.skipif(v2_missing() is not None, reason=f"the cgroup v2 path cannot be tested here: {v2_missing()}")
@pytest.mark.timeout(120)
def test_cgroup_v2_holds_the_limits_and_reports_out_of_memory(tmp_path):
    cg = Cgroup("test-v2", LIMITS, "cgroup2")
    try:
        (d,) = cg.dirs.values()
        assert cg.version == 2 and (d / "memory.max").read_text().strip() == "104857600"
        assert (d / "pids.max").read_text().strip() == "10"
        assert (d / "cpu.max").read_text().split() == ["50000", "100000"]
    finally:
        cg.remove()
    bot = start(tmp_path, "memory", Sandbox(limits=Limits(memory_mb=128), limits_mode="cgroup2"))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
        assert bot.failure() == "out of memory"
    finally:
        bot.stop()
    assert outcome.forfeit is not None and outcome.winner == 1 and bot.cgroup.pids() == []


@pytest.mark.skipif(v2_missing() is None, reason="cgroup v2 has the controllers here")
def test_without_v2_controllers_cgroup2_is_refused_naming_why_and_auto_takes_v1():
    with pytest.raises(OSError) as e:
        Cgroup("test-no-v2", LIMITS, "cgroup2")
    mount = cgroup2_mount()
    if mount is not None:
        assert f"cgroup v2 at {mount}" in str(e.value)
        assert re.search(r"lacks the [a-z, ]+ controllers \(has: [a-z_ ]+\)|cannot enable", str(e.value)), e.value
    if v1_missing() is None:
        assert PROBE.reason.endswith(", cgroup v1")
        cg = Cgroup("test-auto", LIMITS, "auto")
        try:
            assert cg.version == 1
        finally:
            cg.remove()


def test_a_delegated_cgroup_that_is_not_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(DELEGATED_ENV, str(tmp_path))
    with pytest.raises(OSError, match=f"{DELEGATED_ENV}={re.escape(str(tmp_path))} is not a cgroup v2 directory"):
        v2_parent()
    if cgroup2_mount() is not None:  # (without a v2 hierarchy at all, that is the reason given first)
        with pytest.raises(OSError, match="is not a cgroup v2 directory"):
            Cgroup("test-bad-delegation", LIMITS, "cgroup2")


def test_an_unknown_limits_mode_is_refused(monkeypatch):
    monkeypatch.setenv(MODE_ENV, "cgroup3")
    with pytest.raises(ValueError, match=r"\$PILOTTA_SANDBOX_LIMITS must be one of auto, cgroup2, cgroup1, rlimits"):
        default_mode()
    monkeypatch.delenv(MODE_ENV)
    assert default_mode() == "auto"
    assert not probe(limits_mode="cgroup3").ok


@pytest.mark.timeout(120)
def test_rlimits_only_bounds_each_process_and_the_tree_still_dies_with_the_sandbox(tmp_path):
    checked = probe(limits_mode="rlimits")
    assert checked.ok and checked.reason.endswith(", rlimits only")
    bot = start(tmp_path, "detach", Sandbox(limits=Limits(memory_mb=200), limits_mode="rlimits"))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
        pids = bot.cgroup.pids()
        # bwrap (the launcher, exec'd), the sandbox's pid 1 (bwrap's init), the bot, its detached grandchild
        assert len(pids) >= 4 and bot.process.pid in pids, pids
        for pid in pids:  # 200 MB of data segment each: 209715200 bytes
            limits = Path(f"/proc/{pid}/limits").read_text()
            assert re.search(r"^Max data size\s+209715200\s+209715200\s+bytes", limits, re.M), limits
        assert bot.cpu_ms() is not None and bot.cpu_ms() > 0  # the namespace's processes' CPU time
        assert bot.failure() is None  # no cgroup to say why a process died
    finally:
        bot.stop()
    assert outcome.forfeit is None
    assert bot.cgroup.pids() == []  # the detached grandchild died with the sandbox
