"""A launch that fails for the worker's own reason (``arena.sandbox.faults.SandboxFault``: its memory lock, its
tmpfs, a system tree gone) is not the bot's start failure: the instance pool lets it through, so the match
fails on this worker and is played elsewhere, and what the pool had taken or started for the match goes
back or stops. A launch failing for the bot's reason stays a start error of that bot, as before.

Real processes: the random sample bot, started by the pool's own ``launch``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from arena.model import BotVersion
from arena.sandbox.faults import SandboxFault
from arena.sandbox.lifetime import with_parent_death
from arena.sandbox.pool import InstancePool, launch
from arena.sandbox.resident import MemlockError
from referee.match.bots import BotProcess, load_manifest

REPO = Path(__file__).resolve().parents[2]
RANDOM = load_manifest(REPO / "sample_bots" / "random")


def _version(bot_id: str) -> BotVersion:
    return BotVersion(bot_id, 1, time.time(), manifest={"command": ["x"]}, manifest_dir=str(REPO))


def _pool(tmp_path: Path, fault: OSError) -> tuple[InstancePool, list[BotProcess]]:
    started: list[BotProcess] = []

    def launcher(version: BotVersion, log_dir: Path) -> BotProcess:
        if version.bot_id == "broken":
            raise fault
        bot = launch(RANDOM, log_dir, with_parent_death)
        started.append(bot)
        return bot

    return InstancePool(tmp_path, launcher, startup_timeout_s=60), started


def _gone(bot: BotProcess) -> bool:
    try:
        bot.process.wait(timeout=30)
    except Exception:
        return False
    return True


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "fault",
    [SandboxFault("no room on /dev/shm for the standard library's copy"), MemlockError("RLIMIT_MEMLOCK 8 MiB")],
    ids=["tmpfs", "memlock"],
)
def test_a_fault_of_the_worker_fails_the_match_and_charges_no_bot(tmp_path: Path, fault: OSError) -> None:
    pool, started = _pool(tmp_path, fault)
    try:
        # A warm instance of the good bot, taken back by the failed acquire.
        got, errors = pool.acquire([(_version("good"), 1)], seed=1)
        assert not errors and len(got["good"]) == 1
        pool.release(got["good"], seed=1)
        warm = pool.idle_endpoints()
        with pytest.raises(SandboxFault) as raised:
            pool.acquire([(_version("good"), 2), (_version("broken"), 1)], seed=2)
        assert raised.value is fault  # raised as it was, its words for the operator
        # The warm instance is back among the idle ones; the one started for this match is stopped.
        assert pool.idle_endpoints() == warm
        assert len(started) == 2 and _gone(started[1]) and started[0].process.poll() is None
    finally:
        pool.close()


@pytest.mark.timeout(120)
def test_a_bot_that_cannot_start_is_still_that_bots_start_error(tmp_path: Path) -> None:
    pool, _started = _pool(tmp_path, OSError(2, "No such file or directory: './bot'"))
    try:
        got, errors = pool.acquire([(_version("broken"), 1)], seed=3)
        assert got == {} and "No such file or directory" in errors["broken"]
    finally:
        pool.close()
