"""The authoritative rules engine of pilotta-arena.

Everything in this package except ``service``, ``match`` and ``cli`` is pure: no I/O, no global random
state, no gRPC or Redis. A game is fully described by its ruleset (name, options, version), its seed and
the list of actions taken, so any game replays exactly.
"""

from referee.errors import IllegalActionError, RecordError, RulesetError

__all__ = ["IllegalActionError", "RecordError", "RulesetError"]
