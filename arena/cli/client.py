"""What the commands that talk to the API share (``bot``, ``ladder``, ``leaderboard``, ``ratings``,
``matches``, ``replay``, ``deadletters``): the address, one call with a deadline, the tokens, and errors as
exit codes.

They talk to the API over gRPC (``--api HOST:PORT``; default: ``$ARENA_API``, else the address in
``arena up``'s state file in ``--data-dir``, else 127.0.0.1:50051), with a deadline on every call.
``arena ladder start``/``stop`` and ``arena deadletters list``/``requeue`` are operator commands: they need
the admin token (``--token``, else ``$ARENA_ADMIN_TOKEN``, else the one ``arena up`` keeps in its data
dir).  No command talks to Redis.

Exit codes: 0 ok, 1 the arena refused (the message says why), 2 bad arguments, 3 arena unreachable.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from pilotta.arena.v1 import arena_pb2_grpc

from arena.cli.data_dir import DEFAULT_DATA_DIR, REGISTRATION_KEY_FILE, TOKEN_FILE, read_state

DEFAULT_API = "127.0.0.1:50051"
EXIT_UNREACHABLE = 3  # the exit code (and CommandError.code) of an arena that did not answer
ADMIN_TOKEN_HELP = "the admin token (default: $ARENA_ADMIN_TOKEN, else the one `arena up` keeps in --data-dir)"


class CommandError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def add_api_arguments(p: argparse.ArgumentParser) -> None:
    """``--api``, ``--data-dir`` and ``--timeout``, which every command that calls the API takes."""
    p.add_argument("--api", default=None, help="arena API host:port (default: from `arena up`, or 127.0.0.1:50051)")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"arena up's data dir (default {DEFAULT_DATA_DIR})")
    p.add_argument("--timeout", type=float, default=10.0, help="deadline of each API call in s (default 10)")


def api_address(args: argparse.Namespace) -> str:
    if args.api:
        return str(args.api)
    if os.environ.get("ARENA_API"):
        return os.environ["ARENA_API"]
    state = read_state(args.data_dir)
    return str(state["api"]) if state and state.get("api") else DEFAULT_API


def call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """One API call with a deadline; gRPC errors become CommandError with the server's message."""
    address = api_address(args)
    with grpc.insecure_channel(address) as channel:
        stub = arena_pb2_grpc.ArenaStub(channel)
        try:
            return getattr(stub, method)(request, timeout=args.timeout)
        except grpc.RpcError as e:
            code = e.code()
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise CommandError(
                    f"cannot reach the arena API at {address} ({code.name}: {e.details()}); "
                    "is `arena up` running? (--api HOST:PORT)",
                    EXIT_UNREACHABLE,
                ) from None
            raise CommandError(f"{code.name}: {e.details()}", 1) from None


def api_command(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command's ``func``: a CommandError it raises is printed (``error: ...``) and becomes its exit code."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return int(fn(args))
        except CommandError as e:
            print(f"error: {e}", file=sys.stderr)
            return e.code

    return wrapped


def admin_token(args: argparse.Namespace) -> str:
    """``--token``, else ``$ARENA_ADMIN_TOKEN``, else the token ``arena up`` keeps in its data dir."""
    if args.token:
        return str(args.token)
    if os.environ.get("ARENA_ADMIN_TOKEN"):
        return os.environ["ARENA_ADMIN_TOKEN"]
    path = Path(args.data_dir) / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError:
        token = ""
    if not token:
        raise CommandError(
            f"this needs the admin token: give --token, set $ARENA_ADMIN_TOKEN, or run it where "
            f"`arena up` keeps it ({path})",
            2,
        )
    return token


def registration_key(args: argparse.Namespace) -> str:
    """``--registration-key``, else ``$ARENA_REGISTRATION_KEY``, else the key ``arena up`` keeps in its data
    dir; empty when none (an arena with open registration takes none)."""
    if getattr(args, "registration_key", None):
        return str(args.registration_key)
    if os.environ.get("ARENA_REGISTRATION_KEY"):
        return os.environ["ARENA_REGISTRATION_KEY"]
    try:
        return (Path(args.data_dir) / REGISTRATION_KEY_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""
