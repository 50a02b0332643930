"""What a running ladder is doing now: its matches in flight, its pace, when a bounded ladder ends.

For ``arena ladder status [--watch]`` and ``arena ladder start --follow`` (through ``service.Arena``):

* ``in_flight``: the ladder's matches in the queue stream, oldest first, each with its bots, its age since it
  was queued and the worker playing it (from the worker group's pending entries), if any;
* ``matches_per_minute``: the ladder's results in the last ``RATE_WINDOW_S`` (or since the ladder was
  started, if that is later), read from the results stream;
* ``eta_s``: matches left over that pace.

Every read is bounded: at most ``SCAN_MAX`` queue entries and ``RATE_SCAN_MAX`` results are looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from arena.model import MatchSpec
from arena.store import keys
from arena.store.streams import entry_age_s, server_ms

SCAN_MAX = 2000  # queue entries looked at (the feeder keeps the queue at about two matches per worker)
IN_FLIGHT_MAX = 50  # matches listed
RATE_WINDOW_S = 300.0
RATE_SCAN_MAX = 5000  # results looked at for the pace


@dataclass(frozen=True)
class InFlight:
    """A match of the ladder queued or being played."""

    match_id: str
    seats: tuple[str, str, str, str]  # bot ids
    age_s: float  # since it was queued
    worker: str  # the worker that claimed it; empty while it waits


def in_flight(r: redis.Redis, ladder: str, limit: int = IN_FLIGHT_MAX) -> list[InFlight]:
    """The ladder's matches waiting or being played, oldest first (at most ``limit``)."""
    rc: Any = r  # Any: redis-py types replies as Awaitable | Any; with decode_responses=True they are str
    with rc.pipeline(transaction=False) as p:
        p.xrange(keys.MATCH_STREAM, count=SCAN_MAX)
        p.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, "-", "+", SCAN_MAX)
        p.time()
        entries, claimed, (sec, usec) = p.execute(raise_on_error=False)
    if isinstance(claimed, redis.ResponseError):  # no worker group yet: nothing claimed
        claimed = []
    now_ms = int(sec) * 1000 + int(usec) / 1000
    workers = {c["message_id"]: str(c["consumer"]) for c in claimed}
    out: list[InFlight] = []
    for entry_id, fields in entries:
        try:
            spec = MatchSpec.from_json(fields.get("spec", ""))
        except ValueError:
            continue  # a malformed entry: the workers dead-letter it; nothing to show here
        if spec.ladder != ladder:
            continue
        out.append(InFlight(spec.match_id, spec.seats(), entry_age_s(entry_id, now_ms), workers.get(entry_id, "")))
        if len(out) == limit:
            break
    return out


def matches_per_minute(r: redis.Redis, ladder: str, started: float | None, window_s: float = RATE_WINDOW_S) -> float:
    """The ladder's results per minute over the last ``window_s`` (shorter when it started later; the
    stream ids are the Redis server's clock, as ``started`` is the API's, on the same machine or close)."""
    rc: Any = r
    now_ms = server_ms(r)
    span_s = window_s if started is None else max(1.0, min(window_s, now_ms / 1000 - started))
    entries = rc.xrevrange(keys.RESULTS_STREAM, max="+", min=str(int(now_ms - span_s * 1000)), count=RATE_SCAN_MAX)
    n = sum(1 for _eid, f in entries if f.get("ladder") == ladder)
    return n * 60.0 / span_s


def eta_s(remaining: int, per_minute: float) -> float | None:
    """Seconds until ``remaining`` more matches are played at that pace (None: no pace yet)."""
    if remaining == 0:
        return 0.0
    return remaining * 60.0 / per_minute if per_minute > 0 else None
