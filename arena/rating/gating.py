"""Version gating: a new version of a bot joins a ladder's ranking only once an SPRT against its ranked version
says it is not worse.

A ladder started with gating (``GateConfig``, part of its settings) keeps, per bot, the *ranked* version: the
one its ordinary matches play (pinned: ``model.seat_of``) and its rating stands for.  A bot's first version
is ranked as it joins.  When the bot's current version is newer than its ranked one (an update, or an upload
once validated), that version is *gating*: the scheduler plays gating matches, the new version (side 0)
against the ranked one (side 1), duplicate boards as always, and feeds each board's score (the new
version's, on the ladder's scale) to the gate's SPRT (``arena.rating.sprt.Sprt``: H0 mean ``mu0`` against H1 mean
``mu1``, error rates ``alpha`` and ``beta``; a match lost by forfeit also scores its unplayed boards
against the side that forfeited: ``counted_scores``).  While it gates, the bot plays nothing else on the ladder, so
its rating stands still.  Verdicts:

* ``H1``: the new version is stronger by ``mu1``: it becomes the ranked version (its matches play it from
  now on; the rating goes on from where it was, as for any version: ``arena.rating.ratings``);
* ``H0``: it is not: the ranked version stays, and the ladder goes on playing it; the new one is held out
  (its page says why);
* ``undecided``: ``max_boards`` boards and no decision: held out, as ``H0`` (not shown to be better);
* ``superseded``: a newer version arrived while it gated: that one gates now, against the ranked version;
* ``retired``: the bot was retired while it gated: the gate ends, nothing is ranked, and no gate opens for
  it again (``Gates.end_retired``; a gating match still in flight is played and counts for nothing).

A decided bot rejoins the ordinary matches level with the ladder's least-played bot (``pairing.pick_pairs``
keeps the counts even).

Redis (``arena.store.keys``): ``ladder_ranked`` (bot -> ranked version), ``ladder_gates`` (bot -> the version
gating now or last gated) and one ``gate`` hash per gated version (base, boards, total, total_sq, matches,
started, verdict, decided).  A gating result is applied by the ratings updater in one script that sets the
result's applied marker and adds its boards at once (``apply_result``): a result applied twice counts once;
a result of a gate that has been decided or superseded since its match was scheduled counts for nothing.
The verdict is a function of the counted boards, recorded once (``decide``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import redis

from arena.model import MatchResult, ValidationError, parse_seat
from arena.rating.sprt import Sprt, SprtBounds, SprtState, Verdict, mean_interval
from arena.store import keys

VERDICTS = ("H1", "H0", "undecided", "superseded", "retired")
DEFAULT_MAX_BOARDS = 4000


@dataclass(frozen=True)
class GateConfig:
    """A ladder's gating settings: the SPRT's hypotheses on the new version's mean board score (its score
    against the ranked version, from -1 to 1 on the ladder's scale), its error rates, and the most boards a
    gate plays before it gives up (``undecided``)."""

    mu0: float = Sprt().mu0
    mu1: float = Sprt().mu1
    alpha: float = Sprt().alpha
    beta: float = Sprt().beta
    max_boards: int = DEFAULT_MAX_BOARDS
    min_boards: int = Sprt().min_boards

    def __post_init__(self) -> None:
        for name in ("mu0", "mu1", "alpha", "beta"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                raise ValidationError(f"gating: {name} must be a finite number, not {v!r}")
        if not -1 <= self.mu0 < self.mu1 <= 1:
            raise ValidationError(
                f"gating: need -1 <= mu0 < mu1 <= 1 (board scores), not mu0={self.mu0} mu1={self.mu1}"
            )
        for name in ("alpha", "beta"):
            if not 0 < getattr(self, name) < 0.5:
                raise ValidationError(f"gating: {name} must be in (0, 0.5), not {getattr(self, name)}")
        for name, lo in (("max_boards", 2), ("min_boards", 2)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= 1_000_000:
                raise ValidationError(f"gating: {name} must be an integer {lo}..1000000, not {v!r}")
        if self.min_boards > self.max_boards:
            raise ValidationError(f"gating: min_boards {self.min_boards} is more than max_boards {self.max_boards}")

    @property
    def sprt(self) -> Sprt:
        return Sprt(self.mu0, self.mu1, self.alpha, self.beta, self.min_boards)

    def to_dict(self) -> dict[str, float | int]:
        return {
            "mu0": self.mu0,
            "mu1": self.mu1,
            "alpha": self.alpha,
            "beta": self.beta,
            "max_boards": self.max_boards,
            "min_boards": self.min_boards,
        }

    @classmethod
    def from_dict(cls, d: object) -> GateConfig:
        if not isinstance(d, Mapping):
            raise ValidationError(f"gating: expected an object, got {d!r}")
        unknown = sorted(set(d) - set(cls().to_dict()))
        if unknown:
            raise ValidationError(f"gating: unknown settings {unknown}")
        return cls(**d)


def ladder_gating(r: Any, ladder: str) -> tuple[GateConfig | None, int]:
    """The gating settings of a ladder as stored with it (``keys.LADDERS``; None: not gated) and its boards
    a match (0: not known)."""
    raw = r.hget(keys.LADDERS, ladder)
    d = json.loads(raw) if raw else {}
    found = d.get("gating")
    return (None if found is None else GateConfig.from_dict(found)), int(d.get("deals") or 0)


def counted_scores(result: MatchResult, boards_a_match: int) -> list[float]:
    """The candidate's board scores a gating result adds to its gate: every board played at both tables;
    a match lost by forfeit (a version that timed out, crashed, answered illegally) also scores the boards
    it did not play as lost by the side that forfeited (-1 for the candidate, +1 when the ranked version
    forfeited), so a version that keeps failing is decided against, not gated forever; a void match (neither
    could play) adds nothing."""
    if result.void:
        return []
    scores = [b.score for b in result.boards]
    if result.forfeit is not None and result.winner is not None:
        scores += [1.0 if result.winner == 0 else -1.0] * max(0, boards_a_match - len(scores))
    return scores


@dataclass(frozen=True)
class GateState:
    """A version's gate on a ladder: the boards counted so far and the verdict (empty while it gates)."""

    bot_id: str
    candidate: int  # the gated version
    base: int  # the ranked version it plays against
    boards: int = 0
    total: float = 0.0  # of the candidate's board scores
    total_sq: float = 0.0
    matches: int = 0
    started: float = 0.0
    verdict: str = ""  # "", or one of VERDICTS
    decided: float = 0.0
    leveled: bool = False  # its bot, back from gating, was levelled with the ladder (``Scheduler.sync_gates``)

    @classmethod
    def from_hash(cls, bot_id: str, candidate: int, h: Mapping[str, str]) -> GateState:
        return cls(
            bot_id,
            candidate,
            int(h["base"]),
            int(h.get("boards", 0)),
            float(h.get("total", 0.0)),
            float(h.get("total_sq", 0.0)),
            int(h.get("matches", 0)),
            float(h.get("started", 0.0)),
            h.get("verdict", ""),
            float(h.get("decided", 0.0) or 0.0),
            h.get("leveled") == "1",
        )

    @property
    def gating(self) -> bool:
        return not self.verdict

    @property
    def sprt_state(self) -> SprtState:
        return SprtState(self.boards, self.total, self.total_sq)


@dataclass(frozen=True)
class GateSummary:
    """A gate as the pages, ``arena bot status`` and the API show it."""

    ladder: str
    state: GateState
    mean: float  # the new version's mean board score against the ranked one
    low: float | None  # ~95 % interval of the mean (None before two boards)
    high: float | None
    llr: float
    bounds: SprtBounds  # accept H0 at or below ``lower``, H1 at or above ``upper``
    config: GateConfig
    bot: str = ""  # the bot's name, where a list of gates names it (``arena ladder status``)
    in_flight: int = 0  # ... and its gating matches waiting or being played

    @property
    def status(self) -> str:
        """``gating``, ``passed`` (H1), ``held out`` (H0, undecided), ``superseded`` or ``retired``."""
        shown = {"": "gating", "H1": "passed", "superseded": "superseded", "retired": "retired"}
        return shown.get(self.state.verdict, "held out")

    def to_dict(self) -> dict[str, Any]:
        s = self.state
        return {
            "ladder": self.ladder,
            "version": s.candidate,
            "base": s.base,
            "status": self.status,
            "verdict": s.verdict,
            "boards": s.boards,
            "matches": s.matches,
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "llr": self.llr,
            "lower": self.bounds.lower,
            "upper": self.bounds.upper,
            "started": s.started,
            "decided": s.decided,
            "config": self.config.to_dict(),
        }


def summarize(ladder: str, state: GateState, config: GateConfig) -> GateSummary:
    sprt = config.sprt
    st = state.sprt_state
    low, high = mean_interval(st)
    finite = st.n >= 2
    return GateSummary(
        ladder,
        state,
        st.mean,
        max(-1.0, low) if finite else None,
        min(1.0, high) if finite else None,
        sprt.llr(st),
        sprt.bounds,
        config,
    )


# ------------------------------------------------------------------------------- pure decisions


class GateAction(Enum):
    NOTHING = "nothing"
    RANK = "rank"  # the bot has no ranked version on the ladder yet: its current one is ranked at once
    START = "start"  # its current version is newer than the ranked one and has no gate: gate it


def next_action(ranked: int | None, current: int, gate: GateState | None) -> GateAction:
    """What a gated ladder does about a bot whose current version is ``current``, ranked version ``ranked``
    (None: none yet) and latest gate ``gate`` (None: never gated)."""
    if ranked is None:
        return GateAction.RANK
    if current <= ranked:
        return GateAction.NOTHING
    if gate is None or gate.candidate != current:
        return GateAction.START  # (a gate of an older candidate still going is superseded)
    return GateAction.NOTHING


def verdict_of(config: GateConfig, state: GateState) -> str:
    """The verdict the counted boards give: "" (go on), "H1", "H0", or "undecided" at ``max_boards``."""
    v = config.sprt.verdict(state.sprt_state)
    if v is Verdict.H1:
        return "H1"
    if v is Verdict.H0:
        return "H0"
    return "undecided" if state.boards >= config.max_boards else ""


# ------------------------------------------------------------------------------------- Redis side

# KEYS: the ladder's gates index, the new gate hash, the gate hash of the candidate the caller saw gating
# (or the new one again), the bot's hash.  ARGV: bot id, candidate, base, candidate seen ('' none), now.
# Starts the candidate's gate (once) and supersedes the one it replaces if that one was still going; never
# for a retired bot (a scheduler may have read it as active just before it was retired: ``end_retired``).
_START_LUA = """
if redis.call('HGET', KEYS[4], 'retired') == '1' then return 0 end
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[4] then return 0 end
if cur == ARGV[2] then return 1 end
if cur ~= '' and (redis.call('HGET', KEYS[3], 'verdict') or '') == '' then
  redis.call('HSET', KEYS[3], 'verdict', 'superseded', 'decided', ARGV[5])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[2], 'base', ARGV[3], 'boards', 0, 'total', 0, 'total_sq', 0, 'matches', 0,
             'started', ARGV[5], 'verdict', '')
end
return 1
"""

# KEYS: the result's applied marker, the candidate's gate hash, the results stream.
# ARGV: base version, boards, sum of scores, sum of squares, consumer group, entry id ('' none).
# Returns 0 (applied before: nothing counted), 1 (counted) or 2 (marked, not counted: the gate is decided,
# superseded, or against another base).
_APPLY_LUA = """
if not redis.call('SET', KEYS[1], '1', 'NX') then
  if ARGV[6] ~= '' then redis.call('XACK', KEYS[3], ARGV[5], ARGV[6]) end
  return 0
end
local out = 2
if redis.call('HGET', KEYS[2], 'base') == ARGV[1] and (redis.call('HGET', KEYS[2], 'verdict') or '') == '' then
  redis.call('HINCRBY', KEYS[2], 'boards', ARGV[2])
  redis.call('HINCRBYFLOAT', KEYS[2], 'total', ARGV[3])
  redis.call('HINCRBYFLOAT', KEYS[2], 'total_sq', ARGV[4])
  redis.call('HINCRBY', KEYS[2], 'matches', 1)
  out = 1
end
if ARGV[6] ~= '' then redis.call('XACK', KEYS[3], ARGV[5], ARGV[6]) end
return out
"""

# KEYS: the gate hash, the ladder's ranked hash.  ARGV: verdict, now, bot id, candidate, boards it was
# computed on.  Records the verdict once (1), and ranks the candidate on H1; 0 if decided before, -1 if
# boards were counted since (the caller computes it again).
_DECIDE_LUA = """
if (redis.call('HGET', KEYS[1], 'verdict') or '') ~= '' then return 0 end
if redis.call('HGET', KEYS[1], 'boards') ~= ARGV[5] then return -1 end
redis.call('HSET', KEYS[1], 'verdict', ARGV[1], 'decided', ARGV[2])
if ARGV[1] == 'H1' then redis.call('HSET', KEYS[2], ARGV[3], ARGV[4]) end
return 1
"""


# KEYS: a gate hash.  ARGV: now.  Ends the gate if it is still going (1), as its bot was retired.
_END_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 or (redis.call('HGET', KEYS[1], 'verdict') or '') ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'verdict', 'retired', 'decided', ARGV[1])
return 1
"""


class Gates:
    """The gates of every gated ladder, in Redis."""

    def __init__(self, r: redis.Redis) -> None:
        self.r: Any = r  # replies are str (decode_responses=True); the stubs cannot know
        self._start = r.register_script(_START_LUA)
        self._apply = r.register_script(_APPLY_LUA)
        self._decide = r.register_script(_DECIDE_LUA)
        self._end = r.register_script(_END_LUA)

    def ranked(self, ladder: str) -> dict[str, int]:
        return {b: int(v) for b, v in self.r.hgetall(keys.ladder_ranked(ladder)).items()}

    def rank_first(self, ladder: str, bot_id: str, version: int) -> None:
        """A bot new to the gated ladder: its version is ranked without a gate (there is nothing to compare)."""
        self.r.hsetnx(keys.ladder_ranked(ladder), bot_id, version)

    def latest(self, ladder: str) -> dict[str, GateState]:
        """Bot id -> its latest gate on the ladder (gating now, or decided)."""
        index = {b: int(v) for b, v in self.r.hgetall(keys.ladder_gates(ladder)).items()}
        with self.r.pipeline(transaction=False) as p:
            for b, v in index.items():
                p.hgetall(keys.gate(ladder, b, v))
            hashes = p.execute()
        return {b: GateState.from_hash(b, v, h) for (b, v), h in zip(index.items(), hashes, strict=True) if h}

    def of_versions(self, ladder: str, bot_id: str, versions: Sequence[int]) -> list[GateState]:
        """The gates of those versions of the bot on the ladder (the versions never gated left out)."""
        with self.r.pipeline(transaction=False) as p:
            for v in versions:
                p.hgetall(keys.gate(ladder, bot_id, v))
            hashes = p.execute()
        return [GateState.from_hash(bot_id, v, h) for v, h in zip(versions, hashes, strict=True) if h]

    def start(self, ladder: str, bot_id: str, candidate: int, base: int, seen: int | None, now: float) -> bool:
        """Gate ``candidate`` against ``base`` (superseding the gate of ``seen``, the candidate the caller
        saw gating, if still going); False if another scheduler changed the gate since it was read, or the
        bot is retired."""
        old = keys.gate(ladder, bot_id, seen) if seen is not None else keys.gate(ladder, bot_id, candidate)
        return bool(
            self._start(
                keys=[keys.ladder_gates(ladder), keys.gate(ladder, bot_id, candidate), old, keys.bot(bot_id)],
                args=[bot_id, candidate, base, "" if seen is None else seen, repr(now)],
            )
        )

    def end_retired(self, bot_id: str, now: float) -> list[str]:
        """End the gates of a bot just retired that are still going, on every gated ladder (verdict
        ``retired``: its new version is never ranked; a result of a gating match still in flight is marked
        and counts for nothing).  Call it once the bot is marked retired: from then on no gate of it opens
        (``start``).  Returns the ladders whose gate it ended."""
        ladders = sorted(self.r.hkeys(keys.LADDERS))
        with self.r.pipeline(transaction=False) as p:
            for lid in ladders:
                p.hget(keys.ladder_gates(lid), bot_id)
            gated = p.execute()
        return [
            lid
            for lid, version in zip(ladders, gated, strict=True)
            if version is not None and self._end(keys=[keys.gate(lid, bot_id, int(version))], args=[repr(now)])
        ]

    def apply_result(self, result: MatchResult, entry_id: str | None = None, now: float = 0.0) -> bool:
        """Count a gating result's boards in its gate exactly once, then record the verdict if they give one.
        True if the result was applied now (counted or, its gate being decided, only marked)."""
        (bot_id, candidate), (_b, base) = parse_seat(result.seats[0]), parse_seat(result.seats[1])
        candidate = result.versions.get(result.seats[0], candidate)
        base = result.versions.get(result.seats[1], base)
        if candidate is None or base is None:
            raise ValueError(f"gating result {result.match_id}: seats {result.seats[:2]} name no versions")
        config, boards_a_match = ladder_gating(self.r, result.ladder)
        scores = counted_scores(result, boards_a_match)
        out = int(
            self._apply(
                keys=[keys.rated(result.match_id), keys.gate(result.ladder, bot_id, candidate), keys.RESULTS_STREAM],
                args=[
                    base,
                    len(scores),
                    repr(float(sum(scores))),
                    repr(float(sum(s * s for s in scores))),
                    keys.RATINGS_GROUP,
                    entry_id or "",
                ],
            )
        )
        if out == 1 and config is not None:
            self.decide(result.ladder, bot_id, candidate, config, now or result.finished or time.time())
        return out != 0

    def decide(self, ladder: str, bot_id: str, candidate: int, config: GateConfig, now: float) -> str:
        """Record the verdict the gate's boards give, if any (once); returns the gate's verdict now."""
        for _ in range(10):
            h = self.r.hgetall(keys.gate(ladder, bot_id, candidate))
            if not h:
                return ""
            state = GateState.from_hash(bot_id, candidate, h)
            if state.verdict:
                return state.verdict
            verdict = verdict_of(config, state)
            if not verdict:
                return ""
            done = int(
                self._decide(
                    keys=[keys.gate(ladder, bot_id, candidate), keys.ladder_ranked(ladder)],
                    args=[verdict, repr(now), bot_id, candidate, state.boards],
                )
            )
            if done >= 0:
                continue  # read the verdict as stored
        return ""


__all__ = [
    "DEFAULT_MAX_BOARDS",
    "VERDICTS",
    "GateAction",
    "GateConfig",
    "GateState",
    "GateSummary",
    "Gates",
    "counted_scores",
    "ladder_gating",
    "next_action",
    "summarize",
    "verdict_of",
]
