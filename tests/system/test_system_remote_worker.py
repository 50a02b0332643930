"""A remote worker attached to ``arena up``: a separate ``arena worker`` process, given only up's Redis URL
and a copy of its password file, as on another machine.  ``arena up`` (with no workers of its own, so the
remote one plays every match) is stopped mid-match, by SIGTERM or SIGKILL, and started again on the same
data dir: its Redis comes back at the same address (the port kept in ``redis/redis.port``), and the same
worker process, which finished its match while Redis was away, records it and plays the ladder out.  A
port taken by another process is refused at start, naming the port and its holder."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from system_helpers import REPO, alive, arena_cmd, last_json_line, wait_until, worker_proc
from test_system_up import STOP_BOUND_S, _ladder, _redis_servers_on, _results, _start_up, _stop

from arena.store import keys
from arena.store.redis_server import connect, find_redis_server

WORKER = "remote-1"


def _stopped(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2] in "tT"


def _frozen_in_a_match(r, worker: subprocess.Popen[bytes], log: Path) -> str:
    """SIGSTOP the worker once it has begun a match (its log says so) that it has not recorded yet (checked
    while it is frozen, so it still holds): that match ends only after whatever happens to Redis next.
    Its id."""
    seen = 0
    for _ in range(20):
        begun = wait_until(
            lambda seen=seen: len(found := re.findall(r"playing (\S+) \(delivery", log.read_text())) > seen and found,
            180,
            "the worker to begin a match",
            poll_s=0.02,
        )
        worker.send_signal(signal.SIGSTOP)
        wait_until(lambda: _stopped(worker.pid), 30, "the worker to stop")
        if not r.exists(keys.result(begun[-1])):
            return str(begun[-1])
        worker.send_signal(signal.SIGCONT)  # done with it already: the next one
        seen = len(begun)
    raise AssertionError("the worker was never caught in a match it had not recorded")


def _port(url: str) -> int:
    return int(re.fullmatch(r"redis://127\.0\.0\.1:(\d+)/0", url).group(1))


@pytest.mark.timeout(1200)  # bounds for a loaded machine (load 20: a worker plays ~3 matches in 120 s)
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_remote_worker_plays_on_after_arena_up_restarts(tmp_path: Path, how: signal.Signals) -> None:
    if find_redis_server() is None:
        pytest.skip("no redis-server")
    data, matches, log = tmp_path / "arena", 6, tmp_path / "remote.log"
    up, state = _start_up(data, tmp_path / "up1.log", 0)
    worker = None
    try:
        url = state["redis"]
        port = _port(url)
        assert (data / "redis" / "redis.port").read_text() == f"{port}\n"  # chosen at the first start, kept
        # The worker's own copy of the password, as another machine holds it (a secret file, mode 0600).
        password = tmp_path / "remote" / "redis-password"
        password.parent.mkdir()
        shutil.copyfile(state["redis_password_file"], password)
        password.chmod(0o600)
        worker = worker_proc(
            url, WORKER, log, "--redis-password-file", str(password), "--bot-logs", str(tmp_path), "--log-level", "INFO"
        )
        r = connect(url, password_file=password)
        _ladder(data, matches)
        wait_until(lambda: r.xlen(keys.RESULTS_STREAM) >= 1, 180, "the remote worker's first result", poll_s=0.5)
        match_id = _frozen_in_a_match(r, worker, log)
        before = set(_results(r))  # (it is frozen: nothing is recorded meanwhile)
        r.close()

        up.send_signal(how)
        assert up.wait(STOP_BOUND_S) == (0 if how == signal.SIGTERM else -signal.SIGKILL)
        # Its Redis is gone with it (SIGKILL: the parent-death signal stops it), none left on the data dir.
        wait_until(lambda: not _redis_servers_on(data / "redis"), 60, "the embedded redis-server to exit")
        worker.send_signal(signal.SIGCONT)
        # The worker finishes its match with Redis away and holds the result (or, caught before its bots
        # were read, holds the match); it does not exit.
        waiting = re.compile(rf"redis unavailable while [^\n]*{re.escape(match_id)} ")
        wait_until(
            lambda: waiting.search(log.read_text()),
            180,
            f"the remote worker to wait for Redis with {match_id} in hand",
        )
        assert alive(worker.pid)

        up, state2 = _start_up(data, tmp_path / "up2.log", 0)
        assert state2["redis"] == url and state2["pid"] == up.pid  # the same address, a new arena up
        r = connect(url, password_file=password)
        assert r.config_get("bind")["bind"] == "127.0.0.1"  # not opened to other machines unasked
        wait_until(lambda: r.exists(keys.result(match_id)), 180, f"{match_id} recorded once Redis is back")
        wait_until(lambda: len(_results(r)) >= matches, 600, f"all {matches} results", poll_s=0.5)
        assert worker.poll() is None  # the same process played on
        enqueued = r.smembers(keys.ENQUEUED)
        assert len(enqueued) == matches and set(_results(r)) == enqueued  # every match once, none lost
        assert r.xlen(keys.RESULTS_STREAM) == matches and r.xlen(keys.DEAD_STREAM) == 0
        assert len(enqueued - before - {match_id}) >= 1, "no match was left to play after the restart"
        r.close()
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
        # It alone played them all, each at its first try: the match in hand was not given up as failed.
        stats = last_json_line(log)
        assert stats["worker"] == WORKER and stats["recorded"] == matches, stats
        # (Each runner failure the worker logged, with its traceback: what went wrong, if anything did.)
        failed = re.findall(r"^.* match \S+ failed: .*(?:\n(?!\d{4}-).*)*", log.read_text(), re.M)
        assert stats["failures"] == 0 and stats["duplicates"] == 0 and stats["dead_lettered"] == 0, (stats, failed)
        assert "redis back: done" in log.read_text()
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait(10)
        _stop(up)


def _up(data: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``arena up`` expected to refuse to start (bounded: it must not hang)."""
    args = ("up", "--data-dir", str(data), "--workers", "0", "--api-port", "0", "--web-port", "0")
    cmd = arena_cmd(*args, "--metrics-port", "0", *extra)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)


def _holder_command() -> str:
    """This process's command line as ps shows it (its arguments, spaces between)."""
    return Path(f"/proc/{os.getpid()}/cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ").decode()[:150]


@pytest.mark.timeout(400)
def test_a_taken_redis_port_is_refused_naming_the_port_and_its_holder(tmp_path: Path) -> None:
    if find_redis_server() is None:
        pytest.skip("no redis-server")
    data = tmp_path / "arena"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        asked = _up(data, "--redis-port", str(port))
        assert asked.returncode == 1, asked.stderr
        assert f"port {port} on 127.0.0.1 is taken by pid {os.getpid()} ({_holder_command()}" in asked.stderr
        assert "it is the port given with --redis-port" in asked.stderr and "Traceback" not in asked.stderr
        assert not (data / "redis" / "redis.port").exists() and not (data / "arena-up.json").exists()

    # The port kept by an earlier start (one open to other machines, as asked), taken meanwhile: refused
    # too, never moved (remote workers know it).
    up, state = _start_up(data, tmp_path / "up.log", 0, "--redis-host", "0.0.0.0")
    try:
        r = connect(state["redis"], password_file=state["redis_password_file"])
        assert (
            r.config_get("bind")["bind"] == "0.0.0.0" and r.get("pa:no-such-key") is None
        )  # (the password still asked)
        r.close()
        banner = wait_until(
            lambda: "port kept in" in (text := (tmp_path / "up.log").read_text()) and text, 30, "banner"
        )
        assert "listening on 0.0.0.0: other machines' workers attach with a copy of its password file" in banner
    finally:
        _stop(up)
    assert up.returncode == 0
    kept = _port(state["redis"])
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (the server just closed its connections)
        held.bind(("127.0.0.1", kept))
        held.listen()
        refused = _up(data)
        assert refused.returncode == 1, refused.stderr
        assert f"port {kept} on 127.0.0.1 is taken by pid {os.getpid()} (" in refused.stderr
        assert f"it is the port kept in {data / 'redis' / 'redis.port'}" in refused.stderr
        assert "--redis-port N" in refused.stderr
    assert (data / "redis" / "redis.port").read_text() == f"{kept}\n"

    # Hostile input: each a clear error naming what was wrong, before anything starts.
    for extra, said in [
        (("--redis-port", "70000"), "--redis-port must be a port, 1 to 65535, not 70000"),
        (("--redis-port", "-1"), "--redis-port must be a port, 1 to 65535, not -1"),
        (("--redis-port", "0"), "--redis-port must be a port, 1 to 65535, not 0"),
        (("--redis", "redis://127.0.0.1:1/0", "--redis-port", "6390"), "are for the embedded Redis"),
    ]:
        res = _up(tmp_path / "other", *extra)
        assert res.returncode == 2 and said in res.stderr and "Traceback" not in res.stderr, (extra, res.stderr)
    (data / "redis" / "redis.port").write_text("not-a-port\n")
    bad = _up(data)
    assert bad.returncode == 1 and "holds 'not-a-port', not a port (1-65535): remove it" in bad.stderr, bad.stderr
