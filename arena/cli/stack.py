"""The arena on one box, as ``arena up`` runs it (``Stack``; ``arena demo`` and the tests drive it too):
the processes it starts, supervises and stops.

It starts, with bounded waits at every step: a Redis (the embedded one, persisting under the data dir,
unless ``--redis`` names one), the API (with the ratings updater, the ladder feeder and the gauges), its
/metrics, the web pages, the archiver (records into ``<data dir>/archive``, ``arena.store.archiver``), and
N worker processes (``arena worker``, restarted if they die).  It writes ``<data dir>/arena-up.json``
(addresses, for the other ``arena`` commands) and the admin token to ``<data dir>/admin-token`` (mode
0600), printed once when first created (``data_dir``).  ``stop`` stops it all: workers first (warm: they
finish their match; then cold; then SIGKILL), then the servers, then Redis.

The embedded Redis is supervised (docs/operating.md): it has a generated password
(``<data dir>/redis/redis-password``, mode 0600; workers get the file's path, never the password), is
restarted if it dies, and dies with ``arena up`` (parent-death signal).  It keeps one address across
restarts of ``arena up`` (the port in ``<data dir>/redis/redis.port``, or ``--redis-port``; loopback unless
``--redis-host`` says otherwise), so a worker on another machine finds it again; a port taken by another
process is refused, naming it.  ``<data dir>/arena-up.lock`` and
``<data dir>/redis/redis.lock`` (flock) make a second ``arena up``, or a second Redis, on one data dir
impossible: the second ``arena up`` refuses, naming the pid that holds the directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from wsgiref.simple_server import WSGIServer

import redis

from arena import metrics
from arena.api import ApiServer
from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.bots.trust import open_registration, set_registration_key
from arena.cli.data_dir import DEFAULT_DATA_DIR, LOCK_FILE, REGISTRATION_KEY_FILE, STATE_FILE, TOKEN_FILE, read_state
from arena.cli.servers import wait_redis
from arena.sandbox.lifetime import with_parent_death
from arena.service import ensure_admin_token
from arena.store.archive import Archive
from arena.store.archiver import Archiver, Retention
from arena.store.redis_server import EmbeddedRedis, PortTaken, connect
from arena.web import WebServer, serve_web
from referee.match.bots import port_in_use

log = logging.getLogger(__name__)


@dataclass
class UpConfig:
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    workers: int = 2
    redis_url: str | None = None
    redis_password_file: str | None = None  # for redis_url's password; the embedded Redis makes its own
    # The embedded Redis's port: None: the one kept in <data dir>/redis/redis.port, else any free one (then
    # kept).  Its address: loopback; another (0.0.0.0) only when the operator asks, for remote workers.
    redis_port: int | None = None
    redis_host: str = "127.0.0.1"
    host: str = "127.0.0.1"
    api_port: int = 50051
    web_port: int = 8080
    metrics_port: int | None = 9100  # workers use the next ports; 0: any free port; None: no metrics
    worker_args: list[str] = field(default_factory=list)
    stop_timeout_s: float = 20.0
    # False: closed: a new bot's owner is one the operator added, with its token (the registration key, made
    # once and kept in the data dir, marks it closed).
    open_registration: bool = False
    # The arena's limits and endpoint policy (arena.bots.limits), stored at start; None: keep the stored one.
    policy: Policy | None = None
    # How long archived records stay in Redis (arena.store.archiver; the archive is <data dir>/archive).
    retention: Retention = field(default_factory=Retention)


class Stack:
    """Everything ``arena up`` runs, as an object the demo and the tests can drive too."""

    def __init__(self, cfg: UpConfig) -> None:
        self.cfg = cfg
        self.data_dir = cfg.data_dir.resolve()
        self.redis: EmbeddedRedis | None = None
        self.url = cfg.redis_url or ""
        self.password_file: str | None = cfg.redis_password_file
        self._lock_fd: int | None = None
        self.redis_restarts = 0
        self.r: redis.Redis | None = None
        self.api: ApiServer | None = None
        self.web: WebServer | None = None
        self.web_port = 0
        self.metrics_server: WSGIServer | None = None
        self.metrics_port: int | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        self.admin_token: str | None = None
        self.new_token = False
        self.registration_key: str | None = None  # None: open registration
        self.restarts = 0
        self.archive = Archive(self.data_dir / "archive")
        self._archiver_stop = threading.Event()
        self._archiver_r: redis.Redis | None = None

    # start -----------------------------------------------------------------------------

    def start(self) -> Stack:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        self._lock_data_dir()
        try:
            if not self.cfg.redis_url:
                # Its password is made once and kept in its data dir; it waits (bounded) for the Redis of an
                # arena up that was just killed, which is shutting down (it dies with its parent).
                self.redis = self._start_redis()
                self.url = self.redis.url
                self.password_file = str(self.redis.password_file)
            self.r = connect(self.url, password_file=self.password_file)
            wait_redis(self.r, 30)
            if self.cfg.policy is not None:
                store_policy(self.r, self.cfg.policy)
            self._admin_token()
            self._registration_key()
            # Workers first: forking while gRPC threads are busy makes gRPC log a warning per fork.
            for i in range(self.cfg.workers):
                self.workers.append(self._spawn_worker(i))
            if port_in_use(self.cfg.host, self.cfg.api_port):
                raise OSError(
                    f"cannot serve the API on {self.cfg.host}:{self.cfg.api_port}: the port is in use "
                    "(another arena up?); choose another with --api-port N (0: any free port)"
                )
            self.api = ApiServer(self.r, self.cfg.host, self.cfg.api_port, archive=self.archive).start()
            self._archiver_r = connect(self.url, password_file=self.password_file)
            archiver = Archiver(self._archiver_r, self.archive, self.cfg.retention)
            threading.Thread(target=archiver.run, args=(self._archiver_stop,), name="archiver", daemon=True).start()
            try:
                self.web, _thread = serve_web(
                    connect(self.url, password_file=self.password_file), self.cfg.host, self.cfg.web_port, self.archive
                )
            except OSError as e:
                raise OSError(f"cannot serve the web pages on {self.cfg.host}:{self.cfg.web_port}: {e}") from None
            self.web_port = int(self.web.server_address[1])
            if self.cfg.metrics_port is not None:
                try:
                    self.metrics_server, _t = metrics.start_metrics_server(self.cfg.metrics_port)
                except OSError as e:
                    raise OSError(
                        f"cannot serve metrics on port {self.cfg.metrics_port}: {e} (--metrics-port 0: any free port)"
                    ) from None
                self.metrics_port = int(self.metrics_server.server_port)
            self._write_state()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_redis(self) -> EmbeddedRedis:
        embedded = EmbeddedRedis(
            self.data_dir / "redis", port=self.cfg.redis_port, host=self.cfg.redis_host, auth=True, keep_port=True
        )
        try:
            return embedded.start()
        except PortTaken as e:
            # Never another port: the workers on other machines know this one.
            kept = "given with --redis-port" if self.cfg.redis_port else f"kept in {embedded.port_file}"
            raise RuntimeError(
                f"cannot start the embedded Redis: {e}; it is the port {kept}, where remote workers look for "
                "it. Stop that process, or give another port with --redis-port N (and point the remote "
                "workers at it)"
            ) from None

    def _lock_data_dir(self) -> None:
        """Hold ``<data dir>/arena-up.lock`` (flock) while this arena runs: a second ``arena up`` on the same
        directory is refused.  The kernel releases it however this process ends."""
        path = self.data_dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RuntimeError(
                f"an arena is already running from {self.data_dir} (pid {holder} holds {path}); "
                "stop it first, or give another --data-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def _admin_token(self) -> None:
        assert self.r is not None
        path = self.data_dir / TOKEN_FILE
        saved = path.read_text().strip() if path.exists() else None
        new = ensure_admin_token(self.r, saved)
        if new and not saved:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(new + "\n")
            self.new_token = True
        self.admin_token = saved or new

    def _registration_key(self) -> None:
        """Close registration with the key kept in the data dir (made now if there is none), or open it."""
        assert self.r is not None
        registry = Registry(self.r)
        path = self.data_dir / REGISTRATION_KEY_FILE
        if self.cfg.open_registration:
            open_registration(registry)
            return
        saved = path.read_text().strip() if path.exists() else ""
        self.registration_key = set_registration_key(registry, saved or None)
        if not saved:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.registration_key + "\n")

    def _worker_cmd(self, i: int) -> list[str]:
        mp = self.cfg.metrics_port
        wport = None if mp is None else (0 if mp == 0 else mp + 1 + i)
        cmd = [
            sys.executable,
            "-m",
            "arena.cli",
            "worker",
            "--redis",
            self.url,
            "--worker-id",
            # A new id for every start: a restarted worker must not beat under its dead predecessor's id, or
            # the predecessor's claims would look live and wait for the stale_ms take-over.
            f"{socket.gethostname()}-up{os.getpid()}-{i}.{self.restarts}",
            "--host",
            self.cfg.host,
            "--health-port",
            "0",
            "--bot-logs",
            str(self.data_dir / "bot-logs"),
        ]
        if self.password_file:  # the file's path, never the password: any local user can read arguments
            cmd += ["--redis-password-file", self.password_file]
        if wport is not None:
            cmd += ["--metrics-port", str(wport)]
        return cmd + self.cfg.worker_args

    def _spawn_worker(self, i: int) -> subprocess.Popen[bytes]:
        out = open(self.data_dir / "logs" / f"worker-{i}.log", "ab")  # noqa: SIM115 - kept open for the child
        self._logs.append(out)
        # Own session: a Ctrl-C in the terminal reaches only us, and we stop the workers in order.  If we
        # are killed outright, the kernel sends them SIGTERM (a warm stop) instead of leaving them running.
        return subprocess.Popen(
            with_parent_death(self._worker_cmd(i), signal.SIGTERM),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )

    def _write_state(self) -> None:
        assert self.api is not None
        state = {
            "pid": os.getpid(),
            "redis": self.url,
            "redis_password_file": self.password_file,
            "api": self.api.address,
            "web": f"http://{self.api.address.rsplit(':', 1)[0]}:{self.web_port}/",
            "metrics": self.metrics_port,
            "workers": [w.pid for w in self.workers],
            "started": time.time(),
        }
        tmp = self.data_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.data_dir / STATE_FILE)

    def banner(self) -> str:
        assert self.api is not None
        host = self.api.address.rsplit(":", 1)[0]
        lines = [f"arena up: data in {self.data_dir}", f"  redis    {self.url}" + (" (embedded)" if self.redis else "")]
        if self.redis is not None:
            if self.redis.host.startswith("127.") or self.redis.host in ("::1", "[::1]", "localhost"):
                reach = "this machine only (--redis-host 0.0.0.0 lets other machines' workers in)"
            else:
                reach = (
                    f"listening on {self.redis.host}: other machines' workers attach with a copy of its password file"
                )
            lines.append(f"           {reach}; port kept in {self.redis.port_file}")
        lines += [
            f"  api      {self.api.address}   (gRPC; health + reflection)",
            f"  web      http://{host}:{self.web_port}/",
        ]
        if self.metrics_port is not None:
            lines.append(f"  metrics  http://127.0.0.1:{self.metrics_port}/metrics (workers: next ports)")
        lines.append(f"  workers  {len(self.workers)} (logs in {self.data_dir / 'logs'})")
        if self.new_token:
            lines.append(f"  admin token (shown once; also in {self.data_dir / TOKEN_FILE}): {self.admin_token}")
        elif self.admin_token:
            lines.append(f"  admin token: in {self.data_dir / TOKEN_FILE}")
        else:
            lines.append("  admin token: set earlier; not stored in this data dir")
        if self.registration_key:
            # The key in the data dir marks the arena closed (owners the operator adds); it admits no bot.
            lines.append(
                "  registration: closed (a new bot takes its owner's token: arena owner add NAME; "
                f"kept closed by {self.data_dir / REGISTRATION_KEY_FILE})"
            )
        else:
            lines.append("  registration: open (any owner name; an owner added with arena owner add takes its token)")
        return "\n".join(lines)

    # run -------------------------------------------------------------------------------

    def supervise(self, stop: threading.Event, poll_s: float = 1.0) -> None:
        """Until ``stop``: restart the embedded Redis if it died (on its port and data dir: it replays its
        AOF; the API and workers reconnect), and workers that died (at most one restart per worker per 5 s).
        Call it from the thread that started the stack: the restarted Redis dies with that thread."""
        last: dict[int, float] = {}
        while not stop.wait(poll_s):
            if self.redis is not None and not self.redis.running:
                log.warning("the embedded redis-server exited; restarting it")
                try:
                    self.redis.start()
                    self.redis_restarts += 1
                except RuntimeError as e:  # tried again at the next poll
                    log.error("cannot restart the embedded redis-server: %s", e)
            for i, w in enumerate(self.workers):
                if w.poll() is not None and time.monotonic() - last.get(i, 0.0) > 5.0:
                    log.warning("worker %d exited with %s; restarting it", i, w.returncode)
                    last[i] = time.monotonic()
                    self.workers[i] = self._spawn_worker(i)
                    self.restarts += 1
                    with contextlib.suppress(OSError):
                        self._write_state()

    # stop ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Workers (warm, then cold, then SIGKILL), servers, Redis; every wait bounded."""
        self._stop_workers()
        self._archiver_stop.set()
        if self._archiver_r is not None:
            self._archiver_r.close()
            self._archiver_r = None
        if self.api is not None:
            self.api.stop(grace_s=2.0)
            self.api = None
        if self.web is not None:
            self.web.shutdown()
            self.web.server_close()
            self.web = None
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
            self.metrics_server = None
        if self.r is not None:
            self.r.close()
        if self.redis is not None:
            self.redis.stop()
            self.redis = None
        for f in self._logs:
            f.close()
        self._logs = []
        state = read_state(self.data_dir)
        if state and state.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                (self.data_dir / STATE_FILE).unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _stop_workers(self) -> None:
        live = [w for w in self.workers if w.poll() is None]
        deadline = time.monotonic() + self.cfg.stop_timeout_s
        for step in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):  # warm, cold, kill
            for w in live:
                with contextlib.suppress(ProcessLookupError):
                    w.send_signal(step)
            for w in live:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    w.wait(max(0.1, deadline - time.monotonic()))
            live = [w for w in live if w.poll() is None]
            if not live:
                break
            deadline = time.monotonic() + 5.0
        self.workers = []
