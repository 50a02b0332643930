"""Per-bot statistics accumulated from results, and a snapshot of the arena.

Per bot and ladder one hash (``keys.bot_stats``) holds summed counters
(``model.STAT_COUNTERS``), the number of matches, the matches won, lost, drawn
and forfeited (``RESULT_COUNTERS``), and the latency histogram as
``lat:<bucket>`` fields; the same again per version of the bot
(``keys.bot_version_stats``), for results that say which version played
(``MatchResult.versions``): a new version starts its statistics from nothing,
while the bot's rating goes on (``arena.rating.ratings``).  Fixed histogram buckets make accumulation a plain
HINCRBY and keep memory bounded (at most ~57 latency fields per bot) however
many moves a bot makes; p50/p99 are read back to within one bucket (25 %).

``accumulate`` only queues commands on a pipeline: the ratings updater calls
it inside the same MULTI that marks the result as applied, so statistics and
ratings count each result exactly once, together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import redis

from arena.model import STAT_COUNTERS, MatchResult
from arena.model.latency import LATENCY_BOUNDS_MS, histogram_quantile
from arena.store import keys

LAT_PREFIX = "lat:"
LAT_MAX = "lat_max_ms"


# Counted per match from the result itself: won, lost, drawn; forfeited (the side that lost by forfeit).
RESULT_COUNTERS = ("won", "lost", "drawn", "forfeits")
VERSIONS_SHOWN = 10  # versions of a bot whose statistics a page shows (the latest)


def stat_keys(result: MatchResult) -> dict[str, tuple[str, ...]]:
    """Bot id -> the stats hashes its part in ``result`` is added to: the bot's on the ladder, and its
    version's when the result says which version played."""
    out: dict[str, tuple[str, ...]] = {}
    for bot in result.stats:
        version = result.versions.get(bot)
        per_version = () if version is None else (keys.bot_version_stats(result.ladder, bot, version),)
        out[bot] = (keys.bot_stats(result.ladder, bot), *per_version)
    return out


def outcome_counts(result: MatchResult, bot: str) -> dict[str, int]:
    """The bot's won / lost / drawn / forfeits of this match."""
    side = 0 if bot in result.seats[0::2] else 1
    if result.winner is None:
        return {"drawn": 1}
    if result.winner == side:
        return {"won": 1}
    return {"lost": 1, "forfeits": int(result.forfeit is not None)}


def accumulate(pipe: Any, result: MatchResult, current_max: Mapping[str, float]) -> None:
    """Queue the HINCRBYs adding ``result``'s per-bot stats to every hash of ``stat_keys`` (pipe in MULTI
    mode; Any: redis-py's Pipeline has no precise type).

    ``current_max`` is each of those hashes' stored max latency (by key), read by the caller under
    WATCH, because "max" cannot be expressed as an increment.
    """
    hashes = stat_keys(result)
    for bot, st in result.stats.items():
        for key in hashes[bot]:
            pipe.hincrby(key, "matches", 1)
            for name, value in outcome_counts(result, bot).items():
                if value:
                    pipe.hincrby(key, name, value)
            for name in STAT_COUNTERS:
                value = getattr(st, name)
                if value:
                    pipe.hincrby(key, name, value)
            lat = st.latency
            if lat.count:
                pipe.hincrby(key, "lat_count", lat.count)
                for bucket, n in lat.hist.items():
                    pipe.hincrby(key, f"{LAT_PREFIX}{bucket}", n)
                if lat.max_ms > current_max.get(key, 0.0):
                    pipe.hset(key, LAT_MAX, repr(lat.max_ms))


@dataclass(frozen=True)
class BotStatsSummary:
    bot_id: str
    ladder: str
    matches: int
    won: int
    lost: int
    drawn: int
    forfeits: int  # matches lost by forfeit (timeouts, illegal answers, a crash, not starting)
    deals: int
    points: int
    points_per_deal: float
    contracts_bid: int
    contracts_made: int
    contract_make_rate: float  # made / bid (0 if never bid)
    capots: int
    declarations: int
    timeouts: int
    illegal_actions: int
    errors: int
    latency_count: int
    latency_p50_ms: float
    latency_p99_ms: float
    latency_max_ms: float
    version: int | None = None  # the version these are of; None: every version of the bot

    @property
    def failures(self) -> int:
        """Timeouts, illegal actions and transport errors together (the pages' "errors")."""
        return self.timeouts + self.illegal_actions + self.errors

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bot_stats(r: redis.Redis, ladder: str, bot_id: str) -> BotStatsSummary:
    """Summed statistics of a bot on a ladder (all zeros if it never played)."""
    h: dict[str, str] = r.hgetall(keys.bot_stats(ladder, bot_id))  # type: ignore[assignment]
    return summarize(ladder, bot_id, h)


def summarize(ladder: str, bot_id: str, h: Mapping[str, str], version: int | None = None) -> BotStatsSummary:
    """A bot's statistics from its stats hash (``keys.bot_stats``, or ``keys.bot_version_stats`` of
    ``version``), read by the caller (pipelines)."""
    c = {name: int(h.get(name, 0)) for name in STAT_COUNTERS}
    hist = {int(k[len(LAT_PREFIX) :]): int(v) for k, v in h.items() if k.startswith(LAT_PREFIX)}
    lat_max = float(h.get(LAT_MAX, 0.0))
    return BotStatsSummary(
        bot_id=bot_id,
        ladder=ladder,
        matches=int(h.get("matches", 0)),
        won=int(h.get("won", 0)),
        lost=int(h.get("lost", 0)),
        drawn=int(h.get("drawn", 0)),
        forfeits=int(h.get("forfeits", 0)),
        deals=c["deals"],
        points=c["points"],
        points_per_deal=c["points"] / c["deals"] if c["deals"] else 0.0,
        contracts_bid=c["contracts_bid"],
        contracts_made=c["contracts_made"],
        contract_make_rate=c["contracts_made"] / c["contracts_bid"] if c["contracts_bid"] else 0.0,
        capots=c["capots"],
        declarations=c["declarations"],
        timeouts=c["timeouts"],
        illegal_actions=c["illegal_actions"],
        errors=c["errors"],
        latency_count=int(h.get("lat_count", 0)),
        latency_p50_ms=min(histogram_quantile(hist, 0.50, lat_max), lat_max) if hist else 0.0,
        latency_p99_ms=min(histogram_quantile(hist, 0.99, lat_max), lat_max) if hist else 0.0,
        latency_max_ms=lat_max,
        version=version,
    )


__all__ = ["LATENCY_BOUNDS_MS", "BotStatsSummary", "accumulate", "bot_stats"]
