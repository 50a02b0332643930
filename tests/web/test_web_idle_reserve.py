"""Idle sockets from many addresses (issue 23, part 3): 1,100 idle connections from 40 loopback addresses took
the page server to its cap, and everyone else got a 503. Now, from ``evict_idle_at`` connections open, each
new one closes the one idle longest (arena.web.guard), so a client that sends its request is served. Here the
server's cap (uvicorn's limit_concurrency) and the threshold are lowered to 50 and 40, and 80 idle sockets
come from 20 addresses, each within its per-address share. Real Redis, the real web server on loopback."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import pytest

from arena.store.redis_server import EmbeddedRedis, connect
from arena.web import WebServer, serve_web
from tests.redis_fixtures import module_redis  # noqa: F401 (a fixture, found by pytest)

IDLE = 80
BOUND_S = 60.0


@pytest.fixture
def web(module_redis: EmbeddedRedis) -> Iterator[WebServer]:  # noqa: F811 (the fixture above)
    client = connect(module_redis.url)
    server, thread = serve_web(client, "127.0.0.1", 0)
    server.uvicorn.config.limit_concurrency = 50  # past it, uvicorn answers 503 to everyone
    server.limits.evict_idle_at = 40
    server.limits.head_timeout_s = 600  # idle for the whole test: only the reserve closes them
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(10)
        client.close()


def wait_for(pred, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + BOUND_S
    while not pred():
        assert time.monotonic() < deadline, f"not within {BOUND_S} s: {what}"
        time.sleep(0.05)


def get(addr: tuple[str, int], source: str, path: str = "/healthz") -> bytes:
    with socket.create_connection(addr, timeout=10, source_address=(source, 0)) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


@pytest.mark.timeout(120)
def test_idle_sockets_from_many_addresses_leave_room_for_a_client_that_sends_its_request(web):
    addr = web.server_address
    idle = [
        socket.create_connection(addr, timeout=10, source_address=(f"127.0.0.{2 + k % 20}", 0)) for k in range(IDLE)
    ]
    try:
        wait_for(lambda: web.limits.evicted == IDLE - 40, "the oldest idle connections closed to make room")
        assert web.limits.open.total() - len(web.limits.closing) == 40 and web.limits.refused == 0
        # The oldest were the ones closed: they read the server's end of the connection.
        for s in idle[:10]:
            s.settimeout(BOUND_S)
            assert s.recv(1) == b""
        # Another client, from yet another address, is served (past the cap of 50 it would get a 503).
        reply = get(addr, "127.0.0.99")
        assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]
    finally:
        for s in idle:
            with contextlib.suppress(OSError):
                s.close()
