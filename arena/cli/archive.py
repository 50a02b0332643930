"""``arena archive``: move finished matches' records out of Redis into an archive directory (the archiver of
``arena.store.archiver``, docs/storage.md), and the retention flags it shares with ``arena up``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

from arena.cli.servers import add_redis_arguments
from arena.store.archive import ARCHIVE_DIR_ENV, Archive
from arena.store.archiver import Archiver, Retention
from arena.store.redis_server import connect


def add_archive_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "archive",
        help="move finished matches' records out of Redis into an archive directory (docs/storage.md)",
    )
    add_redis_arguments(p)
    p.add_argument(
        "--dir", default=os.environ.get(ARCHIVE_DIR_ENV), help=f"the archive directory (default ${ARCHIVE_DIR_ENV})"
    )
    add_retention_args(p)
    p.add_argument("--once", action="store_true", help="one pass, then exit (default: a pass every --interval-s)")
    p.add_argument("--interval-s", type=float, default=5.0)
    p.set_defaults(func=cmd_archive)


def add_retention_args(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The retention flags (``--max-age-s``, ``--keep``; ``arena up`` names them ``--archive-...``)."""
    d = Retention()
    p.add_argument(
        f"--{prefix}max-age-s",
        dest="retention_max_age_s",
        metavar="S",
        type=_limit(float),
        default=d.max_age_s,
        help=f"an archived record stays in Redis until its match is this old (default {d.max_age_s:.0f}; none)",
    )
    p.add_argument(
        f"--{prefix}keep",
        dest="retention_keep",
        metavar="N",
        type=_limit(int),
        default=d.keep,
        help=f"at most this many of the newest records stay in Redis (default {d.keep}; none)",
    )


def retention_of(args: argparse.Namespace) -> Retention:
    """The policy ``add_retention_args`` read; ValueError if it makes no sense."""
    return Retention(max_age_s=args.retention_max_age_s, keep=args.retention_keep)


def _limit(kind: type[float] | type[int]) -> Any:
    """An argparse type: a number, or ``none`` for no limit."""

    def parse(text: str) -> float | int | None:
        return None if text.lower() == "none" else kind(text)

    parse.__name__ = kind.__name__  # argparse names the type in its error message
    return parse


def cmd_archive(args: argparse.Namespace) -> int:
    if not args.dir:
        print(f"error: give --dir or set {ARCHIVE_DIR_ENV}", file=sys.stderr)
        return 2
    try:
        retention = retention_of(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    r = connect(args.redis, password_file=args.redis_password_file)
    archiver = Archiver(r, Archive(args.dir), retention)
    if args.once:
        done = archiver.run_once(max_batches=10**6)
        print(json.dumps({"archived": done.archived, "released": done.released, "unreadable": done.unreadable}))
        return 1 if done.unreadable else 0
    stop = threading.Event()
    try:
        archiver.run(stop, args.interval_s)
    except KeyboardInterrupt:
        stop.set()
    return 0
