"""Fixtures of the referee tests: in-process test bots on loopback, stopped after each test."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BOTS_DIR = Path(__file__).resolve().parent / "bots"
sys.path.insert(0, str(BOTS_DIR))

import testbot  # noqa: E402


@pytest.fixture
def start_bot() -> Iterator[Callable[..., tuple[str, testbot.Behaviour]]]:
    servers: list[Any] = []

    def start(mode: str = "first", **kw: Any) -> tuple[str, testbot.Behaviour]:
        server, endpoint, behaviour = testbot.start(mode, **kw)
        servers.append(server)
        return endpoint, behaviour

    yield start
    for s in servers:
        s.stop(0).wait(5)
