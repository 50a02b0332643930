"""The arena's server processes: ``arena up`` (everything on one box), ``arena api``, ``arena worker``,
``arena web``.

``arena up`` starts, with bounded waits at every step: a Redis (the embedded one, persisting under the
data dir, unless ``--redis`` names one), the API (with the ratings updater, the ladder feeder and the
gauges), its /metrics, the web pages, the archiver (records into ``<data dir>/archive``, ``arena.store.archive``),
and N worker processes (``arena worker``, restarted if they die).
It writes ``<data dir>/arena-up.json`` (addresses, for the other ``arena`` commands) and the admin token
to ``<data dir>/admin-token`` (mode 0600), printed once when first created.  SIGINT/SIGTERM stop it all:
workers first (warm: they finish their match; then cold; then SIGKILL), then the servers, then Redis.

The embedded Redis is supervised (docs/operating.md): it has a generated password
(``<data dir>/redis/redis-password``, mode 0600; workers get the file's path, never the password), is
restarted if it dies, and dies with ``arena up`` (parent-death signal).  ``<data dir>/arena-up.lock`` and
``<data dir>/redis/redis.lock`` (flock) make a second ``arena up``, or a second Redis, on one data dir
impossible: the second ``arena up`` refuses, naming the pid that holds the directory.

The server commands bind ``--host`` (default 0.0.0.0 for ``api``/``worker``/``web``, which run in
containers; 127.0.0.1 for ``up``).  Metrics listen on ``$PILOTTA_METRICS_ADDR`` or loopback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from wsgiref.simple_server import WSGIServer

import grpc
import redis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from arena import metrics
from arena.api import ApiServer
from arena.bots.limits import Policy, store_policy
from arena.bots.packages import PackageCache, PackageStore
from arena.bots.registry import Registry
from arena.bots.trust import open_registration, set_registration_key
from arena.bots.validation import Validator
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.sandbox import Sandbox, probe
from arena.sandbox.lifetime import with_parent_death
from arena.service import ensure_admin_token
from arena.store.archive import Archive, Archiver, Retention, add_retention_args, retention_of
from arena.store.redis_server import PASSWORD_FILE_ENV, EmbeddedRedis, connect, read_password
from arena.store.retry import REDIS_DOWN, Backoff, patiently
from arena.web import WebServer, serve_web
from referee.match.bots import port_in_use

log = logging.getLogger(__name__)

STATE_FILE = "arena-up.json"
LOCK_FILE = "arena-up.lock"
TOKEN_FILE = "admin-token"
REGISTRATION_KEY_FILE = "registration-key"
DEFAULT_DATA_DIR = "var/arena"
DEFAULT_API = "127.0.0.1:50051"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def read_state(data_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``arena up``'s state file, or None if there is none (or it is unreadable)."""
    try:
        data = json.loads((Path(data_dir) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _stop_event() -> threading.Event:
    """An event set by SIGINT/SIGTERM (only the main thread may install handlers)."""
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in _STOP_SIGNALS:
            signal.signal(sig, lambda *_: stop.set())
    return stop


def _wait_redis(r: redis.Redis, timeout_s: float) -> None:
    """Bounded wait for Redis to answer (it may start at the same time as we do, e.g. in compose)."""
    try:
        patiently(r.ping, timeout_s, Backoff(0.1, 1.0))
    except REDIS_DOWN as e:
        raise RuntimeError(f"redis did not answer within {timeout_s:g} s: {e}") from None


# ------------------------------------------------------------------------- arena api


def run_api(
    redis_url: str,
    host: str,
    port: int,
    metrics_port: int | None,
    policy: Policy | None = None,
    password_file: str | None = None,
) -> int:
    r = connect(redis_url, password_file=password_file)
    _wait_redis(r, 60)
    if policy is not None:
        store_policy(r, policy)
    token = ensure_admin_token(r, os.environ.get("ARENA_ADMIN_TOKEN") or None)
    if token:
        # Shown once; Redis keeps only its hash.  Set ARENA_ADMIN_TOKEN to choose it instead.
        print(f"admin token (shown once, keep it): {token}", file=sys.stderr, flush=True)
    if metrics_port is not None:
        metrics.start_metrics_server(metrics_port)
    api = ApiServer(r, host, port).start()
    log.info("api: serving on %s:%d", host, api.port)
    stop = _stop_event()
    while not stop.wait(1.0):
        pass
    log.info("api: stopping")
    api.stop()
    return 0


# ---------------------------------------------------------------------- arena worker


# The worker's health service reports this service SERVING when it can sandbox uploaded bots.
SANDBOX_HEALTH_SERVICE = "pilotta.arena.v1.Sandbox"


def health_server(host: str, port: int) -> tuple[grpc.Server, health.HealthServicer, int]:
    """A gRPC server with only the health service (SERVING), for probes of processes that serve no gRPC."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="health"))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise OSError(f"cannot listen on {host}:{port} for the health service (in use?)")
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    return server, servicer, bound


def run_worker(
    redis_url: str,
    *,
    worker_id: str | None = None,
    host: str = "0.0.0.0",
    health_port: int | None = 50052,
    metrics_port: int | None = None,
    stale_ms: int = 60_000,
    bot_logs: str | None = None,
    warm_bots: bool = True,
    max_matches: int | None = None,
    idle_exit_s: float | None = None,
    deadline_ms: int = 1000,
    password_file: str | None = None,
) -> int:
    """One worker process until SIGTERM (warm: finishes its match) or a second signal (cold)."""
    worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
    r = connect(redis_url, password_file=password_file)
    _wait_redis(r, 60)
    # The sandbox is probed once, at start: without one this worker refuses uploaded bots (never runs them
    # unsandboxed), says so here, in its health status and in a metric.
    found = probe()
    sandbox = cache = validator = None
    if found.ok:
        log.info("worker %s: sandbox available (%s)", worker_id, found.reason)
        sandbox, cache = Sandbox(), PackageCache(PackageStore(r))
        logs = Path(bot_logs) if bot_logs else Path(tempfile.mkdtemp(prefix="arena-validation-"))
        validator = Validator(r, cache, sandbox, worker_id, logs / "validation")
    else:
        log.warning("worker %s: cannot sandbox, so uploaded bots are refused here: %s", worker_id, found.reason)
    metrics.set_worker_sandbox(worker_id, found.ok)
    runner = ArenaRunner(
        Registry(r),
        log_dir=bot_logs,
        warm_bots=warm_bots,
        deadline_ms=deadline_ms,
        sandbox=sandbox,
        packages=cache,
        sandbox_refused=found.reason,
    )
    worker = Worker(r, runner, worker_id, stale_ms=stale_ms)
    worker.install_signal_handlers()
    hs = None
    if health_port is not None and health_port >= 0:
        hs, servicer, bound = health_server(host, health_port)
        status = health_pb2.HealthCheckResponse.SERVING if found.ok else health_pb2.HealthCheckResponse.NOT_SERVING
        servicer.set(SANDBOX_HEALTH_SERVICE, status)
        log.info("worker %s: health on %s:%d", worker_id, host, bound)
    if validator is not None:
        validator.start()
    if metrics_port is not None:
        try:
            metrics.start_metrics_server(metrics_port)
        except OSError as e:  # no metrics is better than no worker (and no restart loop in `arena up`)
            log.error("worker %s: cannot serve metrics on port %d: %s; running without", worker_id, metrics_port, e)
    beat_stop = threading.Event()

    def beat() -> None:  # the worker's own heartbeat gauge, for per-instance scrapes
        while not beat_stop.wait(5.0):
            metrics.set_worker_heartbeat(worker_id)

    metrics.set_worker_heartbeat(worker_id)
    threading.Thread(target=beat, name="metrics-heartbeat", daemon=True).start()
    try:
        st = worker.run(max_matches=max_matches, idle_exit_s=idle_exit_s)
    finally:
        beat_stop.set()
        if validator is not None:
            validator.stop_event.set()
        runner.close()
        if hs is not None:
            hs.stop(1.0).wait(2.0)
    print(json.dumps({"worker": worker_id, **vars(st)}), flush=True)
    return 0


# ------------------------------------------------------------------------- arena web


def run_web_server(redis_url: str, host: str, port: int, password_file: str | None = None) -> int:
    from arena.web import run_web

    if password_file:  # the web server connects with connect(), which reads the file this names
        os.environ[PASSWORD_FILE_ENV] = password_file

    return run_web(redis_url, host, port)


# -------------------------------------------------------------------------- arena up


@dataclass
class UpConfig:
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    workers: int = 2
    redis_url: str | None = None
    redis_password_file: str | None = None  # for redis_url's password; the embedded Redis makes its own
    host: str = "127.0.0.1"
    api_port: int = 50051
    web_port: int = 8080
    metrics_port: int | None = 9100  # workers use the next ports; 0: any free port; None: no metrics
    worker_args: list[str] = field(default_factory=list)
    stop_timeout_s: float = 20.0
    # False: new bots need the registration key (made once, kept in the data dir, printed at start).
    open_registration: bool = False
    # The arena's limits and endpoint policy (arena.bots.limits), stored at start; None: keep the stored one.
    policy: Policy | None = None
    # How long archived records stay in Redis (arena.store.archive; the archive is <data dir>/archive).
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
                self.redis = EmbeddedRedis(self.data_dir / "redis", auth=True).start()
                self.url = self.redis.url
                self.password_file = str(self.redis.password_file)
            self.r = connect(self.url, password_file=self.password_file)
            _wait_redis(self.r, 30)
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
        """Require the key kept in the data dir (made now if there is none), or none with open registration."""
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
        lines = [
            f"arena up: data in {self.data_dir}",
            f"  redis    {self.url}" + (" (embedded)" if self.redis else ""),
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
            lines.append(
                f"  registration key (for new bots; also in {self.data_dir / REGISTRATION_KEY_FILE}): "
                f"{self.registration_key}"
            )
        else:
            lines.append("  registration: open (no key needed to register a bot)")
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


def run_up(cfg: UpConfig) -> int:
    stop = _stop_event()
    stack = Stack(cfg)
    try:
        stack.start()
    except (RuntimeError, OSError) as e:
        print(f"arena up: {e}", file=sys.stderr)
        return 1
    print(stack.banner(), flush=True)
    print("Ctrl-C (or SIGTERM) stops everything.", flush=True)
    try:
        stack.supervise(stop)
    finally:
        print("arena up: stopping (workers finish their match first)...", file=sys.stderr, flush=True)
        started = time.monotonic()
        stack.stop()
        print(f"arena up: stopped in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return 0


# --------------------------------------------------------------------------- parsers


def _metrics_port(p: argparse.ArgumentParser, default: int | None, what: str) -> None:
    p.add_argument(
        "--metrics-port", type=int, default=default, help=f"serve /metrics on this port ({what}; 0: any free port)"
    )


def _log_level(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING... (default INFO)")


def _setup_logging(args: argparse.Namespace) -> None:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def cmd_up(args: argparse.Namespace) -> int:
    _setup_logging(args)
    if args.workers < 0:
        print("error: --workers must be 0 or more", file=sys.stderr)
        return 2
    try:
        retention = retention_of(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if _bad_password_file(args):
        return 2
    worker_args = ["--log-level", args.log_level]
    if args.fresh_bots:
        worker_args.append("--fresh-bots")
    return run_up(
        UpConfig(
            data_dir=Path(args.data_dir),
            workers=args.workers,
            redis_url=args.redis,
            redis_password_file=args.redis_password_file,
            host=args.host,
            api_port=args.api_port,
            web_port=args.web_port,
            metrics_port=args.metrics_port,
            worker_args=worker_args,
            open_registration=args.open_registration,
            policy=_policy(args),
            retention=retention,
        )
    )


def _policy(args: argparse.Namespace) -> Policy | None:
    """The policy of ``--policy FILE`` (or the defaults) with ``--allow-network``s added; None with neither."""
    if args.policy is None and not args.allow_network:
        return None
    base = Policy.from_file(args.policy) if args.policy else Policy()
    return dataclasses.replace(base, allow_networks=(*base.allow_networks, *args.allow_network))


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy", default=None, help="the arena's limits and endpoint policy, a TOML file (docs/security.md)"
    )
    p.add_argument(
        "--allow-network",
        action="append",
        default=[],
        metavar="CIDR",
        help="let endpoint bots be on this network, e.g. 127.0.0.0/8 (repeatable; loopback and link-local are "
        "refused by default)",
    )


def _bad_password_file(args: argparse.Namespace) -> bool:
    """Whether ``--redis-password-file`` names a file that cannot be read (said on stderr, without a
    traceback): checked before anything starts."""
    if not args.redis_password_file:
        return False
    try:
        read_password(args.redis_password_file)
    except RuntimeError as e:
        print(f"error: {e} (--redis-password-file)", file=sys.stderr)
        return True
    return False


def cmd_api(args: argparse.Namespace) -> int:
    _setup_logging(args)
    if _bad_password_file(args):
        return 2
    return run_api(args.redis, args.host, args.port, args.metrics_port, _policy(args), args.redis_password_file)


def cmd_worker(args: argparse.Namespace) -> int:
    _setup_logging(args)
    if _bad_password_file(args):
        return 2
    return run_worker(
        args.redis,
        worker_id=args.worker_id,
        host=args.host,
        health_port=None if args.health_port < 0 else args.health_port,
        metrics_port=args.metrics_port,
        stale_ms=args.stale_ms,
        bot_logs=args.bot_logs,
        warm_bots=not args.fresh_bots,
        max_matches=args.max_matches,
        idle_exit_s=args.idle_exit_s,
        deadline_ms=args.deadline_ms,
        password_file=args.redis_password_file,
    )


def cmd_web(args: argparse.Namespace) -> int:
    _setup_logging(args)
    if _bad_password_file(args):
        return 2
    return run_web_server(args.redis, args.host, args.port, args.redis_password_file)


def _redis_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--redis",
        default=os.environ.get("ARENA_REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="Redis URL, without a password (default $ARENA_REDIS_URL or redis://127.0.0.1:6379/0)",
    )
    p.add_argument(
        "--redis-password-file",
        default=os.environ.get(PASSWORD_FILE_ENV) or None,
        help=f"file holding the Redis password, e.g. a mounted secret (default ${PASSWORD_FILE_ENV}; "
        "never put the password itself in arguments or the environment)",
    )


def add_server_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="run the whole arena here: Redis, API, workers, ratings, metrics, web")
    up.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"state and Redis data (default {DEFAULT_DATA_DIR})")
    up.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    up.add_argument("--redis", default=None, help="use this Redis instead of the embedded one")
    up.add_argument(
        "--redis-password-file", default=None, help="file holding that Redis's password (the embedded one has its own)"
    )
    up.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: all interfaces)")
    up.add_argument("--api-port", type=int, default=50051)
    up.add_argument("--web-port", type=int, default=8080)
    _metrics_port(up, 9100, "the API; workers use the next ports")
    up.add_argument("--fresh-bots", action="store_true", help="start manifest bots anew for every match")
    up.add_argument(
        "--open-registration", action="store_true", help="let anyone register a bot without the registration key"
    )
    _policy_args(up)
    add_retention_args(up, prefix="archive-")
    _log_level(up)
    up.set_defaults(func=cmd_up, log_level="WARNING")

    api = sub.add_parser("api", help="serve the arena API (gRPC) with the ratings updater and ladder feeder")
    _redis_arg(api)
    api.add_argument("--host", default="0.0.0.0")
    api.add_argument("--port", type=int, default=50051)
    _metrics_port(api, None, "default: none")
    _policy_args(api)
    _log_level(api)
    api.set_defaults(func=cmd_api)

    w = sub.add_parser("worker", help="play queued matches (run as many as you like, on any machine)")
    _redis_arg(w)
    w.add_argument("--worker-id", default=None, help="default: hostname-pid")
    w.add_argument("--host", default="0.0.0.0", help="address of the health service")
    w.add_argument("--health-port", type=int, default=50052, help="gRPC health port (0: any free, -1: none)")
    _metrics_port(w, None, "default: none")
    w.add_argument(
        "--stale-ms",
        type=int,
        default=60_000,
        help="take over a live worker's matches idle this long (default 60000); a dead worker's (no heartbeat "
        "for 10 s) are taken over at once",
    )
    w.add_argument("--bot-logs", default=None, help="directory for manifest bots' stderr (default: a temp dir)")
    w.add_argument("--fresh-bots", action="store_true", help="start manifest bots anew for every match")
    w.add_argument("--deadline-ms", type=int, default=1000, help="time per decision (default 1000)")
    w.add_argument("--max-matches", type=int, default=None, help="exit after this many matches")
    w.add_argument("--idle-exit-s", type=float, default=None, help="exit after this long without work")
    _log_level(w)
    w.set_defaults(func=cmd_worker)

    web = sub.add_parser("web", help="serve the web pages (leaderboard, matches, replays)")
    _redis_arg(web)
    web.add_argument("--host", default="0.0.0.0")
    web.add_argument("--port", type=int, default=8080)
    _log_level(web)
    web.set_defaults(func=cmd_web)
