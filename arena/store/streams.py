"""Redis streams: their ids as clocks (an entry's id is the server's time in ms when it was added, then a
sequence number, so ages are measured against the server's clock, never the local one), and their consumer
groups."""

from __future__ import annotations

from typing import Any

import redis


def entry_age_s(entry_id: str, now_ms: float) -> float:
    """Seconds since a stream entry was added: its id is the server's clock in ms when it was added."""
    return max(0.0, (now_ms - int(str(entry_id).split("-")[0])) / 1000)


def server_ms(r: Any) -> float:
    """The Redis server's clock in ms (the clock that minted the stream ids).  ``r``: a redis.Redis (Any: a
    pipeline's or client's TIME reply alike)."""
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) / 1000


def id_order(entry_id: str) -> tuple[int, int]:
    """A sortable form of an entry id; ``+`` (the stream's end) sorts after every id."""
    if entry_id == "+":
        return (2**64, 0)
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def ensure_consumer_group(r: redis.Redis, stream: str, group: str) -> None:
    """Create ``group`` on ``stream`` at id 0 (so entries written before it existed are delivered too);
    a group that exists already is left as it is."""
    try:
        r.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as e:
        if "BUSYGROUP" not in str(e):
            raise
