"""How ``arena ladder`` shows a ladder: its status, and a running ladder refreshed (``arena ladder status
--watch``, ``arena ladder start --follow``); the progress bar ``arena demo`` shows too. No API call here:
the commands hand in the one that fetches the status.

Both poll ``LadderStatus`` (one call with a deadline per refresh, every ``--interval`` seconds, 0.5 to 60)
and leave on Ctrl-C without a traceback (exit 0: the ladder goes on; only the watching stops). Ctrl-C is
taken as an event (``ctrl_c``), never as a KeyboardInterrupt raised wherever the main thread is: inside
a gRPC call that leaves the call and its channel to gRPC's handling of an exception mid-call (grpc/grpc
#19973 was a deadlock of that kind), and once a watch under load did not leave. The watch leaves when the
refresh in flight ends (within its deadline); a second Ctrl-C ends the process at once.

* ``--watch`` redraws the status in place on a terminal (a block per refresh otherwise): played, waiting,
  playing and dead-lettered matches, the pace in matches per minute, for a ladder with a budget what is
  left and the ETA, the matches in flight with their bots, worker and age, and the bots holding the queue
  (the least-played ones, all of whose matches are still on, while the others are ahead and wait:
  ``pairing.holding``), and the matches the pair rule holds back with the free bots it leaves idle
  (``pairing.held_by_pairs``).  It ends by itself once a ladder with a budget has played it all.
* ``--follow`` (``ladder start --matches N``) shows a progress bar of those N matches until they are
  played; it gives up (exit 1) when none finished for ``STALL_S``, naming the matches still in flight.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from types import FrameType
from typing import TextIO

from pilotta.arena.v1 import arena_pb2

from arena.play.pairing import PAIR_SLACK

MIN_INTERVAL_S, MAX_INTERVAL_S = 0.5, 60.0
MAX_BACKOFF_S = 30.0  # the longest wait between tries at an unreachable arena
STALL_S = 600.0  # --follow gives up when no match of the ladder finished for this long
IN_FLIGHT_SHOWN = 12
CLEAR = "\x1b[H\x1b[J"  # cursor home, clear to the end of the screen

Fetch = Callable[[], arena_pb2.LadderStatusReply]
Unreachable = Callable[[Exception], bool]  # whether an error of a Fetch means the arena did not answer


class Progress:
    """A plain-text progress bar: redrawn in place on a terminal, a line per 10 % otherwise."""

    def __init__(self, total: int, out: TextIO, width: int = 30) -> None:
        self.total, self.out, self.width = total, out, width
        self.tty = out.isatty()
        self.started = time.monotonic()
        self._last_decile = -1

    def show(self, done: int, note: str = "") -> None:
        frac = min(1.0, done / self.total) if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {done}/{self.total} matches {time.monotonic() - self.started:5.1f} s {note}"
        if self.tty:
            self.out.write("\r" + line.ljust(78))
            self.out.flush()
        elif int(frac * 10) > self._last_decile:
            self._last_decile = int(frac * 10)
            print(line, file=self.out, flush=True)

    def close(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def pace_line(s: arena_pb2.LadderStatusReply, now: float) -> str:
    """``12.5 matches/min; 40 left, ETA 3 min 12 s (14:05 UTC)`` (the ETA part only with a budget)."""
    line = f"{s.matches_per_minute:.1f} matches/min"
    if s.HasField("remaining"):
        line += f"; {s.remaining} left"
        if s.remaining == 0:
            line += ", done"
        elif s.HasField("eta_seconds"):
            at = datetime.fromtimestamp(now + s.eta_seconds, UTC).strftime("%H:%M:%S")
            line += f", ETA {duration(s.eta_seconds)} ({at} UTC)"
        else:
            line += ", ETA unknown (no match finished yet)"
    return line


def gate_line(g: arena_pb2.GateStatus) -> str:
    """One version's gate: ``v3 vs v2: gating, 48 boards (6 matches), score +0.312 [+0.05, +0.57],
    LLR +1.20 in (-2.94, +2.94)``; decided: its verdict."""
    interval = f" [{g.low:+.3f}, {g.high:+.3f}]" if g.HasField("low") else ""
    verdict = f" ({g.verdict})" if g.verdict not in ("", g.status) else ""  # not "superseded (superseded)"
    return (
        f"v{g.version} vs v{g.base}: {g.status}{verdict}, {g.boards} boards ({g.matches} matches), "
        f"score {g.mean:+.3f}{interval}, LLR {g.llr:+.2f} in ({g.lower:+.2f}, {g.upper:+.2f})"
    )


def status_text(s: arena_pb2.LadderStatusReply, now: float | None = None) -> str:
    """The status of a ladder as ``--watch`` draws it."""
    now = time.time() if now is None else now
    title = f"{s.name} ({s.ladder})" if s.name else s.ladder
    if not s.started:
        state = "stopped"
    elif s.HasField("remaining") and s.remaining == 0:
        state = "idle, its matches all played"
    else:
        state = "running"
    lines = [
        f"ladder {title}{', the default' if s.is_default else ''}: {s.ruleset}, {state}",
        f"played {s.completed} · waiting {s.queued} · playing {s.pending} · dead-lettered {s.dead_lettered} · "
        f"oldest {duration(s.oldest_pending_age_seconds)} · workers alive {len(s.workers_alive)}",
        f"pace: {pace_line(s, now)}",
    ]
    if s.holding:
        lines.append(
            f"held by {', '.join(s.holding)}: fewest games, all {s.max_in_flight} of its matches in flight; "
            "the other bots wait for them (games played are kept even)"
        )
    if s.held_by_pairs:
        n = s.held_by_pairs
        lines.append(
            f"pair rule: {n} match{'es' if n > 1 else ''} held back: {', '.join(s.idle_by_pairs)} free, but "
            f"a pair meets at most {PAIR_SLACK} more times than either bot's least-met opponent, and each free "
            "pair has (opponents are kept even); they wait for the matches in flight"
        )
    for g in s.gating:
        lines.append(f"gating {g.bot} {gate_line(g)}; {g.in_flight} gating matches in flight")
    if s.in_flight:
        lines.append("in flight:")
        for m in s.in_flight[:IN_FLIGHT_SHOWN]:
            sides = " vs ".join(" + ".join(dict.fromkeys(m.bots[i::2])) for i in (0, 1))
            where = f"playing on {m.worker}" if m.playing else "waiting"
            lines.append(f"  {m.match_id:<26} {sides:<34} {where:<24} {duration(m.age_seconds):>12}")
        if len(s.in_flight) > IN_FLIGHT_SHOWN:
            lines.append(f"  ... and {len(s.in_flight) - IN_FLIGHT_SHOWN} more")
    return "\n".join(lines)


@contextlib.contextmanager
def ctrl_c() -> Iterator[threading.Event]:
    """An event set by Ctrl-C (SIGINT) while in this block. A second Ctrl-C ends the process at once, killed by
    SIGINT as without a handler (not a KeyboardInterrupt, which would land inside the call in flight: what
    the event is there to avoid). Outside the main thread (no signal handler can be set there) the event is
    never set."""
    pressed = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if pressed.is_set():
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        pressed.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


def check_interval(interval: float) -> float:
    if not MIN_INTERVAL_S <= interval <= MAX_INTERVAL_S:
        raise ValueError(f"--interval must be {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} seconds, not {interval:g}")
    return interval


def backoff(interval: float, failures: int) -> float:
    """The wait before the next try after ``failures`` calls in a row found the arena unreachable: the
    interval, doubled at each failure, at most ``MAX_BACKOFF_S`` (and never less than the interval)."""
    doubled: float = interval * 2.0 ** max(0, failures - 1)
    return max(interval, min(MAX_BACKOFF_S, doubled))


def polled(
    fetch: Fetch, interval: float, out: TextIO | None = None, unreachable: Unreachable | None = None
) -> Generator[arena_pb2.LadderStatusReply, None, None]:
    """``fetch()``'s replies, one every ``interval`` s, until Ctrl-C (``ctrl_c``): a reply that comes after
    it is not given. Close it (``contextlib.closing``) to give Ctrl-C back at once.

    With ``out`` and ``unreachable`` (which of ``fetch``'s errors mean the arena did not answer), an arena
    that stops answering once it has answered (a restart, a network cut) is waited
    for: each failed call says so on ``out`` ("arena unreachable, retrying in N s") and the next try comes
    after a back-off (``backoff``); the first call's failure still ends the command (exit 3: a wrong
    ``--api`` would otherwise be retried forever). Any other refusal ends it too."""
    failures, answered = 0, False
    with ctrl_c() as pressed:
        while not pressed.is_set():
            try:
                reply = fetch()
            except Exception as e:
                if out is None or unreachable is None or not unreachable(e) or not answered or pressed.is_set():
                    raise
                failures += 1
                wait = backoff(interval, failures)
                print(f"arena unreachable, retrying in {wait:g} s (try {failures}): {e}", file=out, flush=True)
                pressed.wait(wait)
                continue
            if pressed.is_set():
                return
            if failures:
                print(f"arena reachable again after {failures} failed tries", file=out, flush=True)
            failures, answered = 0, True
            yield reply
            pressed.wait(interval)


def watch(
    fetch: Fetch,
    interval: float,
    out: TextIO = sys.stdout,
    refreshes: int | None = None,
    unreachable: Unreachable | None = None,
) -> int:
    """Draw the status every ``interval`` s until Ctrl-C, the ladder's budget is played, or ``refreshes``
    draws; returns the exit code (0)."""
    tty = out.isatty()
    with contextlib.closing(polled(fetch, interval, out, unreachable)) as replies:
        for drawn, s in enumerate(replies, 1):
            text = status_text(s)
            out.write((CLEAR + text + "\n") if tty else (text + "\n\n"))
            out.flush()
            if s.HasField("remaining") and s.remaining == 0:
                print(f"ladder {s.name or s.ladder}: every match of its budget is played", file=out)
                return 0
            if refreshes is not None and drawn >= refreshes:
                return 0
    print("\nstopped watching (the ladder goes on)", file=out)
    return 0


def follow(
    fetch: Fetch,
    total: int,
    interval: float,
    out: TextIO = sys.stderr,
    stall_s: float = STALL_S,
    unreachable: Unreachable | None = None,
) -> int:
    """A progress bar of the ``total`` matches just started, until they are played (0); 1 if the ladder
    was stopped before, or no match finished for ``stall_s``."""
    bar = Progress(total, out)
    last_done, last_change = -1, time.monotonic()
    with contextlib.closing(polled(fetch, interval, out, unreachable)) as replies:
        for s in replies:
            if not s.HasField("remaining"):
                bar.close()
                print(f"ladder {s.name or s.ladder} was stopped before its matches were played", file=out)
                return 1
            done = max(0, total - int(s.remaining))
            note = pace_line(s, time.time()).split(";")[0]
            if s.holding:
                note += f"; held by {', '.join(s.holding)}"
            if s.held_by_pairs:
                note += f"; {s.held_by_pairs} held back by the pair rule"
            bar.show(done, note)
            if s.remaining == 0:
                bar.close()
                return 0
            if done != last_done:
                last_done, last_change = done, time.monotonic()
            elif time.monotonic() - last_change > stall_s:
                bar.close()
                flying = ", ".join(f"{m.match_id} ({duration(m.age_seconds)})" for m in s.in_flight[:5])
                print(
                    f"no match finished for {duration(stall_s)}; in flight: {flying or 'none'} "
                    f"(`arena ladder status --watch --ladder {s.name or s.ladder}`)",
                    file=out,
                )
                return 1
    bar.close()
    print("stopped following (the ladder goes on: `arena ladder status --watch`)", file=out)
    return 0
