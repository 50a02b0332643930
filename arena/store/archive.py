"""Where a finished match's record lives: compressed records, the archive directory, and reading a result back.

A recorded match is stored in two keys, written together by the worker's record script (``arena.play.queue``)::

    pa:result:<id>   the result without its game record: who played, points, boards, stats (JSON, ~1 KB);
                     SET NX on it is the exactly-once gate; lists and ratings read only this.  Never expires.
    pa:record:<id>   the game record, zlib-compressed (bytes, ~7 KB for 8 deals per leg instead of ~65 KB).

Results stored before records were compressed hold the whole result, record included, in ``pa:result:<id>``
("legacy"); they are read as they are and archived like the others.

Once archived (``arena.store.archiver``: it writes every result, record included, to
``<archive>/<ab>/<id>.json.gz`` and bounds the Redis copies by the retention policy) a record may be in
Redis, on disk, or both.  ``load_result`` is the one way to read a whole result: from the compressed record,
the legacy key, or the archive, whichever holds it.  A record that cannot be read gives ``RecordUnreadable``
naming the match and what is wrong (the log names the file too).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import threading
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import redis
from redis.client import NEVER_DECODE

from arena.model import ArenaError, MatchResult
from arena.store import keys

log = logging.getLogger(__name__)

ARCHIVE_DIR_ENV = "ARENA_ARCHIVE_DIR"
ZLIB_LEVEL = 6  # level 9 saves under 2 % more on records, for twice the time
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
    return locate_result(r, match_id, archive)[0]


def locate_result(r: redis.Redis, match_id: str, archive: Archive | None) -> tuple[MatchResult | None, str]:
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


def _short(e: Exception) -> str:
    text = str(e) or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "..."


__all__ = [
    "ARCHIVE_DIR_ENV",
    "MAX_RECORD_BYTES",
    "Archive",
    "RecordUnreadable",
    "load_result",
    "locate_result",
    "pack_record",
    "summary_json",
    "sync_dirs",
    "unpack_record",
]
