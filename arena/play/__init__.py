"""Playing matches: the match queue with its exactly-once results and dead letters (``queue``), the
scheduler's fair pairings (``scheduler``), started ladders and their feeder (``ladder``, ``ladder_status``),
the worker's claim -> run -> record -> ack loop (``worker``), the runner that plays a match with the
referee, in the sandbox for uploaded bots (``runner``), the result it makes of the referee's outcome
(``results``) and what of a match may be published (``publish``).

May import every layer below it (``rating``, ``bots``, ``metrics``, ``store``, ``sandbox``, ``model``).
"""
