"""Helpers of the abuse tests (a unique basename: test folders are not packages)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from pilotta.arena.v1 import arena_pb2

SAMPLES = Path(__file__).resolve().parents[2] / "sample_bots"
LOOPBACK = ("127.0.0.0/8", "::1/128")  # an operator's allow-list for endpoint bots on the arena's machine

TIMEOUT = 10.0  # deadline of every gRPC call in these tests
SHORT = 300  # characters: an error message that quotes no more than a short prefix of its input


def rpc_error(fn: Callable[[], Any]) -> grpc.RpcError:
    """The RpcError a call raises (fails the test if it succeeds)."""
    try:
        fn()
    except grpc.RpcError as e:
        return e
    raise AssertionError("the call succeeded; an error was expected")


def manifest_source(name: str) -> arena_pb2.BotSource:
    d = SAMPLES / name
    return arena_pb2.BotSource(manifest_json=(d / "manifest.json").read_text(), manifest_dir=str(d))


def sample_manifest(name: str) -> dict[str, Any]:
    return dict(json.loads((SAMPLES / name / "manifest.json").read_text()))
