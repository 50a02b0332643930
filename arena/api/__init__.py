"""The arena's gRPC API (proto/pilotta/arena/v1/arena.proto): a thin transport over ``arena.service``.  The
service's handlers (``servicer``), the translation of requests and replies (``messages``), the arena's errors as
status codes (``errors``), and the API process with its background threads (``server``: ``ApiServer``).

A front end: it may import anything below it, goes through ``service.Arena``, and names no Redis key
(``tests/arena/test_arena_layers.py``).
"""

from arena.api.server import ApiServer

__all__ = ["ApiServer"]
