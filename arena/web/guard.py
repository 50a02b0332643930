"""What keeps idle and slow clients from taking the web pages down: limits enforced per connection.

uvicorn serves every connection on one event loop, so an idle connection costs a socket, not a thread; but
it has no timeout for a request head that never completes (a slowloris client sending its headers a byte
at a time keeps the connection forever) and no limit per client.  ``guarded_protocol`` is uvicorn's h11
protocol with both:

- **head timeout**: a request head (request line and headers), and the body it announces if any, must
  arrive whole within ``head_timeout_s`` of the connection opening, or of the previous response on a
  kept-alive connection; else the connection is closed.  Bytes trickling in do not reset it (uvicorn's
  keep-alive timer does reset on every byte, so a body sent a byte a second would otherwise hold the
  connection for ever: the pages are GETs, and the one form, a challenge, posts at most 4 KiB).
- **head size**: a request head over ``max_head_bytes`` gets a 431 and the connection is closed.  h11 has
  this limit only for a head still incomplete: one that arrives whole in one read (up to asyncio's 256 KiB,
  10,000 headers) would be parsed and served.
- **per-client connections**: at most ``per_client`` connections open at once from one client address; the
  next one gets a 503 and is closed at once, so one client cannot use up the server's file descriptors.
- **a reserve for clients that complete a request**: from ``evict_idle_at`` connections open at once (from
  however many addresses), each new connection closes the one that has waited longest without sending a
  byte of a request (just opened, or kept alive since its last response), so that idle sockets from many
  addresses cannot fill the server up to its cap (uvicorn's ``limit_concurrency``, past which everyone gets
  a 503): a client that sends its request at once is served, the oldest idle one makes room.

Counts live on the event loop's thread (protocol callbacks all run there), so they need no lock.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

# Their states while a request is still coming in: its head, or the body it announced.
_INCOMING = (h11.IDLE, h11.SEND_BODY)
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_HEAD_END = re.compile(rb"\n\r?\n")  # where a head ends, as h11 reads it


@dataclass
class ClientLimits:
    head_timeout_s: float = 5.0
    per_client: int = 32
    max_head_bytes: int = 16 * 1024  # h11's limit for an incomplete head, uvicorn's default
    evict_idle_at: int = 0  # from this many connections open, a new one closes the longest idle (0: never)
    open: Counter[str] = field(default_factory=Counter)  # client address -> its open connections
    idle: dict[Any, None] = field(default_factory=dict)  # connections waiting for a request, oldest first
    evicted: int = 0  # idle connections closed to make room for new ones
    closing: set[Any] = field(default_factory=set)  # of those, the ones not gone yet (not counted as open)
    refused: int = 0  # connections refused for being over ``per_client``
    timed_out: int = 0  # connections closed for a request head that did not arrive in time
    too_large: int = 0  # connections closed for a request head over ``max_head_bytes``


def guarded_protocol(limits: ClientLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits`` (see the module docstring); pass it as ``Config(http=...)``."""

    class GuardedH11Protocol(H11Protocol):
        def __init__(
            self,
            config: Config,
            server_state: ServerState,
            app_state: dict[str, Any],  # Any: as uvicorn declares it
            _loop: asyncio.AbstractEventLoop | None = None,
        ) -> None:
            super().__init__(config, server_state, app_state, _loop)
            self._head_timer: asyncio.TimerHandle | None = None
            self._counted: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            # (uvicorn declares it with the narrower Transport too.)
            super().connection_made(transport)
            host = self.client[0] if self.client else ""
            if limits.open[host] >= limits.per_client:
                limits.refused += 1
                transport.write(_BUSY)
                transport.close()
                return
            limits.open[host] += 1
            self._counted = host
            if limits.evict_idle_at and limits.open.total() - len(limits.closing) > limits.evict_idle_at:
                self._evict_idlest()
            self._arm()

        def _evict_idlest(self) -> None:
            for oldest in limits.idle:
                if oldest not in limits.closing:
                    limits.evicted += 1
                    limits.closing.add(oldest)
                    oldest.transport.close()
                    break

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            limits.idle.pop(self, None)
            limits.closing.discard(self)
            if self._counted is not None:
                limits.open[self._counted] -= 1
                if limits.open[self._counted] <= 0:
                    del limits.open[self._counted]
                self._counted = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            limits.idle.pop(self, None)  # a request is coming
            if self.conn.their_state is h11.IDLE and self._head_too_large(data):
                limits.too_large += 1
                self.transport.write(_TOO_LARGE)
                self.transport.close()
                return
            super().data_received(data)
            if self.conn.their_state not in _INCOMING:
                self._disarm()  # a whole request has arrived

        def _head_too_large(self, data: bytes) -> bool:
            buffered = self.conn.trailing_data[0] + data  # at most max_head_bytes + one read: h11's own limit
            end = _HEAD_END.search(buffered, 0, limits.max_head_bytes + 2)
            return end is None and len(buffered) > limits.max_head_bytes

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()  # kept alive: the next request head has the same time to arrive

        def _arm(self) -> None:
            self._disarm()
            limits.idle.pop(self, None)
            limits.idle[self] = None  # inserted last: the newest idle connection
            self._head_timer = self.loop.call_later(limits.head_timeout_s, self._head_timed_out)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self.conn.their_state in _INCOMING and not self.transport.is_closing():
                limits.timed_out += 1
                self.transport.close()

    return GuardedH11Protocol


__all__ = ["ClientLimits", "guarded_protocol"]
