"""The authoritative rules engine of pilotta-arena.

The modules at this package's top are the pure engine (cards, deal, game, rules, observation, declarations,
scales, boards, the game record and its verifier): no I/O, no global random state, no gRPC or Redis. A game
is fully described by its ruleset (name, options, version), its seed and the list of actions taken, so any
game replays exactly. Everything with processes, sockets or gRPC is the match machinery in ``referee.match``,
which the engine never imports; ``cli`` and ``command`` are the ``referee`` command.
"""

from referee import moved
from referee.errors import IllegalActionError, RecordError, RulesetError

# Modules that moved to referee.match: their old paths keep working for one release, with a warning.
moved.install(
    {
        f"referee.{name}": f"referee.match.{name}"
        for name in ("bots", "cputime", "outcome", "runner", "service", "transport", "wire", "wire_bytes")
    }
)

__all__ = ["IllegalActionError", "RecordError", "RulesetError"]
