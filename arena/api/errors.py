"""How the gRPC API fails: the arena's typed errors as status codes with the arena's own message (``status_of``,
``rpc``), and a request that does not parse refused clearly (``RefuseUndecodable``).

Errors become status codes with the arena's own message (``_CODES``): INVALID_ARGUMENT (malformed
manifest, endpoint, name...), NOT_FOUND (unknown bot, ladder, match), UNAUTHENTICATED (no token),
PERMISSION_DENIED (wrong token), ALREADY_EXISTS (name taken), FAILED_PRECONDITION (retired bot, a dead
letter that cannot be played again), RESOURCE_EXHAUSTED (a quota: ``arena.bots.limits``; too many uploads at
once: ``arena.api.guard``), DEADLINE_EXCEEDED (a request stream too slow: ``arena.api.guard``), DATA_LOSS (a
stored record or result that cannot be read), UNAVAILABLE (Redis unreachable).  Anything else is a bug of
ours: INTERNAL, logged with its traceback (a bare ``ValueError`` too: client mistakes have typed errors).
Every message is cut to ``limits.MESSAGE_MAX`` characters (gRPC sends it in a header, and a header past the
metadata limit would replace the error with another).  A
request that does not parse as its protobuf message is INVALID_ARGUMENT, for every service of the server
(``RefuseUndecodable``), instead of gRPC's own ``Exception deserializing request!``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import grpc

from arena.api.guard import StreamTooSlow
from arena.bots.limits import QuotaExceeded, bounded
from arena.bots.packages import PackageError
from arena.model import (
    AuthError,
    EndpointRefused,
    ManifestError,
    NameTakenError,
    NotFoundError,
    NotPlayable,
    NotRequeueable,
    RetiredBotError,
    Unauthenticated,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
)
from arena.store.archive import RecordUnreadable
from arena.store.retry import REDIS_DOWN

log = logging.getLogger(__name__)
S = TypeVar("S")  # the servicer a handler belongs to
Req = TypeVar("Req")
Rep = TypeVar("Rep")

_CODES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], grpc.StatusCode], ...] = (
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),  # before AuthError, its base class
    (NameTakenError, grpc.StatusCode.ALREADY_EXISTS),  # before ValidationError, its base class
    (ManifestError, grpc.StatusCode.INVALID_ARGUMENT),
    (ValidationError, grpc.StatusCode.INVALID_ARGUMENT),
    (UnknownBotError, grpc.StatusCode.NOT_FOUND),
    (UnknownLadderError, grpc.StatusCode.NOT_FOUND),
    (NotFoundError, grpc.StatusCode.NOT_FOUND),
    (AuthError, grpc.StatusCode.PERMISSION_DENIED),
    (RetiredBotError, grpc.StatusCode.FAILED_PRECONDITION),
    (NotRequeueable, grpc.StatusCode.FAILED_PRECONDITION),
    (EndpointRefused, grpc.StatusCode.FAILED_PRECONDITION),
    (NotPlayable, grpc.StatusCode.FAILED_PRECONDITION),
    (PackageError, grpc.StatusCode.INVALID_ARGUMENT),
    (QuotaExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (StreamTooSlow, grpc.StatusCode.DEADLINE_EXCEEDED),
    (RecordUnreadable, grpc.StatusCode.DATA_LOSS),
    (REDIS_DOWN, grpc.StatusCode.UNAVAILABLE),
)


class Context(Protocol):
    """What a handler uses of ``grpc.ServicerContext`` (abort never returns)."""

    def abort(self, code: grpc.StatusCode, details: str) -> None: ...


def status_of(e: Exception) -> tuple[grpc.StatusCode, str]:
    for cls, code in _CODES:
        if isinstance(e, cls):
            if code == grpc.StatusCode.UNAVAILABLE:
                return code, bounded(f"the arena's storage (Redis) is unavailable: {e}")
            return code, bounded(str(e))
    return grpc.StatusCode.INTERNAL, bounded(f"internal error: {type(e).__name__}: {e}")


def rpc(fn: Callable[[S, Req], Rep]) -> Callable[[S, Req, Context], Rep]:
    """A handler of ``(self, request)``: the arena's exceptions become status codes with their message."""

    @functools.wraps(fn)
    def handler(self: S, request: Req, context: Context) -> Rep:
        try:
            return fn(self, request)
        except Exception as e:
            code, text = status_of(e)
            if code == grpc.StatusCode.INTERNAL:
                log.exception("%s failed", fn.__name__)
            context.abort(code, text)
            raise  # unreachable: abort raises

    return handler


class _Undecodable:
    """What a request that does not parse as its message becomes, so the handler can refuse it clearly."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _lenient(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as e:  # DecodeError, or anything a message's parser raises on garbage
            return _Undecodable(e)

    return deserialize


def _undecodable(method: str) -> str:
    return f"the request to {method} is not a valid protobuf message of its type (docs: proto/pilotta/arena/v1)"


class RefuseUndecodable(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped here
    """Every method's request deserializer made lenient: a request that does not parse reaches the method's
    wrapper as ``_Undecodable`` and is refused there with INVALID_ARGUMENT naming the method (gRPC would
    answer INTERNAL ``Exception deserializing request!``).  Streams of requests are checked message by
    message; a bad one ends the call with the same message."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler: Any = continuation(handler_call_details)  # Any: grpc's handlers are namedtuples
        if handler is None or handler.request_deserializer is None:
            return handler
        method = str(handler_call_details.method)
        lenient = _lenient(handler.request_deserializer)
        if handler.unary_unary is not None or handler.unary_stream is not None:
            kind = "unary_unary" if handler.unary_unary is not None else "unary_stream"
            inner = getattr(handler, kind)

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                if isinstance(request, _Undecodable):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, _undecodable(method))
                return inner(request, context)

            return handler._replace(request_deserializer=lenient, **{kind: unary})
        kind = "stream_unary" if handler.stream_unary is not None else "stream_stream"
        inner = getattr(handler, kind)

        def streamed(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            def checked() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, _Undecodable):
                        raise ValidationError(_undecodable(method))
                    yield request

            return inner(checked(), context)

        return handler._replace(request_deserializer=lenient, **{kind: streamed})
