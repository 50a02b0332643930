"""How a finished match's record leaves Redis: the archiver and the retention policy.

The archiver (``Archiver.run_once``, run by ``arena up`` and ``arena archive``) follows the results stream
(how far it has come is kept in the archive directory: ``Progress``) and writes every result, record
included, to the archive (``arena.store.archive.Archive``: gzip JSON, fsynced, renamed into place).  Once a
record is on disk its Redis copy is only a cache, and the retention policy
(``Retention``) bounds it: it expires when the match is ``max_age_s`` old, it is deleted when more than
``keep`` newer matches exist, and it is deleted oldest first while Redis uses more than ``high_water`` of
its ``maxmemory``.  A legacy result's key is rewritten without its record once archived.  A record not yet
on disk is never given a TTL, so neither expiry nor eviction can lose it; docs/storage.md says which keys may
be evicted and how Redis should be configured.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.client import NEVER_DECODE

from arena.model import MatchResult
from arena.store import keys
from arena.store.archive import Archive, RecordUnreadable, locate_result, summary_json, sync_dirs
from arena.store.streams import entry_age_s, id_order, server_ms

log = logging.getLogger(__name__)

BATCH = 100  # results archived per round trip


@dataclass(frozen=True)
class Retention:
    """How long a record stays in Redis once it is archived (docs/storage.md)."""

    max_age_s: float | None = 24 * 3600.0  # a record leaves Redis when its match is this old (None: no limit)
    keep: int | None = 10_000  # at most this many of the newest records stay in Redis (None: no limit)
    high_water: float = 0.8  # above this fraction of maxmemory, archived records leave Redis oldest first...
    low_water: float = 0.6  # ...until usage is below this one

    def __post_init__(self) -> None:
        if self.max_age_s is not None and self.max_age_s < 0:
            raise ValueError(f"retention: max_age_s must be >= 0, got {self.max_age_s}")
        if self.keep is not None and self.keep < 0:
            raise ValueError(f"retention: keep must be >= 0, got {self.keep}")
        if not 0 < self.low_water <= self.high_water <= 1:
            raise ValueError(
                f"retention: need 0 < low_water <= high_water <= 1, got {self.low_water}, {self.high_water}"
            )


@dataclass(frozen=True)
class Pass:
    """What one archiver pass did."""

    archived: int = 0  # results written to the archive
    released: int = 0  # Redis copies deleted (count limit or memory pressure)
    unreadable: int = 0  # results that could not be read from Redis (logged, skipped)


@dataclass(frozen=True)
class Progress:
    """How far the archiver has come, as results stream ids: every result up to ``archived`` is in the
    archive; every Redis copy of a record up to ``released`` has been deleted.  Kept in the archive
    directory, not in Redis: a Redis at its maxmemory refuses the SET that would record it."""

    archived: str = "0-0"
    released: str = "0-0"


class Archiver:
    """Writes results to the archive and applies the retention policy; ``run_once`` is one pass, which takes
    up where the last one (of any archiver on this archive directory) stopped (``Progress``)."""

    def __init__(self, r: redis.Redis, archive: Archive, retention: Retention | None = None) -> None:
        self.r: Any = r
        self.archive = archive
        self.retention = retention or Retention()

    def run_once(self, max_batches: int = 100) -> Pass:
        archived, unreadable = self._archive_new(max_batches)
        released = self._release_beyond_keep(max_batches) + self._release_under_pressure(max_batches)
        return Pass(archived, released, unreadable)

    def run(self, stop: threading.Event, interval_s: float = 5.0) -> None:
        """Passes every ``interval_s`` until ``stop``; Redis errors are logged and the pass retried."""
        while not stop.is_set():
            try:
                done = self.run_once()
                if done.archived or done.released:
                    log.info("archiver: %d archived, %d released from Redis", done.archived, done.released)
            except (redis.RedisError, OSError) as e:
                log.warning("archiver: pass failed (%s); retrying", e)
            stop.wait(interval_s)

    # progress -----------------------------------------------------------------------------

    @property
    def _progress_path(self) -> Path:
        return self.archive.root / "archiver-progress.json"

    def progress(self) -> Progress:
        try:
            d = json.loads(self._progress_path.read_text())
            return Progress(str(d["archived"]), str(d["released"]))
        except FileNotFoundError:
            return Progress()
        except (OSError, ValueError, KeyError, TypeError) as e:
            # Starting over costs time (files rewritten, DELs of absent keys), never data.
            log.error("archiver: %s unreadable (%s); starting from the first result", self._progress_path, e)
            return Progress()

    def _save(self, progress: Progress) -> None:
        self.archive.root.mkdir(parents=True, exist_ok=True)
        tmp = self._progress_path.with_name(f".{self._progress_path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(dataclasses.asdict(progress)))
        os.replace(tmp, self._progress_path)

    # passes -------------------------------------------------------------------------------

    def _archive_new(self, max_batches: int) -> tuple[int, int]:
        archived = unreadable = 0
        for _ in range(max_batches):
            progress = self.progress()
            entries = self.r.xrange(keys.RESULTS_STREAM, min=f"({progress.archived}", max="+", count=BATCH)
            if not entries:
                break
            now_ms = server_ms(self.r)
            done: list[tuple[str, int]] = []  # entry id, how many Redis commands its clean-up queued
            written: list[Path] = []
            with self.r.pipeline(transaction=False) as p:
                for entry_id, fields in entries:
                    match_id = fields.get("match_id", "")
                    try:
                        result, where = locate_result(self.r, match_id, self.archive)
                    except (ValueError, RecordUnreadable) as e:
                        # Kept as found, so that releasing its Redis copy later loses nothing.
                        kept = self._quarantine(match_id)
                        log.error("archiver: result %s (%s) unreadable, kept in %s: %s", match_id, entry_id, kept, e)
                        unreadable += 1
                        result, where = None, ""
                    if result is None or where == "archive":
                        done.append((entry_id, 0))  # nothing to do: no result, or archived by a pass cut short
                        continue
                    written.append(self.archive.write(result, sync_dir=False).parent)
                    archived += 1
                    done.append((entry_id, self._after_archive(p, result, where == "legacy", entry_id, now_ms)))
                sync_dirs(written)  # on disk for good before any Redis copy is given a TTL
                replies = iter(p.execute(raise_on_error=False))
            # Advance over the entries whose clean-up all went through; a failed one (a legacy key's rewrite
            # refused at maxmemory) is taken up again by the next pass.
            last = progress.archived
            for entry_id, n in done:
                errors = [e for e in (next(replies) for _ in range(n)) if isinstance(e, Exception)]
                if errors:
                    log.warning("archiver: clean-up of entry %s failed (%s); retried next pass", entry_id, errors[0])
                    break
                last = entry_id
            self._save(Progress(last, progress.released))
            if last != entries[-1][0]:
                break
        return archived, unreadable

    def _after_archive(self, p: Any, result: MatchResult, legacy: bool, entry_id: str, now_ms: float) -> int:
        """The record is on disk: its Redis copy becomes a cache bounded by the retention age (a legacy
        result, stored whole, keeps only its summary).  Returns how many commands it queued on ``p``."""
        if legacy:
            p.set(keys.result(result.match_id), summary_json(result), xx=True)
            return 1
        max_age = self.retention.max_age_s
        if max_age is None:
            return 0
        age_ms = 1000 * entry_age_s(entry_id, now_ms)
        # PEXPIRE, unlike SET, is allowed at maxmemory.
        p.pexpire(keys.record(result.match_id), max(1, int(max_age * 1000 - age_ms)))
        return 1

    def _quarantine(self, match_id: str) -> Path:
        """Copy a result that cannot be read, as its keys hold it, to ``<archive>/unreadable/``."""
        with self.r.pipeline(transaction=False) as p:
            p.execute_command("GET", keys.result(match_id), **{NEVER_DECODE: []})
            p.execute_command("GET", keys.record(match_id), **{NEVER_DECODE: []})
            raw, blob = p.execute()
        where = self.archive.root / "unreadable"
        where.mkdir(parents=True, exist_ok=True)
        for suffix, data in ((".result", raw), (".record.zlib", blob)):
            if data is not None:
                (where / f"{match_id}{suffix}").write_bytes(data)
        return where

    def _release(self, upto: str, max_batches: int, until_relieved: bool = False) -> int:
        """Delete the Redis copies of archived records after ``Progress.released`` up to ``upto`` (inclusive,
        and never beyond ``Progress.archived``), a batch at a time; with ``until_relieved``, stop once
        Redis is below the low water mark."""
        released = 0
        for _ in range(max_batches):
            progress = self.progress()
            hi = min(upto, progress.archived, key=id_order)
            if id_order(progress.released) >= id_order(hi):
                break
            entries = self.r.xrange(keys.RESULTS_STREAM, min=f"({progress.released}", max=hi, count=BATCH)
            if not entries:
                break
            # DEL is allowed at maxmemory, and frees the room.
            released += int(self.r.delete(*[keys.record(f.get("match_id", "")) for _e, f in entries]))
            self._save(Progress(progress.archived, entries[-1][0]))
            if until_relieved and not self._pressed(self.retention.low_water):
                break
        return released

    def _release_beyond_keep(self, max_batches: int) -> int:
        keep = self.retention.keep
        if keep is None:
            return 0
        if keep == 0:
            return self._release("+", max_batches)
        newest = self.r.xrevrange(keys.RESULTS_STREAM, count=keep + 1)
        if len(newest) <= keep:
            return 0
        return self._release(newest[-1][0], max_batches)  # the newest entry beyond the ``keep`` newest

    def _release_under_pressure(self, max_batches: int) -> int:
        if not self._pressed(self.retention.high_water):
            return 0
        pct = 100 * self.retention.high_water
        log.warning("archiver: Redis is above %d%% of maxmemory; releasing archived records", pct)
        return self._release("+", max_batches, until_relieved=True)

    def _pressed(self, fraction: float) -> bool:
        info = self.r.info("memory")
        limit = int(info.get("maxmemory", 0))
        return limit > 0 and int(info.get("used_memory", 0)) > fraction * limit


__all__ = ["Archiver", "Pass", "Progress", "Retention"]
