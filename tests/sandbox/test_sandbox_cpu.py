"""The CPU time of a sandboxed bot's decisions by value (``arena.sandbox.CgroupCpu``: its instance's cgroup):
an uploaded package that spends ``BURN_MS`` of CPU at each decision (a busy loop on ``time.process_time``)
against one that sleeps as long instead, a duplicate match played by the arena's runner in the real sandbox.
Compared over the sums of a match's decisions, with room for the work of answering and for a loaded machine.
Real bubblewrap, a real Redis, real bot processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arena.bots.botlogs import BotLogs
from arena.bots.packages import PackageCache, PackageStore, pack, read_manifest
from arena.bots.registry import Registry
from arena.model import MatchSpec, VersionState
from arena.play.runner import ArenaRunner
from arena.sandbox import Sandbox, probe

PYBOT = Path(__file__).resolve().parent / "packages" / "pybot"
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
BURN_MS = 30
WAITS = {
    "burner": f"until = time.process_time() + {BURN_MS / 1000}\n        while time.process_time() < until:\n"
    "            pass",
    "sleeper": f"time.sleep({BURN_MS / 1000})",
}


def _package(tmp_path: Path, name: str) -> bytes:
    """The small uploaded bot (tests/sandbox/packages/pybot) named ``name``, that burns or sleeps
    (``WAITS``) before each answer."""
    d = tmp_path / name
    d.mkdir()
    (d / "manifest.json").write_text((PYBOT / "manifest.json").read_text())
    code = (PYBOT / "bot.py").read_text().replace('name = "random-upload"', f"name = {name!r}")
    answer = "        return self.rng.choice(legal)"
    assert answer in code
    (d / "bot.py").write_text("import time\n" + code.replace(answer, f"        {WAITS[name]}\n{answer}"))
    return pack(d)


@pytest.mark.timeout(300)
def test_a_sandboxed_decision_s_cpu_time_is_what_the_bot_spent_not_the_time_it_took(tmp_path, r):
    reg = Registry(r)
    store = PackageStore(r)

    def upload(name: str) -> str:
        data = _package(tmp_path, name)
        pm = read_manifest(data)
        bot, _ = reg.register_package(name, "t", store.put(data), pm.raw, pm.manifest.games)
        reg.set_state(bot.bot_id, 1, VersionState("validated"))  # as a worker's check leaves it
        return bot.bot_id

    burner, sleeper = upload("burner"), upload("sleeper")
    # Four sandboxed Python instances start at once: a loaded machine (CI's, at load 20) took more than the
    # default 15 s for them, and how long a start takes is not what this test measures.
    runner = ArenaRunner(
        reg,
        log_dir=tmp_path / "logs",
        deadline_ms=2000,
        sandbox=Sandbox(),
        packages=PackageCache(store),
        startup_timeout_s=60.0,
    )
    try:
        result = runner(MatchSpec("m-cpu", "lad", "pilotta", 7, (burner, sleeper), deals=2))
    finally:
        runner.close()
    assert result.forfeit is None, (
        result.forfeit,
        [x.text[-2000:] for b in (burner, sleeper) for x in BotLogs(r).recent(b)],
    )
    record: dict[str, Any] = json.loads(result.record)
    spent: dict[str, list[float]] = {"burner": [], "sleeper": []}  # bot -> cpu_ms of each of its decisions
    for leg in record["legs"]:  # the partnerships swap between the legs: the players name each seat's bot
        for deal in leg["deals"]:
            for x in deal["actions"]:
                spent[leg["players"][x["seat"]]].append(x["cpu_ms"])
    burnt, slept = spent["burner"], spent["sleeper"]
    assert len(burnt) >= 30 and len(slept) >= 30  # two boards at two tables: 32 cards each and the bids
    # The burner spent at least BURN_MS a decision, and little more (answering costs about a millisecond).
    burnt_ms = BURN_MS * len(burnt)
    assert 0.6 * burnt_ms <= sum(burnt) <= 2 * burnt_ms, (sum(burnt), burnt_ms)
    # The sleeper took as long without the CPU: a few milliseconds a decision at most, over all of them.
    assert sum(slept) <= 5 * len(slept) and sum(slept) <= 0.2 * sum(burnt), (sum(slept), sum(burnt))
