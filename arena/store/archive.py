"""Where a finished match's record lives, and how it leaves Redis: compressed records, retention, the archive.

A recorded match is stored in two keys, written together by the worker's record script (``arena.play.queue``)::

    pa:result:<id>   the result without its game record: who played, points, boards, stats (JSON, ~1 KB);
                     SET NX on it is the exactly-once gate; lists and ratings read only this.  Never expires.
    pa:record:<id>   the game record, zlib-compressed (bytes, ~7 KB for 8 deals per leg instead of ~65 KB).

Results stored before records were compressed hold the whole result, record included, in ``pa:result:<id>``
("legacy"); they are read as they are and archived like the others.

The archiver (``Archiver.run_once``, run by ``arena up`` and ``arena archive``) follows the results stream
(how far it has come is kept in the archive directory: ``Progress``) and writes every result, record
included, to ``<archive>/<ab>/<id>.json.gz`` (gzip JSON, fsynced, renamed into place).  Once a record is
on disk its Redis copy is only a cache, and the retention policy
(``Retention``) bounds it: it expires when the match is ``max_age_s`` old, it is deleted when more than
``keep`` newer matches exist, and it is deleted oldest first while Redis uses more than ``high_water`` of
its ``maxmemory``.  A legacy result's key is rewritten without its record once archived.  A record not yet
on disk is never given a TTL, so neither expiry nor eviction can lose it; docs/storage.md says which keys may
be evicted and how Redis should be configured.

``load_result`` is the one way to read a whole result: from the compressed record, the legacy key, or the
archive, whichever holds it.  A record that cannot be read gives ``RecordUnreadable`` naming the match and
what is wrong (the log names the file too).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import logging
import os
import sys
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.client import NEVER_DECODE

from arena.model import ArenaError, MatchResult
from arena.store import keys
from arena.store.redis_server import PASSWORD_FILE_ENV, connect
from arena.store.streams import entry_age_s, id_order, server_ms

log = logging.getLogger(__name__)

ARCHIVE_DIR_ENV = "ARENA_ARCHIVE_DIR"
ZLIB_LEVEL = 6  # level 9 saves under 2 % more on records, for twice the time
BATCH = 100  # results archived per round trip
MAX_RECORD_BYTES = 64 * 1024 * 1024  # a record that inflates beyond this is not ours


class RecordUnreadable(ArenaError):
    """A stored record exists but cannot be read (corrupt archive file, bad compressed bytes, no archive here)."""


# ---------------------------------------------------------------------------- the record's bytes


def pack_record(record_json: str) -> bytes:
    return zlib.compress(record_json.encode(), ZLIB_LEVEL)


def unpack_record(blob: bytes, where: str) -> str:
    try:
        d = zlib.decompressobj()
        raw = d.decompress(blob, MAX_RECORD_BYTES)
        if d.unconsumed_tail or not d.eof:
            raise zlib.error("truncated, or larger than the limit")
        return raw.decode()
    except (zlib.error, UnicodeDecodeError) as e:
        raise RecordUnreadable(f"{where}: the compressed record cannot be read ({e})") from None


def summary_json(result: MatchResult) -> str:
    """What ``pa:result:<id>`` holds: the result's JSON without the record."""
    d = result.to_dict()
    del d["record"]
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------------------- the archive directory


class Archive:
    """One gzip JSON file per match: ``<root>/<first two hex digits of sha256(id)>/<id>.json.gz``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @classmethod
    def from_env(cls) -> Archive | None:
        """The archive named by ``ARENA_ARCHIVE_DIR`` (None if it is not set)."""
        root = os.environ.get(ARCHIVE_DIR_ENV, "")
        return cls(root) if root else None

    def path(self, match_id: str) -> Path:
        return self.root / hashlib.sha256(match_id.encode()).hexdigest()[:2] / f"{match_id}.json.gz"

    def write(self, result: MatchResult, sync_dir: bool = True) -> Path:
        """Write the whole result atomically (temporary file, fsync, rename, fsync of the directory).  With
        ``sync_dir`` False the caller fsyncs the directory (``sync_dirs``), once for a batch of files."""
        path = self.path(result.match_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as f:
            f.write(gzip.compress(result.to_json().encode(), compresslevel=ZLIB_LEVEL, mtime=0))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        if sync_dir:
            sync_dirs([path.parent])
        return path

    def read(self, match_id: str) -> MatchResult | None:
        """The archived result, None if the archive has no file for it; RecordUnreadable if it cannot be read
        (its message says what is wrong, the log also names the file: the public need not know our paths)."""
        path = self.path(match_id)
        try:
            with gzip.open(path, "rb") as f:
                raw = f.read(MAX_RECORD_BYTES + 1)
            if len(raw) > MAX_RECORD_BYTES:
                raise ValueError(f"it inflates beyond {MAX_RECORD_BYTES} bytes")
            result = MatchResult.from_json(raw)
            if result.match_id != match_id:
                raise ValueError(f"it holds match {result.match_id!r}")
        except FileNotFoundError:
            return None
        except (OSError, EOFError, zlib.error, ValueError) as e:  # gzip.BadGzipFile is an OSError
            log.error("archive file %s of match %s is unreadable: %s", path, match_id, e)
            raise RecordUnreadable(f"match {match_id}: its archived record is unreadable ({_short(e)})") from None
        return result


def sync_dirs(dirs: Iterable[Path]) -> None:
    """fsync directories, so that the renames into them survive a crash."""
    for d in set(dirs):
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------- reading a result


def load_result(r: redis.Redis, match_id: str, archive: Archive | None = None) -> MatchResult | None:
    """The whole result of a match (record included), wherever it lives; None if there is no result.

    A result key that does not parse (our data gone bad), or a record that is neither in Redis nor readable in
    ``archive``, raises RecordUnreadable naming the match (the log says more)."""
    return _locate(r, match_id, archive)[0]


def _locate(r: redis.Redis, match_id: str, archive: Archive | None) -> tuple[MatchResult | None, str]:
    """``load_result`` and where the record was found: "legacy", "redis", "archive" (or "" for no result)."""
    rr: Any = r  # Any: replies are str (decode_responses=True), which the stubs cannot know
    with rr.pipeline(transaction=False) as p:
        p.get(keys.result(match_id))
        p.execute_command("GET", keys.record(match_id), **{NEVER_DECODE: []})
        raw, blob = p.execute()
    if raw is None:
        return None, ""
    try:
        d = json.loads(raw)
        result = MatchResult.from_dict(d)  # checks the stored result before looking for its record
        if "record" in d:
            return result, "legacy"
        if blob is not None:
            return MatchResult.from_dict({**d, "record": unpack_record(blob, f"match {match_id}")}), "redis"
    except (ValueError, TypeError, KeyError, AttributeError) as e:  # our data gone bad (JSON errors are ValueErrors)
        log.error("match %s: its stored result is unreadable: %s: %s", match_id, type(e).__name__, e)
        raise RecordUnreadable(f"match {match_id}: its stored result is unreadable ({_short(e)})") from None
    if archive is None:
        raise RecordUnreadable(f"match {match_id}: its record is archived, and no archive is configured here")
    archived = archive.read(match_id)
    if archived is None:
        log.error("match %s: record in neither Redis nor %s", match_id, archive.path(match_id))
        raise RecordUnreadable(f"match {match_id}: its record is in neither Redis nor the archive")
    return archived, "archive"


# ---------------------------------------------------------------------------- retention


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
                        result, where = _locate(self.r, match_id, self.archive)
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


def _short(e: Exception) -> str:
    text = str(e) or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "..."


# ---------------------------------------------------------------------------- arena archive


def add_archive_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "archive",
        help="move finished matches' records out of Redis into an archive directory (docs/storage.md)",
    )
    p.add_argument(
        "--redis",
        default=os.environ.get("ARENA_REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="Redis URL, without a password (default $ARENA_REDIS_URL or redis://127.0.0.1:6379/0)",
    )
    p.add_argument(
        "--redis-password-file",
        default=os.environ.get(PASSWORD_FILE_ENV) or None,
        help=f"file holding the Redis password (default ${PASSWORD_FILE_ENV})",
    )
    p.add_argument(
        "--dir", default=os.environ.get(ARCHIVE_DIR_ENV), help=f"the archive directory (default ${ARCHIVE_DIR_ENV})"
    )
    add_retention_args(p)
    p.add_argument("--once", action="store_true", help="one pass, then exit (default: a pass every --interval-s)")
    p.add_argument("--interval-s", type=float, default=5.0)
    p.set_defaults(func=cmd_archive)


def add_retention_args(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The retention flags (``--max-age-s``, ``--keep``; ``arena up`` names them ``--archive-...``)."""
    d = Retention()
    p.add_argument(
        f"--{prefix}max-age-s",
        dest="retention_max_age_s",
        metavar="S",
        type=_limit(float),
        default=d.max_age_s,
        help=f"an archived record stays in Redis until its match is this old (default {d.max_age_s:.0f}; none)",
    )
    p.add_argument(
        f"--{prefix}keep",
        dest="retention_keep",
        metavar="N",
        type=_limit(int),
        default=d.keep,
        help=f"at most this many of the newest records stay in Redis (default {d.keep}; none)",
    )


def retention_of(args: argparse.Namespace) -> Retention:
    """The policy ``add_retention_args`` read; ValueError if it makes no sense."""
    return Retention(max_age_s=args.retention_max_age_s, keep=args.retention_keep)


def _limit(kind: type[float] | type[int]) -> Any:
    """An argparse type: a number, or ``none`` for no limit."""

    def parse(text: str) -> float | int | None:
        return None if text.lower() == "none" else kind(text)

    parse.__name__ = kind.__name__  # argparse names the type in its error message
    return parse


def cmd_archive(args: argparse.Namespace) -> int:
    if not args.dir:
        print(f"error: give --dir or set {ARCHIVE_DIR_ENV}", file=sys.stderr)
        return 2
    try:
        retention = retention_of(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    r = connect(args.redis, password_file=args.redis_password_file)
    archiver = Archiver(r, Archive(args.dir), retention)
    if args.once:
        done = archiver.run_once(max_batches=10**6)
        print(json.dumps({"archived": done.archived, "released": done.released, "unreadable": done.unreadable}))
        return 1 if done.unreadable else 0
    stop = threading.Event()
    try:
        archiver.run(stop, args.interval_s)
    except KeyboardInterrupt:
        stop.set()
    return 0


__all__ = [
    "ARCHIVE_DIR_ENV",
    "Archive",
    "Archiver",
    "Pass",
    "Progress",
    "RecordUnreadable",
    "Retention",
    "load_result",
    "pack_record",
    "summary_json",
    "unpack_record",
]
