"""The real match runner of the workers: ``MatchSpec`` -> referee match over gRPC -> ``MatchResult``.

``ArenaRunner(registry)`` is the ``runner`` a ``Worker`` calls.  For each spec it

1. resolves every bot id in the Registry and takes one instance per seat of every leg from the pool
   (``arena.sandbox.pool``: a manifest bot's process, an uploaded package's sandbox, ``arena.sandbox``; an endpoint
   is used as is for all its seats);
2. plays ``referee.match.run_match`` (two legs with sides swapped when ``spec.duplicate``, played at the
   same time on two threads since no instance plays at both tables; an endpoint bot's legs in turn), reporting each
   decision's latency and each bot error to ``arena.metrics`` as the events arrive (labels: registered
   bot names, phases, the ruleset: bounded sets, never a match id), and its public events to its page
   (``arena.play.live``: calls, cards played, scores; never a hand);
3. turns the outcome into a ``MatchResult`` (``arena.play.results``): winner and points per side, per-bot
   ``BotStats`` (contracts bid and made, points, capots, declarations, timeouts, illegal actions, transport
   errors, latency histogram) and the match record JSON.

A bot that misbehaves (times out, crashes, cannot even be started) makes its side forfeit: that is a
*result*, and the record says why.  Redis away (a restart of ``arena up``, whose workers may be on other
machines) is waited out, ``redis_patience_s``, by each read and write before and after the match: a match
played while Redis was away keeps its result for the worker to record.  Anything else that goes wrong (a
bug, Redis away for longer) raises, so the queue retries the match elsewhere and dead-letters it after a
few tries.

After the match the forfeit reason is rewritten in the arena's own words (``arena.play.publish``: never
a bot's output, an address or a path), bots known only by address take their registered names, each
bot's stderr of the match goes to its owner's logs (``arena.bots.botlogs``), failed starts are counted
(3 in a row suspend a version), so are forfeits (past the ladder's ``ForfeitLimits`` the version is suspended:
``Registry.note_forfeit``), and a match neither side could play is void.

A match whose bot was suspended or retired after it was queued is not played: it ends at once, void (never
rated, shown with the reason ``void: not played: bot x is suspended``), and releases its bots' slots.

Warm instances: starting a Python bot costs about a second of CPU, several times the cost of a short
match, so the pool keeps instances between matches with their channel and handshake
(``referee.match.transport.BotLinks``), for boards they have not seen. Before a match each is checked alive
(and SERVING, unless it answered everything in its last match). Bot processes get ``PR_SET_PDEATHSIG``,
so a worker killed with SIGKILL does not leave orphaned bots behind.  (The kernel ties it to the *thread*
that started the bot: call the runner from one long-lived thread, as the worker does from its main
thread; a bot whose thread ended is found dead and restarted.)
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena import metrics
from arena.bots.botlogs import BotLogs, LogRetention, match_log, read_from, size_of
from arena.bots.inputs import launch_manifest
from arena.bots.limits import load_policy
from arena.bots.packages import PackageCache, parse_package_manifest
from arena.bots.registry import Registry
from arena.bots.trust import check_endpoint_policy
from arena.model import (
    Bot,
    BotVersion,
    EndpointRefused,
    ForfeitLimits,
    MatchResult,
    MatchSpec,
    seat_bot,
)
from arena.model.replay import strip_private_notes
from arena.play import live
from arena.play.publish import public_forfeit_reason, publish_forfeit, registered_names
from arena.play.results import leg_seats, not_played, to_result
from arena.play.scheduler import LadderConfig
from arena.sandbox import CgroupCpu, Sandbox, SandboxedBot
from arena.sandbox.lifetime import with_parent_death
from arena.sandbox.pool import Instance, InstancePool, launch
from arena.store import keys
from arena.store.retry import patiently
from referee.match import DealEvent, DecisionEvent, Event, MatchOutcome, MatchSettings, run_match
from referee.match.bots import BotProcess, Manifest, free_port
from referee.match.cputime import CpuMeter, ProcessTreeCpu
from referee.match.transport import BotLinks

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------- warm bot pool


class SandboxUnavailable(RuntimeError):
    """This worker cannot run an uploaded package: it has no working sandbox (the message says why)."""


def _closed_endpoint() -> str:
    """An address nothing listens on: a bot that could not be started is unreachable there, so the match
    machinery makes its side forfeit like any other unreachable bot."""
    return f"127.0.0.1:{free_port()}"


# ----------------------------------------------------------------------------- runner


class ArenaRunner:
    """``Callable[[MatchSpec], MatchResult]`` for ``arena.play.worker.Worker``."""

    def __init__(
        self,
        registry: Registry,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        warm_bots: bool = True,
        deadline_ms: int = 1000,
        time_bank_ms: int = 10_000,
        max_strikes: int = 3,
        startup_timeout_s: float = 15.0,
        pool_size: int = 24,
        sandbox: Sandbox | None = None,
        packages: PackageCache | None = None,
        sandbox_refused: str = "",
        redis_patience_s: float = 120.0,
    ) -> None:
        self.registry = registry
        self.patience_s = redis_patience_s  # as the worker's record_patience_s: a restart's length
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="arena-bots-"))
        self.links = BotLinks()  # channels (and, for warm bots, handshakes) kept between matches
        # Uploaded packages run only in the sandbox: without one (``sandbox_refused`` says why) a match with
        # one fails here, so the queue leaves it to other workers and, if none can, dead-letters it.
        self.sandbox, self.packages = sandbox, packages
        self.sandbox_refused = sandbox_refused or "this worker has no sandbox"
        # Without warm bots every instance is stopped after its match.
        self.pool = InstancePool(
            self.log_dir,
            self._launch,
            warm=warm_bots,
            size=pool_size,
            startup_timeout_s=startup_timeout_s,
            links=self.links,
        )
        self._meters: dict[str, ProcessTreeCpu] = {}  # by endpoint: the warm instances' (``_tree_meter``)
        self.limits: dict[str, float] = {
            "deadline_ms": deadline_ms,
            "time_bank_ms": time_bank_ms,
            "max_strikes": max_strikes,
            "startup_timeout_s": startup_timeout_s,
        }

    def close(self) -> None:
        self.pool.close()
        self.links.close()
        for meter in self._meters.values():
            meter.close()
        self._meters.clear()

    def _patient(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, retried while Redis is down (one call: a retry never repeats a write done)."""
        return patiently(functools.partial(fn, *args), self.patience_s, what=what)

    def _tree_meter(self, instance: Instance) -> ProcessTreeCpu:
        """The CPU meter of a warm instance's process tree, kept while the instance lives: a new meter walks
        the tree (a file read per thread: about a millisecond for a Python bot, eight instances a match)."""
        pid = instance.bot.process.pid
        meter = self._meters.get(instance.endpoint)
        if meter is None or meter.pid != pid:  # (an endpoint's port may be another process's by now)
            if meter is not None:
                meter.close()
            meter = self._meters[instance.endpoint] = ProcessTreeCpu(pid)
        return meter

    def _launch(self, version: BotVersion, log_dir: Path) -> BotProcess:
        """One process of a version: an uploaded package in its sandbox, an operator manifest as is."""
        if version.package is None:
            return launch(launch_manifest(version), log_dir, with_parent_death)
        if self.sandbox is None or self.packages is None:
            raise SandboxUnavailable(f"cannot run uploaded bot packages: {self.sandbox_refused}")
        # Held while the sandbox copies it into the instance's own directory; the cache may drop it after.
        with self.packages.held(version.package) as directory:
            source = f"bot {version.bot_id} v{version.version}"
            pm = parse_package_manifest(dict(version.manifest or {}), directory, source)
            return self.sandbox.launch(pm.manifest, pm.command, directory, log_dir)

    def __call__(self, spec: MatchSpec) -> MatchResult:
        # Registry reads wait Redis out (_patient); past the patience they raise: a runner failure.
        unplayable = self._patient(f"reading the bots of {spec.match_id}", self._unplayable, spec)
        if unplayable:
            log.info("match %s not played: %s", spec.match_id, unplayable)
            return not_played(spec, unplayable)
        # Seat -> the bot with the version that plays there as its current (a pinned one: Registry.seat).
        bots = {
            b: self._patient(f"reading the bots of {spec.match_id}", self.registry.seat, b)
            for b in spec.distinct_bots()
        }
        names = _seat_names(bots)
        if self.sandbox is None and any(bot.current.package is not None for bot in bots.values()):
            raise SandboxUnavailable(f"cannot run uploaded bot packages: {self.sandbox_refused}")
        legs = [leg_seats(spec, leg) for leg in range(2 if spec.duplicate else 1)]
        # One instance per seat of every leg for each bot the workers start (arena.sandbox.pool).
        slots = {b: sum(seats.count(b) for seats in legs) for b in bots}
        wants = [(b, bot.current, slots[b]) for b, bot in bots.items() if bot.current.endpoint is None]
        instances, start_errors = self._acquire(wants, spec.seed)
        # Where each instance's stderr stood at the start: what it writes from here is this match's. A new
        # instance's first match also takes what it wrote while starting (else no match's log holds it).
        offsets = {i: size_of(i.bot.stderr_path) if i.matches else 0 for insts in instances.values() for i in insts}
        taken = {b: list(reversed(insts)) for b, insts in instances.items()}
        dial, refused = self._patient(f"checking the endpoints of {spec.match_id}", self._endpoints, bots)
        closed = {b: _closed_endpoint() for b in (*start_errors, *refused)}
        try:
            seat_endpoints: list[list[str]] = []
            for seats in legs:
                eps = []
                for b in seats:
                    endpoint = dial.get(b)
                    if endpoint is not None:
                        self.links.doubt(endpoint)  # it runs elsewhere and may have changed since
                    eps.append(endpoint or closed.get(b) or taken[b].pop().endpoint)
                seat_endpoints.append(eps)
            # Who the bots are: a bot is known by the process of its first seat on its side in leg 1.
            first = seat_endpoints[0]
            identity = [first[next(y for y in (x & 1, (x & 1) + 2) if legs[0][y] == legs[0][x])] for x in range(4)]
            options = dict(spec.options)
            if spec.target is not None:
                options["target"] = spec.target
            settings = MatchSettings(
                ruleset=spec.ruleset,
                options=options,
                seed=spec.seed,
                deals=spec.deals,
                duplicate=spec.duplicate,
                log_dir=str(self.log_dir),
                deadline_ms=int(self.limits["deadline_ms"]),
                time_bank_ms=int(self.limits["time_bank_ms"]),
                max_strikes=int(self.limits["max_strikes"]),
            )
            endpoints: list[str | Manifest] = list(identity)
            # The processes started here: each decision's CPU time goes in the record, from a sandbox's cgroup
            # (exact) or from /proc (referee.match.cputime).
            meters: dict[str, CpuMeter] = {
                i.endpoint: CgroupCpu(i.bot.cgroup) if isinstance(i.bot, SandboxedBot) else self._tree_meter(i)
                for insts in instances.values()
                for i in insts
            }
            # Its public events as it is played, for its page (arena.play.live: never a hand).
            feed = live.start(self.registry.r, spec, [[names[b] for b in seats] for seats in legs])
            outcome = run_match(
                endpoints,
                settings,
                spec.match_id,
                # (Metrics label a bot by its registered name alone: a bounded set, whatever its versions.)
                live.both(_metrics_reporter(spec, {b: bot.name for b, bot in bots.items()}), feed),
                links=self.links,
                seat_endpoints=seat_endpoints,
                cpu_meters=meters,
                # A process that dies mid-match is reported by its exit code and last words (for its
                # owner's logs; the public reason is the arena's own words).
                started=[i.bot for insts in instances.values() for i in insts],
            )
            feed.end()
            # What a sandbox's cgroup says of a bot that crashed: it ran out of memory, or of processes.
            failures = {
                b: why
                for b, insts in instances.items()
                for i in insts
                if isinstance(i.bot, SandboxedBot) and (why := i.bot.failure())
            }
            self._keep_logs(spec, bots, instances, offsets, outcome, {**start_errors, **refused}, seat_endpoints, legs)
        finally:
            self.pool.release([i for insts in instances.values() for i in insts], spec.seed)
            kept = set(self.pool.idle_endpoints())
            for ep in [ep for ep in self._meters if ep not in kept]:  # its instance has stopped
                self._meters.pop(ep).close()
        ids_by_endpoint = {
            ep: b for seats, eps in zip(legs, seat_endpoints, strict=True) for b, ep in zip(seats, eps, strict=True)
        }
        never_started = _never_started(outcome, ids_by_endpoint, start_errors)
        self._note_starts(spec.match_id, bots, never_started)
        forfeited_by = _forfeited_by(outcome, legs)
        self._note_handshake_names(outcome, ids_by_endpoint)
        by_endpoint = {
            ep: names[b]
            for seats, eps in zip(legs, seat_endpoints, strict=True)
            for b, ep in zip(seats, eps, strict=True)
        }
        full_reason = outcome.forfeit_reason  # for the owners' logs, never shown in public
        registered_names(outcome, by_endpoint)
        strip_private_notes(outcome.record)
        if outcome.forfeit is not None:
            failed = [names[b] for b in start_errors]
            limits = {names[b]: why for b, why in failures.items()}
            reason = public_forfeit_reason(outcome, failed, int(self.limits["max_strikes"]), limits)
            publish_forfeit(outcome, reason)
        if outcome.forfeit is None or outcome.forfeit.team is not None:  # (a void match: failed starts count it)
            self._note_forfeits(spec, bots, forfeited_by, outcome.forfeit.reason if outcome.forfeit else "")
        if full_reason:
            log.info("match %s: forfeit: %s", spec.match_id, full_reason)
        for bot_id, why in start_errors.items():
            log.info("match %s: bot %s could not be started: %s", spec.match_id, names[bot_id], why)
        label = dict(zip(spec.seats(), spec.result_seats(), strict=True))
        result = dataclasses.replace(
            to_result(spec, outcome), versions={label[b]: bot.version for b, bot in bots.items()}
        )
        if outcome.forfeit is not None and forfeited_by in spec.requested_by:
            # A forfeit by a bot of a challenge its own owner asked for (it never started, crashed, stalled):
            # no points for anyone, so an owner cannot feed its own bot to another for points.
            result = dataclasses.replace(result, rated=False)
        if outcome.forfeit is not None and outcome.forfeit.team is None:
            # Neither side could play: void, recorded and shown, never rated.
            result = dataclasses.replace(
                result, void=True, rated=False, forfeit=f"void: {result.forfeit or 'neither side could play'}"
            )
        metrics.record_match(spec.ruleset, _outcome_label(result))
        return result

    def _acquire(
        self, wants: Sequence[tuple[str, BotVersion, int]], seed: int
    ) -> tuple[dict[str, list[Instance]], dict[str, str]]:
        """The pool's instances (and start errors) by seat: the pool answers by bot id, so two versions
        of one bot (a gating match) are asked for in two calls."""
        instances: dict[str, list[Instance]] = {}
        errors: dict[str, str] = {}
        rest = list(wants)
        while rest:
            batch: list[tuple[str, BotVersion, int]] = []
            later: list[tuple[str, BotVersion, int]] = []
            for want in rest:
                (later if any(w[1].bot_id == want[1].bot_id for w in batch) else batch).append(want)
            rest = later
            seat_of_bot = {version.bot_id: seat for seat, version, _n in batch}
            got, why = self.pool.acquire([(version, n) for _seat, version, n in batch], seed)
            instances.update({seat_of_bot[b]: insts for b, insts in got.items()})
            errors.update({seat_of_bot[b]: e for b, e in why.items()})
        return instances, errors

    def _endpoints(self, bots: Mapping[str, Bot]) -> tuple[dict[str, str], dict[str, str]]:
        """The address to dial of each endpoint bot, and why each refused one is not dialled (it plays as
        unreachable; the reason goes to its owner's logs).  Every endpoint is checked again now against the
        policy as it is now (the operator may have tightened it since the bot was registered): a DNS name,
        which can point anywhere since, is resolved again, and the address that passed is dialled (no
        second lookup)."""
        policy = load_policy(self.registry.r)
        redis_port = self.registry.r.connection_pool.connection_kwargs.get("port")
        own = [int(redis_port)] if redis_port else []
        dial, refused = {}, {}
        for b, bot in bots.items():
            endpoint = bot.current.endpoint
            if endpoint is None:
                continue
            try:
                dial[b] = check_endpoint_policy(endpoint, policy, own)
            except EndpointRefused as e:
                refused[b] = f"not dialled: {e}"
        return dial, refused

    def _keep_logs(
        self,
        spec: MatchSpec,
        bots: Mapping[str, Bot],
        instances: Mapping[str, Sequence[Instance]],
        offsets: Mapping[Instance, int],
        outcome: MatchOutcome,
        problems: Mapping[str, str],
        seat_endpoints: Sequence[Sequence[str]],
        legs: Sequence[Sequence[str]],
    ) -> None:
        """Each bot's stderr of this match and the referee's account of its problems (``problems``: why it
        could not be started or was not dialled), for its owner."""
        ids = {ep: b for seats, eps in zip(legs, seat_endpoints, strict=True) for b, ep in zip(seats, eps, strict=True)}
        # The arena's retention, read at each match: `arena up --logs-keep-...` may have changed it meanwhile.
        policy = self._patient(f"keeping the logs of {spec.match_id}", load_policy, self.registry.r)
        logs = BotLogs(self.registry.r, LogRetention.of(policy))
        for bot_id, bot in bots.items():
            header = [
                f"match {spec.match_id}, {spec.ruleset}, version {bot.version}",
                _how_it_ended(outcome, legs, bot_id),
            ]
            if bot_id in problems:
                header.append(problems[bot_id])
            for b in outcome.bots:
                if ids.get(b.endpoint) == bot_id:
                    header += b.errors
            # (Its own problems only: another bot's words, even in a forfeit reason, are not its owner's.)
            parts = [read_from(i.bot.stderr_path, offsets[i]) for i in instances.get(bot_id, [])]
            self._patient(
                f"keeping the logs of {spec.match_id}",
                logs.add,
                bot.bot_id,
                match_log(header, parts, spec.match_id, bot.version),
            )

    def _note_handshake_names(self, outcome: MatchOutcome, ids: Mapping[str, str]) -> None:
        """Keep the name each bot gave itself in its Handshake, for its page (all else shows the registered one)."""
        for b in outcome.bots:
            bot_id = ids.get(b.endpoint)
            if bot_id is not None and b.handshake is not None:
                name = str(b.handshake.get("name", ""))
                self._patient(f"noting {bot_id}'s name", self.registry.note_handshake_name, seat_bot(bot_id), name)

    def _unplayable(self, spec: MatchSpec) -> str:
        """Why the match must not be played now (a bot suspended or retired since it was queued), or empty."""
        why = []
        for seat in spec.distinct_bots():
            bot = self.registry.get(seat_bot(seat))
            if bot.retired:
                why.append(f"bot {bot.name} is retired")
            elif bot.suspended:
                why.append(f"bot {bot.name} is suspended")
        return "; ".join(dict.fromkeys(why))

    def _note_forfeits(self, spec: MatchSpec, bots: Mapping[str, Bot], culprit: str | None, reason: str) -> None:
        """Count the match for each bot's forfeit limits (the ladder's): a forfeit for the seat whose failure
        ended it, a match without one for the others."""
        raw = self._patient(f"reading the ladder of {spec.match_id}", self.registry.r.hget, keys.LADDERS, spec.ladder)
        limits = LadderConfig.from_json(raw).forfeit_limits if raw else ForfeitLimits()
        for seat, bot in bots.items():
            note = self.registry.note_forfeit
            once = f"{spec.match_id}/{seat}"  # a retry after a lost reply counts nothing twice
            if self._patient(
                f"counting {spec.match_id}", note, bot.bot_id, bot.version, seat == culprit, reason, limits, once
            ):
                log.warning("bot %s suspended: %s", bot.name, self.registry.suspended(bot.bot_id))

    def _note_starts(self, match_id: str, bots: Mapping[str, Bot], failed: Mapping[str, str]) -> None:
        """Count, per bot, a match it failed to start or answer its Handshake in (3 in a row: suspended)."""
        for bot_id, bot in bots.items():
            note, why, failing = self.registry.note_start, failed.get(bot_id, ""), bot_id in failed
            if self._patient(f"counting {bot_id}'s start", note, bot.bot_id, bot.version, failing, why, match_id):
                log.warning("bot %s suspended: %s", bot.name, self.registry.suspended(bot.bot_id))


def _seat_names(bots: Mapping[str, Bot]) -> dict[str, str]:
    """Seat -> the registered name shown for it: the bot's, with its version when two of its versions play."""
    twice = {bot.bot_id for bot in bots.values() if sum(b.bot_id == bot.bot_id for b in bots.values()) > 1}
    return {s: f"{bot.name} v{bot.version}" if bot.bot_id in twice else bot.name for s, bot in bots.items()}


def _never_started(outcome: MatchOutcome, ids: Mapping[str, str], start_errors: Mapping[str, str]) -> dict[str, str]:
    """Bot id -> why, of the bots that could not be started or never answered their Handshake."""
    failed = dict(start_errors)
    for b in outcome.bots:
        bot_id = ids.get(b.endpoint)
        if bot_id is not None and b.counts.get("unreachable", 0):
            failed.setdefault(bot_id, "no Handshake answer")
    return failed


def _how_it_ended(outcome: MatchOutcome, legs: Sequence[Sequence[str]], seat: str) -> str:
    """How the match ended for the bot of ``seat``, first in its owner's log of it: won, lost or drawn on
    points, or by whose forfeit and why (the referee's full account: the owner's log is private)."""
    side = legs[0].index(seat) & 1
    f = outcome.forfeit
    if f is not None and f.team is None:
        return f"ended: void, neither side could play ({outcome.forfeit_reason})"
    if f is not None:
        by = _forfeited_by(outcome, legs)
        if by == seat:
            return f"ended: forfeited by this bot: {outcome.forfeit_reason}"
        if f.team == side:
            return "ended: lost: its partner forfeited"
        return "ended: won: the other side forfeited"
    if outcome.winner is None:
        return f"ended: drawn, {outcome.scores[0]} to {outcome.scores[1]}"
    word = "won" if outcome.winner == side else "lost"
    return f"ended: {word}, {outcome.scores[side]} to {outcome.scores[1 - side]}"


def _forfeited_by(outcome: MatchOutcome, legs: Sequence[Sequence[str]]) -> str | None:
    """The seat (bot id, or pinned version) whose failure made its side forfeit, or None: the referee names
    its chair at its table (the first leg's, before any leg started)."""
    f = outcome.forfeit
    if f is None or f.team is None:
        return None
    seats = legs[f.leg or 0] if (f.leg or 0) < len(legs) else legs[0]
    return seats[f.seat] if 0 <= f.seat < len(seats) else None


def _outcome_label(result: MatchResult) -> metrics.Outcome:
    if result.forfeit:
        return "forfeit"
    return "draw" if result.winner is None else "win"


def _metrics_reporter(spec: MatchSpec, names: Mapping[str, str]) -> Any:
    legs = [leg_seats(spec, 0), leg_seats(spec, 1)]
    observers: dict[tuple[str, int, int], Callable[[float], None]] = {}  # (phase, leg, seat) -> its histogram's

    def on_event(event: Event) -> None:
        try:
            if isinstance(event, DecisionEvent):
                bot = names[legs[event.leg][event.seat]]
                key = (event.phase, event.leg, event.seat)
                observe = observers.get(key)
                if observe is None:
                    observe = observers[key] = metrics.decision_observer(event.phase, bot)
                observe(max(0.0, event.latency_ms) / 1000)
                if event.outcome != "ok":
                    metrics.record_bot_error(bot, event.outcome)  # type: ignore[arg-type]
            elif isinstance(event, DealEvent):
                metrics.record_deals(spec.ruleset)
        except ValueError as e:  # a label that is not a short name: never let metrics break a match
            log.debug("metrics: %s", e)

    return on_event
