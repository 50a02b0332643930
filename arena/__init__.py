"""The ladder on Redis: bots, their sandbox, the matches they play, their ratings (docs/arena.md).

Packages by concern, imports flowing one way (a package imports only those below it; ``tests/arena/
test_arena_layers.py`` checks it):

- front ends ``cli`` (the ``arena`` command), ``api`` (gRPC) and ``web`` (pages, JSON), over
- ``service`` (``Arena``: every operation, authorized, with typed errors) and ``views`` (the one read model);
- ``play``: the queue, scheduler, ladder feeder, workers and the match runner;
- ``rating``: openskill ratings, Bradley–Terry, SPRT gates, statistics;
- ``bots``: the registry, packages, trust and endpoint policy, limits, validation, owners' logs;
- ``metrics``: the Prometheus metrics, updated where things happen;
- ``store``: every Redis key, the embedded Redis, the archive, retries; ``sandbox``: where untrusted code runs;
- ``model``: records, errors, their JSON: the vocabulary everything above shares.
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
from referee import moved

# The modules of the former flat layout: their old paths keep working for one release, with a warning.
moved.install(
    {
        f"arena.{old}": f"arena.{new}"
        for old, new in {
            "serial": "model.serial",
            "latency": "model.latency",
            "replay": "model.replay",
            "cgroups": "sandbox.cgroups",
            "bridge": "sandbox.bridge",
            "pool": "sandbox.pool",
            "lifetime": "sandbox.lifetime",
            "keys": "store.keys",
            "redis_server": "store.redis_server",
            "retry": "store.retry",
            "streams": "store.streams",
            "archive": "store.archive",
            "registry": "bots.registry",
            "packages": "bots.packages",
            "trust": "bots.trust",
            "limits": "bots.limits",
            "validation": "bots.validation",
            "botlogs": "bots.botlogs",
            "ratings": "rating.ratings",
            "bradley_terry": "rating.bradley_terry",
            "batch": "rating.batch",
            "sprt": "rating.sprt",
            "stats": "rating.stats",
            "gating": "rating.gating",
            "queue": "play.queue",
            "scheduler": "play.scheduler",
            "ladder": "play.ladder",
            "worker": "play.worker",
            "runner": "play.runner",
            "ladder_status": "play.ladder_status",
        }.items()
    }
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
