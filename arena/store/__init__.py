"""Storage: every Redis key name (``keys``: no other module spells one), the embedded real Redis and
``connect()`` (``redis_server``), Redis-down errors and backoff (``retry``), stream ids and consumer groups
(``streams``), and the archive of game records on disk (``archive``).

May import ``arena.model`` and ``arena.sandbox.lifetime`` (the embedded Redis dies with its parent); nothing
of the ladder's logic.
"""
