"""Waiting Redis out: which errors mean "Redis is down for now", and the one backoff every loop uses.

``REDIS_DOWN`` are the errors of a Redis that is restarting, loading its data, unreachable, or at its
``maxmemory`` with nothing it may evict (the archiver makes room: docs/storage.md): worth retrying after a
pause.  Any other Redis error (a wrong type, a script error) is a bug and is not retried.

``Backoff`` is exponential: ``initial``, doubled after each failure up to ``cap``, back to ``initial``
after a success.  The loops that use it: the worker's main loop and its patient result recording, the
ratings updater, the ladder feeder, ``arena up`` waiting for its Redis.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import redis

REDIS_DOWN: tuple[type[redis.RedisError], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.BusyLoadingError,
    redis.exceptions.OutOfMemoryError,
)
log = logging.getLogger(__name__)
T = TypeVar("T")
_OOM = "OOM command not allowed"


class Script:
    """``r.register_script(lua)``, refused at ``maxmemory`` with OutOfMemoryError (one of ``REDIS_DOWN``) on
    Redis 6.2 as on 7: 7 refuses a script that may write before it runs (``OOM ...``), 6.2 runs it and fails
    its first write, answering a script error (``Error running script ...: -OOM ...``) that redis-py raises
    as a plain ResponseError."""

    def __init__(self, r: redis.Redis, lua: str) -> None:
        self._script = r.register_script(lua)

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        try:
            return self._script(keys=list(keys), args=list(args))
        except redis.exceptions.OutOfMemoryError:
            raise
        except redis.ResponseError as e:
            if _OOM in str(e):
                raise redis.exceptions.OutOfMemoryError(str(e)) from None
            raise


class Backoff:
    """Pauses that double after each failure, from ``initial`` up to ``cap`` seconds."""

    def __init__(self, initial: float = 0.1, cap: float = 2.0) -> None:
        if not 0 < initial <= cap:
            raise ValueError(f"backoff: need 0 < initial <= cap, got {initial}, {cap}")
        self.initial = initial
        self.cap = cap
        self.current = initial

    def failed(self) -> float:
        """The pause to take now; the next one will be twice as long (up to the cap)."""
        pause = self.current
        self.current = min(self.current * 2, self.cap)
        return pause

    def succeeded(self) -> None:
        self.current = self.initial

    def wait(self, stop: threading.Event | None = None) -> bool:
        """Sleep the next pause (or until ``stop`` is set); True if ``stop`` was set."""
        pause = self.failed()
        if stop is None:
            time.sleep(pause)
            return False
        return stop.wait(pause)


def patiently(fn: Callable[[], T], patience_s: float, backoff: Backoff | None = None, what: str = "") -> T:
    """``fn()``, retried while Redis is down, for at most ``patience_s``; then the last error is raised.
    With ``what`` (e.g. "recording the result of match m-1"), the first failure is logged as a warning
    naming it, and the success after it: the work held while Redis is away, in the process's log."""
    backoff = backoff or Backoff()
    deadline = time.monotonic() + patience_s
    waited = False
    while True:
        try:
            value = fn()
        except REDIS_DOWN as e:
            if time.monotonic() + backoff.current > deadline:
                raise
            if what and not waited:
                log.warning("redis unavailable while %s (%s); retrying for up to %g s", what, e, patience_s)
            waited = True
            backoff.wait()
            continue
        if what and waited:
            log.warning("redis back: done %s", what)
        return value
