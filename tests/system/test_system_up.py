"""``arena up`` as a real process: API health SERVING, a CLI round trip (bot register / list, ladder
start, leaderboard, replay), a second ``arena up`` on the same data dir refused, and SIGTERM stopping
everything (workers, bots, Redis) cleanly within a bound.  Its embedded Redis is supervised: killed, it is
restarted and no result is lost; ``arena up`` SIGKILLed and started again gives one Redis and the same
results after a reload from disk; no password in any process's arguments or a bot's environment;
``--open-registration`` takes new bots under any owner name, and a start without it closes it again (only
owners the operator added, with their tokens)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from system_helpers import REPO, SAMPLES, alive, arena_cmd, wait_until

from arena.store import keys
from arena.store.redis_server import EmbeddedRedis, connect, find_redis_server
from referee.match.bots import load_manifest, start_bot

STOP_BOUND_S = 30.0
PYBOT = REPO / "tests" / "sandbox" / "packages" / "pybot"  # a small package to upload


def _cli(data_dir, *args, timeout=60.0):
    return subprocess.run(
        arena_cmd(*args, "--data-dir", str(data_dir)), capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def _descendants(pid):
    """Every process below ``pid`` (Linux /proc), by walking parent links."""
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(stat[stat.rfind(")") + 2 :].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - out
        out |= frontier
    return out


@pytest.mark.timeout(180)
def test_arena_up_cli_round_trip_and_clean_sigterm(tmp_path):
    if find_redis_server() is None:
        pytest.skip("no redis-server")
    data = tmp_path / "arena"
    log = open(tmp_path / "up.log", "wb")  # noqa: SIM115
    up = subprocess.Popen(
        arena_cmd(
            "up",
            "--data-dir",
            str(data),
            "--workers",
            "1",
            "--api-port",
            "0",  # any free port, which the state file gives: one picked here could be taken before it binds
            "--web-port",
            "0",
            "--metrics-port",
            "0",
            "--allow-network",
            "127.0.0.0/8",  # the endpoint bot below runs here (the default policy refuses loopback)
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    try:
        state = wait_until(
            lambda: (data / "arena-up.json").exists() and json.loads((data / "arena-up.json").read_text()),
            60,
            "arena up's state file",
        )
        assert re.fullmatch(r"127\.0\.0\.1:[1-9][0-9]*", state["api"]) and state["pid"] == up.pid
        with grpc.insecure_channel(state["api"]) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        out = (tmp_path / "up.log").read_text()
        token = (data / "admin-token").read_text().strip()
        assert token in out and (data / "admin-token").stat().st_mode & 0o077 == 0  # printed once, private

        second = _cli(data, "up", "--workers", "0")
        assert second.returncode == 1 and "already running" in second.stderr

        # The CLI finds the API through the state file.
        first = _cli(data, "bot", "register", "random", "--manifest", str(SAMPLES / "random"), "--owner", "t")
        assert first.returncode == 0, first.stderr
        owner_token = re.search(r"owner token .*: (\S+)", first.stdout).group(1)
        assert _cli(data, "bot", "register", "heuristic", "--manifest", str(SAMPLES / "heuristic")).returncode == 0
        again = _cli(data, "bot", "register", "random", "--endpoint", "127.0.0.1:1", "--games", "pilotta")
        assert again.returncode == 1 and "ALREADY_EXISTS" in again.stderr
        no_games = _cli(data, "bot", "register", "remote", "--endpoint", "127.0.0.1:1")
        assert no_games.returncode == 2 and "--rulesets is required" in no_games.stderr
        # An endpoint bot: its Handshake is checked, and its owner must be one the operator added, with its token.
        key = (data / "registration-key").read_text().strip()
        assert key not in out and (data / "registration-key").stat().st_mode & 0o077 == 0  # it marks it closed
        endpoint_bot = start_bot(load_manifest(SAMPLES / "random"), tmp_path / "remote-bot")
        try:
            ep = endpoint_bot.endpoint
            args = ("bot", "register", "remote", "--endpoint", ep, "--games", "bela,coinche", "--owner", "ann")
            wrong = _cli(data, *args)  # ann is a name nobody added
            assert wrong.returncode == 1 and "PERMISSION_DENIED: owner 'ann' is not registered" in wrong.stderr
            added = _cli(data, "owner", "add", "ann")  # the admin token arena up keeps in its data dir
            assert added.returncode == 0, added.stderr
            remote = _cli(data, *args, "--token", re.search(r"owner token .*: (\S+)", added.stdout).group(1))
            assert remote.returncode == 0, remote.stderr
        finally:
            endpoint_bot.stop()
        listed = _cli(data, "bot", "list")
        assert listed.returncode == 0 and re.search(r"^heuristic\s+1", listed.stdout, re.M)
        assert re.search(r"^random\s+1\s+t\s+active\s+pilotta,", listed.stdout, re.M)
        assert re.search(r"^remote\s+1\s+.*bela,coinche\s+endpoint$", listed.stdout, re.M)
        assert ep not in listed.stdout  # a list never shows an endpoint
        assert _cli(data, "bot", "retire", "remote", "--token", token).returncode == 0  # the admin token
        no_board = _cli(data, "leaderboard")
        assert no_board.returncode == 1 and "no ladder yet" in no_board.stderr

        # Ladders go through the API with the admin token (found in the data dir, or given).
        denied = _cli(data, "ladder", "start", "--deals", "1", "--token", "wrong-token-123")
        assert denied.returncode == 1 and "PERMISSION_DENIED" in denied.stderr
        bad = _cli(data, "ladder", "start", "--variant", "poker", "--deals", "1")
        assert bad.returncode == 1 and "unknown ruleset 'poker'" in bad.stderr
        started = _cli(data, "ladder", "start", "--variant", "pilotta", "--deals", "1", "--matches", "2")
        assert started.returncode == 0 and "2 bots" in started.stdout, started.stderr
        ladder_id = re.search(r"ladder started: (\S+?)(?: \[default\])?:", started.stdout).group(1)
        listed = _cli(data, "ladder", "list")
        assert listed.returncode == 0 and f"{ladder_id} [default]: pilotta, 1 deals" in listed.stdout, listed.stderr

        def board():
            res = _cli(data, "leaderboard")
            # rank, bot, version, mu, sigma, mu - 3 sigma, [interval], games
            row = r"^\s*\d+\s+(\w+)\s+\d+\s+[-\d.]+\s+[\d.]+\s+[-\d.]+\s+\[.*?\]\s+(\d+)"
            rows = re.findall(row, res.stdout, re.M)
            return res.stdout if len(rows) == 2 and all(int(g) == 2 for _b, g in rows) else None

        text = wait_until(board, 90, "2 rated matches on the leaderboard", poll_s=0.5)
        assert "heuristic" in text and "random" in text
        match_id = _cli(data, "matches", "--limit", "1").stdout.split()[0]
        replay = _cli(data, "replay", match_id, "--out", str(tmp_path / "r.json"))
        assert replay.returncode == 0 and "Deal 1" in replay.stdout and "=== Leg 2 of 2" in replay.stdout
        assert json.loads((tmp_path / "r.json").read_text())["match_id"] == match_id
        status = _cli(data, "ladder", "status")
        assert status.returncode == 0 and f"ladder {ladder_id}, the default: pilotta" in status.stdout, status.stdout
        assert re.search(r"^played 2 ", status.stdout, re.M), status.stdout
        stopped = _cli(data, "ladder", "stop", ladder_id, "--token", token)
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
        assert "; stopped" in _cli(data, "ladder", "list").stdout
        retire = _cli(data, "bot", "retire", "random", "--token", "wrong-token-123")
        assert retire.returncode == 1 and "PERMISSION_DENIED" in retire.stderr
        assert _cli(data, "bot", "retire", "random", "--token", owner_token).returncode == 0
        with urllib.request.urlopen(state["web"], timeout=10) as page:
            assert page.status == 200

        below = _descendants(up.pid)  # redis, the worker, its warm bots
        assert len(below) >= 3
        t0 = time.monotonic()
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=STOP_BOUND_S) == 0
        assert time.monotonic() - t0 < STOP_BOUND_S
        wait_until(lambda: not any(alive(p) for p in below), 10, "every process of arena up to exit")
        assert not (data / "arena-up.json").exists()
        assert "stopped in" in (tmp_path / "up.log").read_text()
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(10)
        log.close()
    down = _cli(data, "bot", "list", "--timeout", "2", "--api", state["api"])  # where it served, now closed
    assert down.returncode == 3 and "cannot reach the arena API" in down.stderr


# --------------------------------------------------------------------- a supervised embedded Redis


def _start_up(data, log_path, workers=2, *extra):
    """``arena up`` as a real process on free ports (and ``extra`` arguments); returns (process, its state
    file's contents)."""
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        up = subprocess.Popen(
            arena_cmd(
                "up",
                "--data-dir",
                str(data),
                "--workers",
                str(workers),
                "--api-port",
                "0",
                "--web-port",
                "0",
                "--metrics-port",
                "0",
                *extra,
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    finally:
        log.close()

    def state():
        if up.poll() is not None:
            raise AssertionError(f"arena up exited with {up.returncode}:\n{log_path.read_text()[-3000:]}")
        s = (data / "arena-up.json").exists() and json.loads((data / "arena-up.json").read_text())
        return s if s and s["pid"] == up.pid else None

    return up, wait_until(state, 60, "arena up's state file")


def _stop(up, bound_s=STOP_BOUND_S):
    if up.poll() is None:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(bound_s)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait(10)


def _redis_servers_on(directory):
    """Pids of the redis-servers whose working directory is ``directory`` (redis chdirs to its data dir)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                is_redis = b"redis-server" in (d / "cmdline").read_bytes() and alive(int(d.name))
                if is_redis and Path(os.readlink(d / "cwd")) == directory.resolve():
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _results(r):
    """Every recorded result: match id -> its JSON."""
    return {k.removeprefix(keys.result("")): r.get(k) for k in r.scan_iter(keys.result("*"))}


def _ladder(data, matches):
    for bot in ("heuristic", "random"):
        res = _cli(data, "bot", "register", bot, "--manifest", str(SAMPLES / bot), "--owner", "t")
        assert res.returncode == 0, res.stderr
    started = _cli(data, "ladder", "start", "--ruleset", "pilotta", "--deals", "2", "--matches", str(matches))
    assert started.returncode == 0, started.stderr


@pytest.mark.timeout(480)  # the waits below are bounds for a loaded machine; it takes ~75 s on a quiet one
def test_killed_embedded_redis_is_restarted_and_no_result_is_lost(tmp_path):
    if find_redis_server() is None:
        pytest.skip("no redis-server")
    data, matches = tmp_path / "arena", 12
    up, state = _start_up(data, tmp_path / "up.log")
    try:
        password_file = data / "redis" / "redis-password"
        assert state["redis_password_file"] == str(password_file)
        password = password_file.read_text().strip()
        r = connect(state["redis"], password_file=password_file)
        _ladder(data, matches)
        wait_until(lambda: r.xlen(keys.RESULTS_STREAM) >= 3, 60, "the first results")
        (old,) = _redis_servers_on(data / "redis")
        os.kill(old, signal.SIGKILL)
        new = wait_until(lambda: [p for p in _redis_servers_on(data / "redis") if p != old], 20, "a new redis")
        wait_until(lambda: r.xlen(keys.RESULTS_STREAM) >= matches, 300, f"all {matches} results", poll_s=0.5)
        assert new == [_pid(r)]  # one server again, at the same address

        # No result lost or counted twice: every match scheduled has exactly one result, none dead-lettered.
        enqueued = r.smembers(keys.ENQUEUED)
        assert len(enqueued) == matches and set(_results(r)) == enqueued
        assert r.xlen(keys.RESULTS_STREAM) == matches and r.xlen(keys.DEAD_STREAM) == 0

        # No password in a bot's environment, nor in its parent's (the worker's) arguments, nor in any
        # other process of the arena's.
        below = _descendants(up.pid)
        bots = [p for p in below if b"sample_bots" in _proc(p, "cmdline")]
        assert bots, "no bot process found below arena up"
        for p in {up.pid, *below}:
            for part in ("cmdline", "environ"):
                assert password.encode() not in _proc(p, part), (p, part, _proc(p, "cmdline"))
        for p in bots:
            ppid = int(_proc(p, "stat").decode().rsplit(")", 1)[1].split()[1])
            assert b"--redis-password-file" in _proc(ppid, "cmdline")  # its worker got the file's path only
    finally:
        _stop(up)
    assert "restarting it" in (tmp_path / "up.log").read_text()


@pytest.mark.timeout(600)  # bounds for a loaded machine below
def test_sigkilled_arena_up_then_a_new_one_gives_one_redis_and_the_same_results_after_a_reload(tmp_path):
    if find_redis_server() is None:
        pytest.skip("no redis-server")
    data, matches = tmp_path / "arena", 10
    up, state = _start_up(data, tmp_path / "up1.log")
    try:
        r = connect(state["redis"], password_file=state["redis_password_file"])
        _ladder(data, matches)
        wait_until(lambda: r.xlen(keys.RESULTS_STREAM) >= 2, 60, "the first results")
        up.send_signal(signal.SIGKILL)
        up.wait(10)
        r.close()
        # A second arena up on the same directory while the first one's Redis and workers wind down.
        up2, state2 = _start_up(data, tmp_path / "up2.log")
        try:
            assert len(_redis_servers_on(data / "redis")) == 1
            r = connect(state2["redis"], password_file=state2["redis_password_file"])
            refused = _cli(data, "up", "--workers", "0")
            assert refused.returncode == 1 and "already running" in refused.stderr
            assert f"pid {up2.pid} holds" in refused.stderr
            # (360 s: a loaded run's second arena played 6 matches in the first 120 s, at load 20)
            wait_until(lambda: r.xlen(keys.RESULTS_STREAM) >= matches, 360, f"all {matches} results", poll_s=0.5)
            assert _redis_servers_on(data / "redis") == [_pid(r)]  # the old one is gone, the new one serves
            before = _results(r)
            wait_until(lambda: len({m for m in before if r.exists(keys.rated(m))}) == len(before), 30, "ratings")
            rated = {m for m in before if r.exists(keys.rated(m))}
            r.close()
        finally:
            _stop(up2)
    finally:
        _stop(up)
    assert len(before) == matches == len(rated)
    # Reloaded from disk (the AOF) by a fresh server: the same results, each one rated.
    with EmbeddedRedis(data / "redis", auth=True) as srv:
        after = srv.client()
        assert _results(after) == before
        assert all(after.exists(keys.rated(m)) for m in before)
        assert after.xlen(keys.RESULTS_STREAM) == matches


# --------------------------------------------------------------------- open registration


def _stranger(api, stranger_dir, *args):
    """The CLI as a stranger runs it: the API's address only, a data dir of its own and no ``ARENA_``
    variable, so it finds no registration key (nor admin token) anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    cmd = arena_cmd(*args, "--api", api, "--data-dir", str(stranger_dir))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO, env=env)


@pytest.mark.timeout(240)
def test_open_registration_takes_any_owner_and_a_start_without_it_closes_it_again(tmp_path):
    if find_redis_server() is None:
        pytest.skip("no redis-server")
    data, stranger = tmp_path / "arena", tmp_path / "stranger"
    endpoint_bot = start_bot(load_manifest(SAMPLES / "random"), tmp_path / "remote-bot")
    try:
        endpoint = endpoint_bot.endpoint

        def register(api, name, *extra):
            args = ("bot", "register", name, "--endpoint", endpoint, "--rulesets", "pilotta", "--owner", "s")
            return _stranger(api, stranger, *args, *extra)

        def submit(api, name, *extra):
            return _stranger(api, stranger, "bot", "submit", name, str(PYBOT), "--owner", "s", *extra)

        def banner(log_path):
            return wait_until(lambda: "registration" in log_path.read_text() and log_path.read_text(), 30, "banner")

        # Open: an endpoint bot and an uploaded package are taken under an owner nobody added, and no key is made.
        up, state = _start_up(data, tmp_path / "open.log", 0, "--open-registration", "--allow-network", "127.0.0.0/8")
        try:
            assert "registration: open (any owner name; an owner added with arena owner add takes its token)" in banner(
                tmp_path / "open.log"
            )
            assert not (data / "registration-key").exists()
            opened = register(state["api"], "stranger")
            assert opened.returncode == 0 and "registered stranger (version 1, owner s)" in opened.stdout, opened.stderr
            uploaded = submit(state["api"], "pyup")
            assert uploaded.returncode == 0 and "submitted pyup version 1" in uploaded.stdout, uploaded.stderr
        finally:
            _stop(up)

        # The same data dir started without the flag: closed (a key is made and kept, which marks it closed).
        up, state = _start_up(data, tmp_path / "keyed.log", 0)
        try:
            key = (data / "registration-key").read_text().strip()
            closed = "registration: closed (a new bot takes its owner's token: arena owner add NAME; kept closed by "
            assert closed + f"{data / 'registration-key'})" in banner(tmp_path / "keyed.log")
            need = "owner 's' is not registered on this arena: owners are added by its operator"
            for refused in (register(state["api"], "latecomer"), submit(state["api"], "pyup2")):
                assert refused.returncode == 1 and "PERMISSION_DENIED" in refused.stderr, refused.stderr
                assert need in refused.stderr and "Traceback" not in refused.stderr
            # The operator adds s, adopting the two bots it registered while the arena was open.
            added = _cli(data, "owner", "add", "s")
            assert added.returncode == 0 and "added owner s; adopted its 2 active bots" in added.stdout, added.stderr
            token = re.search(r"owner token .*: (\S+)", added.stdout).group(1)
            keyed = register(state["api"], "latecomer", "--token", token)
            assert keyed.returncode == 0, keyed.stderr
        finally:
            _stop(up)

        # Opened again: any owner name again, though the key made is kept for a later start without the flag.
        up, state = _start_up(data, tmp_path / "reopened.log", 0, "--open-registration")
        try:
            assert "registration: open" in banner(tmp_path / "reopened.log")
            again = register(state["api"], "third", "--owner", "t2")  # any name nobody added
            assert again.returncode == 0, again.stderr
            taken = register(state["api"], "fourth")  # but s was added: its token it takes, open or not
            assert taken.returncode == 1 and "UNAUTHENTICATED: a bot of owner 's' takes" in taken.stderr
            assert (data / "registration-key").read_text().strip() == key
        finally:
            _stop(up)
    finally:
        endpoint_bot.stop()


def _pid(r):
    return int(r.info("server")["process_id"])


def _proc(pid, part):
    try:
        return Path(f"/proc/{pid}/{part}").read_bytes()
    except OSError:
        return b""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["up", "api", "worker", "web"])
def test_an_unreadable_password_file_is_a_clear_error(tmp_path, command):
    args = ["--redis", "redis://127.0.0.1:1/0", "--redis-password-file", str(tmp_path / "nope")]
    if command == "up":
        args += ["--data-dir", str(tmp_path / "arena")]
    res = subprocess.run(arena_cmd(command, *args), capture_output=True, text=True, timeout=30, cwd=REPO)
    assert res.returncode == 2, res.stderr
    assert f"cannot read the Redis password file {tmp_path / 'nope'}: No such file" in res.stderr
    assert "Traceback" not in res.stderr
