"""The arena's vocabulary: its records (``records``: ``MatchSpec``, ``MatchResult``, ``Bot``, ...), its typed
errors (``errors``), their JSON (``serial``), the latency histogram (``latency``) and what a game record shows
(``replay``).

Plain values without I/O; everything else in ``arena`` may import them, and they import nothing of ``arena``
but each other (and the pure referee).
"""

from arena.model.errors import (
    ArenaError,
    AuthError,
    EndpointRefused,
    ManifestError,
    NameTakenError,
    NotFoundError,
    NotPlayable,
    NotRequeueable,
    RetiredBotError,
    Unauthenticated,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
)
from arena.model.latency import LATENCY_BOUNDS_MS, LatencySummary, histogram_quantile, latency_bucket
from arena.model.records import (
    BOT_STATES,
    ID_RE,
    SEAT_RE,
    STAT_COUNTERS,
    BoardEntry,
    Bot,
    BotState,
    BotStats,
    BotVersion,
    ForfeitLimits,
    MatchResult,
    MatchSpec,
    VersionState,
    bot_state,
    bot_state_of,
    parse_seat,
    seat_bot,
    seat_of,
)

__all__ = [
    "BOT_STATES",
    "ID_RE",
    "LATENCY_BOUNDS_MS",
    "SEAT_RE",
    "STAT_COUNTERS",
    "ArenaError",
    "AuthError",
    "BoardEntry",
    "Bot",
    "BotState",
    "BotStats",
    "BotVersion",
    "EndpointRefused",
    "ForfeitLimits",
    "LatencySummary",
    "ManifestError",
    "MatchResult",
    "MatchSpec",
    "NameTakenError",
    "NotFoundError",
    "NotPlayable",
    "NotRequeueable",
    "RetiredBotError",
    "Unauthenticated",
    "UnknownBotError",
    "UnknownLadderError",
    "ValidationError",
    "VersionState",
    "bot_state",
    "bot_state_of",
    "histogram_quantile",
    "latency_bucket",
    "parse_seat",
    "seat_bot",
    "seat_of",
]
