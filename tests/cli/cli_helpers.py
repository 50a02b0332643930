"""Helpers of the command-line tests: real `arena` and `referee` processes, real bots on loopback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI_BOTS = Path(__file__).resolve().parent / "bots"
TEST_BOTS = REPO / "tests" / "referee" / "bots"
SAMPLES = REPO / "sample_bots"

Run = Callable[..., subprocess.CompletedProcess[str]]


def command(program: str, *args: str, timeout: float = 120.0, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run ``arena ARGS`` (or ``referee ARGS``) as a process of the installed interpreter; bounded."""
    module = {"arena": "arena.cli", "referee": "referee.cli"}[program]
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
