"""The match machinery: four bots over gRPC play a match under deadlines (``run``: ``run_match``), one
decision at a time (``runner``) at each leg's table (``table``), each answer classified (``answers``), over
the transport (``transport``), in the protocol's messages (``wire``; their bytes written by hand:
``wire_bytes`` over ``wire_fields``); the bots' processes (``bots``) and their CPU time (``cputime``); what
a match is set up with and gives (``outcome``); the Referee gRPC service (``service``).

Everything with I/O, processes or gRPC in the referee lives here; the pure engine (``referee.cards``,
``referee.game``, ``referee.rules``, ...) never imports it.
"""

from referee.match.run import (
    DUPLICATE_BOARDS,
    OUTCOMES,
    STOPPED,
    BotStats,
    DealEvent,
    Decision,
    DecisionEvent,
    Event,
    Forfeit,
    LegResult,
    MatchOutcome,
    MatchRunner,
    MatchSettings,
    new_game,
    run_match,
    timeout_detail,
)

__all__ = [
    "DUPLICATE_BOARDS",
    "OUTCOMES",
    "STOPPED",
    "BotStats",
    "DealEvent",
    "Decision",
    "DecisionEvent",
    "Event",
    "Forfeit",
    "LegResult",
    "MatchOutcome",
    "MatchRunner",
    "MatchSettings",
    "new_game",
    "run_match",
    "timeout_detail",
]
