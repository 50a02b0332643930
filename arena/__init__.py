"""The Redis side of pilotta-arena: registry, match queue, workers, ratings, ladder (docs/arena.md).

Layers, top down:

- transport: ``api`` (gRPC), ``web`` (HTTP pages and JSON), ``client``/``cli`` (calls the API)
- service:   ``service``   the ``Arena`` object: every operation, authorized, with typed errors
- parts (each usable on its own with a ``redis.Redis`` from ``redis_server.connect``):
  ``registry`` bots, versions, owner/admin tokens; ``queue`` match stream, exactly-once results, dead
  letters; ``worker`` the claim -> run -> record -> ack loop, live workers; ``ratings`` openskill team
  ratings, leaderboard, history; ``stats`` per-bot counters; ``scheduler`` ladders, fair match selection,
  match creation; ``ladder`` started ladders and the feeder; ``views`` the one read model
- below:     ``keys`` every Redis key name; ``model`` records and errors (``serial`` their JSON,
  ``latency`` the histogram); ``retry`` Redis-down errors and backoff; ``redis_server`` an embedded
  real Redis (AOF) and ``connect()``
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
