"""``arena worker``: one process that plays queued matches (run as many as you like, on any machine;
``arena up`` runs N of them and restarts those that die).

A worker probes the sandbox once, at start: without one it refuses uploaded bots (never runs them
unsandboxed) and says so in its log, its health status (``SANDBOX_HEALTH_SERVICE`` NOT_SERVING) and a
metric; with one it also validates uploads. SIGTERM stops it warm (it finishes its match), a second signal
cold. It serves the gRPC health service on ``--health-port`` and, if asked, /metrics; when it ends it prints
its counts as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import socket
import sys
import tempfile
import threading
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from arena import metrics
from arena.bots.packages import DEFAULT_CACHE_BYTES, PackageCache, PackageStore
from arena.bots.registry import Registry
from arena.bots.validation import Validator
from arena.cli.servers import (
    add_log_level,
    add_metrics_port,
    add_redis_arguments,
    bad_password_file,
    setup_logging,
    wait_redis,
)
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.sandbox import Sandbox, probe
from arena.store.redis_server import connect

log = logging.getLogger(__name__)


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


def default_worker_id() -> str:
    """``HOST-PID-XXXXXX``, new at each start. The random part because in a container the hostname and the
    pid are the same after a restart: a restarted worker under its old id would keep its dead predecessor's
    heartbeat alive, and the match it was playing would be taken over only once idle for ``stale_ms``
    (60 s), not 10 s after the death (issue 25, tests/deploy/test_compose_faults.py)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


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
    package_cache_bytes: int = DEFAULT_CACHE_BYTES,
) -> int:
    """One worker process until SIGTERM (warm: finishes its match) or a second signal (cold)."""
    worker_id = worker_id or default_worker_id()
    r = connect(redis_url, password_file=password_file)
    wait_redis(r, 60)
    # The sandbox is probed once, at start: without one this worker refuses uploaded bots (never runs them
    # unsandboxed), says so here, in its health status and in a metric.
    found = probe()
    sandbox = cache = validator = None
    if found.ok:
        log.info("worker %s: sandbox available (%s)", worker_id, found.reason)
        sandbox, cache = Sandbox(), PackageCache(PackageStore(r), max_bytes=package_cache_bytes)
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
            served, _thread = metrics.start_metrics_server(metrics_port)
            # The port it got (any free one for --metrics-port 0), for whoever scrapes it.
            log.info("worker %s: metrics on port %d", worker_id, served.server_port)
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


def cmd_worker(args: argparse.Namespace) -> int:
    setup_logging(args)
    if bad_password_file(args):
        return 2
    if args.package_cache_mb < 1:
        print(f"arena worker: --package-cache-mb must be at least 1, not {args.package_cache_mb}", file=sys.stderr)
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
        package_cache_bytes=args.package_cache_mb << 20,
    )


def add_worker_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    w = sub.add_parser("worker", help="play queued matches (run as many as you like, on any machine)")
    add_redis_arguments(w)
    w.add_argument("--worker-id", default=None, help="default: hostname-pid-<6 random hex digits>, new at each start")
    w.add_argument("--host", default="0.0.0.0", help="address of the health service")
    w.add_argument("--health-port", type=int, default=50052, help="gRPC health port (0: any free, -1: none)")
    add_metrics_port(w, None, "default: none")
    w.add_argument(
        "--package-cache-mb",
        type=int,
        default=DEFAULT_CACHE_BYTES >> 20,
        help="uploaded packages kept unpacked on this worker, in MiB; past it the least recently used go "
        "(default: %(default)s)",
    )
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
    add_log_level(w)
    w.set_defaults(func=cmd_worker)
