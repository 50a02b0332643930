"""A match watched live on its page (docs/web.md "Watching a match live"): ``/replay/MATCH_ID`` of a match
being played shows ``live.html``, whose script (``static/live.js``) polls ``/api/live/MATCH_ID?since=N`` for
the public events after its cursor (``arena.views.live``: at most ``LIVE_PAGE`` a reply) and, once the result
is recorded, loads the replay with every hand.

Polling, not server-sent events: each request is short and bounded like every other one (``arena.web.guard``),
so a watcher holds no connection and no thread of the server between its polls.
"""

from __future__ import annotations

from typing import Any

from arena.service import Arena
from arena.views.live import LiveCursorError, parse_attempt, parse_cursor

POLL_MS = 1000  # how often a page asks for what is new (at once while ``more``)


class NotFound(Exception):
    """The thing asked for does not exist; the message says which, for the 404 page."""


class BadRequest(Exception):
    pass


def live_events(arena: Arena, match_id: str, query: dict[str, str]) -> dict[str, Any]:
    """The API's answer: the public events after ``since`` (``LivePage.to_dict``)."""
    try:
        since = parse_cursor(query.get("since"))
        attempt = parse_attempt(query.get("attempt"))
    except LiveCursorError as e:
        raise BadRequest(str(e)) from None
    page = arena.live_page(match_id, since, attempt=attempt)
    if page is None:
        raise NotFound(f"There is no match “{match_id}” being played or recorded.")
    return page.to_dict()


def live_context(arena: Arena, match_id: str) -> dict[str, object] | None:
    """What ``live.html`` needs of a match being played now, or None if it is not."""
    if not arena.is_live(match_id):
        return None
    return {"live": {"match_id": match_id, "poll_ms": POLL_MS}}
