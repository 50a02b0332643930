"""What the server commands (``arena up``, ``api``, ``worker``, ``web``) share: their common flags
(``--redis``, ``--redis-password-file``, ``--metrics-port``, ``--log-level``), logging, a stop on
SIGINT/SIGTERM, and a bounded wait for Redis.

No command group of its own: ``up`` and ``worker`` build their parsers with it, ``stack`` waits for its
Redis with it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

import redis

from arena.store.redis_server import PASSWORD_FILE_ENV, read_password
from arena.store.retry import REDIS_DOWN, Backoff, patiently

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_event() -> threading.Event:
    """An event set by SIGINT/SIGTERM (only the main thread may install handlers)."""
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in _STOP_SIGNALS:
            signal.signal(sig, lambda *_: stop.set())
    return stop


def wait_redis(r: redis.Redis, timeout_s: float) -> None:
    """Bounded wait for Redis to answer (it may start at the same time as we do, e.g. in compose)."""
    try:
        patiently(r.ping, timeout_s, Backoff(0.1, 1.0))
    except REDIS_DOWN as e:
        raise RuntimeError(f"redis did not answer within {timeout_s:g} s: {e}") from None


def add_metrics_port(p: argparse.ArgumentParser, default: int | None, what: str) -> None:
    p.add_argument(
        "--metrics-port", type=int, default=default, help=f"serve /metrics on this port ({what}; 0: any free port)"
    )


def add_log_level(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING... (default INFO)")


def setup_logging(args: argparse.Namespace) -> None:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def bad_password_file(args: argparse.Namespace) -> bool:
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


def add_redis_arguments(p: argparse.ArgumentParser) -> None:
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
