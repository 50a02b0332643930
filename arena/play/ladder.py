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
budgets) and ``keys.LADDER_RUNS_SCHEDULED`` (matches scheduled per ladder, a feeder's reservations among
them while its tick holds them: every count read here is net of them, ``net_of_reservations``).

A ladder may have a name (``--name``: shown, and accepted wherever a ladder id is; the id stays for
programs), and one ladder is the *default*: the one ``leaderboard``, ``ladder status`` and the web pages
take when none is named.  The first ladder started becomes it; ``make_default`` moves it.  Keys:
``keys.LADDER_NAMES`` / ``keys.LADDER_NAME_OF`` and ``keys.DEFAULT_LADDER``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from arena.model import Bot, ForfeitLimits, UnknownLadderError, ValidationError
from arena.play.scheduler import DEFAULT_ENDPOINT_POLICY, LadderConfig, Scheduler
from arena.play.worker import live_workers
from arena.rating.gating import GateConfig
from arena.store import keys
from arena.store.retry import REDIS_DOWN, Backoff, Script
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
    scheduled = scheduled_count(scheduler, ladder_id)
    old = r.hget(keys.LADDER_RUNS, ladder_id)
    prev = json.loads(old) if old else {}
    run = {
        "started": time.time(),
        "budget": None if matches is None else scheduled + matches,
        "max_in_flight": max_in_flight or prev.get("max_in_flight") or DEFAULT_MAX_IN_FLIGHT,
    }
    r.hset(keys.LADDER_RUNS, ladder_id, json.dumps(run))
    return get_run(scheduler, ladder_id)


def extend_ladder(scheduler: Scheduler, ladder_id: str, matches: int, label: str = "") -> LadderRun:
    """Add ``matches`` to the ladder's budget, its settings as they are: a started ladder schedules that many
    more than it had left (an idle one, its budget spent, that many from now); a stopped one is started again
    for that many. A ladder running without an end has no budget to add to (ValidationError). ``label``: what
    the errors call the ladder (its name; default its id)."""
    label = label or ladder_id
    if matches < 1:
        raise ValidationError(f"matches must be at least 1, not {matches}")
    config = scheduler.ladder(ladder_id)  # UnknownLadderError if there is no such ladder
    r = scheduler.r
    with r.pipeline(transaction=True) as p:
        for _attempt in range(20):  # a concurrent start, stop or extend: read again (bounded)
            try:
                p.watch(keys.LADDER_RUNS, keys.LADDER_RUNS_SCHEDULED, keys.LADDER_RUNS_RESERVED)
                raw = p.hget(keys.LADDER_RUNS, ladder_id)
                if raw is None:
                    p.reset()
                    return start_ladder(scheduler, config, matches)
                run = json.loads(raw)
                if run.get("budget") is None:
                    raise ValidationError(
                        f"ladder {label} runs without an end (no budget): there is nothing to extend; stop it, "
                        "then extend it by the matches it should still play"
                    )
                gross, reserved = p.hgetall(keys.LADDER_RUNS_SCHEDULED), p.hgetall(keys.LADDER_RUNS_RESERVED)
                scheduled = net_of_reservations(gross, reserved).get(ladder_id, 0)
                run["budget"] = max(int(run["budget"]), scheduled) + matches
                p.multi()
                p.hset(keys.LADDER_RUNS, ladder_id, json.dumps(run))
                p.execute()
                return get_run(scheduler, ladder_id)
            except redis.WatchError:
                continue
    raise ValidationError(f"ladder {label} changed under every try to extend it; try again")


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


def net_of_reservations(scheduled: Mapping[str, str], reserved: Mapping[str, str]) -> dict[str, int]:
    """Ladder id -> matches scheduled less those its feeders hold reserved and have not enqueued (fields
    "<ladder id> <feeder id>"): the matches really queued.  A feeder's tick counts its reservation as
    scheduled at once (so that two feeders never overshoot a budget) and gives back what it could not
    schedule; a count read inside the tick must not show them (a full test run saw `ladder status --watch` end, "every
    match of its budget is played", with half of it still to schedule).  Both hashes are to be read at
    one moment (a transaction: the feeder's scripts are atomic)."""
    net = {lid: int(n) for lid, n in scheduled.items()}
    for field, n in reserved.items():
        lid = field.split(" ", 1)[0]
        net[lid] = net.get(lid, 0) - int(n)
    return net


def scheduled_counts(scheduler: Scheduler) -> dict[str, int]:
    """Ladder id -> matches scheduled on it since it was first started (started or not now), net of the
    feeders' reservations (``net_of_reservations``); one read."""
    with scheduler.r.pipeline(transaction=True) as p:
        p.hgetall(keys.LADDER_RUNS_SCHEDULED)
        p.hgetall(keys.LADDER_RUNS_RESERVED)
        scheduled, reserved = p.execute()
    return net_of_reservations(scheduled, reserved)


def scheduled_count(scheduler: Scheduler, ladder_id: str) -> int:
    """Matches scheduled on the ladder since it was first started (started or not now), net of the feeders'
    reservations."""
    return scheduled_counts(scheduler).get(ladder_id, 0)


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
    with scheduler.r.pipeline(transaction=True) as p:
        p.hgetall(keys.LADDER_RUNS)
        p.hgetall(keys.LADDER_RUNS_SCHEDULED)
        p.hgetall(keys.LADDER_RUNS_RESERVED)
        p.hgetall(keys.LADDERS)
        started, gross, reserved, configs = p.execute()
    scheduled = net_of_reservations(gross, reserved)
    runs = []
    for ladder_id, raw in started.items():
        # A run without its ladder's settings, or written wrongly, is not fed (and not shown as started).
        with contextlib.suppress(ValueError, KeyError, TypeError):
            config = LadderConfig.from_json(configs[ladder_id])
            runs.append(_run(ladder_id, config, raw, scheduled.get(ladder_id, 0)))
    return sorted(runs, key=lambda x: -x.started)


# A feeder's reservation older than this is a dead feeder's (a tick reserves, schedules and gives back the
# rest within seconds; a loaded machine's slowest ticks take tens of them): its rest is given back.
RESERVATION_STALE_S = 120.0

# KEYS: scheduled hash, reservations hash, reservation times hash.  ARGV: ladder id, wanted, budget (-1: none),
# this feeder's reservation field, now.  Reserves up to ``wanted`` matches of the budget atomically, so two
# feeders (e.g. during a rolling restart) never overshoot it.
_RESERVE_LUA = """
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local n = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
if budget >= 0 then n = math.min(n, budget - done) end
if n <= 0 then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], n)
redis.call('HINCRBY', KEYS[2], ARGV[4], n)
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
return n
"""

# KEYS: scheduled hash, reservations hash, reservation times hash.  ARGV: now, stale age.  Every reservation
# older than the stale age (its feeder died between reserving and enqueueing) gives its rest back to its
# ladder (the field is "<ladder id> <feeder id>"); how many matches went back.
_RECLAIM_LUA = """
local back = 0
local times = redis.call('HGETALL', KEYS[3])
for i = 1, #times, 2 do
  local field = times[i]
  if tonumber(times[i + 1]) < tonumber(ARGV[1]) - tonumber(ARGV[2]) then
    local rest = tonumber(redis.call('HGET', KEYS[2], field) or '0')
    redis.call('HINCRBY', KEYS[1], string.match(field, '^(%S+) '), -rest)
    redis.call('HDEL', KEYS[2], field)
    redis.call('HDEL', KEYS[3], field)
    back = back + rest
  end
end
return back
"""

# KEYS: scheduled hash, reservations hash, reservation times hash.  ARGV: ladder id, reservation field.
# What the reservation still holds (each enqueue took one off it) goes back to the ladder's budget.
_GIVE_BACK_LUA = """
local rest = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
if rest ~= 0 then redis.call('HINCRBY', KEYS[1], ARGV[1], -rest) end
redis.call('HDEL', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
return rest
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
        self._reserve = Script(scheduler.r, _RESERVE_LUA)
        self._give_back = Script(scheduler.r, _GIVE_BACK_LUA)
        self._reclaim = Script(scheduler.r, _RECLAIM_LUA)
        self.feeder_id = uuid.uuid4().hex[:12]  # names its reservations (keys.LADDER_RUNS_RESERVED)
        self.clock = time.time  # the reservations' times (tests pass their own)
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
        reservation = [keys.LADDER_RUNS_SCHEDULED, keys.LADDER_RUNS_RESERVED, keys.LADDER_RUNS_RESERVED_AT]
        now = repr(self.clock())
        if back := int(self._reclaim(keys=reservation, args=[now, RESERVATION_STALE_S])):
            log.warning("ladder feeder: gave back %d matches a feeder reserved and died before queueing", back)
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
            field = f"{run.ladder_id} {self.feeder_id}"
            budget = -1 if run.budget is None else run.budget
            n = int(self._reserve(keys=reservation, args=[run.ladder_id, int(wanted), budget, field, now]))
            if n <= 0:
                continue
            try:
                specs = self.scheduler.schedule(run.ladder_id, n, max_in_flight=run.max_in_flight, reservation=field)
            finally:
                # Not enough free bots now (or the tick failed): the rest of the reservation goes back. A feeder
                # that dies before this leaves it to the next tick of any feeder, once stale (_RECLAIM_LUA).
                self._give_back(keys=reservation, args=[run.ladder_id, field])
            waiting += len(specs)
            total += len(specs)
        self.scheduled += total
        return total
