"""Helpers of the monitoring tests (a unique basename: test folders are not packages)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


class NotYet(Exception):
    """Raised by a polled condition that does not hold yet; its message is shown if the wait times out."""


def wait_until(
    pred: Callable[[], T], timeout_s: float, what: str, poll_s: float = 0.25, alive: Callable[[], None] | None = None
) -> T:
    """Poll ``pred`` until it returns something truthy, for at most ``timeout_s``.

    ``NotYet`` and connection errors (a server still starting) count as "not yet"; the last one is in the
    failure message.  ``alive`` is called each round to fail at once (with logs) if a process died.
    """
    deadline = time.monotonic() + timeout_s
    last = "nothing yet"
    while True:
        if alive is not None:
            alive()
        try:
            value = pred()
            if value:
                return value
            last = repr(value)
        except (NotYet, OSError, grpc.RpcError) as e:
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}; last: {last}")
        time.sleep(poll_s)


def log_tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def prometheus_binary() -> str:
    path = "/usr/bin/prometheus" if os.access("/usr/bin/prometheus", os.X_OK) else shutil.which("prometheus")
    if path is None:
        if in_ci():
            pytest.fail(
                "the prometheus server is not installed and CI must run this test: "
                "apt-get install prometheus (.ci/run does)"
            )
        pytest.skip("the prometheus server is not installed (apt-get install prometheus); CI runs this test")
    return path


def logged_port(log: Path, pattern: str, alive: Callable[[], None], what: str, timeout_s: float = 60) -> int:
    """The port a server bound itself (port 0) and wrote in its log: the last match of ``pattern`` (its first
    group; the last, for a process restarted into the same log). A port the test picked and handed over could
    be taken by another process before the server bound it; one the server bound itself cannot."""

    def found() -> int:
        ports = re.findall(pattern, log.read_text(errors="replace")) if log.exists() else []
        if not ports:
            raise NotYet(f"no {pattern!r} in {log.name} yet")
        return int(ports[-1])

    return wait_until(found, timeout_s, what, alive=alive)


def arena_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [sys.executable, "-m", "arena.cli", *args, "--data-dir", str(data_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, f"arena {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    return res


class ArenaUp:
    """``arena up`` started by a test: API, ``workers`` workers, each serving its metrics on a port it binds
    itself (``--metrics-port 0``), all on loopback; ``state`` is its state file once written, which gives the
    API's address and metrics port; the workers' ports are read from their logs (``metrics_ports``)."""

    def __init__(self, procs: Callable[..., subprocess.Popen[bytes]], tmp_path: Path, workers: int) -> None:
        self.data = tmp_path / "arena"
        self.log = tmp_path / "arena-up.log"
        self.workers = workers
        cmd = [sys.executable, "-m", "arena.cli", "up", "--data-dir", str(self.data), "--workers", str(workers)]
        # INFO: the workers log the metrics port they got (arena up's own default, WARNING, would not say it).
        cmd += ["--api-port", "0", "--web-port", "0", "--metrics-port", "0", "--log-level", "INFO"]
        # Metrics on loopback whatever the caller's environment says (the container image sets 0.0.0.0);
        # arena up stops its workers warm (they finish their match), up to ~25 s, hence the 40 s bound.
        env = {**os.environ, "PILOTTA_METRICS_ADDR": "127.0.0.1"}
        self.proc = procs("arena-up", cmd, stop_bound_s=40.0, cwd=REPO, env=env)
        state_file = self.data / "arena-up.json"
        self.state: dict[str, Any] = wait_until(
            lambda: state_file.exists() and json.loads(state_file.read_text()),
            60,
            "arena up's state file",
            alive=self.alive,
        )
        self.metrics_port = int(self.state["metrics"])  # the API's
        self.api_port = int(str(self.state["api"]).rsplit(":", 1)[1])

    def worker_metrics_port(self, i: int) -> int:
        """Worker ``i``'s metrics port now (a worker arena up restarted logs a new one into the same log)."""
        log = self.data / "logs" / f"worker-{i}.log"
        return logged_port(log, r"metrics on port (\d+)", self.alive, f"worker {i}'s metrics port")

    @property
    def metrics_ports(self) -> list[int]:
        """The API's metrics port, then each worker's, as they are now."""
        return [self.metrics_port, *(self.worker_metrics_port(i) for i in range(self.workers))]

    def alive(self) -> None:
        """Fail at once, with its log, if ``arena up`` has exited."""
        if self.proc.poll() is not None:
            raise AssertionError(f"arena up exited with {self.proc.returncode}:\n{log_tail(self.log)}")
