"""The arena's vocabulary: its records, frozen dataclasses validated where they are built (``bots``: ``Bot``,
its versions and states; ``matches``: ``MatchSpec``, ``MatchResult``; ``seats``: bot ids and the seats of a
match), its typed errors (``errors``), their JSON (``serial``), the latency histogram (``latency``) and what
a game record shows (``replay``).

A record is rejected where it is built (in code or from JSON), not three modules later inside a Lua script:
its ``__post_init__`` checks every field, and ``from_json`` raises ``ValueError`` naming the class and the
offending field, e.g. ``MatchSpec.seed: expected int``.

Plain values without I/O; everything else in ``arena`` may import them, and they import nothing of ``arena``
but each other (and the pure referee).
"""

from arena.model.bots import (
    BOT_STATES,
    Bot,
    BotState,
    BotVersion,
    ForfeitLimits,
    VersionState,
    bot_state,
    bot_state_of,
)
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
from arena.model.matches import STAT_COUNTERS, BoardEntry, BotStats, MatchResult, MatchSpec
from arena.model.seats import ID_RE, SEAT_RE, parse_seat, seat_bot, seat_of

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
