"""Archived records are still served, by the real API over gRPC and the real web server over HTTP, after
``arena archive`` (a real process) has moved them out of a real Redis; a corrupt archive file is reported
for its match alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api import ApiServer
from arena.cli.stack import Stack, UpConfig
from arena.model import MatchResult
from arena.play.queue import MatchQueue
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.store.archive import Archive
from arena.store.redis_server import EmbeddedRedis
from arena.web import serve_web

from .conftest import make_result, store_legacy

pytestmark = pytest.mark.timeout(120)
TIMEOUT = 10


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode()


def _embedded(page: str) -> dict[str, Any]:
    m = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', page, re.S)
    assert m, "the replay page embeds its data"
    data: dict[str, Any] = json.loads(m.group(1))
    return data


@pytest.fixture
def stored(r: redis.Redis) -> list[MatchResult]:
    """Four matches as a worker records them and one stored the old way, all rated."""
    q = MatchQueue(r)
    results = [make_result(f"m-{i}", seed=i, deals=2, finished=1_700_000_000.0 + i) for i in range(4)]
    for res in results:
        assert q.record_result(res)
    old = make_result("m-legacy", seed=7, deals=2, finished=1_700_000_100.0)
    store_legacy(r, old)
    Ratings(r).process("u", count=10)
    return [*results, old]


@pytest.fixture
def served(r: redis.Redis, tmp_path: Path) -> Iterator[tuple[arena_pb2_grpc.ArenaStub, str, Archive]]:
    archive = Archive(tmp_path / "archive")
    api = ApiServer(r, "127.0.0.1", 0, feed_ladders=False, gauges_interval_s=0, archive=archive).start()
    web, thread = serve_web(r, "127.0.0.1", 0, archive)
    try:
        with grpc.insecure_channel(api.address) as channel:
            yield arena_pb2_grpc.ArenaStub(channel), f"http://127.0.0.1:{web.server_address[1]}", archive
    finally:
        web.shutdown()
        web.server_close()
        thread.join(timeout=10)
        api.stop(grace_s=1.0)


def _archive_cli(url: str, archive: Archive, *extra: str) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "archive", "--redis", url, "--dir", str(archive.root), "--once", *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    reply: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return reply


def test_archived_records_are_still_served_by_the_api_and_the_web_pages(
    r: redis.Redis,
    module_redis: EmbeddedRedis,
    stored: list[MatchResult],
    served: tuple[arena_pb2_grpc.ArenaStub, str, Archive],
) -> None:
    stub, base, archive = served
    assert _archive_cli(module_redis.url, archive, "--keep", "0") == {"archived": 5, "released": 4, "unreadable": 0}
    # Nothing of any record is left in Redis: no record keys, and the legacy key holds its summary alone.
    assert list(r.scan_iter(keys.record("*"))) == []
    assert "record" not in json.loads(r.get(keys.result("m-legacy")))  # type: ignore[arg-type]
    listed = stub.MatchHistory(arena_pb2.MatchHistoryRequest(limit=10), timeout=TIMEOUT)
    assert sorted(m.match_id for m in listed.matches) == sorted(res.match_id for res in stored)
    for res in stored:
        reply = stub.GetReplay(arena_pb2.GetReplayRequest(match_id=res.match_id), timeout=TIMEOUT)
        assert reply.record_json == res.record and list(reply.match.scores) == list(res.points)
        status, page = _get(f"{base}/replay/{res.match_id}")
        assert status == 200
        record = json.loads(res.record)
        shown = _embedded(page)
        assert [len(leg["deals"]) for leg in shown["legs"]] == [len(leg["deals"]) for leg in record["legs"]]
        status, body = _get(f"{base}/api/replay/{res.match_id}")
        assert status == 200 and json.loads(body) == shown
    status, page = _get(f"{base}/matches")
    assert status == 200 and all(f"/replay/{res.match_id}" in page for res in stored)


def test_a_corrupt_archive_file_fails_its_own_replay_clearly_and_nothing_else(
    r: redis.Redis,
    module_redis: EmbeddedRedis,
    stored: list[MatchResult],
    served: tuple[arena_pb2_grpc.ArenaStub, str, Archive],
) -> None:
    stub, base, archive = served
    _archive_cli(module_redis.url, archive, "--keep", "0")
    archive.path("m-2").write_bytes(b"\x1f\x8b\x08\x00 a gzip header and then nonsense")
    with pytest.raises(grpc.RpcError) as e:
        stub.GetReplay(arena_pb2.GetReplayRequest(match_id="m-2"), timeout=TIMEOUT)
    assert e.value.code() == grpc.StatusCode.DATA_LOSS
    assert e.value.details().startswith("match m-2: its archived record is unreadable (")
    assert str(archive.root) not in e.value.details()  # the public does not learn our paths
    status, page = _get(f"{base}/replay/m-2")
    assert status == 500 and "match m-2: its archived record is unreadable" in page
    status, body = _get(f"{base}/api/replay/m-2")
    assert status == 500 and json.loads(body)["error"].startswith("match m-2: its archived record is unreadable")
    # Every other match, the lists and the health check are as they were.
    for res in stored:
        if res.match_id != "m-2":
            assert stub.GetReplay(arena_pb2.GetReplayRequest(match_id=res.match_id), timeout=TIMEOUT).record_json
            assert _get(f"{base}/replay/{res.match_id}")[0] == 200
    assert len(stub.MatchHistory(arena_pb2.MatchHistoryRequest(limit=10), timeout=TIMEOUT).matches) == len(stored)
    assert _get(f"{base}/matches")[0] == 200 and _get(f"{base}/healthz") == (200, "ok\n")


@pytest.mark.timeout(90)
def test_arena_up_archives_results_and_serves_them_from_its_data_dir(tmp_path: Path) -> None:
    """The stack of ``arena up``: its archiver thread writes each result under <data dir>/archive, and its API
    and web pages read that archive once Redis no longer has the record."""
    stack = Stack(UpConfig(data_dir=tmp_path / "arena", workers=0, api_port=0, web_port=0, metrics_port=None))
    stack.start()
    try:
        assert stack.r is not None and stack.api is not None
        result = make_result("m-up", seed=3, deals=2)
        assert MatchQueue(stack.r).record_result(result)
        assert stack.archive.root == (tmp_path / "arena" / "archive").resolve()
        path = stack.archive.path("m-up")
        deadline = time.monotonic() + 30  # the archiver passes every 5 s
        # Archived is both: the file written, then (only once it is) the record's expiry set. Waiting for the
        # file alone and reading the TTL at once raced the archiver's second step (-1 in a CI-like run).
        while not (path.exists() and stack.r.ttl(keys.record("m-up")) > 0):
            assert time.monotonic() < deadline, "arena up's archiver did not archive the result"
            time.sleep(0.2)
        assert 0 < stack.r.ttl(keys.record("m-up")) <= 24 * 3600  # the default retention age
        stack.r.delete(keys.record("m-up"))  # what the retention does, later
        with grpc.insecure_channel(stack.api.address) as channel:
            reply = arena_pb2_grpc.ArenaStub(channel).GetReplay(
                arena_pb2.GetReplayRequest(match_id="m-up"), timeout=TIMEOUT
            )
        assert reply.record_json == result.record
        assert _get(f"http://127.0.0.1:{stack.web_port}/replay/m-up")[0] == 200
    finally:
        stack.stop()


def test_arena_archive_refuses_a_nonsense_policy_and_takes_none_for_no_limit(
    r: redis.Redis, module_redis: EmbeddedRedis, stored: list[MatchResult], tmp_path: Path
) -> None:
    base = [sys.executable, "-m", "arena.cli", "archive", "--redis", module_redis.url, "--dir", str(tmp_path), "--once"]
    bad = subprocess.run([*base, "--keep", "-3"], capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "error: retention: keep must be >= 0, got -3" in bad.stderr
    nodir = subprocess.run(
        [*base[:-3], "--once"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "ARENA_ARCHIVE_DIR"},
    )
    assert nodir.returncode == 2 and "give --dir or set ARENA_ARCHIVE_DIR" in nodir.stderr
    # No limit at all: everything archived, every record stays in Redis, without a TTL.
    assert _archive_cli(module_redis.url, Archive(tmp_path), "--keep", "none", "--max-age-s", "none") == {
        "archived": 5,
        "released": 0,
        "unreadable": 0,
    }
    assert [r.ttl(keys.record(res.match_id)) for res in stored[:4]] == [-1] * 4
