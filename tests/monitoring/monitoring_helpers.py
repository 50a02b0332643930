"""Helpers of the monitoring tests (a unique basename: test folders are not packages)."""

from __future__ import annotations

import json
import os
import shutil
import socket
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


def port_block(n: int, attempts: int = 100) -> int:
    """A port P with P .. P+n-1 all free on loopback now.

    ``arena up --metrics-port P`` serves the API's metrics on P and worker i's on P+1+i; with port 0 the
    workers would pick ports nobody records, and Prometheus needs static targets.
    """
    for _ in range(attempts):
        held: list[socket.socket] = []
        try:
            first = socket.socket()
            held.append(first)
            first.bind(("127.0.0.1", 0))
            base = first.getsockname()[1]
            if base + n > 65536:
                continue
            for p in range(base + 1, base + n):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", p))
            return int(base)
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no block of {n} free loopback ports found")


def port_outside(taken: Any, attempts: int = 100) -> int:
    """A free loopback port not in ``taken`` (ports handed out earlier but not bound yet)."""
    for _ in range(attempts):
        port = port_block(1)
        if port not in taken:
            return port
    raise RuntimeError("no free loopback port outside the ones already chosen")


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
    """``arena up`` started by a test: API, ``workers`` workers, metrics on ``metrics_port`` (API) and the ports
    after it (one per worker), all on loopback; ``state`` is its state file once written."""

    def __init__(self, procs: Callable[..., subprocess.Popen[bytes]], tmp_path: Path, workers: int) -> None:
        self.data = tmp_path / "arena"
        self.log = tmp_path / "arena-up.log"
        self.metrics_port = port_block(1 + workers)
        self.metrics_ports = list(range(self.metrics_port, self.metrics_port + 1 + workers))
        self.api_port = port_outside(self.metrics_ports)
        cmd = [sys.executable, "-m", "arena.cli", "up", "--data-dir", str(self.data), "--workers", str(workers)]
        cmd += ["--api-port", str(self.api_port), "--web-port", "0", "--metrics-port", str(self.metrics_port)]
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

    def alive(self) -> None:
        """Fail at once, with its log, if ``arena up`` has exited."""
        if self.proc.poll() is not None:
            raise AssertionError(f"arena up exited with {self.proc.returncode}:\n{log_tail(self.log)}")
