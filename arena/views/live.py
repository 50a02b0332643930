"""The read side of a match watched live (``arena.play.live`` writes it): a page of its public events after a
cursor, and whether it is live, over (its result recorded: the replay takes over) or unknown.

Bounded: at most ``LIVE_PAGE`` events a read (one ``XRANGE ... COUNT``), a cursor at most ``LIVE_MAX_EVENTS``;
the events are the worker's own JSON of the public types, passed on as they are.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import redis

from arena.model import ID_RE
from arena.play.live import LIVE_MAX_EVENTS
from arena.store import keys

LIVE_PAGE = 200  # events per reply at most: the page asks again at once when there are more
ATTEMPT_RE = re.compile(r"[0-9a-f]{16}")  # an attempt's mark (arena.play.live.LivePublisher.attempt)


class LiveCursorError(ValueError):
    """The ``since`` cursor is not a whole number from 0 to ``LIVE_MAX_EVENTS`` (the message says so)."""


@dataclass(frozen=True)
class LivePage:
    """Events ``since`` < n <= ``next`` of a match (n counted from 1, as written); ``recorded``: its result is
    recorded (reload: the replay has every hand); ``restarted``: the stream holds fewer events than the
    cursor, or its attempt is not the one the reader named (the match is played again after its worker
    died: read again from 0); ``attempt``: the mark of the attempt read, to name in the next read."""

    match_id: str
    events: tuple[dict[str, Any], ...]
    next: int
    more: bool  # more events wait: ask again at once
    recorded: bool
    restarted: bool = False
    attempt: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "match_id": self.match_id,
            "events": list(self.events),
            "next": self.next,
            "more": self.more,
            "recorded": self.recorded,
            "restarted": self.restarted,
            "attempt": self.attempt,
        }


def parse_cursor(raw: str | None) -> int:
    """The ``since`` cursor of a request (absent: 0)."""
    if raw is None or raw == "":
        return 0
    # ASCII digits only: str.isdigit() also says yes to '²' (int() refuses it: a 500) and to other scripts'.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 6 or int(raw) > LIVE_MAX_EVENTS:
        raise LiveCursorError(f"since must be a whole number from 0 to {LIVE_MAX_EVENTS}, not {raw[:20]!r}")
    return int(raw)


def parse_attempt(raw: str | None) -> str | None:
    """The ``attempt`` a request names (absent: any)."""
    if raw is None or raw == "":
        return None
    if not ATTEMPT_RE.fullmatch(raw):
        raise LiveCursorError(f"attempt must be the 16 hex digits a reply gave, not {raw[:20]!r}")
    return raw


def is_live(r: redis.Redis, match_id: str) -> bool:
    """Whether the match is being played now (its stream exists)."""
    return bool(ID_RE.match(match_id)) and bool(r.exists(keys.live(match_id)))


def live_page(
    r: redis.Redis, match_id: str, since: int, limit: int = LIVE_PAGE, attempt: str | None = None
) -> LivePage | None:
    """The events after ``since`` of attempt ``attempt`` (None: whichever is there); None when the match is
    neither live nor recorded (unknown)."""
    if not ID_RE.match(match_id):
        return None
    key = keys.live(match_id)
    c: Any = r
    with c.pipeline(transaction=False) as p:
        p.exists(keys.result(match_id))
        p.xlen(key)
        p.xrange(key, "-", "+", count=1)
        p.xrange(key, f"0-{since + 1}", "+", count=limit)
        recorded, length, first, entries = p.execute()
    if recorded:  # the replay takes over: no event is needed any more
        return LivePage(match_id, (), since, False, True)
    if not length:
        return None
    mark = first[0][1].get("a", "") if first else ""
    if length < since or (attempt is not None and attempt != mark):
        return LivePage(match_id, (), 0, True, False, restarted=True)
    events = tuple(json.loads(fields["e"]) for _id, fields in entries)
    return LivePage(match_id, events, since + len(events), since + len(events) < length, False, attempt=mark)
