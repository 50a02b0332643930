"""What a match is set up with (``MatchSettings``), what it reports while it is played (``DecisionEvent``,
``DealEvent``: ``run_match``'s ``on_event``), and what it gives (``MatchOutcome``: the legs, each bot's
``BotStats``, the boards and the record). Plain values, kept apart from the runner (``referee.match``), which
re-exports them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from referee.boards import Board
from referee.game import Chance
from referee.record import Forfeit
from referee.record_format import OUTCOMES
from referee.scales import DEFAULT_SCALE, BoardResult, check_scale

DUPLICATE_BOARDS = 16  # the boards of a duplicate match that gives neither deals nor boards


@dataclass(frozen=True)
class MatchSettings:
    ruleset: str = "pilotta"
    options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    # Single table: a fixed number of played deals (thrown-in ones do not count); None: to the target.
    # Duplicate: the number of boards (thrown-in ones count: each board is played once at each table); None:
    # DUPLICATE_BOARDS.
    deals: int | None = None
    duplicate: bool = False
    boards: tuple[Board, ...] | None = None  # given boards, one per deal (thrown-in ones too), instead of the seed
    scale: str = DEFAULT_SCALE  # the board scale of a duplicate match's board scores (referee.scales)
    deadline_ms: int = 1000  # per decision
    time_bank_ms: int = 10_000  # per process per table (one per instance), spent past each deadline
    max_strikes: int = 3  # strikes a bot may commit; one more and its team forfeits
    notice_deadline_ms: int = 1000
    handshake_deadline_ms: int = 5000
    max_message_bytes: int = 1 << 20  # a bigger reply is malformed
    log_dir: str | None = None  # where manifest bots' stderr goes (a temporary directory if None)
    startup_timeout_s: float = 15.0  # for manifest bots to serve
    max_total_deals: int = 1000  # a bound on deals thrown in (all passed): a match always ends
    # Refuse (forfeit before the first deal) a bot whose handshake does not list the ruleset; otherwise the
    # bot only gets a note (the arena checks the rulesets when a bot registers).
    require_listed: bool = False

    def validate(self) -> None:
        for name in (
            "deadline_ms",
            "time_bank_ms",
            "max_strikes",
            "notice_deadline_ms",
            "handshake_deadline_ms",
            "max_message_bytes",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"MatchSettings.{name} must not be negative, not {getattr(self, name)}")
        if self.deadline_ms < 1:
            raise ValueError("MatchSettings.deadline_ms must be at least 1")
        if self.deals is not None and self.deals < 1:
            raise ValueError(f"MatchSettings.deals must be at least 1 (or None for a whole game), not {self.deals}")
        if self.boards is not None and not self.boards:
            raise ValueError("MatchSettings.boards must hold at least one board (or be None to deal from the seed)")
        check_scale(self.scale)

    def match_boards(self) -> tuple[Board, ...] | None:
        """The boards a match plays: the given ones (the first ``deals`` of them in a duplicate match), or in
        a duplicate match ``deals`` (default ``DUPLICATE_BOARDS``) boards drawn from the seed (its packs in turn,
        the dealer moving one seat a board from the seed's first dealer); None for a single table from the seed."""
        if not self.duplicate:
            return self.boards
        if self.boards is not None:
            return self.boards[: self.deals] if self.deals is not None else self.boards
        chance = Chance(self.seed)
        count = DUPLICATE_BOARDS if self.deals is None else self.deals
        return tuple(Board(chance.deck(i), (chance.first_dealer + i) % 4) for i in range(count))


class Decision(NamedTuple):
    """One bot decision as the referee saw it."""

    choice: int  # index in the legal actions: the bot's choice, or 0 (the default) when the referee stepped in
    outcome: str
    latency_ms: float  # wall clock, from the call to its answer
    detail: str  # why the answer was not ok
    comment: str
    answer: str | None  # what the bot answered, when the referee refused it
    cpu_ms: float | None  # the bot process tree's CPU time during the call, where measured


@dataclass(frozen=True)
class DecisionEvent:
    leg: int
    deal_number: int
    seat: int
    bot: str
    phase: str  # "auction", "declare" or "play"
    action: str  # the action played (the default one after a strike)
    outcome: str
    latency_ms: float
    detail: str = ""  # why the answer was not ok
    # What a bot author needs to find a failed decision (filled only when the outcome is not ok): the trick
    # (1-based; 0 before play), the seat's hand and legal actions as codes, what the bot answered.
    trick: int = 0
    hand: tuple[str, ...] = ()
    legal: tuple[str, ...] = ()
    answer: str | None = None
    bank_left_ms: float = 0.0  # the bot's time bank after this decision


@dataclass(frozen=True)
class DealEvent:
    leg: int
    deal_number: int
    written: tuple[int, ...]
    scores: tuple[int, ...]  # this leg's totals per side after the deal
    thrown_in: bool


Event = DecisionEvent | DealEvent


@dataclass
class BotStats:
    """What one bot (one team member; a bot given for both seats of a side is one) did in the match."""

    name: str
    endpoint: str
    team: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    strikes: int = 0
    notices_sent: int = 0
    notice_failures: int = 0
    notice_failures_by_kind: dict[str, int] = field(default_factory=dict)
    time_bank_ms: float = 0.0  # what is left
    latencies_ms: list[float] = field(default_factory=list)
    handshake: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)  # the first few problems, in words
    log: str = ""  # where the stderr of a bot the match started is
    # Why the bot never played, when it did not: "cannot start", "unreachable" or "ruleset not listed".
    down: str = ""

    def note(self, text: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(text)

    def to_json(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)

        def pick(q: float) -> float:
            return round(lat[min(len(lat) - 1, max(0, math.ceil(q * len(lat)) - 1))], 3) if lat else 0.0

        return {
            "name": self.name,
            "endpoint": self.endpoint,
            "team": self.team,
            "decisions": len(lat),
            "counts": dict(self.counts),
            "strikes": self.strikes,
            "notices_sent": self.notices_sent,
            "notice_failures": self.notice_failures,
            "notice_failures_by_kind": dict(self.notice_failures_by_kind),
            "time_bank_left_ms": round(self.time_bank_ms, 3),
            "latency_ms": {
                "p50": pick(0.50),
                "p99": pick(0.99),
                "max": round(lat[-1], 3) if lat else 0.0,
                "mean": round(sum(lat) / len(lat), 3) if lat else 0.0,
            },
            "handshake": self.handshake,
            "errors": list(self.errors),
        }


@dataclass
class LegResult:
    seats: tuple[int, int, int, int]  # the bot (index in MatchOutcome.bots) in each seat
    scores: tuple[int, int]  # per side
    winner: int | None  # side
    deals_played: int
    reason: str


@dataclass
class MatchOutcome:
    match_id: str
    winner: int | None  # team (0: the bots of side 0 in the first leg); None for a draw
    scores: tuple[int, int]  # per team, both legs added
    forfeit: Forfeit | None  # when a team forfeited
    reason: str
    deals_played: int
    legs: list[LegResult]
    bots: list[BotStats]
    record: dict[str, Any]  # the match record: the same for the same seed and answers but for its ms (without_timing)
    elapsed_s: float = 0.0
    boards: list[BoardResult] = field(default_factory=list)  # a duplicate match's boards played at both tables

    @property
    def forfeit_reason(self) -> str:
        return self.forfeit.reason if self.forfeit else ""

    def stats_json(self) -> dict[str, Any]:
        return {
            "bots": [b.to_json() for b in self.bots],
            "elapsed_s": round(self.elapsed_s, 3),
            "deals_played": self.deals_played,
        }
