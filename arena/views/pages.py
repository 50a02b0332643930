"""What the read model answers: a leaderboard row (``Standing``), a ladder's board with the histories it plots
(``Board``), a bot's public face and its place on each ladder (``PublicBot``, ``BotLadder``, ``BotPage``), a page
of the match list (``MatchPage``); each with the JSON the web pages' API sends (``to_dict``).  Plain values: the
reads that fill them are ``reads.Views``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.play.scheduler import LadderConfig
from arena.rating import stats
from arena.rating.gating import GateSummary
from arena.rating.ratings import HeadToHead, RatingRow
from arena.rating.stats import BotStatsSummary

# A match summary or replay: a stored result's JSON object (Any: JSON values of every kind).
Summary = dict[str, Any]


@dataclass(frozen=True)
class Standing:
    """A row of a leaderboard: rank among the active bots, rating, statistics.  A bot that does not play now
    (suspended, or an upload not or no more validated: ``state``, ``reason``) is shown apart, unranked
    (``rank`` 0), whatever its rating."""

    rank: int
    name: str
    rating: RatingRow
    stats: stats.BotStatsSummary  # of its current version
    # "endpoint" marks a bot its author runs (the referee cannot stop it sharing what its seats see);
    # "manifest" (or empty, for bots registered before kinds were kept) one the workers run.
    kind: str = ""
    version: int = 0  # its current version (0: not known); on a gated ladder its ranked version
    gating: int = 0  # a gated ladder: its version gating now, held out of the ranking until decided (0: none)
    state: str = "active"  # model.BOT_STATES (never "retired": retired bots are not shown)
    reason: str = ""  # why it does not play, unless active

    @property
    def ranked(self) -> bool:
        return self.rank > 0

    @property
    def bot_id(self) -> str:
        return self.rating.bot_id

    @property
    def endpoint(self) -> bool:
        return self.kind == "endpoint"

    @property
    def low(self) -> float:
        """mu - 2 sigma: with ``high``, a ~95 % range of the bot's skill (as the CLI shows it)."""
        return self.rating.mu - 2 * self.rating.sigma

    @property
    def high(self) -> float:
        return self.rating.mu + 2 * self.rating.sigma

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "name": self.name,
            "endpoint": self.endpoint,
            **self.rating.to_dict(),
            "version": self.version,
            "gating": self.gating,
            "state": self.state,
            "reason": self.reason,
            "low": self.low,
            "high": self.high,
            "stats": self.stats.to_dict(),
        }


@dataclass(frozen=True)
class BotLadder:
    """A bot's place on one ladder it has played on."""

    ladder: str
    rank: int  # among every rated bot of the ladder, 1 = best
    rating: RatingRow
    stats: stats.BotStatsSummary  # every version together
    versions: tuple[BotStatsSummary, ...] = ()  # per version, the latest first (VERSIONS_SHOWN)
    head_to_head: tuple[HeadToHead, ...] = ()  # opponents by id (``BotPage.names`` has their names)

    def to_dict(self, names: Mapping[str, str] | None = None) -> dict[str, Any]:
        """As JSON; each head-to-head row also names its opponent (from ``names``: bot id -> name)."""
        names = names or {}
        return {
            "ladder": self.ladder,
            "rank": self.rank,
            "rating": self.rating.to_dict(),
            "stats": self.stats.to_dict(),
            "versions": [v.to_dict() for v in self.versions],
            "head_to_head": [
                {**dataclasses.asdict(h), "opponent_name": names.get(h.opponent, h.opponent)} for h in self.head_to_head
            ],
        }


@dataclass(frozen=True)
class Playing:
    """A match a worker is playing now: its id (its page follows it live) and the registered names in its
    seats (South, East, North, West)."""

    match_id: str
    bots: tuple[str, str, str, str]


@dataclass(frozen=True)
class Board:
    """A ladder's leaderboard as the pages show it, with the rating histories of its top bots."""

    ladder: str
    config: LadderConfig | None  # None: a ladder only seen in results
    standings: tuple[Standing, ...]
    histories: Mapping[str, list[dict[str, Any]]]  # bot id -> plot history, for the top PLOT_BOTS
    name: str = ""  # the ladder's name, if it has one
    is_default: bool = False
    playing: tuple[Playing, ...] = ()  # its matches being played now, oldest first (each watched live)

    def to_dict(self) -> dict[str, Any]:
        config = self.config.to_dict() if self.config is not None else None
        return {
            "ladder": self.ladder,
            "name": self.name,
            "default": self.is_default,
            "config": config,
            "rows": [s.to_dict() for s in self.standings],
            "playing": [dataclasses.asdict(m) for m in self.playing],
        }


@dataclass(frozen=True)
class PublicBot:
    """What anyone may see of a bot: not its endpoint or manifest, which say where it runs."""

    bot_id: str
    name: str
    owner: str
    created: float
    retired: bool
    version: int
    handshake_name: str = ""  # what the bot calls itself in its Handshake (shown, never used as its name)
    state: str = "active"  # where it stands (model.bot_state): active, pending, rejected, suspended, retired
    reason: str = ""  # why it does not play, unless active

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BotPage:
    bot: PublicBot
    ladders: tuple[BotLadder, ...]
    histories: Mapping[str, list[dict[str, Any]]]  # ladder -> plot history
    matches: list[Summary]  # the latest ones
    names: Mapping[str, str]
    gates: tuple[GateSummary, ...] = ()  # its versions' gates on gated ladders, the latest version first
    ladder_names: Mapping[str, str] = field(default_factory=dict)  # ladder id -> name, for the named ones

    def to_dict(self) -> dict[str, Any]:
        return {
            "bot": self.bot.to_dict(),
            "ladders": [
                {**lad.to_dict(self.names), "ladder_name": self.ladder_names.get(lad.ladder, "")}
                for lad in self.ladders
            ],
            "recent_matches": self.matches,
            "gates": [g.to_dict() for g in self.gates],
        }


@dataclass(frozen=True)
class MatchPage:
    """A page of the match list, newest first, and the cursor of the next (older) page."""

    matches: list[Summary]
    names: Mapping[str, str]
    ladders: tuple[str, ...]  # every ladder, for the filter
    ladder: str | None
    bot_name: str | None
    cursor: str | None
    ladder_names: Mapping[str, str] = field(default_factory=dict)  # ladder id -> name, for the named ones

    def to_dict(self) -> dict[str, Any]:
        return {
            "matches": [
                {
                    **m,
                    "names": [self.names[b] for b in m["seats"]],
                    "ladder_name": self.ladder_names.get(str(m.get("ladder") or ""), ""),
                }
                for m in self.matches
            ],
            "next": self.cursor,
        }
