"""Two walls of the sandbox the other tests leave out (issue 9): its private ``/tmp`` holds no more than
``Limits.tmp_mb`` (a bot filling it gets ENOSPC, and plays on), and a bot told its port in the environment
(``"port": {"env": "PORT"}``) is bridged from its loopback port to the sandbox's Unix socket. Real
bubblewrap, real gRPC over the socket, a real match against the heuristic bot."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Limits, Sandbox, SandboxedBot, probe
from referee.match import MatchOutcome, MatchSettings, run_match
from referee.match.bots import REPO_ROOT, launch_bots, load_manifest, wait_serving

PYBOT = Path(__file__).resolve().parent / "packages" / "pybot"
HEURISTIC = REPO_ROOT / "sample_bots" / "heuristic"
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")

FILL_TMP = """
import errno, sys


def fill() -> None:
    written = 0
    try:
        with open("/tmp/fill", "wb") as f:
            while written < (64 << 20):
                f.write(b"x" * (1 << 20))
                f.flush()
                written += 1 << 20
        print(f"RESULT fill: wrote {written} and was not stopped", file=sys.stderr, flush=True)
    except OSError as e:
        print(f"RESULT fill: wrote {written}, then {errno.errorcode[e.errno]}", file=sys.stderr, flush=True)
"""


@pytest.fixture
def packages() -> Iterator[Path]:
    """Where the packages are made: a directory the sandbox uid can reach (pytest's tmp_path is closed to
    others), as a worker's package cache is."""
    with tempfile.TemporaryDirectory(prefix="pilotta-walls-") as top:
        os.chmod(top, 0o755)
        yield Path(top)


def package(top: Path, name: str, code: str, port: dict[str, str]) -> Path:
    d = top / name
    d.mkdir()
    os.chmod(d, 0o755)
    (d / "bot.py").write_text(code)
    manifest = json.loads((PYBOT / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps({**manifest, "name": name, "port": port}))
    return d


def launch(d: Path, tmp_path: Path, limits: Limits | None = None) -> SandboxedBot:
    pm = parse_package_manifest(json.loads((d / "manifest.json").read_text()), d)
    return Sandbox(limits=limits).launch(pm.manifest, pm.command, d, tmp_path / "logs")


def play(bot: SandboxedBot, tmp_path: Path) -> MatchOutcome:
    settings = MatchSettings(seed=3, deals=1, deadline_ms=2000, time_bank_ms=2000, log_dir=str(tmp_path))
    with launch_bots([load_manifest(HEURISTIC)], tmp_path / "other") as (eps, _procs):
        return run_match([bot.endpoint, eps[0]], settings, "m-walls")


@pytest.mark.timeout(120)
def test_the_sandboxes_tmp_holds_no_more_than_its_cap(packages, tmp_path):
    code = (PYBOT / "bot.py").read_text()
    code = code.replace("    def decide(", "    filled = False\n\n    def decide(", 1)
    code = code.replace(
        "        return self.rng.choice(legal)",
        "        if not self.filled:\n            self.filled = True\n            fill()\n"
        "        return self.rng.choice(legal)",
    )
    d = package(packages, "filler", FILL_TMP + code, {"socket": "--socket"})
    bot = launch(d, tmp_path, Limits(tmp_mb=8))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
    finally:
        bot.stop()
    assert outcome.forfeit is None, outcome.forfeit_reason  # it played on
    said = re.findall(r"^RESULT fill: wrote (\d+)(.*)$", bot.stderr_path.read_text(), re.M)
    assert said, bot.stderr_path.read_text()[-2000:]
    for written, how in said:  # its seats' instance tried once: 8 MiB at most, then the disk is full
        assert int(written) <= 8 << 20 and how == ", then ENOSPC", (written, how)


@pytest.mark.timeout(120)
def test_a_bot_told_its_port_in_the_environment_is_bridged_to_the_socket(packages, tmp_path):
    # The SDK listens on $PORT when no --port is given: on loopback inside the sandbox's own network.
    d = package(packages, "envport", (PYBOT / "bot.py").read_text(), {"env": "PORT"})
    bot = launch(d, tmp_path)
    try:
        assert bot.endpoint.startswith("unix:") and bot.endpoint.endswith("/bot.sock")
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
    finally:
        bot.stop()
    assert outcome.forfeit is None, outcome.forfeit_reason
    assert outcome.bots[0].counts.get("ok", 0) > 10  # it answered over the socket, through the relay
