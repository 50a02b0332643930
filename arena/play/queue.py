"""The match queue: a Redis Stream read through a consumer group.

Life of a match::

    enqueue ──XADD──▶ pa:q:matches ──XREADGROUP──▶ worker (pending, owned)
                                   ◀─XCLAIM JUSTID── keep_alive (resets idle)
            dead worker's entry ──XCLAIM (owner not live)──▶ another worker
            entry idle for stale_ms ──XAUTOCLAIM(min idle)──▶ another worker
    record_result: SET NX pa:result:<id> + SET pa:record:<id> + XADD pa:results   (one Lua script)
    ack:           XACK + XDEL                               (one transaction)
    too many deliveries: XADD pa:q:dead + XACK + XDEL        (one Lua script)

Exactly-once is the SET NX on the result key: a match may be *played* twice
(its worker looked dead but was only slow), but only the first result is
recorded and appended to the results stream; later ones bump a counter.
Enqueue is idempotent by match id too (SADD on a set of known ids).
The result key holds the result without its game record, which goes compressed into its own key
(``arena.store.archive``: how records are stored, archived and read back).

Needs Redis >= 6.2 (XAUTOCLAIM, XPENDING IDLE); every reply is read as both 6.2 and 7 give it (XAUTOCLAIM's
third value, 7's deleted ids, is never read; XINFO GROUPS' lag, 7 only, is counted where missing).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from arena import metrics
from arena.model import MatchResult, MatchSpec, NotRequeueable
from arena.play.queue_counts import QueueCounts, ladder_of
from arena.store import keys
from arena.store.archive import Archive, load_result, pack_record, summary_json
from arena.store.retry import Script

# XREADGROUP BLOCK must return before the client's socket timeout fires.
MAX_BLOCK_MS = 2000


@dataclass(frozen=True)
class Claimed:
    """A match a worker now owns: the stream entry id, the spec, and how many
    times it has been delivered (1 on first delivery; +1 per XAUTOCLAIM)."""

    msg_id: str
    spec: MatchSpec
    deliveries: int
    reclaimed: bool = False


@dataclass(frozen=True)
class DeadLetter:
    """A match given up on: its entry in the dead-letter stream, why, and the spec to requeue."""

    dead_id: str
    match_id: str
    reason: str
    deliveries: int
    worker: str
    spec_json: str
    ts: float = 0.0  # unix time it was dead-lettered

    @property
    def ladder(self) -> str | None:
        """The spec's ladder (None if the spec is malformed)."""
        return ladder_of(self.spec_json)


class MatchQueue(QueueCounts):
    """The life of a match in the queue (module docstring); what the queue holds is read through
    ``QueueCounts``."""

    def __init__(self, r: redis.Redis, max_deliveries: int = 3) -> None:
        if max_deliveries < 1:
            raise ValueError("max_deliveries must be >= 1")
        # Any: redis-py's stubs type replies as bytes | str and cannot know the
        # client was made with decode_responses=True (see redis_server.connect).
        self.r: Any = r
        self.max_deliveries = max_deliveries
        self._autoclaim_cursor = "0-0"
        self._enqueue = Script(r, _ENQUEUE_LUA)
        self._record = Script(r, _RECORD_LUA)
        self._keep_alive = Script(r, _KEEP_ALIVE_LUA)
        self._bury = Script(r, _DEAD_LETTER_LUA)
        self._requeue = Script(r, _REQUEUE_LUA)
        self.ensure_group()

    # producer -----------------------------------------------------------------

    def enqueue(self, spec: MatchSpec, reservation: str | None = None) -> str | None:
        """Queue a match; returns its stream id, or None if that match id was queued before. ``reservation``:
        the field of the feeder's reservation this match is taken from (``keys.LADDER_RUNS_RESERVED``), one
        off it in the same script, so that a feeder dying between the two leaves no match uncounted."""
        msg_id = self._enqueue(
            keys=[keys.ENQUEUED, keys.MATCH_STREAM, keys.LADDER_RUNS_RESERVED],
            args=[spec.match_id, spec.to_json(), reservation or ""],
        )
        return str(msg_id) if msg_id else None

    # consumer -----------------------------------------------------------------

    def claim(self, worker_id: str, block_ms: int = 1000) -> Claimed | None:
        """Take the next never-delivered match, waiting at most ``block_ms``."""
        block = max(1, min(int(block_ms), MAX_BLOCK_MS))
        resp = self._grouped(
            lambda: self.r.xreadgroup(keys.WORKER_GROUP, worker_id, {keys.MATCH_STREAM: ">"}, count=1, block=block)
        )
        for _stream, entries in resp or []:
            for msg_id, fields in entries:
                return self._parse(worker_id, msg_id, fields, deliveries=1, reclaimed=False)
        return None

    def reclaim_stale(self, worker_id: str, min_idle_ms: int) -> Claimed | None:
        """Take over one match whose owner has not kept it alive for ``min_idle_ms``
        (the owner died, hung, or its runner failed and left it for retry)."""
        for _ in range(2):  # at most one wrap-around of the scan cursor
            resp = self._grouped(
                lambda: self.r.xautoclaim(
                    keys.MATCH_STREAM,
                    keys.WORKER_GROUP,
                    worker_id,
                    min_idle_time=min_idle_ms,
                    start_id=self._autoclaim_cursor,
                    count=1,
                )
            )
            cursor, entries = str(resp[0]), resp[1]
            self._autoclaim_cursor = cursor
            for msg_id, fields in entries:
                if not fields:
                    # Entry body deleted while still pending; nothing to play.
                    self.r.xack(keys.MATCH_STREAM, keys.WORKER_GROUP, msg_id)
                    continue
                metrics.record_match_reclaimed()
                return self._parse(worker_id, msg_id, fields, self._deliveries(msg_id), reclaimed=True)
            if cursor == "0-0":
                return None
        return None

    def reclaim_orphaned(self, worker_id: str, live: Collection[str], min_idle_ms: int) -> Claimed | None:
        """Take over one match claimed by a worker that is not in ``live`` (its heartbeat stopped) and not
        kept alive for ``min_idle_ms``: the owner died, so waiting for ``stale_ms`` would only stall its
        bots.  XCLAIM's own idle check makes a late keep-alive of a live owner win the race."""
        pending = self._grouped(
            lambda: self.r.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, "-", "+", 100, idle=min_idle_ms)
        )
        for entry in pending:
            if entry["consumer"] in live or entry["consumer"] == worker_id:
                continue
            msg_id = entry["message_id"]
            got = self.r.xclaim(keys.MATCH_STREAM, keys.WORKER_GROUP, worker_id, min_idle_ms, [msg_id])
            if not got:
                continue  # kept alive (or taken) in the meantime
            _id, fields = got[0]
            if not fields:  # entry body deleted while still pending; nothing to play
                self.r.xack(keys.MATCH_STREAM, keys.WORKER_GROUP, msg_id)
                continue
            metrics.record_match_reclaimed()
            return self._parse(worker_id, msg_id, fields, int(entry["times_delivered"]) + 1, reclaimed=True)
        return None

    def _deliveries(self, msg_id: str) -> int:
        info = self.r.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, msg_id, msg_id, 1)
        return int(info[0]["times_delivered"]) if info else 1

    def _parse(
        self, worker_id: str, msg_id: str, fields: dict[str, str], deliveries: int, reclaimed: bool
    ) -> Claimed | None:
        """Build the Claimed; a malformed entry can never succeed, so bury it now."""
        raw = fields.get("spec", "")
        try:
            spec = MatchSpec.from_json(raw)
        except ValueError as e:
            self._dead_letter(
                msg_id,
                fields.get("match_id", "?"),
                f"malformed spec: {e}",
                raw,
                deliveries,
                worker_id,
                ladder=None,
                bots=(),
            )
            return None
        return Claimed(msg_id, spec, deliveries, reclaimed)

    def keep_alive(self, worker_id: str, msg_id: str) -> bool:
        """Reset the idle time of a match we still own, so it is not reclaimed
        during a long match.  False means another worker has taken it over."""
        return bool(self._keep_alive(keys=[keys.MATCH_STREAM], args=[keys.WORKER_GROUP, worker_id, msg_id]))

    def is_recorded(self, match_id: str) -> bool:
        return bool(self.r.exists(keys.result(match_id)))

    def record_result(self, result: MatchResult, bots: Sequence[str] | None = None) -> bool:
        """Record a result once per match id.  True if this call recorded it,
        False if a result already existed (a duplicate run, counted apart).

        ``bots`` are released from the ladder's in-flight counters (None: the
        distinct bots of the result's seats; a challenge's spec gives none)."""
        release = list(dict.fromkeys(result.seats)) if bots is None else list(bots)
        out = self._record(
            keys=[
                keys.result(result.match_id),
                keys.RESULTS_STREAM,
                keys.DUPLICATE_RESULTS,
                keys.ladder_inflight(result.ladder),
                keys.LAST_ERROR,
                keys.record(result.match_id),
                keys.LADDER_COMPLETED,
                keys.ATTEMPTS,
            ],
            args=[result.match_id, summary_json(result), pack_record(result.record), result.ladder, *release],
        )
        return bool(out)

    def start_attempt(self, match_id: str) -> int:
        """Count an attempt at the match begun (this worker's, about to play it); its number, from 1. Kept
        across deliveries and a dead letter's requeue, cleared once its result is recorded."""
        return int(self.r.hincrby(keys.ATTEMPTS, match_id, 1))

    def ack(self, claimed: Claimed) -> None:
        """Done with the entry: acknowledge and delete it (keeps XLEN = depth)."""
        with self.r.pipeline(transaction=True) as p:
            p.xack(keys.MATCH_STREAM, keys.WORKER_GROUP, claimed.msg_id)
            p.xdel(keys.MATCH_STREAM, claimed.msg_id)
            p.execute()

    def fail(self, claimed: Claimed, worker_id: str, reason: str) -> bool:
        """The runner failed.  Remember why; dead-letter once the match has been
        delivered ``max_deliveries`` times, else leave it pending so it is
        retried (by XAUTOCLAIM once idle).  Returns True if dead-lettered."""
        if claimed.deliveries >= self.max_deliveries:
            self.dead_letter(claimed, worker_id, f"failed {claimed.deliveries} times; last error: {reason}")
            return True
        self.r.hset(keys.LAST_ERROR, claimed.spec.match_id, reason[:2000])
        return False

    def last_error(self, match_id: str) -> str | None:
        v = self.r.hget(keys.LAST_ERROR, match_id)
        return str(v) if v is not None else None

    def dead_letter(self, claimed: Claimed, worker_id: str, reason: str) -> bool:
        s = claimed.spec
        return self._dead_letter(
            claimed.msg_id,
            s.match_id,
            reason,
            s.to_json(),
            claimed.deliveries,
            worker_id,
            ladder=s.ladder,
            bots=s.in_flight_bots(),
        )

    def _dead_letter(
        self,
        msg_id: str,
        match_id: str,
        reason: str,
        spec_json: str,
        deliveries: int,
        worker_id: str,
        ladder: str | None,
        bots: Sequence[str],
    ) -> bool:
        inflight = keys.ladder_inflight(ladder) if ladder else keys.NO_LADDER_INFLIGHT
        out = self._bury(
            keys=[keys.MATCH_STREAM, keys.DEAD_STREAM, keys.LAST_ERROR, inflight, keys.LADDER_DEAD],
            args=[
                keys.WORKER_GROUP,
                msg_id,
                match_id,
                reason[:4000],
                spec_json,
                deliveries,
                worker_id,
                repr(time.time()),
                # counted under the ladder its spec names, a malformed one's too (as the queue's counts do)
                ladder or ladder_of(spec_json) or "",
                *bots,
            ],
        )
        if out:
            metrics.record_match_dead_lettered()
        return bool(out)

    # dead letters ---------------------------------------------------------------

    def dead_letters(self, count: int = 100, after: str | None = None) -> list[DeadLetter]:
        """The oldest ``count`` dead letters (after the entry id ``after``, for paging)."""
        low = "-" if after is None else f"({after}"
        return [_dead_letter(i, f) for i, f in self.r.xrange(keys.DEAD_STREAM, min=low, max="+", count=count)]

    def dead_letter_by_id(self, dead_id: str) -> DeadLetter | None:
        found = self.r.xrange(keys.DEAD_STREAM, min=dead_id, max=dead_id, count=1)
        return _dead_letter(*found[0]) if found else None

    def requeue_dead(self, dead_id: str) -> str | None:
        """Put a dead-lettered match back in the queue (after fixing the cause); its bots are counted in
        flight again (dead-lettering released them).  Returns the new queue entry id, or None if there is
        no such dead letter (already requeued).  Refused if it cannot be played: its spec is
        malformed, or the match has a result already (a late worker recorded it): NotRequeueable."""
        dead = self.dead_letter_by_id(dead_id)
        if dead is None:
            return None
        try:
            spec = MatchSpec.from_json(dead.spec_json)
        except ValueError as e:
            raise NotRequeueable(f"dead letter {dead_id} ({dead.match_id}) cannot be played again: {e}") from None
        out = self._requeue(
            keys=[
                keys.DEAD_STREAM,
                keys.MATCH_STREAM,
                keys.ladder_inflight(spec.ladder),
                keys.result(spec.match_id),
                keys.LADDER_DEAD,
            ],
            args=[dead_id, spec.ladder, *spec.in_flight_bots()],
        )
        if out == "recorded":
            raise NotRequeueable(f"dead letter {dead_id}: match {spec.match_id} has a result already; not requeued")
        return str(out) if out else None

    def get_result(self, match_id: str, archive: Archive | None = None) -> MatchResult | None:
        """The whole result, record included, wherever it is stored (``arena.store.archive.load_result``)."""
        return load_result(self.r, match_id, archive)


def _dead_letter(dead_id: str, f: dict[str, str]) -> DeadLetter:
    return DeadLetter(
        dead_id,
        f.get("match_id", "?"),
        f.get("reason", ""),
        int(f.get("deliveries", 0)),
        f.get("worker", ""),
        f.get("spec", ""),
        float(f.get("ts", 0.0)),
    )


# KEYS: enqueued set, match stream, feeders' reservations.  ARGV: match_id, spec JSON, reservation field ('': none)
_ENQUEUE_LUA = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return false end
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[3], -1) end
return redis.call('XADD', KEYS[2], '*', 'match_id', ARGV[1], 'spec', ARGV[2])
"""

# KEYS: result key, results stream, duplicates counter, ladder inflight hash, last-error hash, record key,
# ladders' completed counts, attempts hash
# ARGV: match_id, result JSON without the record, compressed record, ladder, bots to release...
# The result lives only in the result and record keys; the stream carries the id.
_RECORD_LUA = """
if not redis.call('SET', KEYS[1], ARGV[2], 'NX') then
  redis.call('INCR', KEYS[3])
  return false
end
redis.call('SET', KEYS[6], ARGV[3])
local id = redis.call('XADD', KEYS[2], '*', 'match_id', ARGV[1], 'ladder', ARGV[4])
if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[7], ARGV[4], 1) end
for i = 5, #ARGV do
  local n = tonumber(redis.call('HGET', KEYS[4], ARGV[i]) or '0')
  if n > 0 then redis.call('HINCRBY', KEYS[4], ARGV[i], -1) end
end
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
return id
"""

# KEYS: match stream.  ARGV: group, consumer, msg id
# XPENDING with a consumer filter tells whether we still own the entry; only
# then XCLAIM JUSTID (resets idle, does not bump the delivery count).
_KEEP_ALIVE_LUA = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1, ARGV[2])
if #p == 0 then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
"""

# KEYS: match stream, dead stream, last-error hash, ladder inflight hash, ladders' dead-letter counts
# ARGV: group, msg id, match_id, reason, spec, deliveries, worker, ts, ladder counted ('' for none), bots...
# XACK returning 0 means someone else already finished the entry: do nothing.
_DEAD_LETTER_LUA = """
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return false end
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[3])
if ARGV[9] ~= '' then redis.call('HINCRBY', KEYS[5], ARGV[9], 1) end
for i = 10, #ARGV do
  local n = tonumber(redis.call('HGET', KEYS[4], ARGV[i]) or '0')
  if n > 0 then redis.call('HINCRBY', KEYS[4], ARGV[i], -1) end
end
return redis.call('XADD', KEYS[2], '*', 'match_id', ARGV[3], 'msg_id', ARGV[2], 'reason', ARGV[4],
                  'spec', ARGV[5], 'deliveries', ARGV[6], 'worker', ARGV[7], 'ts', ARGV[8])
"""

# KEYS: dead stream, match stream, the ladder's inflight hash, the match's result key, ladders' dead-letter counts
# ARGV: dead entry id, ladder, bots to count in flight again...
# Checked and done at once, so two operators requeueing the same dead letter queue it once.
_REQUEUE_LUA = """
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #e == 0 then return false end
if redis.call('EXISTS', KEYS[4]) == 1 then return 'recorded' end
local f = e[1][2]
local h = {}
for i = 1, #f, 2 do h[f[i]] = f[i + 1] end
redis.call('XDEL', KEYS[1], ARGV[1])
if tonumber(redis.call('HGET', KEYS[5], ARGV[2]) or '0') > 0 then redis.call('HINCRBY', KEYS[5], ARGV[2], -1) end
for i = 3, #ARGV do redis.call('HINCRBY', KEYS[3], ARGV[i], 1) end
return redis.call('XADD', KEYS[2], '*', 'match_id', h['match_id'], 'spec', h['spec'])
"""
