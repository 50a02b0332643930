"""How long a new bot process may take to serve: its own CPU, bounded by the clock as well.

A start is bounded by the CPU the bot uses (``cpu_s`` seconds of it) rather than by the clock alone: a
worker that is busy (its other matches starting their instances, a machine under load) gives each bot less
of the CPU in a second, and must not make a bot forfeit, or reject an upload, that would have started in
time on its own. CI saw it happen: 15 s on the clock went by before a Python bot in its sandbox had had
the second of CPU its imports take, and the bot forfeited a match it had not been let play.

The clock still ends every wait, at ``wall_s`` (by default ``WALL_PER_CPU`` times ``cpu_s``): a bot that
sleeps instead of serving uses no CPU, and some starts cannot be read (a process tree the worker cannot
see). Where the CPU cannot be read, ``cpu_s`` is a bound on the clock, as before.

The CPU read: a sandboxed instance's own count (its cgroup: every process that ever ran in it; or the
processes of its namespace and the children they reaped), else the process tree of a manifest bot.

Imports: ``arena.sandbox.bwrap`` (the sandboxed bot) and the referee's process tools; nothing above.
"""

from __future__ import annotations

import time

from arena.sandbox.bwrap import SandboxedBot
from referee.match.bots import BotProcess, wait_serving
from referee.match.cputime import ProcessTreeCpu

__all__ = ["WALL_PER_CPU", "StartupCpu", "wait_started"]

WALL_PER_CPU = 4  # a start may take this many seconds on the clock for each second of CPU it may use
LOOK_S = 1.0  # how often a start's CPU is read while it is waited for


class StartupCpu:
    """The CPU a starting process has used since this was made; ``seconds()`` is None where it cannot be
    read. ``close`` releases the /proc files of a process tree's reading."""

    def __init__(self, bot: BotProcess) -> None:
        self.bot = bot
        self.tree: ProcessTreeCpu | None = None
        self.base: float | None = None
        if isinstance(bot, SandboxedBot):
            self.base = bot.cpu_ms()
            if self.base is not None:
                return
        self.tree = ProcessTreeCpu(bot.process.pid)
        self.base = self.tree.start()

    def seconds(self) -> float | None:
        if self.tree is None:
            ms = self.bot.cpu_ms() if isinstance(self.bot, SandboxedBot) else None
        else:
            ms = self.tree.start()  # (walks the tree again now and then: the processes its launcher starts)
        if ms is None or self.base is None:
            return None
        return max(0.0, ms - self.base) / 1000

    def close(self) -> None:
        if self.tree is not None:
            self.tree.close()


def wait_started(bot: BotProcess, cpu_s: float, wall_s: float | None = None) -> str | None:
    """Wait until ``bot``, just launched, serves: None then, else why not (see the module docstring).
    A sandboxed bot's socket is waited for first, found and linked by the worker (``arena.sandbox.bwrap``):
    dialled before, the endpoint would fail and gRPC would back off for a second or more."""
    wall_s = WALL_PER_CPU * cpu_s if wall_s is None else wall_s
    started = time.monotonic()
    cpu = StartupCpu(bot)
    try:
        while True:
            left = started + wall_s - time.monotonic()
            why = _serves_within(bot, min(LOOK_S, max(0.1, left)))
            if why is None:
                return None
            code = bot.process.poll()
            if code is not None:  # (said alike whether it was looked for at its socket or on its endpoint)
                return f"the process exited with code {code} before serving"
            if isinstance(bot, SandboxedBot) and bot.socket_settled():
                return why  # refused at its socket's path: no more time changes that
            used = cpu.seconds()
            wall = time.monotonic() - started
            if wall >= wall_s or (used if used is not None else wall) >= cpu_s:
                spent = f"{used:.1f} s of its own CPU in {wall:.0f} s" if used is not None else f"{wall:.0f} s"
                return f"not serving after {spent} (it may take {cpu_s:g} s of CPU, {wall_s:g} s in all); last: {why}"
    finally:
        cpu.close()


def _serves_within(bot: BotProcess, timeout_s: float) -> str | None:
    end = time.monotonic() + timeout_s
    if isinstance(bot, SandboxedBot):
        why = bot.wait_socket(timeout_s)
        if why is not None:
            return why
    return wait_serving(bot.endpoint, max(0.1, end - time.monotonic()), bot.process)
