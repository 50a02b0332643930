"""Playing matches: the match queue with its exactly-once results and dead letters (``queue``; what it
holds, read for gauges and status: ``queue_counts``), the fair choice of pairs (``pairing``, pure) and the
scheduler that creates the matches on Redis (``scheduler``), started ladders and their feeder (``ladder``,
``ladder_status``), the worker's claim -> run -> record -> ack loop (``worker``), the runner that plays a
match with the referee, in the sandbox for uploaded bots (``runner``), the result it makes of the referee's
outcome (``results``) and what of a match may be published (``publish``).

May import every layer below it (``rating``, ``bots``, ``metrics``, ``store``, ``sandbox``, ``model``).
"""
