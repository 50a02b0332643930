"""Fixtures of the monitoring tests: processes started by a test are always stopped."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start processes (logs in tmp); at teardown, stop them newest first: SIGTERM, then SIGKILL."""
    started: list[tuple[subprocess.Popen[bytes], float]] = []

    def start(name: str, cmd: list[str], stop_bound_s: float = 10.0, **kw: Any) -> subprocess.Popen[bytes]:
        with open(tmp_path / f"{name}.log", "wb") as log:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, **kw)
        started.append((p, stop_bound_s))
        return p

    try:
        yield start
    finally:
        for p, bound in reversed(started):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
                try:
                    p.wait(bound)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
