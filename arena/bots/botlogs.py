"""Owners' logs: what each bot wrote to stderr in each match, for its owner (or the admin) alone.

After every match the runner keeps, per bot, the stderr its instances wrote during that match (each
instance's log file read from where it stood when the match began), at most ``MATCH_LOG_BYTES`` (the
end of it, where the reason for a failure usually is), headed by the referee's own account of the bot's
problems (the full forfeit reason, its first errors): what public pages never show. The last
``KEEP_MATCHES`` matches are kept per bot.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from arena.model.serial import Record, check_float, check_int, check_str
from arena.store import keys

MATCH_LOG_BYTES = 64 << 10
KEEP_MATCHES = 20


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
    def __init__(self, r: redis.Redis) -> None:
        self.r: Any = r

    def add(self, bot_id: str, log: BotLog) -> None:
        with self.r.pipeline(transaction=True) as p:
            p.lpush(keys.bot_logs(bot_id), log.to_json())
            p.ltrim(keys.bot_logs(bot_id), 0, KEEP_MATCHES - 1)
            p.execute()

    def recent(self, bot_id: str, match_id: str = "") -> list[BotLog]:
        found = [BotLog.from_json(x) for x in self.r.lrange(keys.bot_logs(bot_id), 0, -1)]
        return [x for x in found if not match_id or x.match_id == match_id]


def match_log(header: Sequence[str], parts: Sequence[str], match_id: str, version: int) -> BotLog:
    head = "".join(f"[referee] {line}\n" for line in header)
    body = "".join(parts)
    text = head + body[-MATCH_LOG_BYTES:]
    return BotLog(match_id, version, time.time(), text)
