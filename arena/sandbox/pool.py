"""Bot instances for the seats of matches: one process per seat, and never the same board twice.

Fair play at the table (issue 9) rests on two rules, both kept here for every bot the workers start:

* **one instance per seat**: each seat of a match is played by its own process, so two partners (or one
  bot given both seats of a side) never share a process and cannot pool their hands;
* **no instance sees a board twice**: the two legs of a duplicate pair deal the same boards, so the
  eight seats of a pair (four per leg) get eight different processes; and an instance kept warm for a
  later match is given only boards it has not seen.

How the pool guarantees the second rule: every instance carries the seeds of every match it sat in
(``Instance.seen``; a match's boards all come from its seed). ``acquire`` hands out, for one match, only
instances whose ``seen`` lacks that match's seed and never the same instance for two seats, so nothing
that played a board of leg 1 is in leg 2 (they share the seed). ``release`` adds the seed. An instance
retires after ``max_matches`` matches, which bounds ``seen``. A sandboxed instance kept warm keeps its
own copies of its package and runtime and its own socket directory (``arena.sandbox.bwrap``): reused by
its bot in a later match, it still shares no file with any other live instance. Since the two legs of a pair share no
process, ``referee.match.run_match`` plays them at the same time, each on its own thread.

Warm instances are kept (least recently used out past ``size``) with their channel and handshake
(``BotLinks``): a match whose bots all have fresh warm instances starts at once. The processes the pool
lacks are started together: each is launched (``Popen``) in the calling thread, because
``PR_SET_PDEATHSIG`` ties a child to the thread that started it (the worker's long-lived main thread), and
then all are waited for at once, so a match that needs eight new processes waits about as long as for
one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from arena.model import BotVersion
from arena.sandbox.faults import SandboxFault
from arena.sandbox.startup import WALL_PER_CPU, wait_started
from referee.match.bots import BotProcess, BotStartError, Manifest, spawn_bot, start_failure, wait_serving
from referee.match.transport import BotLinks

log = logging.getLogger(__name__)

_SIGKILL = 9
Launcher = Callable[[BotVersion, Path], BotProcess]  # starts one process of a version, not waiting for it


@dataclass(eq=False)
class Instance:
    """One running process of one bot version, and the boards (seeds) it has been dealt."""

    key: tuple[str, int]  # (bot id, version)
    bot: BotProcess
    seen: set[int] = field(default_factory=set)
    matches: int = 0

    @property
    def endpoint(self) -> str:
        return self.bot.endpoint

    def alive(self) -> bool:
        return self.bot.process.poll() is None and self.bot.error is None


def launch(manifest: Manifest, log_dir: Path, argv_of: Callable[[list[str]], list[str]]) -> BotProcess:
    """Start a manifest bot on a free port (``argv_of`` wraps its command, e.g. ``with_parent_death``) without
    waiting for it to serve.  Raises BotStartError when the command cannot be run at all."""
    return spawn_bot(manifest, log_dir, argv_of)


class InstancePool:
    """Instances of manifest bots for the seats of matches (see the module docstring)."""

    def __init__(
        self,
        log_dir: Path,
        launcher: Launcher,
        *,
        size: int = 24,
        warm: bool = True,
        startup_timeout_s: float = 15.0,
        startup_wall_s: float | None = None,
        max_matches: int = 200,
        links: BotLinks | None = None,
    ) -> None:
        """``startup_timeout_s``: the CPU seconds a new instance may use before it serves; ``startup_wall_s``
        (default four times that): the seconds on the clock it may take all the same (``_wait``)."""
        self.log_dir = log_dir
        self.launcher = launcher
        self.size = size
        self.warm = warm
        self.startup_timeout_s = startup_timeout_s
        self.startup_wall_s = startup_wall_s if startup_wall_s is not None else WALL_PER_CPU * startup_timeout_s
        self.max_matches = max_matches
        self.links = links  # the channels the matches use: an instance's is forgotten when it stops
        self._idle: list[Instance] = []  # least recently used first
        self._lock = threading.Lock()

    def idle_endpoints(self) -> list[str]:
        with self._lock:
            return [i.endpoint for i in self._idle]

    def acquire(
        self, wants: Sequence[tuple[BotVersion, int]], seed: int
    ) -> tuple[dict[str, list[Instance]], dict[str, str]]:
        """For one match of ``seed``: ``count`` distinct instances of each bot version wanted, none of which
        has seen ``seed``.  Returns (instances by bot id, why by bot id for the bots that could not be
        started); the caller gives every instance back with ``release``."""
        got: dict[str, list[Instance]] = {}
        errors: dict[str, str] = {}
        starting: list[Instance] = []
        for version, count in wants:
            key = (version.bot_id, version.version)
            mine = got.setdefault(version.bot_id, [])
            with self._lock:
                for inst in [i for i in self._idle if i.key == key and seed not in i.seen]:
                    if len(mine) == count:
                        break
                    self._idle.remove(inst)
                    if self._serving(inst):
                        mine.append(inst)
                    else:
                        log.warning("bot %s v%d instance at %s is not serving any more", *key, inst.endpoint)
                        self._stop(inst)
            try:
                while len(mine) < count:
                    inst = Instance(key, self.launcher(version, self.log_dir))
                    mine.append(inst)
                    starting.append(inst)
            except SandboxFault:
                # The worker's own failure, not the bot's (arena.sandbox.faults): the match fails here and is
                # played elsewhere. What was taken for it goes back, what was started for it stops.
                for inst in starting:
                    self._stop(inst)
                self.release([i for insts in got.values() for i in insts if i not in starting], None)
                raise
            except (BotStartError, ValueError, OSError) as e:
                errors[version.bot_id] = str(e)
        # Wait for every new process at once (each wait is bounded by the startup timeout).
        if starting:
            with ThreadPoolExecutor(max_workers=min(16, len(starting))) as ex:
                whys = list(ex.map(self._wait, starting))
            for inst, why in zip(starting, whys, strict=True):
                if why is not None:
                    inst.bot.error = start_failure(inst.bot.manifest, why, inst.bot.stderr_path)
                    errors.setdefault(inst.key[0], inst.bot.error)
        for bot_id in errors:
            for inst in got.pop(bot_id, []):
                self.release([inst], None)
        return got, errors

    def _wait(self, inst: Instance) -> str | None:
        return wait_started(inst.bot, self.startup_timeout_s, self.startup_wall_s)

    def _serving(self, inst: Instance) -> bool:
        # An instance that answered everything in its last match is known to serve: no health check needed.
        if not inst.alive():
            return False
        known = self.links is not None and self.links.known(inst.endpoint)
        return known or wait_serving(inst.endpoint, 2.0, inst.bot.process) is None

    def release(self, instances: Sequence[Instance], seed: int | None) -> None:
        """Give instances back after their match (of ``seed``): kept warm while alive and under
        ``max_matches``, else stopped; then the least recently used ones past ``size`` are stopped."""
        with self._lock:
            for inst in instances:
                if seed is not None:
                    inst.seen.add(seed)
                    inst.matches += 1
                if self.warm and inst.alive() and inst.matches < self.max_matches:
                    self._idle.append(inst)
                else:
                    self._stop(inst)
            while len(self._idle) > self.size:
                self._stop(self._idle.pop(0))

    def _stop(self, inst: Instance) -> None:
        if self.links is not None:
            self.links.forget(inst.endpoint)
        inst.bot.stop()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for inst in idle:
            self._stop(inst)
