"""The CPU time of a bot process tree, read from /proc (Linux), for the decisions of bots the referee
started as child processes.

``ProcessTreeCpu(pid)`` reads the user + system time (``utime + stime`` of /proc/PID/stat, which
add up all the threads of a process, plus ``cutime + cstime``, the time of children it has waited for)
of the process and its descendants, in milliseconds: a decision's CPU time is the difference between a
reading before the Decide call (``start``) and one after it (``since``). What it covers and what not:

- the bot's process and the descendants it had when the tree was first read (a bot started through a
  shell or a launcher is measured as a whole); the tree is read again at a reading ``RESCAN_S`` after
  the last walk, so a helper started later is counted from then on (a walk reads a file per thread of
  every process: about a millisecond for a Python bot, the cost of a hundred readings);
- the kernel counts this time in clock ticks (``SC_CLK_TCK``, usually 100 per second): one decision
  reads as a multiple of 10 ms, mostly 0, and only the sum over many decisions is a fair figure;
- everything the process tree does during the call, including its gRPC threads' work on other calls.

Elsewhere (no /proc, a bot the referee did not start) there is no reading: ``start`` returns None.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

RESCAN_S = 1.0  # at least this long between two walks of the process tree
_TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0


def _ticks(fd: int) -> int | None:
    """utime + stime + cutime + cstime from an open /proc/PID/stat, in clock ticks; None when it is gone.
    (Reading the open file again gives fresh figures: a kept descriptor costs a few microseconds a read,
    opening the file each time ten times more.)"""
    try:
        text = os.pread(fd, 1024, 0)
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'
    # (only as far as the four wanted).
    fields = text[text.rfind(b")") + 2 :].split(None, 15)
    try:
        return int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    except (IndexError, ValueError):
        return None


def _open_stat(pid: int) -> int | None:
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, from /proc/PID/task/TID/children."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except (OSError, ValueError):
                continue
    return found


class CpuMeter(Protocol):
    """What the match runner reads around a decision: a start reading, then the CPU ms since it (None
    where there is no reading)."""

    def start(self) -> float | None: ...

    def since(self, start: float | None) -> float | None: ...


class ProcessTreeCpu:
    """Readings of a process tree's CPU time (see the module docstring). ``close`` releases the open
    /proc files."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fds: dict[int, int] = {}
        self._scanned = 0.0  # time.monotonic() of the last walk of the tree
        self._rescan()
        self.available = pid in self._fds

    def _rescan(self) -> None:
        self._scanned = time.monotonic()
        pids = set(descendants(self.pid))
        for gone in set(self._fds) - pids:
            os.close(self._fds.pop(gone))
        for pid in pids - set(self._fds):
            fd = _open_stat(pid)
            if fd is not None:
                self._fds[pid] = fd

    def start(self) -> float | None:
        """A reading before a call (the tree is walked again now and then, never within a call)."""
        if not self.available:
            return None
        if time.monotonic() - self._scanned >= RESCAN_S:
            self._rescan()
        return self._total_ms()

    def since(self, start: float | None) -> float | None:
        """The CPU time spent since ``start`` (a process of the tree that ended takes its time with it)."""
        if start is None:
            return None
        return max(0.0, self._total_ms() - start)

    def _total_ms(self) -> float:
        total = 0
        for fd in self._fds.values():
            ticks = _ticks(fd)
            if ticks is not None:
                total += ticks
        return total * _TICK_MS

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self.available = False
