"""What the match queue holds, read without changing it: the matches waiting and being played (``depth``,
``live_depth``, ``pending``, the oldest one's age), each ladder's share (``by_ladder``: ``LadderQueue``), the
dead letters, the results recorded and counted twice, and how far the ratings updater lags behind them; and
each ladder's results and dead letters (``LadderCounts``).  The gauges, ``arena ladder status`` and the
operations page read these; ``MatchQueue`` (``arena.play.queue``) is the rest of the queue, built on them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from arena.store import keys
from arena.store.retry import Script
from arena.store.streams import ensure_consumer_group, entry_age_s, server_ms

# Where queue counts put an entry whose spec names no ladder (not a valid ladder id, so it never clashes).
UNKNOWN_LADDER = "?"
LAG_COUNTED = 1000  # undelivered results counted one by one where Redis does not count them (6.2)
T = TypeVar("T")


@dataclass(frozen=True)
class LadderQueue:
    """One ladder's share of the queue: entries not yet acknowledged, how many of those a worker has
    claimed, and the age of the oldest (s)."""

    waiting: int = 0
    claimed: int = 0
    oldest_age_s: float = 0.0


class QueueCounts:
    """The queue's stream and consumer group, and every count of what they hold."""

    # Any: redis-py's stubs type replies as bytes | str and cannot know the
    # client was made with decode_responses=True (see redis_server.connect).
    r: Any

    def ensure_group(self) -> None:
        ensure_consumer_group(self.r, keys.MATCH_STREAM, keys.WORKER_GROUP)

    def _grouped(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; if the group vanished (data wiped), recreate it and retry once."""
        try:
            return fn()
        except redis.ResponseError as e:
            if "NOGROUP" not in str(e):
                raise
            self.ensure_group()
            return fn()

    def depth(self) -> int:
        """Matches not yet acknowledged: waiting plus being played."""
        return int(self.r.xlen(keys.MATCH_STREAM))

    def live_depth(self, live: Collection[str]) -> int:
        """Matches waiting or being played by a live worker: ``depth`` less the claims of workers not in
        ``live`` (dead; their matches are taken over soon, and must not keep the feeder from topping up)."""
        with self.r.pipeline(transaction=False) as p:
            p.xlen(keys.MATCH_STREAM)
            p.xpending(keys.MATCH_STREAM, keys.WORKER_GROUP)
            depth, summary = p.execute(raise_on_error=False)
        if isinstance(depth, redis.ResponseError):
            raise depth
        if isinstance(summary, redis.ResponseError):  # no group yet: nothing claimed
            return int(depth)
        orphaned = sum(int(c["pending"]) for c in summary.get("consumers") or () if c["name"] not in live)
        return max(0, int(depth) - orphaned)

    def pending(self) -> int:
        """Matches delivered to a worker and not yet acknowledged."""
        info: Any = self._grouped(  # Any: the XPENDING summary is a dict the stubs do not describe
            lambda: self.r.xpending(keys.MATCH_STREAM, keys.WORKER_GROUP)
        )
        return int(info["pending"])

    def oldest_pending_age(self) -> float:
        """Seconds since the oldest unacknowledged match was enqueued (0 if none).
        Uses the server clock, which also minted the stream ids."""
        first = self.r.xrange(keys.MATCH_STREAM, count=1)
        return entry_age_s(first[0][0], server_ms(self.r)) if first else 0.0

    def by_ladder(self, limit: int = 10_000) -> dict[str, LadderQueue]:
        """Each ladder's share of the queue (``LadderQueue``), from at most ``limit`` entries (the feeder
        keeps the queue short); an entry that names no ladder counts under ``UNKNOWN_LADDER``."""
        with self.r.pipeline(transaction=False) as p:
            p.xrange(keys.MATCH_STREAM, count=limit)
            p.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, "-", "+", limit)
            p.time()
            entries, claimed, (sec, usec) = p.execute(raise_on_error=False)
        if isinstance(claimed, redis.ResponseError):  # no group yet: nothing claimed
            claimed = []
        now_ms = int(sec) * 1000 + int(usec) / 1000
        mine = {c["message_id"] for c in claimed}
        out: dict[str, LadderQueue] = {}
        for entry_id, fields in entries:
            ladder = ladder_of(fields.get("spec", "")) or UNKNOWN_LADDER
            q = out.get(ladder, LadderQueue())
            out[ladder] = LadderQueue(
                q.waiting + 1, q.claimed + (entry_id in mine), max(q.oldest_age_s, entry_age_s(entry_id, now_ms))
            )
        return out

    def dead_letter_count(self) -> int:
        return int(self.r.xlen(keys.DEAD_STREAM))

    def ratings_lag(self) -> int:
        """Recorded results the ratings updater has not applied yet (delivered or not)."""
        try:
            groups = self.r.xinfo_groups(keys.RESULTS_STREAM)
        except redis.ResponseError:  # no results stream yet
            return 0
        for g in groups:
            if g["name"] == keys.RATINGS_GROUP:
                # "lag" = entries not yet delivered, which Redis 7 counts (nil when it cannot: after a
                # deletion) and 6.2 does not: then they are counted here, up to LAG_COUNTED. Plus the
                # delivered-but-pending ones.
                lag = g.get("lag")
                if lag is None:
                    after = "(" + str(g["last-delivered-id"])
                    lag = len(self.r.xrange(keys.RESULTS_STREAM, after, "+", count=LAG_COUNTED))
                return int(lag) + int(g["pending"])
        return self.results_count()

    def duplicate_results(self) -> int:
        return int(self.r.get(keys.DUPLICATE_RESULTS) or 0)

    def results_count(self) -> int:
        return int(self.r.xlen(keys.RESULTS_STREAM))


class LadderCounts:
    """Each ladder's results recorded and dead letters waiting, as the queue's scripts count them
    (``keys.LADDER_COMPLETED``: +1 with each result; ``keys.LADDER_DEAD``: +1 when a match is buried, -1 when
    it is requeued), read in one round trip whatever the streams' length. An arena's data from before those
    counts is counted from the streams once, by the first reader (``_COUNT_FROM_STREAMS_LUA``)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r: Any = r
        self._count_from_streams = Script(r, _COUNT_FROM_STREAMS_LUA)
        self._counted = False  # this process has seen the counts started (they stay so)

    def read(self) -> tuple[dict[str, int], dict[str, int]]:
        """Ladder id -> results recorded, and ladder id -> dead letters waiting (ladders with none left out)."""
        if not self._counted:
            self._count_from_streams(
                keys=[
                    keys.LADDER_COUNTS_SINCE,
                    keys.RESULTS_STREAM,
                    keys.DEAD_STREAM,
                    keys.LADDER_COMPLETED,
                    keys.LADDER_DEAD,
                ]
            )
            self._counted = True
        with self.r.pipeline(transaction=False) as p:
            p.hgetall(keys.LADDER_COMPLETED)
            p.hgetall(keys.LADDER_DEAD)
            completed, dead = p.execute()
        return _positive(completed), _positive(dead)


def _positive(h: dict[str, str]) -> dict[str, int]:
    return {k: n for k, v in h.items() if (n := int(v)) > 0}


# KEYS: the counts' start marker, results stream, dead stream, completed counts, dead-letter counts
# Once per arena (the marker): both counts set from what the streams hold, in one script, so that no result
# recorded meanwhile is counted twice or missed (the record and bury scripts count into the same hashes).
# A result counts under its entry's ladder; a dead letter under the ladder its spec names (``ladder_of``).
# Reads each stream whole, once: on an arena of a million results, a second or two of Redis's time.
_COUNT_FROM_STREAMS_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local function count(stream, into, ladder_of)
  local counts, from = {}, '-'
  while true do
    local entries = redis.call('XRANGE', stream, from, '+', 'COUNT', 1000)
    if #entries == 0 then break end
    for _, e in ipairs(entries) do
      local f = {}
      for i = 1, #e[2], 2 do f[e[2][i]] = e[2][i + 1] end
      local ladder = ladder_of(f)
      if type(ladder) == 'string' and ladder ~= '' then counts[ladder] = (counts[ladder] or 0) + 1 end
    end
    from = '(' .. entries[#entries][1]
  end
  redis.call('DEL', into)
  for ladder, n in pairs(counts) do redis.call('HSET', into, ladder, n) end
end
count(KEYS[2], KEYS[4], function(f) return f['ladder'] end)
count(KEYS[3], KEYS[5], function(f)
  local ok, spec = pcall(cjson.decode, f['spec'] or '')
  if ok and type(spec) == 'table' then return spec['ladder'] end
  return nil
end)
redis.call('SET', KEYS[1], redis.call('TIME')[1])
return 1
"""


def ladder_of(spec_json: str) -> str | None:
    """The ladder of a queued or dead-lettered spec, read without checking the rest of it (a malformed
    spec still counts under its ladder, if it names one); None if it names none."""
    try:
        spec = json.loads(spec_json)
    except ValueError:
        return None
    ladder = spec.get("ladder") if isinstance(spec, dict) else None
    return ladder if isinstance(ladder, str) and ladder else None
