"""Fixtures of the abuse tests: a REAL Redis per module (``EmbeddedRedis``), flushed before each test, the
real API server on loopback with the arena's DEFAULT policy (these tests are about what it refuses; a test
that needs endpoint bots on loopback allows them explicitly, as an operator would), real bot processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from abuse_helpers import SAMPLES
from pilotta.arena.v1 import arena_pb2_grpc

from arena.api import ApiServer
from arena.bots.limits import RateLimit
from arena.bots.registry import Registry
from referee.match.bots import load_manifest, start_bot
from tests.redis_fixtures import module_redis, r  # noqa: F401 (fixtures, found by pytest)


@pytest.fixture
def admin(r: redis.Redis) -> str:
    return Registry(r).set_admin_token()


@pytest.fixture
def one_rate_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rate-limited call of the test counted in one window. ``RateLimit`` counts in fixed minutes of the
    clock, so a test that crosses a minute's end (started a second before it, or slowed by load) would be
    counted in two windows and let through twice the limit: the limiter's clock is pinned to the test's start
    (the API runs in this process)."""
    pinned, take = time.time(), RateLimit.take

    def take_pinned(self: RateLimit, subject: str, per_minute: int, now: float | None = None) -> None:
        take(self, subject, per_minute, pinned if now is None else now)

    monkeypatch.setattr(RateLimit, "take", take_pinned)


@pytest.fixture
def api(r: redis.Redis) -> Iterator[ApiServer]:
    """The real API without the ladder feeder (the tests decide what is queued)."""
    server = ApiServer(r, "127.0.0.1", 0, gauges_interval_s=0, feed_ladders=False).start()
    try:
        yield server
    finally:
        server.stop(grace_s=1.0)


@pytest.fixture
def channel(api: ApiServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(api.address) as ch:
        yield ch


@pytest.fixture
def stub(channel: grpc.Channel) -> arena_pb2_grpc.ArenaStub:
    return arena_pb2_grpc.ArenaStub(channel)


@pytest.fixture
def endpoint_bot(tmp_path: Path) -> Iterator[str]:
    """The sample random bot running on its own, on loopback (it plays every ruleset)."""
    bot = start_bot(load_manifest(SAMPLES / "random"), tmp_path / "endpoint-bot")
    try:
        assert bot.error is None, bot.error
        yield bot.endpoint
    finally:
        bot.stop()
