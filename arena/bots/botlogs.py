"""Owners' logs: what each bot wrote to stderr in each match, for its owner (or the admin) alone.

After every match the runner keeps, per bot, the stderr its instances wrote during that match (each
instance's log file read from where it stood when the match began), at most ``MATCH_LOG_BYTES`` (the
end of it, where the reason for a failure usually is), headed by the referee's own account of the bot's
problems (the full forfeit reason, its first errors): what public pages never show.

How long they are kept is the arena's (``LogRetention``, from ``Policy.logs_keep_matches``,
``logs_keep_days`` and ``logs_most_matches``): a bot's logs of its last 200 matches and of every match of
the last 7 days, whichever keeps more, but never more than 2,000 matches' (each log is at most 64 KB: that
bounds what one bot's logs can hold in Redis). Each log is a key of its own, listed in a sorted set by the
time it was kept, so a match's log is found, and told apart from an expired one, without reading the others.
Pruning happens as a log is added and deletes at most ``PRUNE_BATCH`` logs at a time: a retention made
shorter drains over the next matches, each add costing a bounded amount.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from arena.bots.limits import Policy
from arena.model.serial import Record, check_float, check_int, check_str
from arena.store import keys

MATCH_LOG_BYTES = 64 << 10
RECENT_SHOWN = 20  # logs `arena bot logs` shows without --match: 20 x 64 KB stays well under a gRPC message
PRUNE_BATCH = 100  # logs one prune deletes at most
DAY_S = 86_400.0


@dataclass(frozen=True)
class BotLog(Record):
    match_id: str
    version: int
    ts: float
    text: str

    def __post_init__(self) -> None:
        check_str("BotLog", "match_id", self.match_id)
        check_int("BotLog", "version", self.version, lo=1)
        check_float("BotLog", "ts", self.ts, lo=0)
        if not isinstance(self.text, str):
            raise ValueError("BotLog.text: expected a string")


@dataclass(frozen=True)
class LogRetention:
    """Which of a bot's logs are kept: those of its last ``matches`` matches and of the last ``days`` days,
    whichever keeps more, but at most ``most``."""

    matches: int = 200
    days: float = 7.0
    most: int = 2000

    def __post_init__(self) -> None:
        if self.matches < 1 or self.days < 0 or self.most < self.matches:
            raise ValueError(
                f"log retention: need matches >= 1, days >= 0 and most >= matches, got matches {self.matches}, "
                f"days {self.days:g}, most {self.most}"
            )

    @classmethod
    def of(cls, policy: Policy) -> LogRetention:
        return cls(policy.logs_keep_matches, float(policy.logs_keep_days), policy.logs_most_matches)

    def describe(self) -> str:
        """The rule in words, for the owner told that a log has expired."""
        matches = "its last match" if self.matches == 1 else f"its last {self.matches} matches"
        days = "the last day" if self.days == 1 else f"the last {self.days:g} days"
        return (
            f"each bot's logs of {matches} and of {days} are kept, whichever keeps more ({self.most} matches at most)"
        )


def read_from(path: Path, offset: int, cap: int = MATCH_LOG_BYTES) -> str:
    """What a log file got since ``offset``: its last ``cap`` bytes of it, noting what was cut."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            end = f.tell()
            start = max(offset, end - cap)
            f.seek(start)
            data = f.read(end - start)
    except OSError:
        return ""
    cut = f"[{start - offset} earlier bytes of this match not kept]\n" if start > offset else ""
    return cut + data.decode("utf-8", "replace")


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class BotLogs:
    """The owners' logs in Redis. ``clock`` is the time pruning measures ``days`` against (tests pass
    their own)."""

    def __init__(
        self, r: redis.Redis, retention: LogRetention | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.r: Any = r
        self.retention = retention or LogRetention()
        self.clock = clock

    def add(self, bot_id: str, log: BotLog) -> None:
        self._migrate(bot_id)
        with self.r.pipeline(transaction=True) as p:
            p.set(keys.bot_log(bot_id, log.match_id), log.to_json())
            p.zadd(keys.bot_log_index(bot_id), {log.match_id: log.ts})
            p.execute()
        self.prune(bot_id)

    def prune(self, bot_id: str) -> int:
        """Delete the bot's logs the retention no longer keeps, at most ``PRUNE_BATCH``; how many went.

        Without a transaction: workers pruning one bot at once each delete only logs past the newest
        ``matches`` when they looked, which later logs only push further back, so none deletes a log
        that should stay."""
        index = keys.bot_log_index(bot_id)
        n = int(self.r.zcard(index))
        beyond = n - self.retention.matches  # the oldest ``beyond`` logs are past the last ``matches``
        if beyond <= 0:
            return 0
        cutoff = self.clock() - self.retention.days * DAY_S
        # Oldest first by rank and by score alike: of the ``beyond`` oldest, those older than the cutoff.
        old = self.r.zrangebyscore(index, "-inf", f"({cutoff!r}", start=0, num=min(beyond, PRUNE_BATCH))
        count = max(len(old), min(n - self.retention.most, PRUNE_BATCH))  # past ``most``, whatever their age
        doomed = old if count == len(old) else self.r.zrange(index, 0, count - 1)
        if doomed:
            with self.r.pipeline(transaction=True) as p:
                p.delete(*(keys.bot_log(bot_id, m) for m in doomed))
                p.zrem(index, *doomed)
                p.execute()
        return len(doomed)

    def recent(self, bot_id: str, match_id: str = "", limit: int = RECENT_SHOWN) -> list[BotLog]:
        """The bot's logs of its last ``limit`` matches, newest first; or of ``match_id`` alone ([] when it
        has none kept)."""
        if match_id:
            raw = self.r.get(keys.bot_log(bot_id, match_id))
            if raw is not None:
                return [BotLog.from_json(raw)]
            return [x for x in self._legacy(bot_id) if x.match_id == match_id][:1]
        ids = self.r.zrevrange(keys.bot_log_index(bot_id), 0, limit - 1)
        raws = self.r.mget([keys.bot_log(bot_id, m) for m in ids]) if ids else []
        found = [BotLog.from_json(raw) for raw in raws if raw is not None]  # (one pruned meanwhile is skipped)
        if len(found) < limit:
            seen = {x.match_id for x in found}
            found += [x for x in self._legacy(bot_id) if x.match_id not in seen][: limit - len(found)]
        return found

    def kept(self, bot_ids: Iterable[str], match_id: str) -> dict[str, bool]:
        """Bot id -> whether its log of ``match_id`` is still kept (one round trip, reading no log)."""
        wanted = list(dict.fromkeys(bot_ids))
        with self.r.pipeline(transaction=False) as p:
            for b in wanted:
                p.zscore(keys.bot_log_index(b), match_id)
                p.exists(keys.bot_logs(b))
            found = p.execute()
        out = {}
        for i, b in enumerate(wanted):
            score, legacy = found[2 * i], found[2 * i + 1]
            out[b] = score is not None or (bool(legacy) and any(x.match_id == match_id for x in self._legacy(b)))
        return out

    def _legacy(self, bot_id: str) -> list[BotLog]:
        """The logs an older arena kept in one list per bot (its last 20), newest first."""
        return [BotLog.from_json(x) for x in self.r.lrange(keys.bot_logs(bot_id), 0, RECENT_SHOWN - 1)]

    def _migrate(self, bot_id: str) -> None:
        """Move an older arena's list of the bot's logs into the keys of today (at most 20 logs, once)."""
        old = self._legacy(bot_id)
        if not old:
            return
        with self.r.pipeline(transaction=True) as p:
            for x in old:
                p.set(keys.bot_log(bot_id, x.match_id), x.to_json(), nx=True)
                p.zadd(keys.bot_log_index(bot_id), {x.match_id: x.ts}, nx=True)
            p.delete(keys.bot_logs(bot_id))
            p.execute()


def match_log(
    header: Sequence[str], parts: Sequence[str], match_id: str, version: int, now: float | None = None
) -> BotLog:
    head = "".join(f"[referee] {line}\n" for line in header)
    body = "".join(parts)
    text = head + body[-MATCH_LOG_BYTES:]
    return BotLog(match_id, version, time.time() if now is None else now, text)
