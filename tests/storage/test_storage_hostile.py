"""Storage under attack, against a real Redis: the exactly-once gate after a record has left Redis, a gzip bomb
in the archive directory, and a compression bomb in a record key (each fails its own match only, quickly and
with a bounded allocation), and match ids that would lead the web pages out of the archive directory."""

from __future__ import annotations

import dataclasses
import gzip
import json
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest
import redis

from arena.play.queue import MatchQueue
from arena.rating.ratings import Ratings
from arena.service import Arena
from arena.store import keys
from arena.store.archive import MAX_RECORD_BYTES, Archive, RecordUnreadable, load_result
from arena.store.archiver import Archiver, Retention
from arena.web import serve_web

from .conftest import make_result

pytestmark = pytest.mark.timeout(120)


def test_a_result_recorded_again_after_its_record_was_archived_is_refused(r: redis.Redis, tmp_path: Path) -> None:
    q, archive = MatchQueue(r), Archive(tmp_path)
    first, again = make_result("m-once", seed=1, deals=2), make_result("m-once", seed=2, deals=2)
    assert q.record_result(first)
    assert Ratings(r).process("u", count=10) == 1
    done = Archiver(r, archive, Retention(max_age_s=None, keep=0)).run_once()
    assert done.archived == 1 and r.exists(keys.record("m-once")) == 0  # only the archive holds it now
    # A worker that played the match a second time (a reclaim after a stall) reports it again.
    assert not q.record_result(again)
    assert q.duplicate_results() == 1 and q.results_count() == 1
    assert load_result(r, "m-once", archive) == first
    assert r.exists(keys.record("m-once")) == 0, "the refused result left no record in Redis"
    assert Ratings(r).process("u", count=10) == 0, "nothing more to rate"


def _gzip_bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    chunk = b" " * (1 << 20)
    return b"".join([*(c.compress(chunk) for _ in range(size >> 20)), c.flush()])


def test_a_gzip_bomb_in_the_archive_fails_its_own_match_only(r: redis.Redis, tmp_path: Path) -> None:
    q, archive = MatchQueue(r), Archive(tmp_path)
    results = [make_result(f"m-b{i}", seed=i, deals=2) for i in range(2)]
    for res in results:
        q.record_result(res)
    Archiver(r, archive, Retention(max_age_s=None, keep=0)).run_once()
    bomb = _gzip_bomb(MAX_RECORD_BYTES + (8 << 20))
    assert len(bomb) < MAX_RECORD_BYTES // 200  # ~70 KB on disk
    archive.path("m-b0").write_bytes(bomb)
    with pytest.raises(RecordUnreadable, match=f"m-b0: its archived record is unreadable .*beyond {MAX_RECORD_BYTES}"):
        load_result(r, "m-b0", archive)
    assert load_result(r, "m-b1", archive) == results[1]
    assert gzip.decompress(archive.path("m-b1").read_bytes())  # the other file untouched


def test_a_compression_bomb_in_a_record_key_fails_its_own_match_only(r: redis.Redis, tmp_path: Path) -> None:
    q = MatchQueue(r)
    results = [make_result(f"m-z{i}", seed=i, deals=2) for i in range(2)]
    for res in results:
        q.record_result(res)
    c = zlib.compressobj(9)
    bomb = b"".join([*(c.compress(b"[" * (1 << 20)) for _ in range((MAX_RECORD_BYTES >> 20) + 4)), c.flush()])
    r.set(keys.record("m-z0"), bomb)
    with pytest.raises(RecordUnreadable, match="match m-z0: the compressed record cannot be read"):
        load_result(r, "m-z0")
    assert load_result(r, "m-z1") == results[1]


def test_a_match_id_cannot_lead_the_web_pages_out_of_the_archive(r: redis.Redis, tmp_path: Path) -> None:
    archive = Archive(tmp_path / "archive")
    planted = make_result("evil", seed=3, deals=2)
    # A file outside the archive, where "<archive>/<xx>/../../evil.json.gz" would lead. (No result can be
    # stored under such an id: MatchResult refuses it, so the web's own check of the id is the second wall.)
    (tmp_path / "evil.json.gz").write_bytes(gzip.compress(planted.to_json().encode()))
    with pytest.raises(ValueError, match="match_id"):
        dataclasses.replace(planted, match_id="../../evil")
    server, thread = serve_web(r, "127.0.0.1", 0, archive)
    host, port = server.server_address
    try:
        for path in ("/replay/..%2F..%2Fevil", "/replay/..%2F..%2Fevil/record.json", "/api/replay/..%2F..%2Fevil"):
            try:
                with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10) as resp:
                    status, body = resp.status, resp.read()
            except urllib.error.HTTPError as e:
                with e:
                    status, body = e.code, e.read()
            assert status == 404 and planted.record[:40].encode() not in body, path
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


SECRET = "SECRET-last-words /home/bots/b-beta/key 10.0.0.5:50051"


def test_a_record_stored_with_private_text_is_served_without_it(r: redis.Redis, tmp_path: Path) -> None:
    """A record stored before the runner cleaned records (or by an older worker): the bot's refused answer,
    the transport's error and a forfeit reason quoting the bot's last words. The viewer's payload drops them at
    read time; the download link beside it and GetReplay served the record as stored."""
    base = make_result("m-leak", seed=4, deals=2)
    record = json.loads(base.record)
    record["legs"][0]["deals"][0]["actions"][0].update(answer=f"answer {SECRET}", error=f"error {SECRET}")
    reason = f"bot b-beta crashed; last words: '{SECRET}'"
    forfeit = {"team": 1, "bot": "b-beta", "reason": reason}
    record["result"].update(forfeit=forfeit, reason=f"forfeit: {reason}")
    record["legs"][1]["result"].update(forfeit=dict(forfeit), reason=f"forfeit: {reason}")
    assert MatchQueue(r).record_result(dataclasses.replace(base, record=json.dumps(record), forfeit=reason))
    summary, served = Arena(r).replay("m-leak")  # what GetReplay answers (and MatchHistory, of the summary)
    assert summary.forfeit == "bot b-beta crashed"
    assert "SECRET" not in served
    clean = json.loads(served)
    assert clean["result"]["forfeit"]["reason"] == "bot b-beta crashed"
    assert clean["result"]["reason"] == "forfeit: bot b-beta crashed"
    assert clean["legs"][0]["deals"] == [
        {**d, "actions": [{k: v for k, v in a.items() if k not in ("answer", "error")} for a in d["actions"]]}
        for d in record["legs"][0]["deals"]
    ], "nothing else of the record changed"
    server, thread = serve_web(r, "127.0.0.1", 0)
    host, port = server.server_address
    try:
        for path in ("/replay/m-leak/record.json", "/replay/m-leak", "/api/replay/m-leak"):
            with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10) as resp:
                assert resp.status == 200 and b"SECRET" not in resp.read(), path
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_clean_record_is_served_byte_for_byte(r: redis.Redis) -> None:
    result = make_result("m-clean", seed=5, deals=2)
    MatchQueue(r).record_result(result)
    assert Arena(r).replay("m-clean")[1] == result.record
