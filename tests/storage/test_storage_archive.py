"""Bounded storage against a real Redis: compressed records, legacy results, retention, the archive, its
corruption, the bytes a finished match leaves in Redis, and a Redis at its maxmemory."""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from pathlib import Path

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.play.queue import MatchQueue
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.store.archive import Archive, RecordUnreadable, load_result, pack_record, unpack_record
from arena.store.archiver import Archiver, Retention
from arena.store.retry import patiently

from .conftest import make_result, store_legacy

pytestmark = pytest.mark.timeout(120)


def _raw(r: redis.Redis, key: str) -> bytes | None:
    """A key's bytes as stored (the client decodes replies as text)."""
    return redis.Redis(
        connection_pool=redis.ConnectionPool(**{**r.connection_pool.connection_kwargs, "decode_responses": False})
    ).get(key)


def test_a_record_is_stored_compressed_beside_a_result_without_it(r: redis.Redis) -> None:
    result = make_result("m-1", seed=1)
    assert MatchQueue(r).record_result(result)
    summary = json.loads(r.get(keys.result("m-1")))  # type: ignore[arg-type]
    assert "record" not in summary and summary["points"] == list(result.points) and A_B(summary)
    blob = _raw(r, keys.record("m-1"))
    assert blob is not None and zlib.decompress(blob).decode() == result.record
    assert len(blob) * 4 < len(result.record)  # a real 8-deal record compresses well over 4x
    assert load_result(r, "m-1") == result == MatchQueue(r).get_result("m-1")


def A_B(summary: dict[str, object]) -> bool:
    return summary["seats"] == ["b-alpha", "b-beta", "b-alpha", "b-beta"]


def test_a_duplicate_result_is_refused_and_does_not_touch_the_stored_record(r: redis.Redis) -> None:
    q = MatchQueue(r)
    first, second = make_result("m-dup", seed=1), make_result("m-dup", seed=2)
    assert q.record_result(first) and not q.record_result(second)
    assert q.get_result("m-dup") == first and q.duplicate_results() == 1


def test_legacy_uncompressed_results_still_load_and_are_archived(r: redis.Redis, tmp_path: Path) -> None:
    old = make_result("m-old", seed=3)
    store_legacy(r, old)
    assert load_result(r, "m-old") == old
    archive = Archive(tmp_path)
    done = Archiver(r, archive, Retention(max_age_s=None, keep=None)).run_once()
    assert done.archived == 1
    # Once on disk, the key keeps the result without its record, and the whole result loads from the archive.
    assert "record" not in json.loads(r.get(keys.result("m-old")))  # type: ignore[arg-type]
    assert load_result(r, "m-old", archive) == old
    with pytest.raises(RecordUnreadable, match="m-old: its record is archived, and no archive is configured"):
        load_result(r, "m-old")


def test_age_retention_moves_old_records_out_of_redis_and_they_still_load(r: redis.Redis, tmp_path: Path) -> None:
    q, archive = MatchQueue(r), Archive(tmp_path)
    results = [make_result(f"m-{i}", seed=i) for i in range(3)]
    for res in results:
        q.record_result(res)
    # Ages of seconds, not tenths: the fresh record must still be there when looked at below, after the
    # archiving, which a loaded machine can make take longer than 0.2 s.
    time.sleep(2.5)
    fresh = make_result("m-fresh", seed=9)
    q.record_result(fresh)
    # Older than 2 s leaves Redis; every result is archived at once, whatever its age.
    done = Archiver(r, archive, Retention(max_age_s=2.0, keep=None)).run_once()
    assert done.archived == 4
    assert all(archive.path(m).exists() for m in ("m-0", "m-1", "m-2", "m-fresh"))
    time.sleep(0.05)  # the old copies were given 1 ms to live
    assert [r.exists(keys.record(res.match_id)) for res in results] == [0, 0, 0]
    assert 0 < r.pttl(keys.record("m-fresh")) <= 2000  # stays until it is 2 s old
    for res in [*results, fresh]:
        assert load_result(r, res.match_id, archive) == res
    assert r.exists(*[keys.result(res.match_id) for res in [*results, fresh]]) == 4  # the gate never goes


def test_count_retention_keeps_only_the_newest_records_in_redis(r: redis.Redis, tmp_path: Path) -> None:
    q, archive = MatchQueue(r), Archive(tmp_path)
    results = [make_result(f"m-{i}", seed=i, deals=2) for i in range(5)]
    for res in results:
        q.record_result(res)
    archiver = Archiver(r, archive, Retention(max_age_s=None, keep=2))
    assert archiver.run_once().released == 3
    assert [r.exists(keys.record(res.match_id)) for res in results] == [0, 0, 0, 1, 1]
    assert r.ttl(keys.record("m-4")) == -1  # no age limit: no TTL
    # A new result pushes one more out; a pass with nothing new does nothing.
    late = make_result("m-5", seed=5, deals=2)
    q.record_result(late)
    assert archiver.run_once().released == 1 and r.exists(keys.record("m-3")) == 0
    assert archiver.run_once() == type(archiver.run_once())()
    for res in [*results, late]:
        assert load_result(r, res.match_id, archive) == res


def test_a_corrupt_archive_file_gives_a_clear_error_and_nothing_else_breaks(r: redis.Redis, tmp_path: Path) -> None:
    q, archive = MatchQueue(r), Archive(tmp_path)
    results = [make_result(f"m-{i}", seed=i, deals=2) for i in range(3)]
    for res in results:
        q.record_result(res)
    Archiver(r, archive, Retention(max_age_s=None, keep=0)).run_once()
    assert r.exists(*[keys.record(res.match_id) for res in results]) == 0
    archive.path("m-1").write_bytes(b"garbage, not gzip")
    with pytest.raises(RecordUnreadable, match=r"match m-1: its archived record is unreadable \(Not a gzipped file"):
        load_result(r, "m-1", archive)
    good = gzip.compress(results[2].to_json().encode())
    archive.path("m-2").write_bytes(good[: len(good) // 2])  # truncated
    with pytest.raises(RecordUnreadable, match="match m-2: its archived record is unreadable"):
        load_result(r, "m-2", archive)
    archive.path("m-2").write_bytes(gzip.compress(results[0].to_json().encode()))  # another match's file
    with pytest.raises(RecordUnreadable, match=r"m-2: .*it holds match 'm-0'"):
        load_result(r, "m-2", archive)
    archive.path("m-2").unlink()
    with pytest.raises(RecordUnreadable, match="m-2: its record is in neither Redis nor the archive"):
        load_result(r, "m-2", archive)
    assert load_result(r, "m-0", archive) == results[0]  # the others are untouched
    # The summaries (lists, ratings) never needed the archive.
    assert Ratings(r).process("u", count=10) == 3


def test_a_corrupt_compressed_record_in_redis_is_named_and_kept_as_found(r: redis.Redis, tmp_path: Path) -> None:
    q = MatchQueue(r)
    res, fine = make_result("m-z", seed=1, deals=2), make_result("m-fine", seed=2, deals=2)
    q.record_result(res)
    q.record_result(fine)
    r.set(keys.record("m-z"), b"\x78\x9cnot zlib")
    with pytest.raises(RecordUnreadable, match="match m-z: the compressed record cannot be read"):
        load_result(r, "m-z")
    # The archiver archives the others, and keeps the bad one's bytes before its Redis copy is released.
    archive = Archive(tmp_path)
    done = Archiver(r, archive, Retention(max_age_s=None, keep=0)).run_once()
    assert (done.archived, done.unreadable, done.released) == (1, 1, 2)
    assert (tmp_path / "unreadable" / "m-z.record.zlib").read_bytes() == b"\x78\x9cnot zlib"
    assert json.loads((tmp_path / "unreadable" / "m-z.result").read_text())["match_id"] == "m-z"
    assert load_result(r, "m-fine", archive) == fine


def test_a_bad_result_key_is_unreadable_before_any_record_is_looked_for(r: redis.Redis) -> None:
    r.set(keys.result("m-bad"), '{"match_id": "m-bad"}')
    with pytest.raises(RecordUnreadable, match=r"^match m-bad: its stored result is unreadable \(.*MatchResult"):
        load_result(r, "m-bad")
    assert load_result(r, "m-none") is None


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=3000))
def test_pack_and_unpack_are_inverse(text: str) -> None:
    assert unpack_record(pack_record(text), "x") == text


def test_unpack_refuses_a_bomb() -> None:
    bomb = zlib.compress(b"[" + b" " * (65 * 1024 * 1024) + b"]", 9)
    with pytest.raises(RecordUnreadable, match="larger than the limit"):
        unpack_record(bomb, "bomb")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_age_s": -1}, "max_age_s must be >= 0"),
        ({"keep": -1}, "keep must be >= 0"),
        ({"low_water": 0.9, "high_water": 0.8}, "low_water <= high_water"),
    ],
)
def test_retention_refuses_nonsense(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Retention(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- what a match costs in Redis


def _per_match_bytes(r: redis.Redis, match_id: str) -> int:
    """MEMORY USAGE of every key that exists because of this match, plus its share of the shared ones."""
    own = [keys.result(match_id), keys.record(match_id), keys.rated(match_id)]
    total = sum(int(r.memory_usage(k, samples=0) or 0) for k in own)
    n = max(1, int(r.xlen(keys.RESULTS_STREAM)))
    shared = [keys.RESULTS_STREAM, keys.ENQUEUED]
    return total + sum(int(r.memory_usage(k, samples=0) or 0) for k in shared) // n


def test_an_archived_8_deal_match_leaves_at_most_10_kb_in_redis(r: redis.Redis, tmp_path: Path) -> None:
    q, ratings = MatchQueue(r), Ratings(r)
    results = [make_result(f"m-{i:03d}", seed=i) for i in range(40)]
    for res in results:
        assert res.deals_played == 16  # 8 per leg
        q.record_result(res)
    ratings.process("u", count=100)
    before = max(_per_match_bytes(r, res.match_id) for res in results)
    expired = int(r.info("stats")["expired_keys"])
    Archiver(r, Archive(tmp_path), Retention(max_age_s=0, keep=None)).run_once()
    # The records expire at once; Redis frees an expired key's memory when its expiry cycle (ten times a
    # second) comes round to it, which MEMORY USAGE does not wait for.
    deadline = time.monotonic() + 30
    while int(r.info("stats")["expired_keys"]) < expired + len(results) and time.monotonic() < deadline:
        time.sleep(0.05)
    after = max(_per_match_bytes(r, res.match_id) for res in results)
    # Before archiving the compressed record dominates (~10 KB of random latencies); after, the summary does.
    assert before > 8_000
    assert after <= 10 * 1024, after
    assert after <= 3_000  # what it is in fact: the summary with its stats, the rated marker, a stream entry


# --------------------------------------------------------------------------- Redis at its maxmemory


def test_a_redis_at_maxmemory_keeps_accepting_results_while_the_archiver_runs(r: redis.Redis, tmp_path: Path) -> None:
    """Recording 150 matches of ~11 KB each (1.6 MB) into 1 MB of room: without the archiver, Redis refuses
    writes (OOM); with it, every result is recorded and every replay loads."""
    r.config_set("maxmemory-policy", "noeviction")
    base = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", base + 1024 * 1024)
    q, archive = MatchQueue(r), Archive(tmp_path)
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(200):
                q.record_result(make_result(f"m-x{i:03d}", seed=i))
        refused_at = int(r.xlen(keys.RESULTS_STREAM))
        archiver = Archiver(r, archive, Retention(max_age_s=None, keep=None))
        for i in range(150):
            if i % 10 == 0:
                archiver.run_once()  # what the archiver thread does every few seconds
            assert q.record_result(make_result(f"m-{i:03d}", seed=i))
        archiver.run_once()
        assert int(r.xlen(keys.RESULTS_STREAM)) == refused_at + 150
        for i in range(150):
            assert load_result(r, f"m-{i:03d}", archive) is not None
    finally:
        r.config_set("maxmemory", 0)


def test_under_volatile_lru_redis_evicts_only_archived_copies(r: redis.Redis, tmp_path: Path) -> None:
    """The policy docs/storage.md recommends: at maxmemory Redis itself evicts keys with a TTL, and only an
    archived record's copy (and a heartbeat) has one.  The archiver's own release is off here (high water at
    100 %): Redis's eviction alone makes the room, and takes nothing that is not on disk."""
    r.config_set("maxmemory-policy", "volatile-lru")
    base = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", base + 1024 * 1024)
    q, archive = MatchQueue(r), Archive(tmp_path)
    archiver = Archiver(r, archive, Retention(max_age_s=3600, keep=None, high_water=1.0, low_water=1.0))
    evicted = int(r.info("stats")["evicted_keys"])
    try:
        for i in range(200):
            if i % 10 == 0:
                archiver.run_once()
            assert q.record_result(make_result(f"m-{i:03d}", seed=i))
        archiver.run_once()
        assert int(r.info("stats")["evicted_keys"]) > evicted  # Redis did make room itself
        assert int(r.xlen(keys.RESULTS_STREAM)) == 200
        assert r.exists(*[keys.result(f"m-{i:03d}") for i in range(200)]) == 200  # no gate was evicted
        for i in range(200):
            assert load_result(r, f"m-{i:03d}", archive) is not None
    finally:
        r.config_set("maxmemory", 0)
        r.config_set("maxmemory-policy", "noeviction")


def test_a_result_refused_at_maxmemory_waits_and_is_recorded_once_the_archiver_makes_room(
    r: redis.Redis, tmp_path: Path
) -> None:
    """What a worker does with a played match when Redis is full: OOM counts as "Redis is down for now"
    (``retry.REDIS_DOWN``), so it waits the refusal out instead of failing the match."""
    r.config_set("maxmemory-policy", "noeviction")
    q = MatchQueue(r)
    for i in range(40):
        q.record_result(make_result(f"m-{i:03d}", seed=i))
    # 100 KB less than it uses: every write is refused until at least that much is freed.
    r.config_set("maxmemory", int(r.info("memory")["used_memory"]) - 100 * 1024)
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            q.record_result(make_result("m-refused", seed=499))
        played = make_result("m-played", seed=500)
        recorded: list[bool] = []
        worker = threading.Thread(target=lambda: recorded.append(patiently(lambda: q.record_result(played), 30)))
        worker.start()
        time.sleep(1.0)
        assert worker.is_alive() and not recorded  # refused, and waiting
        Archiver(r, Archive(tmp_path), Retention(max_age_s=None, keep=0)).run_once()  # DELs are allowed when full
        worker.join(timeout=30)
        assert recorded == [True]
        assert load_result(r, "m-played", Archive(tmp_path)) == played
    finally:
        r.config_set("maxmemory", 0)
