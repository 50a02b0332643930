"""The Redis side of pilotta-arena: registry, match queue, workers, ratings, ladder.

Modules (each usable on its own with a ``redis.Redis`` from ``redis_server.connect``):

- ``keys``          every Redis key name
- ``redis_server``  an embedded real Redis (AOF) and ``connect()``
- ``model``         dataclasses exchanged between parts, errors
- ``registry``      bots, versions, owner/admin tokens
- ``queue``         match stream, exactly-once results, dead letters
- ``worker``        the claim -> run -> record -> ack loop
- ``ratings``       openskill team ratings, leaderboard, history
- ``stats``         per-bot counters and latency histograms; queue snapshot
- ``scheduler``     ladders and fair match selection
"""

from arena.model import (
    ArenaError,
    AuthError,
    ManifestError,
    NameTakenError,
    RetiredBotError,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
)

__all__ = [
    "ArenaError",
    "AuthError",
    "ManifestError",
    "NameTakenError",
    "RetiredBotError",
    "UnknownBotError",
    "UnknownLadderError",
    "ValidationError",
]
