"""The arena's one read model: what the API, the web pages and the CLI show, read from Redis in a few batched,
bounded round trips (``reads.Views``), the values it answers with (``pages``: leaderboard rows, boards, bot and
match pages) and the caches it keeps (``lru``).

Above ``play`` and ``rating``, whose records it reads; below ``service``, which builds it.  It writes nothing.
"""

from arena.views.pages import Board, BotPage, MatchPage, Standing, Summary
from arena.views.reads import STREAM_ID_RE, Views

__all__ = ["STREAM_ID_RE", "Board", "BotPage", "MatchPage", "Standing", "Summary", "Views"]
