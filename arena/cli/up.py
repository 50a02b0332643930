"""``arena up`` (the whole arena on this box: ``stack``) and the servers it holds, each alone: ``arena api``
and ``arena web``.  (``arena worker`` is its own module, ``worker``.)

``arena up`` prints where everything is, and the admin token once when first created; SIGINT/SIGTERM stop
it all (``Stack.stop``).  ``arena api`` serves the gRPC API with the ratings updater, the ladder feeder and
the gauges; ``arena web`` the web pages; both on a Redis that runs elsewhere (``--redis``).

The server commands bind ``--host`` (default 0.0.0.0 for ``api``/``worker``/``web``, which run in
containers; 127.0.0.1 for ``up``).  Metrics listen on ``$PILOTTA_METRICS_ADDR`` or loopback.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import time
from pathlib import Path

from arena import metrics
from arena.api import ApiServer
from arena.bots import trust
from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.cli.archive import add_retention_args, retention_of
from arena.cli.data_dir import DEFAULT_DATA_DIR
from arena.cli.servers import (
    add_log_level,
    add_metrics_port,
    add_redis_arguments,
    bad_password_file,
    setup_logging,
    stop_event,
    wait_redis,
)
from arena.cli.stack import Stack, UpConfig
from arena.service import ensure_admin_token
from arena.store.redis_server import PASSWORD_FILE_ENV, connect

log = logging.getLogger(__name__)


# -------------------------------------------------------------------------- arena up


def run_up(cfg: UpConfig) -> int:
    stop = stop_event()
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


def cmd_up(args: argparse.Namespace) -> int:
    setup_logging(args)
    if args.workers < 0:
        print("error: --workers must be 0 or more", file=sys.stderr)
        return 2
    try:
        retention = retention_of(args)
        policy = _policy(args)
    except ValueError as e:  # (a ValidationError of the policy is one)
        print(f"error: {e}", file=sys.stderr)
        return 2
    if bad_password_file(args):
        return 2
    if args.redis and (args.redis_port is not None or args.redis_host is not None):
        print(
            "error: --redis-port and --redis-host are for the embedded Redis, not one given with --redis",
            file=sys.stderr,
        )
        return 2
    if args.redis_port is not None and not 0 < args.redis_port < 65536:
        print(f"error: --redis-port must be a port, 1 to 65535, not {args.redis_port}", file=sys.stderr)
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
            redis_port=args.redis_port,
            redis_host=args.redis_host or "127.0.0.1",
            host=args.host,
            api_port=args.api_port,
            web_port=args.web_port,
            metrics_port=args.metrics_port,
            worker_args=worker_args,
            open_registration=args.open_registration,
            policy=policy,
            retention=retention,
        )
    )


def add_up_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="run the whole arena here: Redis, API, workers, ratings, metrics, web")
    up.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"state and Redis data (default {DEFAULT_DATA_DIR})")
    up.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    up.add_argument("--redis", default=None, help="use this Redis instead of the embedded one")
    up.add_argument(
        "--redis-password-file", default=None, help="file holding that Redis's password (the embedded one has its own)"
    )
    up.add_argument(
        "--redis-port",
        type=int,
        default=None,
        metavar="N",
        help="the embedded Redis's port (default: the one kept in DATA_DIR/redis/redis.port, else a free one, then "
        "kept there): the same on every restart, so remote workers find it again; taken by another process, "
        "arena up refuses to start, naming it",
    )
    up.add_argument(
        "--redis-host",
        default=None,
        metavar="ADDR",
        help="address the embedded Redis listens on (default 127.0.0.1: this machine only; 0.0.0.0 lets workers "
        "of other machines in, with a copy of its password file)",
    )
    up.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: all interfaces)")
    up.add_argument("--api-port", type=int, default=50051)
    up.add_argument("--web-port", type=int, default=8080)
    add_metrics_port(up, 9100, "the API; workers use the next ports")
    up.add_argument("--fresh-bots", action="store_true", help="start manifest bots anew for every match")
    up.add_argument(
        "--open-registration",
        action="store_true",
        help="let anyone register a bot under any owner name (by default: owners added by `arena owner add`)",
    )
    _policy_args(up)
    add_retention_args(up, prefix="archive-")
    add_log_level(up)
    up.set_defaults(func=cmd_up, log_level="WARNING")


# ------------------------------------------------------ the arena's policy (up, api)


# The owners' logs' retention flags, each setting the Policy field of its name.
LOG_FLAGS = ("logs_keep_matches", "logs_keep_days", "logs_most_matches")


def _policy(args: argparse.Namespace) -> Policy | None:
    """The policy of ``--policy FILE`` (or the defaults) with ``--allow-network``s added and the
    ``--logs-...`` settings given; None with none of them."""
    logs = {f: getattr(args, f) for f in LOG_FLAGS if getattr(args, f) is not None}
    if args.policy is None and not args.allow_network and not logs:
        return None
    base = Policy.from_file(args.policy) if args.policy else Policy()
    return dataclasses.replace(base, allow_networks=(*base.allow_networks, *args.allow_network), **logs)


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
    d = Policy()
    p.add_argument(
        "--logs-keep-matches",
        type=int,
        default=None,
        metavar="N",
        help=f"keep each bot's owner's logs of its last N matches (default {d.logs_keep_matches}) ...",
    )
    p.add_argument(
        "--logs-keep-days",
        type=int,
        default=None,
        metavar="D",
        help=f"... and of every match of the last D days, whichever keeps more (default {d.logs_keep_days})",
    )
    p.add_argument(
        "--logs-most-matches",
        type=int,
        default=None,
        metavar="N",
        help=f"but never more than N matches' logs per bot (default {d.logs_most_matches}; 64 KB each at most)",
    )


# ------------------------------------------------------------------------- arena api


def run_api(
    redis_url: str,
    host: str,
    port: int,
    metrics_port: int | None,
    policy: Policy | None = None,
    password_file: str | None = None,
    open_registration: bool = False,
) -> int:
    r = connect(redis_url, password_file=password_file)
    wait_redis(r, 60)
    if policy is not None:
        store_policy(r, policy)
    registry = Registry(r)
    if open_registration:
        trust.open_registration(registry)
    elif not trust.registration_key_required(registry):
        # Closed, as `arena up` starts: a new bot's owner is one the operator added (`arena owner add`). The
        # key only marks it closed (it admits no bot), so it is made here and never shown.
        trust.set_registration_key(registry)
    token = ensure_admin_token(r, os.environ.get("ARENA_ADMIN_TOKEN") or None)
    if token:
        # Shown once; Redis keeps only its hash.  Set ARENA_ADMIN_TOKEN to choose it instead.
        print(f"admin token (shown once, keep it): {token}", file=sys.stderr, flush=True)
    if metrics_port is not None:
        metrics.start_metrics_server(metrics_port)
    api = ApiServer(r, host, port).start()
    log.info("api: serving on %s:%d", host, api.port)
    stop = stop_event()
    while not stop.wait(1.0):
        pass
    log.info("api: stopping")
    api.stop()
    return 0


def cmd_api(args: argparse.Namespace) -> int:
    setup_logging(args)
    if bad_password_file(args):
        return 2
    try:
        policy = _policy(args)
    except ValueError as e:  # (a ValidationError of the policy is one)
        print(f"error: {e}", file=sys.stderr)
        return 2
    return run_api(
        args.redis, args.host, args.port, args.metrics_port, policy, args.redis_password_file, args.open_registration
    )


def add_api_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = sub.add_parser("api", help="serve the arena API (gRPC) with the ratings updater and ladder feeder")
    add_redis_arguments(api)
    api.add_argument("--host", default="0.0.0.0")
    api.add_argument("--port", type=int, default=50051)
    add_metrics_port(api, None, "default: none")
    api.add_argument(
        "--open-registration",
        action="store_true",
        help="let anyone register a bot under any owner name (by default: owners added by `arena owner add`)",
    )
    _policy_args(api)
    add_log_level(api)
    api.set_defaults(func=cmd_api)


# ------------------------------------------------------------------------- arena web


def run_web_server(redis_url: str, host: str, port: int, password_file: str | None = None) -> int:
    from arena.web import run_web

    if password_file:  # the web server connects with connect(), which reads the file this names
        os.environ[PASSWORD_FILE_ENV] = password_file

    return run_web(redis_url, host, port)


def cmd_web(args: argparse.Namespace) -> int:
    setup_logging(args)
    if bad_password_file(args):
        return 2
    return run_web_server(args.redis, args.host, args.port, args.redis_password_file)


def add_web_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    web = sub.add_parser("web", help="serve the web pages (leaderboard, matches, replays)")
    add_redis_arguments(web)
    web.add_argument("--host", default="0.0.0.0")
    web.add_argument("--port", type=int, default=8080)
    add_log_level(web)
    web.set_defaults(func=cmd_web)
