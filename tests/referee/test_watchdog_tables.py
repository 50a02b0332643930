"""The Play stream's watchdog (``referee.match.transport._Watchdog``) while matches' threads arm, disarm and
reap as it reads its tables. In a loaded run its copy of them met a garbage collection whose callbacks let
another thread run, raised "dictionary changed size during iteration", and the watchdog's thread died,
leaving every later wait of the process unbounded. Here every collection gives the other threads their
turn (a gc callback sleeps 0) and collections come every few allocations, so that interleaving is common;
the watchdog must live through it and keep cutting the waits that are past their bound.

The pipes are the watchdog's side of one: ``expire(wait)``, ``ended`` and ``call.cancel()``, all it uses."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest

from referee.match.transport import _Watchdog

pytestmark = pytest.mark.timeout(120)


class _Call:
    def cancel(self) -> None:
        pass


class _Pipe:
    def __init__(self) -> None:
        self.ended = False
        self.call = _Call()
        self.cut = 0

    def expire(self, wait: int) -> None:
        self.cut += 1


def test_the_watchdog_lives_through_its_tables_changing_while_it_reads_them() -> None:
    dog = _Watchdog()
    died: list[BaseException | None] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: died.append(args.exc_value)

    def yield_turn(_phase: str, _info: dict[str, Any]) -> None:
        time.sleep(0)

    threshold = gc.get_threshold()
    gc.callbacks.append(yield_turn)
    gc.set_threshold(5)
    stop = threading.Event()
    past = [_Pipe() for _ in range(100)]  # armed with a bound already past: cut at each of the watchdog's rounds

    def churn() -> None:
        others = [_Pipe() for _ in range(200)]
        while not stop.is_set():
            for p in others:
                dog.arm(p, time.monotonic() + 60, 1)
                dog.reap(p, time.monotonic() + 60)
            for p in others:
                dog.disarm(p)

    threads = [threading.Thread(target=churn, daemon=True) for _ in range(2)]
    try:
        for p in past:
            dog.arm(p, 0.0, 1)
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        # 200 rounds of the watchdog (each cuts every past wait once), or its death, or 60 s.
        while min(p.cut for p in past) < 200 and not died and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        gc.callbacks.remove(yield_turn)
        gc.set_threshold(*threshold)
        threading.excepthook = hook
        for p in past:
            dog.disarm(p)
    assert died == [], died
    assert dog._thread is not None and dog._thread.is_alive()
    assert min(p.cut for p in past) >= 200  # it kept cutting the waits past their bound
