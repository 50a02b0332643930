"""What keeps a client from holding the API's threads: every request is read within bounds of time and rate, and
uploads are few at once (issue 23; docs/security.md, "Streams and uploads").

The gRPC server runs handlers on a pool of threads (``StreamLimits.workers``), and a handler's thread waits for
its request: a client that sends it a byte at a time would hold that thread for as long as it likes. So:

* **Every unary request** is read under a watch (``CallGuard``, a server interceptor, and its ``Watchdog``): its
  one message must arrive within ``unary_message_s`` of the call's start, or the call is cancelled and its
  thread freed. (The interceptor serves each unary method as a request stream of one message, which is the
  same on the wire, so that the watch is set before the read begins: gRPC reads a unary request before it
  calls the handler.)
* **Any other request stream** (server reflection's) takes one of ``streams`` slots (``streams_per_client`` from
  one address) and each of its messages is read under the watchdog, within ``message_s``.
* **An upload** (``SubmitBot``'s chunks) is read through ``BoundedStream``: each message within
  ``message_s`` of the previous one, on average at least ``min_bytes_per_s`` once ``grace_s`` has passed,
  the whole stream within ``max_stream_s``; past any of them the call ends with DEADLINE_EXCEEDED naming the
  bound (``StreamTooSlow``).
* **Uploads at once** (``UploadSlots``): at most ``uploads`` overall and ``uploads_per_client`` from one
  address; past either, RESOURCE_EXHAUSTED at once, before a byte of the upload is read. Uploads so hold at
  most ``uploads`` of the ``workers`` threads (and one reader thread each): the other calls keep the rest.
* **Calls at once**: the gRPC server's ``maximum_concurrent_rpcs`` (``max_concurrent_rpcs``) refuses calls past
  it with RESOURCE_EXHAUSTED instead of queueing them without end.

Every wait here is bounded.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import grpc

from arena.bots.limits import QuotaExceeded
from arena.model import ArenaError

T = TypeVar("T")


@dataclass(frozen=True)
class StreamLimits:
    """The API's bounds on its clients (the defaults are the arena's; tests shorten them)."""

    workers: int = 16  # handler threads
    max_concurrent_rpcs: int = 256  # calls being handled or waiting for a thread; past it RESOURCE_EXHAUSTED
    unary_message_s: float = 10.0  # a unary call's request must have arrived by then
    message_s: float = 30.0  # a stream's next message must arrive within this (1 MiB in 30 s: 34 KiB/s)
    grace_s: float = 10.0  # before the rate applies
    min_bytes_per_s: int = 32 * 1024  # a stream's average rate from its start, once grace_s has passed
    max_stream_s: float = 600.0  # a whole request stream (a 50 MB upload at 85 KB/s)
    uploads: int = 4  # SubmitBot calls at once, overall...
    uploads_per_client: int = 2  # ...and from one address
    streams: int = 4  # other request streams (server reflection) at once, overall...
    streams_per_client: int = 2  # ...and from one address

    def __post_init__(self) -> None:
        if self.uploads + self.streams >= self.workers:
            raise ValueError(
                f"uploads and streams ({self.uploads} + {self.streams}) must leave threads to the other calls "
                f"({self.workers})"
            )
        for name in ("unary_message_s", "message_s", "grace_s", "max_stream_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


class StreamTooSlow(ArenaError):
    """A request stream that did not keep to ``StreamLimits`` (DEADLINE_EXCEEDED, naming the bound)."""


def client_address(peer: str) -> str:
    """The address part of a gRPC peer (``ipv4:127.0.0.1:5000`` -> ``127.0.0.1``; ``ipv6:[::1]:5000`` -> ``::1``);
    a peer of another form (``unix:...``) as it is."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]") or rest
    return peer


class UploadSlots:
    """At most ``overall`` uploads at once, ``per_client`` of them from one address (``slot``)."""

    def __init__(self, overall: int, per_client: int, what: str = "uploads") -> None:
        self.overall, self.per_client, self.what = overall, per_client, what
        self._lock = threading.Lock()
        self._held: Counter[str] = Counter()

    @property
    def active(self) -> int:
        with self._lock:
            return sum(self._held.values())

    @contextlib.contextmanager
    def slot(self, address: str) -> Iterator[None]:
        """Held for the upload; QuotaExceeded at once if there is none (nothing of the upload read yet)."""
        with self._lock:
            if sum(self._held.values()) >= self.overall:
                raise QuotaExceeded(
                    f"too many {self.what} at once: at most {self.overall}; try again when one has ended"
                )
            if self._held[address] >= self.per_client:
                raise QuotaExceeded(
                    f"too many {self.what} at once from one address: at most {self.per_client}; "
                    "try again when one has ended"
                )
            self._held[address] += 1
        try:
            yield
        finally:
            with self._lock:
                self._held[address] -= 1
                if self._held[address] <= 0:
                    del self._held[address]


class _Stop:
    """What the reader thread puts last: the stream ended (``error`` None) or failed."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class BoundedStream(Generic[T]):
    """The messages of ``source`` (a request iterator), each waited for within the bounds of ``limits``;
    StreamTooSlow past one. ``size`` gives a message's bytes. A reader thread pulls from ``source`` (so that
    the wait can be bounded); the call's end (the handler returns or aborts) ends it, and ``close`` (``with``)
    tells it nobody reads any more."""

    def __init__(self, source: Iterator[T], limits: StreamLimits, size: Callable[[T], int]) -> None:
        self.limits, self.size = limits, size
        self.started = self.last = time.monotonic()
        self.received = 0
        self._queue: queue.Queue[T | _Stop] = queue.Queue(maxsize=1)  # at most one message read ahead
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(source,), name="api-stream-reader", daemon=True)
        self._reader.start()

    def _read(self, source: Iterator[T]) -> None:
        try:
            for message in source:
                if not self._put(message):
                    return
        except BaseException as e:  # the call ended (cancelled, aborted), or an undecodable message
            self._put(_Stop(e))
            return
        self._put(_Stop(None))

    def _put(self, item: T | _Stop) -> bool:
        """Hand ``item`` to the handler, waiting while it works on the last one; False once it reads no more."""
        while not self._closed.is_set():
            with contextlib.suppress(queue.Full):
                self._queue.put(item, timeout=0.5)
                return True
        return False

    def close(self) -> None:
        self._closed.set()

    def __enter__(self) -> BoundedStream[T]:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def deadline(self) -> tuple[float, str]:
        """When the next message must have arrived by, and the bound that sets it."""
        lim = self.limits
        by_rate = self.started + lim.grace_s + self.received / max(lim.min_bytes_per_s, 1)
        return min(
            (self.last + lim.message_s, f"no message for {lim.message_s:g} s"),
            (by_rate, f"slower than {lim.min_bytes_per_s} bytes a second after the first {lim.grace_s:g} s"),
            (self.started + lim.max_stream_s, f"longer than {lim.max_stream_s:g} s"),
        )

    def __iter__(self) -> BoundedStream[T]:
        return self

    def __next__(self) -> T:
        due, why = self.deadline()
        try:
            got = self._queue.get(timeout=max(0.0, due - time.monotonic()))
        except queue.Empty:
            raise StreamTooSlow(
                f"the request stream was cut: {why} ({self.received} bytes in {time.monotonic() - self.started:.0f} s)"
            ) from None
        if isinstance(got, _Stop):
            if got.error is not None:
                raise got.error
            raise StopIteration
        self.last = time.monotonic()
        self.received += self.size(got)
        return got


class _Cancellable(Protocol):
    def cancel(self) -> None: ...


class Watchdog:
    """Cancels the calls whose time is up (``watch``), from one thread of its own (``start``/``stop``)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._watched: dict[int, tuple[float, _Cancellable]] = {}
        self._next_id = 0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="api-watchdog", daemon=True)
        self.cancelled = 0  # calls cancelled so far

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stop = True
            self._lock.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    @contextlib.contextmanager
    def watch(self, context: _Cancellable, within_s: float) -> Iterator[None]:
        """``context`` is cancelled unless the block has ended within ``within_s``."""
        with self._lock:
            self._next_id += 1
            key = self._next_id
            self._watched[key] = (time.monotonic() + within_s, context)
            self._lock.notify()
        try:
            yield
        finally:
            with self._lock:
                self._watched.pop(key, None)

    def _run(self) -> None:
        with self._lock:
            while not self._stop:
                now = time.monotonic()
                due = [k for k, (t, _c) in self._watched.items() if t <= now]
                for k in due:
                    _t, context = self._watched.pop(k)
                    # Counted before the cancel goes out: whoever sees the call end then sees it counted.
                    self.cancelled += 1
                    with contextlib.suppress(Exception):  # a call that ended meanwhile
                        context.cancel()
                soonest = min((t for t, _c in self._watched.values()), default=now + 1.0)
                self._lock.wait(timeout=min(max(soonest - now, 0.01), 1.0))


class CallGuard(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped here
    """Every unary request read under the watchdog, every other request stream in a slot and each of its
    messages under the watchdog (see the module's docstring); the methods in ``self_bounded`` (``SubmitBot``)
    bound their streams themselves (``BoundedStream``, ``UploadSlots``)."""

    def __init__(self, limits: StreamLimits, watchdog: Watchdog, self_bounded: frozenset[str] = frozenset()) -> None:
        self.limits, self.watchdog, self.self_bounded = limits, watchdog, self_bounded
        self.streams = UploadSlots(limits.streams, limits.streams_per_client, "request streams")

    def _watched(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        """``requests``, each awaited under the watchdog (``message_s``)."""
        while True:
            with self.watchdog.watch(context, self.limits.message_s):
                request = next(requests, None)
            if request is None:
                return
            yield request

    def _stream(self, handler: Any) -> Any:
        """A request-streaming handler, in a slot of ``streams`` and its messages watched."""
        slot = self.streams.slot

        def take(context: grpc.ServicerContext) -> contextlib.ExitStack:
            """The slot, held until the returned stack closes; RESOURCE_EXHAUSTED at once without one."""
            held = contextlib.ExitStack()
            try:
                held.enter_context(slot(client_address(context.peer())))
            except QuotaExceeded as e:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
                raise
            return held

        if handler.response_streaming:
            inner_stream = handler.stream_stream

            def both(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                with take(context):
                    yield from inner_stream(self._watched(requests, context), context)

            return grpc.stream_stream_rpc_method_handler(
                both, handler.request_deserializer, handler.response_serializer
            )
        inner = handler.stream_unary

        def one(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            with take(context):
                return inner(self._watched(requests, context), context)

        return grpc.stream_unary_rpc_method_handler(one, handler.request_deserializer, handler.response_serializer)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler: Any = continuation(handler_call_details)  # Any: grpc's handlers are namedtuples
        method = str(handler_call_details.method)
        if handler is None or method in self.self_bounded:
            return handler
        if handler.request_streaming:
            return self._stream(handler)
        within_s = self.limits.unary_message_s
        watchdog = self.watchdog

        def one_request(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            with watchdog.watch(context, within_s):
                request = next(requests, None)
            if request is None:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method} takes exactly one request message")
            return request

        if handler.response_streaming:
            inner_stream = handler.unary_stream

            def stream_reply(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
                return inner_stream(one_request(requests, context), context)

            return grpc.stream_stream_rpc_method_handler(
                stream_reply, handler.request_deserializer, handler.response_serializer
            )
        inner = handler.unary_unary

        def reply(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            return inner(one_request(requests, context), context)

        return grpc.stream_unary_rpc_method_handler(reply, handler.request_deserializer, handler.response_serializer)
