"""Storage: every Redis key name (``keys``: no other module spells one), the embedded real Redis and
``connect()`` (``redis_server``), a port's holder from /proc (``ports``), Redis-down errors and backoff
(``retry``), stream ids and consumer groups (``streams``), the game records compressed and in the archive
on disk, read back (``archive``), and the archiver that moves them out of Redis by the retention policy
(``archiver``).

May import ``arena.model`` and ``arena.sandbox.lifetime`` (the embedded Redis dies with its parent); nothing
of the ladder's logic.
"""
