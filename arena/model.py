"""Plain data exchanged between the arena's parts: bots, match specs, results.

Everything here is a frozen dataclass validated in ``__post_init__``, so a bad
value is rejected where it is built (in code or from JSON), not three modules
later inside a Lua script.  ``from_json`` raises ``ValueError`` whose message
names the class and the offending field, e.g. ``MatchSpec.seed: expected int``.

Also here: the arena's exception hierarchy and the latency histogram layout,
which the referee runner, the stats accumulator and the tests all share.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Ids end up inside Redis key names; keep them to a safe, bounded alphabet.
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


# --------------------------------------------------------------------------- errors


class ArenaError(Exception):
    """Base class of every error the arena raises on purpose."""


class ValidationError(ArenaError, ValueError):
    """Input (a name, an endpoint, a spec...) is malformed; nothing was changed."""


class ManifestError(ValidationError):
    """A bot manifest is malformed; the message names the bad key."""


class AuthError(ArenaError):
    """The token given is neither the bot owner's token nor the admin token."""


class UnknownBotError(ArenaError, KeyError):
    """No bot with that id (or name) is registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown bot"


class NameTakenError(ValidationError):
    """Another bot already uses that name."""


class RetiredBotError(ArenaError):
    """The bot is retired and can no longer be updated or scheduled."""


class UnknownLadderError(ArenaError, KeyError):
    """No ladder with that id exists."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown ladder"


# ------------------------------------------------------------------ field checking


def _fail(cls: str, name: str, msg: str) -> ValueError:
    return ValueError(f"{cls}.{name}: {msg}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)  # JSON true is not 1


def _int(cls: str, name: str, v: object, lo: int | None = None, hi: int | None = None) -> int:
    if not _is_int(v):
        raise _fail(cls, name, f"expected int, got {type(v).__name__} {v!r}")
    assert isinstance(v, int)
    if lo is not None and v < lo:
        raise _fail(cls, name, f"must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise _fail(cls, name, f"must be <= {hi}, got {v}")
    return v


def _float(cls: str, name: str, v: object, lo: float | None = None) -> float:
    if not (_is_int(v) or isinstance(v, float)):
        raise _fail(cls, name, f"expected number, got {type(v).__name__} {v!r}")
    f = float(v)  # type: ignore[arg-type]
    if not math.isfinite(f):
        raise _fail(cls, name, f"must be finite, got {f}")
    if lo is not None and f < lo:
        raise _fail(cls, name, f"must be >= {lo}, got {f}")
    return f


def _str(cls: str, name: str, v: object, pattern: re.Pattern[str] | None = None, max_len: int = 256) -> str:
    if not isinstance(v, str):
        raise _fail(cls, name, f"expected string, got {type(v).__name__} {v!r}")
    if not v or len(v) > max_len:
        raise _fail(cls, name, f"length must be 1..{max_len}, got {len(v)}")
    if pattern is not None and not pattern.match(v):
        raise _fail(cls, name, f"{v!r} does not match {pattern.pattern}")
    return v


def _bool(cls: str, name: str, v: object) -> bool:
    if not isinstance(v, bool):
        raise _fail(cls, name, f"expected bool, got {type(v).__name__} {v!r}")
    return v


def _loads(cls: str, text: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{cls}: invalid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{cls}: expected a JSON object, got {type(data).__name__}")
    return data


def _fields(cls: str, data: Mapping[str, Any], required: Iterable[str], optional: Iterable[str]) -> None:
    """Reject missing and unknown keys before anything else looks at them."""
    req, opt = set(required), set(optional)
    missing = sorted(req - data.keys())
    if missing:
        raise ValueError(f"{cls}.{missing[0]}: missing field")
    unknown = sorted(data.keys() - req - opt)
    if unknown:
        raise ValueError(f"{cls}.{unknown[0]}: unknown field")


def _json_value(cls: str, name: str, v: object) -> None:
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _fail(cls, name, f"not JSON-serialisable: {e}") from None


# ------------------------------------------------------------------------- bots


@dataclass(frozen=True)
class BotVersion:
    """One registered version of a bot: where to reach it or how to start it."""

    bot_id: str
    version: int
    created: float
    endpoint: str | None = None  # "host:port" of an already running gRPC bot
    manifest: Mapping[str, Any] | None = field(default=None, hash=False)  # how to launch it (docs/protocol.md)
    manifest_dir: str | None = None  # directory the manifest's command runs in
    # Rulesets it plays: an endpoint bot's as registered, a manifest bot's from its manifest ("games").
    # Empty: not declared (an endpoint bot registered without games; its handshake decides in each match).
    games: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        c = "BotVersion"
        _str(c, "bot_id", self.bot_id, ID_RE)
        _int(c, "version", self.version, lo=1)
        _float(c, "created", self.created, lo=0)
        if (self.endpoint is None) == (self.manifest is None):
            raise _fail(c, "endpoint", "exactly one of endpoint or manifest must be set")
        if self.endpoint is not None:
            _str(c, "endpoint", self.endpoint)
        if self.manifest is not None:
            if not isinstance(self.manifest, Mapping):
                raise _fail(c, "manifest", "expected an object")
            _json_value(c, "manifest", dict(self.manifest))
        if self.manifest_dir is not None:
            _str(c, "manifest_dir", self.manifest_dir, max_len=4096)
        if not isinstance(self.games, tuple):
            raise _fail(c, "games", f"expected a tuple of ruleset names, got {self.games!r}")
        for i, game in enumerate(self.games):
            _str(c, f"games[{i}]", game, ID_RE)
        if self.manifest is not None and "games" in self.manifest and tuple(self.manifest["games"]) != self.games:
            raise _fail(c, "games", f"{list(self.games)} differ from the manifest's {self.manifest['games']!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "bot_id": self.bot_id,
            "version": self.version,
            "created": self.created,
            "endpoint": self.endpoint,
            "manifest": dict(self.manifest) if self.manifest is not None else None,
            "manifest_dir": self.manifest_dir,
            "games": list(self.games),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BotVersion:
        _fields("BotVersion", d, ["bot_id", "version", "created"], ["endpoint", "manifest", "manifest_dir", "games"])
        games = d.get("games", [])
        if not isinstance(games, list):
            raise ValueError("BotVersion.games: expected a list")
        return cls(
            bot_id=d["bot_id"],
            version=d["version"],
            created=d["created"],
            endpoint=d.get("endpoint"),
            manifest=d.get("manifest"),
            manifest_dir=d.get("manifest_dir"),
            games=tuple(games),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> BotVersion:
        return cls.from_dict(_loads("BotVersion", text))


@dataclass(frozen=True)
class Bot:
    """A bot as the registry sees it now: identity plus its current version."""

    bot_id: str
    name: str
    owner: str
    created: float
    retired: bool
    current: BotVersion

    @property
    def version(self) -> int:
        return self.current.version

    def __post_init__(self) -> None:
        c = "Bot"
        _str(c, "bot_id", self.bot_id, ID_RE)
        _str(c, "name", self.name, max_len=64)
        _str(c, "owner", self.owner, max_len=128)
        _float(c, "created", self.created, lo=0)
        _bool(c, "retired", self.retired)
        if not isinstance(self.current, BotVersion) or self.current.bot_id != self.bot_id:
            raise _fail(c, "current", "must be a BotVersion of this bot")

    def to_dict(self) -> dict[str, Any]:
        return {
            "bot_id": self.bot_id,
            "name": self.name,
            "owner": self.owner,
            "created": self.created,
            "retired": self.retired,
            "current": self.current.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Bot:
        d = _loads("Bot", text)
        _fields("Bot", d, ["bot_id", "name", "owner", "created", "retired", "current"], [])
        if not isinstance(d["current"], dict):
            raise ValueError("Bot.current: expected an object")
        return cls(
            bot_id=d["bot_id"],
            name=d["name"],
            owner=d["owner"],
            created=d["created"],
            retired=d["retired"],
            current=BotVersion.from_dict(d["current"]),
        )


# ----------------------------------------------------------------------- matches


@dataclass(frozen=True)
class MatchSpec:
    """What a worker must play.

    ``bots`` is either 4 seat assignments (seats 0 and 2 are side 0, seats 1 and
    3 are side 1) or 2 bots, in which case each bot is partnered with itself:
    bot 0 takes seats 0 and 2, bot 1 seats 1 and 3.  ``duplicate`` means the
    same deals are replayed with the sides swapped, so luck of the deal cancels.
    Exactly one of ``deals`` (a fixed number of deals) or ``target`` (play to
    that many points) is set.
    """

    match_id: str
    ladder: str
    variant: str
    seed: int
    bots: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    duplicate: bool = True
    deals: int | None = None
    target: int | None = None
    created: float = 0.0

    def __post_init__(self) -> None:
        c = "MatchSpec"
        _str(c, "match_id", self.match_id, ID_RE)
        _str(c, "ladder", self.ladder, ID_RE)
        _str(c, "variant", self.variant, ID_RE)
        _int(c, "seed", self.seed, lo=0, hi=2**63 - 1)
        if not isinstance(self.bots, tuple) or len(self.bots) not in (2, 4):
            raise _fail(c, "bots", f"expected 2 bots or 4 seats, got {self.bots!r}")
        for i, bot in enumerate(self.bots):
            _str(c, f"bots[{i}]", bot, ID_RE)
        side0, side1 = self.teams()
        if set(side0) & set(side1):
            raise _fail(c, "bots", f"a bot cannot play on both sides: {sorted(set(side0) & set(side1))}")
        if not isinstance(self.options, Mapping) or not all(isinstance(k, str) for k in self.options):
            raise _fail(c, "options", "expected an object with string keys")
        _json_value(c, "options", dict(self.options))
        _bool(c, "duplicate", self.duplicate)
        if (self.deals is None) == (self.target is None):
            raise _fail(c, "deals", "exactly one of deals or target must be set")
        if self.deals is not None:
            _int(c, "deals", self.deals, lo=1, hi=10_000)
        if self.target is not None:
            _int(c, "target", self.target, lo=1, hi=1_000_000)
        _float(c, "created", self.created, lo=0)

    def seats(self) -> tuple[str, str, str, str]:
        """The bot in each of the four seats (first table of a duplicate pair)."""
        if len(self.bots) == 2:
            return (self.bots[0], self.bots[1], self.bots[0], self.bots[1])
        return (self.bots[0], self.bots[1], self.bots[2], self.bots[3])

    def teams(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Distinct bots of side 0 and side 1; a self-partnered bot is a team of one."""
        s = self.seats()
        return (tuple(dict.fromkeys((s[0], s[2]))), tuple(dict.fromkeys((s[1], s[3]))))

    def distinct_bots(self) -> tuple[str, ...]:
        a, b = self.teams()
        return a + b

    def to_dict(self) -> dict[str, Any]:
        return {
            "match_id": self.match_id,
            "ladder": self.ladder,
            "variant": self.variant,
            "seed": self.seed,
            "bots": list(self.bots),
            "options": dict(self.options),
            "duplicate": self.duplicate,
            "deals": self.deals,
            "target": self.target,
            "created": self.created,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> MatchSpec:
        d = _loads("MatchSpec", text)
        _fields(
            "MatchSpec",
            d,
            ["match_id", "ladder", "variant", "seed", "bots"],
            ["options", "duplicate", "deals", "target", "created"],
        )
        if not isinstance(d["bots"], list):
            raise ValueError("MatchSpec.bots: expected a list")
        return cls(
            match_id=d["match_id"],
            ladder=d["ladder"],
            variant=d["variant"],
            seed=d["seed"],
            bots=tuple(d["bots"]),
            options=d.get("options", {}),
            duplicate=d.get("duplicate", True),
            deals=d.get("deals"),
            target=d.get("target"),
            created=d.get("created", 0.0),
        )


# --------------------------------------------------------------- latency histogram

# Log-spaced bucket upper bounds (ms): 0.5 ms * 1.25^i, i < 56, up to ~132 s,
# plus an overflow bucket.  Fixed bounds let per-match histograms be summed in
# Redis with HINCRBY, so the per-bot p50/p99 uses bounded memory (~57 fields)
# and is exact to within one bucket (25 %), whatever the number of samples.
LATENCY_BOUNDS_MS: tuple[float, ...] = tuple(round(0.5 * 1.25**i, 4) for i in range(56))


def latency_bucket(ms: float) -> int:
    """Index of the bucket holding ``ms`` (len(LATENCY_BOUNDS_MS) = overflow)."""
    return bisect.bisect_left(LATENCY_BOUNDS_MS, ms)


def histogram_quantile(hist: Mapping[int, int], q: float, max_ms: float = 0.0) -> float:
    """Upper bound of the bucket where the cumulative count reaches ``q``."""
    total = sum(hist.values())
    if total <= 0:
        return 0.0
    rank = q * total
    seen = 0
    for idx in sorted(hist):
        seen += hist[idx]
        if seen >= rank:
            if idx < len(LATENCY_BOUNDS_MS):
                return LATENCY_BOUNDS_MS[idx]
            return max(max_ms, LATENCY_BOUNDS_MS[-1])  # overflow bucket: best we know is the max
    return LATENCY_BOUNDS_MS[-1]


@dataclass(frozen=True)
class LatencySummary:
    """A bot's move latencies in one match: count, p50, p99, max and histogram."""

    count: int = 0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    hist: Mapping[int, int] = field(default_factory=dict, hash=False)  # bucket index -> count

    def __post_init__(self) -> None:
        c = "LatencySummary"
        _int(c, "count", self.count, lo=0)
        _float(c, "p50_ms", self.p50_ms, lo=0)
        _float(c, "p99_ms", self.p99_ms, lo=0)
        _float(c, "max_ms", self.max_ms, lo=0)
        for k, v in self.hist.items():
            _int(c, "hist", k, lo=0, hi=len(LATENCY_BOUNDS_MS))
            _int(c, f"hist[{k}]", v, lo=0)
        if sum(self.hist.values()) not in (0, self.count):
            raise _fail(c, "hist", f"bucket counts sum to {sum(self.hist.values())}, count is {self.count}")

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float]) -> LatencySummary:
        """Summarise raw samples (what the match runner measures per move)."""
        if not samples_ms:
            return cls()
        s = sorted(float(x) for x in samples_ms)

        def pick(q: float) -> float:
            return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]

        hist: dict[int, int] = {}
        for x in s:
            b = latency_bucket(x)
            hist[b] = hist.get(b, 0) + 1
        return cls(count=len(s), p50_ms=pick(0.50), p99_ms=pick(0.99), max_ms=s[-1], hist=hist)

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
            "hist": {str(k): v for k, v in sorted(self.hist.items())},
        }

    @classmethod
    def from_dict(cls, d: object) -> LatencySummary:
        if not isinstance(d, dict):
            raise ValueError("LatencySummary: expected an object")
        _fields("LatencySummary", d, [], ["count", "p50_ms", "p99_ms", "max_ms", "hist"])
        raw = d.get("hist", {})
        if not isinstance(raw, dict):
            raise ValueError("LatencySummary.hist: expected an object")
        hist: dict[int, int] = {}
        for k, v in raw.items():
            if not (isinstance(k, str) and k.isdigit()):
                raise ValueError(f"LatencySummary.hist: bucket key {k!r} is not an index")
            hist[int(k)] = v
        return cls(
            count=d.get("count", 0),
            p50_ms=d.get("p50_ms", 0.0),
            p99_ms=d.get("p99_ms", 0.0),
            max_ms=d.get("max_ms", 0.0),
            hist=hist,
        )


# Counters every BotStats carries; the stats module sums exactly these.
STAT_COUNTERS: tuple[str, ...] = (
    "deals",
    "points",
    "contracts_bid",
    "contracts_made",
    "capots",
    "declarations",
    "timeouts",
    "illegal_actions",
    "errors",
)


@dataclass(frozen=True)
class BotStats:
    """What one bot did in one match (summed over its seats and both tables)."""

    deals: int = 0
    points: int = 0  # points won by this bot's side over the deals it played
    contracts_bid: int = 0  # contracts this bot won the auction for
    contracts_made: int = 0  # ... and then made
    capots: int = 0
    declarations: int = 0  # belote/rebelote, sequences, carré... announced
    timeouts: int = 0
    illegal_actions: int = 0
    errors: int = 0  # transport errors (unreachable, bad messages)
    latency: LatencySummary = field(default_factory=LatencySummary)

    def __post_init__(self) -> None:
        for name in STAT_COUNTERS:
            _int("BotStats", name, getattr(self, name), lo=None if name == "points" else 0)
        if self.contracts_made > self.contracts_bid:
            raise _fail("BotStats", "contracts_made", "cannot exceed contracts_bid")
        if not isinstance(self.latency, LatencySummary):
            raise _fail("BotStats", "latency", "expected a LatencySummary")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {name: getattr(self, name) for name in STAT_COUNTERS}
        d["latency"] = self.latency.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: object) -> BotStats:
        if not isinstance(d, dict):
            raise ValueError("BotStats: expected an object")
        _fields("BotStats", d, [], [*STAT_COUNTERS, "latency"])
        kw: dict[str, Any] = {k: d[k] for k in STAT_COUNTERS if k in d}
        return cls(latency=LatencySummary.from_dict(d.get("latency", {})), **kw)


@dataclass(frozen=True)
class MatchResult:
    """The outcome of one match, written once to Redis by the worker.

    ``seats`` are the bots of the first table as in the spec; side 0 is seats 0
    and 2.  For a duplicate pair ``points`` are per team (not per chair) summed
    over both tables.  ``winner`` is 0, 1, or None for a draw.  ``forfeit`` is
    the reason if the match ended early (e.g. a bot kept timing out); the
    runner sets ``winner`` to the other side in that case.  ``record`` is the
    full game record as a JSON string, stored verbatim for replays.
    """

    match_id: str
    ladder: str
    seats: tuple[str, str, str, str]
    winner: int | None
    points: tuple[int, int]
    deals_played: int
    stats: Mapping[str, BotStats] = field(default_factory=dict, hash=False)
    forfeit: str | None = None
    record: str = "{}"
    duplicate: bool = True
    finished: float = 0.0

    def __post_init__(self) -> None:
        c = "MatchResult"
        _str(c, "match_id", self.match_id, ID_RE)
        _str(c, "ladder", self.ladder, ID_RE)
        if not isinstance(self.seats, tuple) or len(self.seats) != 4:
            raise _fail(c, "seats", f"expected 4 seats, got {self.seats!r}")
        for i, b in enumerate(self.seats):
            _str(c, f"seats[{i}]", b, ID_RE)
        if {self.seats[0], self.seats[2]} & {self.seats[1], self.seats[3]}:
            raise _fail(c, "seats", "a bot cannot play on both sides")
        if self.winner is not None:
            _int(c, "winner", self.winner, lo=0, hi=1)
        if not isinstance(self.points, tuple) or len(self.points) != 2:
            raise _fail(c, "points", f"expected [side0, side1], got {self.points!r}")
        _int(c, "points[0]", self.points[0])
        _int(c, "points[1]", self.points[1])
        _int(c, "deals_played", self.deals_played, lo=0)
        if not isinstance(self.stats, Mapping):
            raise _fail(c, "stats", "expected an object keyed by bot id")
        for bot, st in self.stats.items():
            if bot not in self.seats:
                raise _fail(c, "stats", f"bot {bot!r} is not seated in this match")
            if not isinstance(st, BotStats):
                raise _fail(c, f"stats[{bot}]", "expected BotStats")
        if self.forfeit is not None:
            _str(c, "forfeit", self.forfeit, max_len=1024)
        if not isinstance(self.record, str):
            raise _fail(c, "record", "expected a JSON string")
        try:
            json.loads(self.record)
        except ValueError as e:
            raise _fail(c, "record", f"not valid JSON: {e}") from None
        _bool(c, "duplicate", self.duplicate)
        _float(c, "finished", self.finished, lo=0)

    def teams(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        s = self.seats
        return (tuple(dict.fromkeys((s[0], s[2]))), tuple(dict.fromkeys((s[1], s[3]))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "match_id": self.match_id,
            "ladder": self.ladder,
            "seats": list(self.seats),
            "winner": self.winner,
            "points": list(self.points),
            "deals_played": self.deals_played,
            "stats": {b: s.to_dict() for b, s in sorted(self.stats.items())},
            "forfeit": self.forfeit,
            "record": self.record,
            "duplicate": self.duplicate,
            "finished": self.finished,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> MatchResult:
        d = _loads("MatchResult", text)
        _fields(
            "MatchResult",
            d,
            ["match_id", "ladder", "seats", "winner", "points", "deals_played"],
            ["stats", "forfeit", "record", "duplicate", "finished"],
        )
        for name in ("seats", "points"):
            if not isinstance(d[name], list):
                raise ValueError(f"MatchResult.{name}: expected a list")
        stats_raw = d.get("stats", {})
        if not isinstance(stats_raw, dict):
            raise ValueError("MatchResult.stats: expected an object keyed by bot id")
        stats: dict[str, BotStats] = {}
        for bot, raw in stats_raw.items():
            try:
                stats[bot] = BotStats.from_dict(raw)
            except ValueError as e:
                raise ValueError(f"MatchResult.stats[{bot}]: {e}") from None
        return cls(
            match_id=d["match_id"],
            ladder=d["ladder"],
            seats=tuple(d["seats"]),  # length checked in __post_init__
            winner=d["winner"],
            points=tuple(d["points"]),
            deals_played=d["deals_played"],
            stats=stats,
            forfeit=d.get("forfeit"),
            record=d.get("record", "{}"),
            duplicate=d.get("duplicate", True),
            finished=d.get("finished", 0.0),
        )
