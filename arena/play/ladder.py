"""Keeping ladders fed: started ladders, their match budgets, and the feeder loop.

``arena ladder start --ruleset pilotta [--deals N] [--matches N]`` creates the ladder (``Scheduler``; the
same settings always give the same ladder id), enrols every active bot that plays the ruleset, and marks
the ladder *started*, optionally with a budget of N more matches.  The ``LadderFeeder`` thread (run by the
API process, one per arena) then keeps the match queue topped up: every tick, for each started ladder, it
enrols bots registered since, and schedules just enough matches to keep about two per live worker waiting,
never more than the budget.  Keeping the queue short (instead of enqueueing the whole budget at once)
lets each pick use the latest ratings and spreads bots fairly.

Starting and stopping go through the API (``StartLadder``/``StopLadder``, admin token); ``ladder_config``
builds and checks a ladder's settings for it.  Redis keys: ``keys.LADDER_RUNS`` (started ladders and their
budgets) and ``keys.LADDER_RUNS_SCHEDULED`` (matches scheduled per ladder).

A ladder may have a name (``--name``: shown, and accepted wherever a ladder id is; the id stays for
programs), and one ladder is the *default*: the one ``leaderboard``, ``ladder status`` and the web pages
take when none is named.  The first ladder started becomes it; ``make_default`` moves it.  Keys:
``keys.LADDER_NAMES`` / ``keys.LADDER_NAME_OF`` and ``keys.DEFAULT_LADDER``.

``LadderCounts`` counts results and dead letters per ladder by reading the results and dead-letter
streams incrementally (each entry once per process), for ``LadderStatus`` and the demo's progress bar.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from arena.model import Bot, ForfeitLimits, UnknownLadderError, ValidationError
from arena.play.queue import ladder_of as spec_ladder
from arena.play.scheduler import DEFAULT_ENDPOINT_POLICY, LadderConfig, Scheduler
from arena.play.worker import live_workers
from arena.rating.gating import GateConfig
from arena.store import keys
from arena.store.retry import REDIS_DOWN, Backoff
from referee.errors import RulesetError
from referee.match import DUPLICATE_BOARDS
from referee.rules import get_ruleset, ruleset_names

log = logging.getLogger(__name__)

DEFAULT_MAX_IN_FLIGHT = 4


@dataclass(frozen=True)
class LadderRun:
    ladder_id: str
    config: LadderConfig
    started: float
    budget: int | None  # total matches to schedule; None: no end
    scheduled: int
    max_in_flight: int

    @property
    def remaining(self) -> float:
        return math.inf if self.budget is None else max(0, self.budget - self.scheduled)


def ladder_config(
    ruleset: str,
    options: Mapping[str, Any] | None = None,
    deals: int | None = None,
    target: int | None = None,
    duplicate: bool = True,
    endpoint_bots: str = DEFAULT_ENDPOINT_POLICY,
    gating: GateConfig | None = None,
    forfeit_limits: ForfeitLimits | None = None,
) -> LadderConfig:
    """A ladder's settings, checked against the ruleset (ValidationError naming what is wrong).

    A duplicate ladder plays ``deals`` boards a match (``DUPLICATE_BOARDS`` if not given; a target makes no
    sense there). A single-table ladder gives ``deals`` (played deals; the game also ends at the ruleset's
    target) or ``target`` (play to it); with neither, a whole game to the ruleset's usual target.
    ``gating``: gate new versions (``arena.rating.gating``), which only a duplicate ladder can (boards are what
    its SPRT counts).  ``forfeit_limits``: when a version that forfeits is suspended (``ForfeitLimits``;
    None: the defaults)."""
    options = dict(options or {})
    if deals is not None and target is not None:
        raise ValidationError("give deals or target, not both")
    if duplicate and target is not None:
        raise ValidationError("a duplicate ladder plays a fixed number of boards (deals), not to a target")
    if duplicate and deals is None:
        deals = DUPLICATE_BOARDS
    if deals is not None and not 1 <= deals <= 10_000:
        raise ValidationError(f"deals must be 1..10000, not {deals}")
    if target is not None and not 1 <= target <= 1_000_000:
        raise ValidationError(f"target must be 1..1000000, not {target}")
    try:
        if deals is None and target is None:
            target = get_ruleset(ruleset, options).target
        get_ruleset(ruleset, {**options, **({"target": target} if target is not None else {})})
    except RulesetError as e:
        raise ValidationError(str(e)) from None
    if gating is not None and not duplicate:
        raise ValidationError("gating needs a duplicate ladder: its SPRT counts boards played at both tables")
    return LadderConfig(
        ruleset,
        options,
        deals=deals,
        target=target,
        duplicate=duplicate,
        endpoint_bots=endpoint_bots,
        gating=gating,
        forfeit_limits=forfeit_limits or ForfeitLimits(),
    )


def plays(bot: Bot, config: LadderConfig) -> bool:
    """Whether a bot may join a ladder: it must list its ruleset (a manifest bot in its manifest, an
    endpoint bot when registered; an endpoint bot registered without any is taken at its word, its
    handshake is checked in every match), and be no endpoint bot where the ladder refuses them."""
    v = bot.current
    if v.endpoint is not None and config.endpoint_bots == "refused":
        return False
    return not v.games or config.ruleset in v.games


def enrol(scheduler: Scheduler, ladder_id: str, config: LadderConfig) -> int:
    """Every active bot that may join the ladder (``plays``) joins it, in one write; returns how many."""
    bots = [bot for bot in scheduler.registry.list_bots() if plays(bot, config) and scheduler.registry.playable(bot)]
    scheduler.join_all(ladder_id, bots)
    return len(bots)


def start_ladder(
    scheduler: Scheduler, config: LadderConfig, matches: int | None = None, max_in_flight: int | None = None
) -> LadderRun:
    """Create/enrol/start a ladder.  ``matches``: schedule that many more matches, then stop feeding it."""
    if matches is not None and matches < 1:
        raise ValidationError(f"matches must be at least 1, not {matches}")
    if max_in_flight is not None and max_in_flight < 1:
        raise ValidationError(f"max_in_flight must be at least 1, not {max_in_flight}")
    r = scheduler.r
    ladder_id = scheduler.create_ladder(config)
    enrol(scheduler, ladder_id, config)
    scheduled = int(r.hget(keys.LADDER_RUNS_SCHEDULED, ladder_id) or 0)
    old = r.hget(keys.LADDER_RUNS, ladder_id)
    prev = json.loads(old) if old else {}
    run = {
        "started": time.time(),
        "budget": None if matches is None else scheduled + matches,
        "max_in_flight": max_in_flight or prev.get("max_in_flight") or DEFAULT_MAX_IN_FLIGHT,
    }
    r.hset(keys.LADDER_RUNS, ladder_id, json.dumps(run))
    return get_run(scheduler, ladder_id)


NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def validate_ladder_name(name: str, ladder_ids: Collection[str]) -> None:
    """A ladder name: lower-case letters, digits, '-' and '_', a letter first, up to 32; not a ruleset's
    name nor a ladder id (both are looked up where a ladder is named)."""
    if not NAME_RE.match(name):
        raise ValidationError(
            f"invalid ladder name {name!r}: 1-32 lower-case letters, digits, '-' or '_', a letter first"
        )
    if name in ruleset_names():
        raise ValidationError(f"ladder name {name!r} is a ruleset's name; choose another")
    if name in ladder_ids:
        raise ValidationError(f"ladder name {name!r} is a ladder's id; choose another")


# KEYS: names, names:of.  ARGV: ladder id, name.  Names the ladder (dropping its old name); refuses a name
# another ladder has (returns that ladder's id).
_NAME_LUA = """
local holder = redis.call('HGET', KEYS[1], ARGV[2])
if holder and holder ~= ARGV[1] then return holder end
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then redis.call('HDEL', KEYS[1], old) end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return false
"""


def name_ladder(scheduler: Scheduler, ladder_id: str, name: str) -> None:
    """Give the ladder ``name`` (its old name, if any, is freed); ValidationError if another has it."""
    validate_ladder_name(name, scheduler.ladders())
    holder = scheduler.r.eval(_NAME_LUA, 2, keys.LADDER_NAMES, keys.LADDER_NAME_OF, ladder_id, name)
    if holder:
        raise ValidationError(f"ladder name {name!r} is taken by ladder {holder}")


def ladder_names(scheduler: Scheduler) -> dict[str, str]:
    """Ladder id -> its name (ladders without a name are absent)."""
    return dict(scheduler.r.hgetall(keys.LADDER_NAME_OF))


def ladder_by_name(scheduler: Scheduler, name: str) -> str | None:
    found = scheduler.r.hget(keys.LADDER_NAMES, name)
    return str(found) if found else None


def default_ladder(scheduler: Scheduler) -> str | None:
    """The default ladder's id, or None before any ladder was started."""
    found = scheduler.r.get(keys.DEFAULT_LADDER)
    return str(found) if found else None


def set_default(scheduler: Scheduler, ladder_id: str, only_if_none: bool = False) -> None:
    scheduler.r.set(keys.DEFAULT_LADDER, ladder_id, nx=only_if_none)


def stop_ladder(scheduler: Scheduler, ladder_id: str) -> bool:
    """Stop feeding the ladder (queued matches are still played; ratings stay).  Returns whether it was
    started; stopping a stopped ladder does nothing."""
    scheduler.ladder(ladder_id)  # UnknownLadderError if there is no such ladder
    r = scheduler.r
    return bool(r.hdel(keys.LADDER_RUNS, ladder_id))


def scheduled_counts(scheduler: Scheduler) -> dict[str, int]:
    """Ladder id -> matches scheduled on it since it was first started (started or not now); one read."""
    return {lid: int(n) for lid, n in scheduler.r.hgetall(keys.LADDER_RUNS_SCHEDULED).items()}


def scheduled_count(scheduler: Scheduler, ladder_id: str) -> int:
    """Matches scheduled on the ladder since it was first started (started or not now)."""
    return int(scheduler.r.hget(keys.LADDER_RUNS_SCHEDULED, ladder_id) or 0)


def _run(ladder_id: str, config: LadderConfig, raw: str, scheduled: int) -> LadderRun:
    d = json.loads(raw)
    return LadderRun(ladder_id, config, float(d["started"]), d.get("budget"), scheduled, int(d["max_in_flight"]))


def get_run(scheduler: Scheduler, ladder_id: str) -> LadderRun:
    raw = scheduler.r.hget(keys.LADDER_RUNS, ladder_id)
    if raw is None:
        raise UnknownLadderError(f"ladder {ladder_id!r} is not started")
    return _run(ladder_id, scheduler.ladder(ladder_id), raw, scheduled_count(scheduler, ladder_id))


def started_runs(scheduler: Scheduler) -> list[LadderRun]:
    """Started ladders, most recently started first (one round trip, however many there are)."""
    with scheduler.r.pipeline(transaction=False) as p:
        p.hgetall(keys.LADDER_RUNS)
        p.hgetall(keys.LADDER_RUNS_SCHEDULED)
        p.hgetall(keys.LADDERS)
        started, scheduled, configs = p.execute()
    runs = []
    for ladder_id, raw in started.items():
        # A run without its ladder's settings, or written wrongly, is not fed (and not shown as started).
        with contextlib.suppress(ValueError, KeyError, TypeError):
            config = LadderConfig.from_json(configs[ladder_id])
            runs.append(_run(ladder_id, config, raw, int(scheduled.get(ladder_id, 0))))
    return sorted(runs, key=lambda x: -x.started)


# KEYS: scheduled hash.  ARGV: ladder id, wanted, budget (-1: none).  Reserves up to ``wanted`` matches of
# the budget atomically, so two feeders (e.g. during a rolling restart) never overshoot it.
_RESERVE_LUA = """
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local n = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
if budget >= 0 then n = math.min(n, budget - done) end
if n <= 0 then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], n)
return n
"""


class LadderFeeder(threading.Thread):
    """Tops the queue up for every started ladder, every ``interval_s``, until ``stop()``."""

    def __init__(self, scheduler: Scheduler, interval_s: float = 0.5, per_worker: int = 2) -> None:
        super().__init__(name="ladder-feeder", daemon=True)
        self.scheduler = scheduler
        self.r: Any = (
            scheduler.r
        )  # Any: redis-py types replies as Awaitable | Any; with decode_responses=True they are str
        self.interval_s = interval_s
        self.per_worker = per_worker
        self._stop_event = threading.Event()
        self._reserve = scheduler.r.register_script(_RESERVE_LUA)
        self.scheduled = 0
        self._enrolled: dict[str, float] = {}  # ladder -> monotonic time of the last enrolment
        self.enrol_every_s = 5.0  # new bots join within this; reading every bot each tick would not scale

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout_s)

    def run(self) -> None:
        backoff = Backoff(self.interval_s, max(self.interval_s, 5.0))
        while not self._stop_event.wait(backoff.current):
            try:
                self.tick()
                backoff.succeeded()
            except REDIS_DOWN as e:
                log.warning("ladder feeder: redis unavailable (%s); retrying", e)
                backoff.failed()
            except Exception:  # keep feeding the other ladders; the error is logged with its traceback
                log.exception("ladder feeder: tick failed")
                backoff.failed()

    def tick(self) -> int:
        """One round; returns the number of matches enqueued."""
        runs = [run for run in started_runs(self.scheduler) if run.remaining > 0]
        if not runs:
            return 0
        # The queue is shared by all ladders: keep ~per_worker matches per live worker waiting in all.  A dead
        # worker's claims do not count: they are taken over soon, and meanwhile the live workers need work.
        live = live_workers(self.r)
        target = self.per_worker * max(1, len(live))
        waiting = self.scheduler.queue.live_depth(live)
        total = 0
        for run in runs:
            if waiting >= target:
                break
            if time.monotonic() - self._enrolled.get(run.ladder_id, -math.inf) >= self.enrol_every_s:
                enrol(self.scheduler, run.ladder_id, run.config)
                self._enrolled[run.ladder_id] = time.monotonic()
            wanted = min(target - waiting, run.remaining)
            n = int(
                self._reserve(
                    keys=[keys.LADDER_RUNS_SCHEDULED],
                    args=[run.ladder_id, int(wanted), -1 if run.budget is None else run.budget],
                )
            )
            if n <= 0:
                continue
            specs = self.scheduler.schedule(run.ladder_id, n, max_in_flight=run.max_in_flight)
            if len(specs) < n:  # not enough free bots now: give the rest of the reservation back
                self.r.hincrby(keys.LADDER_RUNS_SCHEDULED, run.ladder_id, len(specs) - n)
            waiting += len(specs)
            total += len(specs)
        self.scheduled += total
        return total


class LadderCounts:
    """Results and dead letters per ladder, read incrementally from the streams (thread-safe)."""

    def __init__(self, r: redis.Redis, chunk: int = 1000) -> None:
        self.r: Any = r  # Any: redis-py types replies as Awaitable | Any; with decode_responses=True they are str
        self.chunk = chunk
        self._lock = threading.Lock()
        self._last = {keys.RESULTS_STREAM: "0-0", keys.DEAD_STREAM: "0-0"}
        self.completed: dict[str, int] = {}
        self.dead: dict[str, int] = {}

    def refresh(self, max_entries: int = 100_000) -> None:
        """Read entries added since the last call (at most ``max_entries`` per stream per call)."""
        with self._lock:
            self._read(keys.RESULTS_STREAM, self.completed, lambda f: f.get("ladder"), max_entries)
            self._read(keys.DEAD_STREAM, self.dead, lambda f: spec_ladder(f.get("spec", "")), max_entries)

    def _read(
        self, stream: str, into: dict[str, int], ladder_of: Callable[[dict[str, str]], str | None], max_entries: int
    ) -> None:
        seen = 0
        while seen < max_entries:
            entries = self.r.xrange(stream, min=f"({self._last[stream]}", max="+", count=self.chunk)
            if not entries:
                return
            for entry_id, fields in entries:
                ladder = ladder_of(fields)
                if ladder:
                    into[ladder] = into.get(ladder, 0) + 1
                self._last[stream] = entry_id
            seen += len(entries)
