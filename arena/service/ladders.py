"""The service's ladders: which ladder a name means (``resolve_ladder``), start (admin token: settings, name,
budget, gating), stop, list them, and where one stands (played, queued, in flight, its pace and what is left).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from arena.bots.limits import parse_json_object
from arena.model import ForfeitLimits, UnknownLadderError, ValidationError, seat_bot
from arena.play import ladder_status
from arena.play.ladder import (
    LadderRun,
    default_ladder,
    extend_ladder,
    ladder_by_name,
    ladder_config,
    ladder_names,
    name_ladder,
    scheduled_counts,
    set_default,
    start_ladder,
    started_runs,
    stop_ladder,
    validate_ladder_name,
)
from arena.play.pairing import PairHold, held_by_pairs, holding
from arena.play.queue_counts import LadderCounts, LadderQueue
from arena.play.scheduler import DEFAULT_ENDPOINT_POLICY, LadderConfig
from arena.rating.gating import GateConfig, GateSummary
from arena.rating.gating import summarize as summarize_gate
from arena.service.parts import Concern, Parts

log = logging.getLogger(__name__)

DEFAULT_RULESET = "pilotta"


@dataclass(frozen=True)
class LadderView:
    """A ladder: its settings, name, whether it is the default and started (and its budget), its size,
    its share of the queue."""

    ladder_id: str
    config: LadderConfig
    run: LadderRun | None
    scheduled: int  # matches scheduled since it was first started
    members: int
    name: str = ""
    is_default: bool = False
    queue: LadderQueue = field(default_factory=LadderQueue)

    @property
    def label(self) -> str:
        """Its name, or its id when it has none."""
        return self.name or self.ladder_id


@dataclass(frozen=True)
class InFlightMatch:
    """A match of the ladder waiting or being played, its bots by name."""

    match_id: str
    bots: tuple[str, str, str, str]
    age_s: float
    worker: str  # empty while it waits


@dataclass(frozen=True)
class LadderStatus:
    ladder_id: str
    ruleset: str
    queue: LadderQueue
    completed: int
    dead_lettered: int  # ever, requeued ones included
    workers_alive: tuple[str, ...]
    name: str = ""
    is_default: bool = False
    run: LadderRun | None = None
    matches_per_minute: float = 0.0
    remaining: int | None = None  # a ladder with a budget: matches not yet played
    eta_s: float | None = None
    in_flight: tuple[InFlightMatch, ...] = ()
    holding: tuple[str, ...] = ()  # bot names (pairing.holding)
    held_by_pairs: int = 0  # matches the pair rule holds back now (pairing.held_by_pairs)
    idle_by_pairs: tuple[str, ...] = ()  # the free bots it leaves without a match, by name
    gating: tuple[GateSummary, ...] = ()  # a gated ladder: the versions gating now (``bot`` and ``in_flight`` set)


def _taken(name: str, held: LadderConfig | None, asked: LadderConfig) -> str:
    """Why a ladder cannot be started under ``name``: another ladder has it, and in which settings the two
    differ ("ladder 'main' exists with deals=8; you asked deals=16")."""
    if held is None:
        return f"ladder name {name!r} is taken by another ladder"
    have, want = held.to_dict(), asked.to_dict()
    differ = [k for k in have if k != "variant" and have[k] != want.get(k)]

    def shown(d: Mapping[str, object]) -> str:
        return ", ".join(f"{k}={_setting(d[k])}" for k in differ)

    return (
        f"ladder {name!r} exists with {shown(have)}; you asked {shown(want)} (settings make a ladder: add "
        f"matches to it as it is with `arena ladder extend {name} --matches N`, or name the new one otherwise)"
    )


def _setting(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


class Ladders(Concern):
    """``Arena``'s ladder operations (``resolve_ladder``, ``start_ladder``, ``stop_ladder``, ``list_ladders``,
    ``ladder_status``)."""

    def __init__(self, parts: Parts) -> None:
        super().__init__(parts)
        self.counts = LadderCounts(parts.r)

    def resolve_ladder(self, name: str) -> str:
        """A ladder id, a ladder's name, a ruleset (its most recently started ladder), or empty: the
        default ladder."""
        ladders = self.scheduler.ladders()
        if name in ladders:
            return name
        named = ladder_by_name(self.scheduler, name) if name else default_ladder(self.scheduler)
        if named in ladders:
            return str(named)
        runs = [run.ladder_id for run in started_runs(self.scheduler) if not name or run.config.ruleset == name]
        if runs:
            return runs[0]
        of_ruleset = sorted(lid for lid, cfg in ladders.items() if not name or cfg.ruleset == name)
        if len(of_ruleset) == 1 or (of_ruleset and name):
            return of_ruleset[0]
        if not name:
            raise UnknownLadderError(
                "no ladder yet: start one with `arena ladder start --ruleset pilotta`"
                if not ladders
                else f"several ladders; name one of {self._known(ladders)}"
            )
        raise UnknownLadderError(f"unknown ladder {name!r} (known: {self._known(ladders)})")

    def _known(self, ladders: Mapping[str, object]) -> str:
        """The ladders as a person names them: each one's name, or its id when it has none."""
        names = ladder_names(self.scheduler)
        return ", ".join(sorted(names.get(lid, lid) for lid in ladders)) or "none"

    def start_ladder(
        self,
        token: str,
        ruleset: str = "",
        options_json: str = "",
        deals: int | None = None,
        target: int | None = None,
        duplicate: bool = True,
        matches: int | None = None,
        max_in_flight: int | None = None,
        endpoint_bots: str = "",
        name: str = "",
        make_default: bool = False,
        gating: GateConfig | None = None,
        forfeit_limits: ForfeitLimits | None = None,
    ) -> LadderView:
        """Create (or find) the ladder of these settings and start feeding it (admin token).
        ``endpoint_bots``: rated, unrated or refused (empty: unrated).  ``name``: name it (empty: keep its
        name, if any); the first ladder started, or one started with ``make_default``, is the default.
        ``gating``: gate new versions by an SPRT against the ranked one (``arena.rating.gating``; part of the
        ladder's settings).  ``forfeit_limits``: when a version that forfeits is suspended (None: the defaults;
        other limits are part of the settings too)."""
        self.registry.require_admin(token)
        if name:
            validate_ladder_name(name, self.scheduler.ladders())
        policy = self.policy
        options = (
            parse_json_object(options_json, "options_json", policy.max_options_bytes, policy.max_json_depth)
            if options_json
            else {}
        )
        config = ladder_config(
            ruleset or DEFAULT_RULESET,
            options,
            deals=deals,
            target=target,
            duplicate=duplicate,
            endpoint_bots=endpoint_bots or DEFAULT_ENDPOINT_POLICY,
            gating=gating,
            forfeit_limits=forfeit_limits,
        )
        if name:  # before anything is started: a name in use is refused with nothing changed
            holder = ladder_by_name(self.scheduler, name)
            if holder not in (None, config.ladder_id):
                raise ValidationError(_taken(name, self.scheduler.ladders().get(str(holder)), config))
        run = start_ladder(self.scheduler, config, matches, max_in_flight)
        if name:
            name_ladder(self.scheduler, run.ladder_id, name)
        set_default(self.scheduler, run.ladder_id, only_if_none=not make_default)
        log.info("ladder %s started (%s matches)", run.ladder_id, "no end to the" if matches is None else matches)
        return self._ladder_views({run.ladder_id: run.config}, {run.ladder_id: run})[0]

    def stop_ladder(self, token: str, ladder: str) -> LadderView:
        """Stop feeding the ladder (admin token); queued matches are still played."""
        self.registry.require_admin(token)
        if not ladder:
            raise ValidationError("ladder is required: the id or name of the ladder to stop (see ListLadders)")
        ladders = self.scheduler.ladders()
        ladder = ladder_by_name(self.scheduler, ladder) or ladder
        if ladder not in ladders:
            raise UnknownLadderError(f"unknown ladder {ladder!r} (known: {self._known(ladders)})")
        if stop_ladder(self.scheduler, ladder):
            log.info("ladder %s stopped", ladder)
        return self._ladder_views({ladder: ladders[ladder]}, {})[0]

    def extend_ladder(self, token: str, ladder: str, matches: int) -> LadderView:
        """Add ``matches`` to a ladder's budget, its settings as they are (admin token): the ladder by name
        or id; a stopped one is started again for that many (``arena.play.ladder.extend_ladder``)."""
        self.registry.require_admin(token)
        if not ladder:
            raise ValidationError("ladder is required: the name or id of the ladder to extend (see ListLadders)")
        ladders = self.scheduler.ladders()
        lid = ladder_by_name(self.scheduler, ladder) or ladder
        if lid not in ladders:
            raise UnknownLadderError(f"unknown ladder {ladder!r} (known: {self._known(ladders)})")
        run = extend_ladder(self.scheduler, lid, matches, ladder_names(self.scheduler).get(lid, lid))
        log.info("ladder %s extended by %d matches (budget %s)", lid, matches, run.budget)
        return self._ladder_views({lid: run.config}, {lid: run})[0]

    def list_ladders(self) -> list[LadderView]:
        """The default ladder first; then started ladders, most recently started first; then the others
        by id."""
        runs = {run.ladder_id: run for run in started_runs(self.scheduler)}
        ladders = self.scheduler.ladders()
        main = default_ladder(self.scheduler)
        order = [lid for lid in runs if lid in ladders] + sorted(lid for lid in ladders if lid not in runs)
        order.sort(key=lambda lid: lid != main)  # stable: the rest keep their order
        return self._ladder_views({lid: ladders[lid] for lid in order}, runs)

    def _ladder_views(self, configs: Mapping[str, LadderConfig], runs: Mapping[str, LadderRun]) -> list[LadderView]:
        members = self.views.members(list(configs))
        scheduled = scheduled_counts(self.scheduler)
        names = ladder_names(self.scheduler)
        main = default_ladder(self.scheduler)
        queues = self.views.queue_by_ladder()
        return [
            LadderView(
                lid,
                cfg,
                runs.get(lid),
                scheduled.get(lid, 0),
                members[lid],
                names.get(lid, ""),
                lid == main,
                queues.get(lid, LadderQueue()),
            )
            for lid, cfg in configs.items()
        ]

    def ladder_status(self, ladder: str = "") -> LadderStatus:
        """Where the ladder stands: played, queued, in flight (with their bots and age), its pace and, with
        a budget, what is left and when it should be done; the bots holding the queue, if any."""
        lid = self.resolve_ladder(ladder)
        cfg = self.scheduler.ladder(lid)
        completed, dead = self.counts.read()
        run = next((x for x in started_runs(self.scheduler) if x.ladder_id == lid), None)
        queue = self.views.queue_by_ladder().get(lid, LadderQueue())
        flying = ladder_status.in_flight(self.r, lid)
        names = self.views.names(b for m in flying for b in m.seats)
        pace = ladder_status.matches_per_minute(self.r, lid, run.started if run else None)
        remaining = None
        if run is not None and run.budget is not None:
            remaining = int(run.remaining) + queue.waiting
        held: list[str] = []
        by_pairs = PairHold()
        if run is not None and run.remaining > 0:
            candidates = self.scheduler.ordinary_candidates(lid)
            held = holding(candidates, run.max_in_flight)
            # As the feeder would ask: no more than the ladder has left to schedule.
            left = None if run.budget is None else int(run.remaining)
            by_pairs = held_by_pairs(candidates, self.scheduler.met(lid), run.max_in_flight, n=left)
        gates: list[GateSummary] = []
        if cfg.gating is not None:
            going = [g for g in self.scheduler.gates.latest(lid).values() if g.gating]
            gate_names = self.views.names(g.bot_id for g in going)
            gates = [dataclasses.replace(summarize_gate(lid, g, cfg.gating), bot=gate_names[g.bot_id]) for g in going]
            flying_gates = [m for m in flying if any("@" in s for s in m.seats)]
            gates = [
                dataclasses.replace(g, in_flight=sum(seat_bot(m.seats[0]) == g.state.bot_id for m in flying_gates))
                for g in gates
            ]
        return LadderStatus(
            ladder_id=lid,
            ruleset=cfg.ruleset,
            queue=queue,
            completed=completed.get(lid, 0),
            dead_lettered=dead.get(lid, 0),
            workers_alive=tuple(sorted(self.views.live_workers())),
            name=ladder_names(self.scheduler).get(lid, ""),
            is_default=default_ladder(self.scheduler) == lid,
            run=run,
            matches_per_minute=pace,
            remaining=remaining,
            eta_s=None if remaining is None else ladder_status.eta_s(remaining, pace),
            in_flight=tuple(
                InFlightMatch(
                    m.match_id,
                    (names[m.seats[0]], names[m.seats[1]], names[m.seats[2]], names[m.seats[3]]),
                    m.age_s,
                    m.worker,
                )
                for m in flying
            ),
            holding=tuple(self.views.names(held).values()),
            held_by_pairs=by_pairs.matches,
            idle_by_pairs=tuple(sorted(self.views.names(by_pairs.idle).values())),
            gating=tuple(sorted(gates, key=lambda g: g.bot)),
        )
