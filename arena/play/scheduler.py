"""Ladders and match creation on Redis.

A ladder is one (ruleset, settings) combination (``LadderConfig``); its id is derived from a
hash of the canonical settings, so the same settings always give the same
ladder and results of different settings never mix.

``Scheduler`` is the Redis side of the ladder: its configs and members, the counts the choice keeps even
(games scheduled, pairs met, matches in flight), and the matches it creates and enqueues.  The choice
itself is pure and lives in ``pairing`` (``pick_pairs``, with the rules it keeps).

On a ladder that gates new versions (``LadderConfig.gating``, ``arena.rating.gating``), ``Scheduler.schedule``
first brings the gates up to date (``sync_gates``), then picks gating matches (``pick_gating``, pure: a
version gating plays its ranked version in each free slot of its bot), and only then the ordinary pairs
among the bots not gating, each seated with its ranked version pinned.

Bots at ``max_in_flight`` queued-or-playing matches are not picked, so a slow
bot does not pile up a backlog.  The default match is a duplicate pair of two
bots, each partnered with itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from arena.bots.registry import Registry
from arena.bots.trust import Seeds
from arena.model import (
    ID_RE,
    Bot,
    ForfeitLimits,
    MatchSpec,
    RetiredBotError,
    UnknownLadderError,
    ValidationError,
    bot_state_of,
    seat_bot,
    seat_of,
)
from arena.play.pairing import Candidate, gating_bots, level_pairs, pick_gating, pick_pairs
from arena.play.queue import MatchQueue
from arena.rating.gating import GateAction, GateConfig, Gates, GateState, next_action
from arena.rating.ratings import Ratings
from arena.store import keys

# What a ladder does with endpoint bots (bots their authors run: the referee cannot stop one from sharing
# what its seats see): rate their matches, play them unrated, or leave the bots out.
ENDPOINT_POLICIES = ("rated", "unrated", "refused")
DEFAULT_ENDPOINT_POLICY = "unrated"


@dataclass(frozen=True)
class LadderConfig:
    ruleset: str
    # Any: ruleset options are JSON values of any kind, checked by the ruleset.
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    deals: int | None = None
    target: int | None = 1000
    duplicate: bool = True
    endpoint_bots: str = DEFAULT_ENDPOINT_POLICY  # one of ENDPOINT_POLICIES
    # Version gating (``arena.rating.gating``): a new version is ranked only once an SPRT against the ranked one
    # passes; None: every new version plays and is rated at once.
    gating: GateConfig | None = None
    # When a version forfeits too often to stay (``Registry.note_forfeit``): suspended like after failed starts.
    forfeit_limits: ForfeitLimits = field(default_factory=ForfeitLimits)

    def __post_init__(self) -> None:
        if not isinstance(self.forfeit_limits, ForfeitLimits):
            raise ValidationError(f"ladder: forfeit_limits must be ForfeitLimits, not {self.forfeit_limits!r}")
        if self.endpoint_bots not in ENDPOINT_POLICIES:
            raise ValidationError(
                f"ladder: endpoint_bots must be one of {', '.join(ENDPOINT_POLICIES)}, not {self.endpoint_bots!r}"
            )
        if not isinstance(self.ruleset, str) or not ID_RE.match(self.ruleset):
            raise ValidationError(f"ladder: invalid ruleset name {self.ruleset!r}")
        if (self.deals is None) == (self.target is None):
            raise ValidationError("ladder: exactly one of deals or target must be set")
        try:
            json.dumps(dict(self.options), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValidationError(f"ladder: options are not JSON-serialisable: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """The settings as stored and shown; ``variant`` repeats ``ruleset`` for readers from before the rename.
        (Any: options are JSON values of any kind.)"""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        gating = None if self.gating is None else self.gating.to_dict()
        limits = self.forfeit_limits.to_dict()
        return {**d, "options": dict(self.options), "variant": self.ruleset, "gating": gating, "forfeit_limits": limits}

    def canonical(self) -> str:
        # The id is a hash of this text, so it keeps the key "variant" it had when ladders were first made:
        # the same settings still give the same ladder (and its ratings) after the rename; so the default
        # endpoint policy, which ladders had before it could be chosen, is left out of it.
        d = {k: v for k, v in self.to_dict().items() if k != "ruleset"}
        if d["endpoint_bots"] == DEFAULT_ENDPOINT_POLICY:
            del d["endpoint_bots"]
        if d["gating"] is None:  # nor is gating, which came later still
            del d["gating"]
        if self.forfeit_limits == ForfeitLimits():  # nor the forfeit limits, later again
            del d["forfeit_limits"]
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def ladder_id(self) -> str:
        return f"{self.ruleset}-{hashlib.sha256(self.canonical().encode()).hexdigest()[:10]}"

    @classmethod
    def from_json(cls, text: str) -> LadderConfig:
        d = {"ruleset": None, "endpoint_bots": DEFAULT_ENDPOINT_POLICY, "gating": None, **json.loads(text)}
        d["ruleset"] = d["ruleset"] or d["variant"]  # stored before the rename: "variant" only
        d["gating"] = None if d["gating"] is None else GateConfig.from_dict(d["gating"])
        # A ladder stored before the forfeit limits were settings has the defaults.
        d["forfeit_limits"] = ForfeitLimits.from_dict(d.get("forfeit_limits") or {})
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})


def _one_owner(bots: tuple[str, ...], owner_of: Mapping[str, str | None], kinds: Sequence[str | None]) -> bool:
    """Whether the two sides of a match have an owner in common: then it is never rated (an owner could feed
    its own bots, made to lose, to another: rating farming).  Unless every bot is an operator manifest
    (registered with the admin token: the operator's own, the sample bots among them), which the arena
    trusts as it runs them."""
    if all(kind == "manifest" for kind in kinds):
        return False
    seats = (*bots, *bots) if len(bots) == 2 else bots
    side0 = {owner_of[b] for b in seats[0::2]}
    side1 = {owner_of[b] for b in seats[1::2]}
    return bool(side0 & side1)


def _pair_field(pair: frozenset[str]) -> str:
    """A pair's field in ``keys.ladder_pairs``: its two bot ids in order, ``a|b``."""
    return "|".join(sorted(pair))


def new_match_id(now: float) -> str:
    """Sortable by creation time, unique without coordination."""
    return f"m-{int(now * 1000):x}-{secrets.token_hex(4)}"


class Scheduler:
    """Redis side of the ladder: configs, members, and enqueueing picked matches."""

    def __init__(self, r: redis.Redis, registry: Registry, ratings: Ratings, queue: MatchQueue) -> None:
        self.r: Any = r  # replies are str (decode_responses=True); the stubs cannot know
        self.registry = registry
        self.ratings = ratings
        self.queue = queue
        self.seeds = Seeds(r)
        self.gates = Gates(r)

    def create_ladder(self, config: LadderConfig) -> str:
        """Idempotent: the same settings give the same ladder id."""
        self.r.hsetnx(keys.LADDERS, config.ladder_id, config.to_json())
        return config.ladder_id

    def ladder(self, ladder_id: str) -> LadderConfig:
        raw = self.r.hget(keys.LADDERS, ladder_id)
        if raw is None:
            raise UnknownLadderError(f"unknown ladder {ladder_id!r}")
        return LadderConfig.from_json(raw)

    def ladders(self) -> dict[str, LadderConfig]:
        return {k: LadderConfig.from_json(v) for k, v in self.r.hgetall(keys.LADDERS).items()}

    def join(self, ladder_id: str, bot_id: str) -> None:
        self.ladder(ladder_id)
        if self.registry.get(bot_id).retired:
            raise RetiredBotError(f"bot {bot_id!r} is retired")
        self.r.sadd(keys.ladder_members(ladder_id), bot_id)
        self._level(ladder_id, [bot_id])

    def join_all(self, ladder_id: str, bots: Sequence[Bot]) -> None:
        """Active ``bots`` (as just read from the registry) join the ladder, in one write."""
        self.ladder(ladder_id)
        active = [b.bot_id for b in bots if not b.retired]
        if active:
            self.r.sadd(keys.ladder_members(ladder_id), *active)
            self._level(ladder_id, active)

    def _level(self, ladder_id: str, bot_ids: Sequence[str]) -> None:
        """A bot new to the ladder starts level with its least-played bot: it is counted as scheduled for
        as many matches, so the others do not wait for it to catch up from 0 (``pick_pairs``)."""
        counted = self.r.hmget(keys.ladder_games(ladder_id), list(bot_ids))
        new = [b for b, n in zip(bot_ids, counted, strict=True) if n is None]
        if not new:
            return
        others = [c for c in self.candidates(ladder_id) if c.bot_id not in new]
        floor = min((c.scheduled for c in others), default=0)
        pairs = level_pairs([c.bot_id for c in others] + list(new), self.met(ladder_id), new)
        with self.r.pipeline(transaction=False) as p:
            for b in new:
                p.hsetnx(keys.ladder_games(ladder_id), b, floor)
            for pair, n in pairs.items():
                p.hsetnx(keys.ladder_pairs(ladder_id), _pair_field(pair), n)
            p.execute()

    def met(self, ladder_id: str) -> dict[frozenset[str], int]:
        """Pair of bots -> the ladder's matches scheduled between them (``keys.ladder_pairs``): what
        ``pick_pairs`` keeps even."""
        out: dict[frozenset[str], int] = {}
        for field_name, n in self.r.hgetall(keys.ladder_pairs(ladder_id)).items():
            a, _, b = field_name.partition("|")
            out[frozenset((a, b))] = int(n)
        return out

    def leave(self, ladder_id: str, bot_id: str) -> None:
        self.r.srem(keys.ladder_members(ladder_id), bot_id)

    def in_flight(self, ladder_id: str) -> dict[str, int]:
        """Bot id -> its matches on the ladder queued or being played: counted up when a match is created
        (``create_match``), down when its result is recorded or it is dead-lettered (``MatchQueue``), up
        again when a dead letter is requeued."""
        return {b: int(n) for b, n in self.r.hgetall(keys.ladder_inflight(ladder_id)).items() if int(n) > 0}

    def candidates(self, ladder_id: str) -> list[Candidate]:
        """Active members with their rating, games, last scheduled time, in-flight count (two round trips)."""
        members = sorted(self.r.smembers(keys.ladder_members(ladder_id)))
        inflight = self.in_flight(ladder_id)
        with self.r.pipeline(transaction=False) as p:
            p.hgetall(keys.ladder_last_scheduled(ladder_id))
            p.hgetall(keys.ladder_games(ladder_id))
            for b in members:
                p.hmget(keys.bot(b), ["retired", "suspended", "kind", "version"])
                p.hgetall(keys.rating(ladder_id, b))
            last, counts, *replies = p.execute()
        out = []
        for b, (retired, suspended, kind, version), rating in zip(members, replies[0::2], replies[1::2], strict=True):
            if retired is None:  # no such bot
                continue
            upload = self.registry.state(b, int(version)) if kind == "package" and not suspended else None
            # Only an active bot is scheduled (model.bot_state_of: the state every list and page shows).
            if not bot_state_of(retired != "0", suspended or "", int(version), kind == "package", upload).active:
                continue
            row = self.ratings.row(b, rating)
            out.append(
                Candidate(
                    bot_id=b,
                    mu=row.mu,
                    sigma=row.sigma,
                    games=row.games,
                    last_scheduled=float(last[b]) if b in last else None,
                    in_flight=int(inflight.get(b, 0)),
                    scheduled=int(counts.get(b, 0)),
                    version=int(version),
                )
            )
        return out

    def schedule(
        self,
        ladder_id: str,
        n: int = 1,
        now: float | None = None,
        rng: random.Random | None = None,
        max_in_flight: int = 1,
        reservation: str | None = None,
    ) -> list[MatchSpec]:
        """Pick up to ``n`` matches on the ladder and enqueue them (each taken from the feeder's
        ``reservation``, if any: ``MatchQueue.enqueue``)."""
        cfg = self.ladder(ladder_id)
        now = time.time() if now is None else now
        rng = rng or random.Random()
        candidates = self.candidates(ladder_id)
        met = self.met(ladder_id)
        if cfg.gating is None:
            pairs = pick_pairs(candidates, n, now, rng, max_in_flight=max_in_flight, met=met)
            return [self.create_match(ladder_id, (a, b), None, now, cfg, reservation=reservation) for a, b in pairs]
        ranked, gates = self.sync_gates(ladder_id, cfg.gating, candidates, now)
        specs = [
            self.create_match(
                ladder_id,
                (seat_of(g.bot_id, g.candidate), seat_of(g.bot_id, g.base)),
                None,
                now,
                cfg,
                rated=False,
                gating=True,
                reservation=reservation,
            )
            for g in pick_gating(candidates, gates, n, max_in_flight, cfg.gating.max_boards)
        ]
        busy = gating_bots(gates)
        ordinary = [c for c in candidates if c.bot_id not in busy]
        # Their ranked version plays, pinned: a match queued before an update is played after it with the
        # version it was scheduled for, never with one that has not passed its gate.
        seat = {c.bot_id: seat_of(c.bot_id, ranked.get(c.bot_id, c.version)) for c in ordinary}
        pairs = pick_pairs(ordinary, n - len(specs), now, rng, max_in_flight=max_in_flight, met=met)
        return specs + [
            self.create_match(ladder_id, (seat[a], seat[b]), None, now, cfg, reservation=reservation) for a, b in pairs
        ]

    def sync_gates(
        self, ladder_id: str, config: GateConfig, candidates: Sequence[Candidate], now: float
    ) -> tuple[dict[str, int], list[GateState]]:
        """Bring a gated ladder's gates up to date with its bots' current versions (``gating.next_action``:
        rank a newcomer's version, gate a newer one), record the verdicts their boards give, and level a bot
        whose gate was decided with the ladder's least-played bot.  Returns the ranked versions and the
        latest gate of each bot."""
        ranked = self.gates.ranked(ladder_id)
        latest = self.gates.latest(ladder_id)
        changed = False
        for c in candidates:
            gate = latest.get(c.bot_id)
            action = next_action(ranked.get(c.bot_id), c.version, gate)
            if action is GateAction.RANK:
                self.gates.rank_first(ladder_id, c.bot_id, c.version)
            elif action is GateAction.START:
                seen = None if gate is None else gate.candidate
                self.gates.start(ladder_id, c.bot_id, c.version, ranked[c.bot_id], seen, now)
            changed = changed or action is not GateAction.NOTHING
        for g in latest.values():
            if g.gating and self.gates.decide(ladder_id, g.bot_id, g.candidate, config, now):
                changed = True
        if changed:
            ranked, latest = self.gates.ranked(ladder_id), self.gates.latest(ladder_id)
        self._level_decided(ladder_id, candidates, list(latest.values()))
        return ranked, list(latest.values())

    def _level_decided(self, ladder_id: str, candidates: Sequence[Candidate], gates: Sequence[GateState]) -> None:
        """A bot back from gating (it sat out while the others played) starts level with the least-played
        of the others, once per gate, so that they do not wait for it to catch up (``pick_pairs``)."""
        decided = [g for g in gates if not g.gating and not g.leveled]
        if not decided:
            return
        busy = gating_bots(gates)
        for g in decided:
            others = [c.scheduled for c in candidates if c.bot_id != g.bot_id and c.bot_id not in busy]
            own = next((c.scheduled for c in candidates if c.bot_id == g.bot_id), 0)
            with self.r.pipeline(transaction=True) as p:
                if others and min(others) > own:
                    p.hset(keys.ladder_games(ladder_id), g.bot_id, min(others))
                p.hset(keys.gate(ladder_id, g.bot_id, g.candidate), "leveled", 1)
                p.execute()

    def ordinary_candidates(self, ladder_id: str) -> list[Candidate]:
        """The candidates of the ladder's ordinary matches: without the bots that are gating (no writes)."""
        busy = gating_bots(list(self.gates.latest(ladder_id).values()))
        return [c for c in self.candidates(ladder_id) if c.bot_id not in busy]

    def create_match(
        self,
        ladder_id: str,
        bots: tuple[str, ...],
        seed: int | None = None,
        now: float | None = None,
        config: LadderConfig | None = None,
        *,
        challenge: bool = False,
        requested_by: tuple[str, ...] = (),
        rated: bool = True,
        gating: bool = False,
        reservation: str | None = None,
    ) -> MatchSpec:
        """Create one match of the ladder's settings between ``bots`` (2, or 4 by seat) and enqueue it: the
        scheduler's picks and challenges alike.  ``seed`` None: the arena's secret one (``trust.Seeds``).
        Its bots are counted in flight and stamped as just scheduled; a challenge's are neither
        (``MatchSpec.in_flight_bots``): a challenge cannot hold a bot's ladder slots or its turn."""
        cfg = config or self.ladder(ladder_id)
        now = time.time() if now is None else now
        match_id = new_match_id(now)
        distinct = list(dict.fromkeys(bots))
        with self.r.pipeline(transaction=False) as p:
            for b in distinct:
                p.hmget(keys.bot(seat_bot(b)), ["kind", "owner", "name"])
            kinds, owners, names = zip(*p.execute(), strict=True) if distinct else ((), (), ())
        endpoint_bots = [n or b for b, kind, n in zip(distinct, kinds, names, strict=True) if kind == "endpoint"]
        if endpoint_bots and cfg.endpoint_bots == "refused":
            # In the words a person reads: the ladder's name and the bots' (their ids when they have none).
            label = self.r.hget(keys.LADDER_NAME_OF, ladder_id) or ladder_id
            raise ValidationError(f"ladder {label} does not take endpoint bots ({', '.join(endpoint_bots)})")
        owner_of = dict(zip(distinct, owners, strict=True))
        spec = MatchSpec(
            match_id=match_id,
            ladder=ladder_id,
            ruleset=cfg.ruleset,
            seed=self.seeds.seed(match_id) if seed is None else seed,
            bots=bots,
            options=dict(cfg.options),
            duplicate=cfg.duplicate,
            deals=cfg.deals,
            target=cfg.target,
            created=now,
            rated=rated
            and (not endpoint_bots or cfg.endpoint_bots == "rated")
            and not _one_owner(bots, owner_of, kinds),
            challenge=challenge,
            requested_by=requested_by,
            gating=gating,
        )
        # Mark in flight before enqueueing: a crash in between leaves a bot
        # briefly over-counted (skipped once), never double-booked.  A gating match is no ladder match:
        # it holds a slot, and counts neither in the games kept even nor as the bot's turn.
        with self.r.pipeline(transaction=True) as p:
            for bot in spec.in_flight_bots():
                p.hincrby(keys.ladder_inflight(ladder_id), bot, 1)
                if not gating:
                    p.hincrby(keys.ladder_games(ladder_id), bot, 1)
                    p.hset(keys.ladder_last_scheduled(ladder_id), bot, repr(now))
            met = spec.in_flight_bots()
            if not gating and len(met) == 2:  # the scheduler's pick of two bots: the pairs it keeps even
                p.hincrby(keys.ladder_pairs(ladder_id), _pair_field(frozenset(met)), 1)
            p.execute()
        self.queue.enqueue(spec, reservation)
        return spec
