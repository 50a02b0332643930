"""A new instance's start is bounded by its own CPU, and by the clock only at four times that
(``arena.sandbox.startup``): a bot that waits on the clock without using the CPU, as a bot does on a busy
worker (CI saw a Python bot forfeit a match after 15 s on the clock, its imports not yet done), still
starts; a bot that burns its CPU without serving is refused when that CPU is used up, and one that sleeps
for ever at the clock's bound. Each reason says which bound it met, and the pool hands the refused bot's
instance to nobody. Real bubblewrap, and a real process tree for a manifest bot on the host."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from arena.bots.packages import parse_package_manifest
from arena.model import BotVersion
from arena.sandbox import Sandbox, SandboxCommand, SandboxedBot, probe
from arena.sandbox.lifetime import with_parent_death
from arena.sandbox.pool import Instance, InstancePool, launch
from arena.sandbox.startup import wait_started
from referee.match.bots import BotProcess, parse_manifest

PACKAGE = Path(__file__).resolve().parent / "package"
REPO = Path(__file__).resolve().parents[2]
PROBE = probe()
sandboxed = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
pytestmark = pytest.mark.timeout(180)
SPENT = re.compile(
    r"not serving after ([\d.]+) s of its own CPU in (\d+) s \(it may take ([\d.]+) s of CPU, (\d+) s in all\)"
)


def _sandboxed(tmp_path: Path, mode: str) -> SandboxedBot:
    manifest = parse_package_manifest(json.loads((PACKAGE / "manifest.json").read_text()), PACKAGE).manifest
    command = SandboxCommand("python", ("{python}", "hostile.py", "--mode", mode), socket_arg="--socket")
    return Sandbox().launch(manifest, command, PACKAGE, tmp_path / "logs")


def _version(mode: str) -> BotVersion:
    return BotVersion(mode, 1, time.time(), manifest={"command": ["x"]}, manifest_dir=str(PACKAGE))


@sandboxed
def test_a_sandboxed_start_that_waits_on_the_clock_is_not_charged_for_it(tmp_path: Path) -> None:
    # 5 s asleep, then it serves: more than the 3 s a start may use, on the clock, but not of its CPU. The
    # pool's start bounded by 3 s on the clock (as before) refused it: "its socket was not found yet after 3s".
    started: list[BotProcess] = []

    def launcher(version: BotVersion, log_dir: Path) -> BotProcess:
        started.append(_sandboxed(tmp_path, version.bot_id))
        return started[-1]

    pool = InstancePool(tmp_path, launcher, startup_timeout_s=3.0)
    got: dict[str, list[Instance]] = {}
    try:
        got, errors = pool.acquire([(_version("slowstart"), 1)], seed=7)
        assert errors == {} and [i.bot for i in got["slowstart"]] == started
        (bot,) = started
        assert isinstance(bot, SandboxedBot)
        used = bot.cpu_ms()
        assert used is not None and used < 3000  # it started on less CPU than it may use
    finally:
        pool.release([i for insts in got.values() for i in insts], None)
        pool.close()


def _refused(bot: BotProcess, cpu_s: float, wall_s: float) -> tuple[str, tuple[float, float, float, float]]:
    """Why ``bot``'s start was refused (it is stopped after), and the CPU used, the seconds it took and the
    two bounds as the reason states them."""
    try:
        why = wait_started(bot, cpu_s, wall_s)
    finally:
        bot.stop()
    spent = SPENT.search(why or "")
    assert why is not None and spent, why
    cpu, wall, may_cpu, may_wall = (float(x) for x in spent.groups())
    return why, (cpu, wall, may_cpu, may_wall)


@sandboxed
def test_a_sandboxed_start_that_burns_its_cpu_is_refused_when_the_cpu_is_spent(tmp_path: Path) -> None:
    why, (cpu, wall, may_cpu, may_wall) = _refused(_sandboxed(tmp_path, "burnstart"), 1.0, 60.0)
    assert (may_cpu, may_wall) == (1.0, 60.0) and cpu >= 1.0 and wall < 60  # the CPU's bound, not the clock's
    assert "its socket was not found yet" in why  # where it was when the bound was met


@sandboxed
def test_a_sandboxed_start_that_sleeps_for_ever_is_refused_at_the_clock_s_bound(tmp_path: Path) -> None:
    _why, (cpu, wall, may_cpu, may_wall) = _refused(_sandboxed(tmp_path, "nolisten"), 2.0, 6.0)
    assert (may_cpu, may_wall) == (2.0, 6.0) and cpu < 2.0 and wall >= 6  # the clock's bound


def _host_manifest(tmp_path: Path, code: str) -> BotProcess:
    manifest = parse_manifest(
        {
            "name": "startup",
            "version": "1",
            "author": "tests",
            "language": "python",
            "command": ["{python}", "-c", code],
            "port": {"arg": "--port"},
            "games": ["pilotta"],
        },
        REPO,
    )
    return launch(manifest, tmp_path, with_parent_death)


def test_a_manifest_bot_on_the_host_is_bounded_by_its_process_tree_s_cpu(tmp_path: Path) -> None:
    # Asleep 5 s, then the random sample bot: started within 3 s of its CPU, though not of the clock.
    slow = (
        "import runpy, sys, time; time.sleep(5); sys.argv = ['random'] + sys.argv[1:]; "
        "runpy.run_module('sample_bots.random', run_name='__main__', alter_sys=True)"
    )
    bot = _host_manifest(tmp_path, slow)
    try:
        assert wait_started(bot, 3.0) is None
    finally:
        bot.stop()
    why, (cpu, wall, _may_cpu, _may_wall) = _refused(_host_manifest(tmp_path, "while True: pass"), 1.0, 60.0)
    assert cpu >= 1.0 and wall < 60 and "not serving after" in why.split("last: ", 1)[1]
