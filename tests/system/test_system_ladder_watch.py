"""Ladders as an operator sees them, through the real ``arena`` commands against the real API: names and the
default ladder, ``ladder status --watch`` (pace, ETA, matches in flight, the bot holding the queue, Ctrl-C)
and ``ladder start --matches N --follow`` with a real worker playing real sample bots."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import IO

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc
from system_helpers import REPO, TIMEOUT, arena_cmd, logged_port, register, rpc_error, wait_until, worker_proc

from arena.api import ApiServer
from arena.bots.registry import Registry
from arena.play.queue import MatchQueue
from arena.play.scheduler import Scheduler
from arena.rating.ratings import Ratings
from arena.store import keys


def arena(api: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        arena_cmd(*args, "--api", api), capture_output=True, text=True, timeout=timeout, cwd=REPO, env=dict(os.environ)
    )


def start(api: str, admin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return arena(api, "ladder", "start", "--token", admin, *args)


def watch_proc(api: str) -> subprocess.Popen[str]:
    """A real ``arena ladder status --watch`` process, refreshing every 0.5 s, its output piped."""
    return subprocess.Popen(
        arena_cmd("ladder", "status", "--watch", "--interval", "0.5", "--api", api),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


class Lines:
    """A pipe read line by line by a thread as it comes, so that a test can wait for a line while the process
    runs (instead of sleeping and hoping it was printed)."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def text(self) -> str:
        with self._changed:
            return "".join(self.lines)

    def wait_for(self, pattern: str, timeout_s: float) -> bool:
        """True once a line matches ``pattern``; False after ``timeout_s`` or at the end of the output."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not any(re.search(pattern, line) for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._changed.wait(min(left, 0.5))
            return True

    def close(self, timeout_s: float = 10) -> str:
        """The whole output, once the pipe has ended (the process exited)."""
        self._thread.join(timeout_s)
        return self.text()


@pytest.mark.timeout(180)
def test_ladders_have_names_and_one_default(r, admin, api, stub):
    register(stub, admin, "random")
    register(stub, admin, "heuristic")
    main = start(api.address, admin, "--name", "main", "--deals", "1", "--matches", "1")
    assert main.returncode == 0, main.stderr
    main_id = stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders[0].ladder
    assert f"main ({main_id}) [default]: pilotta, 1 deals" in main.stdout
    blitz = start(api.address, admin, "--name", "blitz", "--single", "--deals", "2")
    assert blitz.returncode == 0, blitz.stderr
    assert "blitz (pilotta-" in blitz.stdout and "[default]" not in blitz.stdout

    # The default ladder is listed first although blitz was started later; the names are shown.
    listed = arena(api.address, "ladder", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(f"main ({main_id}) [default]") and lines[1].startswith("blitz (")
    # A name stands for the id everywhere a ladder is named; no name: the default ladder.
    assert f"Leaderboard of ladder main ({main_id})" in arena(api.address, "leaderboard").stdout  # the name first
    blitz_id = stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders[1].ladder
    assert stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder="blitz"), timeout=TIMEOUT).ladder == blitz_id
    status = arena(api.address, "ladder", "status", "--ladder", "blitz")
    assert status.returncode == 0 and status.stdout.startswith(f"ladder blitz ({blitz_id}): pilotta, running")

    # --default moves the default; a name another ladder has, or a ruleset's, is refused, nothing changed.
    moved = start(api.address, admin, "--single", "--deals", "2", "--default")
    assert moved.returncode == 0 and "blitz" in moved.stdout and "[default]" in moved.stdout
    assert stub.Leaderboard(arena_pb2.LeaderboardRequest(), timeout=TIMEOUT).ladder == blitz_id
    taken = start(api.address, admin, "--name", "main", "--deals", "3")
    # The refusal names the setting that differs (main plays 1 board a match), and how to add matches instead.
    assert taken.returncode == 1 and "ladder 'main' exists with deals=1; you asked deals=3" in taken.stderr
    assert "arena ladder extend main --matches N" in taken.stderr
    assert len(stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders) == 2
    # extend: main was started for 1 match (scheduled at most 1 so far): 5 more make a budget of 6, its
    # settings untouched; without the admin token, nothing.
    extended = arena(api.address, "ladder", "extend", "main", "--matches", "5", "--token", admin)
    assert extended.returncode == 0, extended.stderr
    assert extended.stdout.startswith(f"ladder extended by 5 matches: main ({main_id}): pilotta, 1 deals")
    info = next(
        x for x in stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders if x.name == "main"
    )
    assert (info.ladder, info.budget, info.deals) == (main_id, 6, 1)
    denied = arena(api.address, "ladder", "extend", "main", "--matches", "5", "--token", "not-the-admin-token")
    assert denied.returncode != 0 and "token" in denied.stderr
    unbounded = arena(api.address, "ladder", "extend", "blitz", "--matches", "2", "--token", admin)
    assert unbounded.returncode == 1 and "ladder blitz runs without an end (no budget)" in unbounded.stderr
    unknown = arena(api.address, "ladder", "extend", "nope", "--matches", "2", "--token", admin)
    assert unknown.returncode != 0 and "unknown ladder 'nope' (known: blitz, main)" in unknown.stderr
    refused = start(api.address, admin, "--name", "coinche", "--deals", "4")
    assert refused.returncode == 1 and "ladder name 'coinche' is a ruleset's name" in refused.stderr
    for bad, why in (("Main Ladder", "invalid ladder name"), (main_id, "is a ladder's id"), ("x" * 33, "1-32")):
        request = arena_pb2.StartLadderRequest(token=admin, deals=4, name=bad)
        assert why in rpc_error(lambda request=request: stub.StartLadder(request, timeout=TIMEOUT)).details()
    stopped = arena(api.address, "ladder", "stop", "blitz", "--token", admin)
    assert stopped.returncode == 0, stopped.stderr
    held = stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders[0]
    assert not held.started
    # A stopped ladder extended starts again for that many matches (from those it had scheduled when stopped).
    again = stub.ExtendLadder(arena_pb2.ExtendLadderRequest(token=admin, ladder="blitz", matches=2), timeout=TIMEOUT)
    assert again.started and again.name == "blitz" and again.budget == held.scheduled + 2


@pytest.mark.timeout(150)
def test_watch_shows_pace_eta_and_matches_in_flight_then_ends_with_the_budget(
    r, admin, api, stub, module_redis, tmp_path
):
    register(stub, admin, "random")
    register(stub, admin, "node", "random")  # a second random bot under another name
    matches = 4
    started = start(api.address, admin, "--name", "main", "--deals", "1", "--matches", str(matches))
    assert started.returncode == 0, started.stderr
    # The API's feeder queues the first matches in its own time: the watch's first block must show them.
    wait_until(lambda: MatchQueue(r).depth() > 0, 30, "the ladder's first matches queued")
    watch = watch_proc(api.address)
    assert watch.stdout is not None and watch.stderr is not None
    lines = Lines(watch.stdout)
    workers = []
    try:
        # Each step waits for the watch to have drawn what it must show, not for a time a loaded machine
        # may not keep: the first block (nothing played yet), then half the budget played and a block with
        # a pace, 2 left and an ETA, then the rest.
        assert lines.wait_for(r"^$", 60), f"no first block drawn: {lines.text()}"
        for n, shown in enumerate((r"pace: [0-9.]+ matches/min; 2 left, ETA [0-9]+ .*UTC\)", None)):
            workers.append(worker_proc(module_redis.url, f"w-watch{n}", tmp_path / f"w{n}.log", "--max-matches", "2"))
            assert workers[-1].wait(timeout=60) == 0
            assert shown is None or lines.wait_for(shown, 60), f"never shown: {shown}: {lines.text()}"
        watch.wait(timeout=60)
        out, err = lines.close(), watch.stderr.read()
    finally:
        for p in (watch, *workers):
            if p.poll() is None:
                p.kill()
                p.wait(10)
    assert watch.returncode == 0, err
    blocks = out.strip().split("\n\n")
    first = blocks[0]
    # Before any match is played: 3 matches left, no pace yet, the first matches waiting with their bots.
    assert "ladder main (pilotta-" in first and ", the default: pilotta, running" in first
    assert f"pace: 0.0 matches/min; {matches} left, ETA unknown (no match finished yet)" in first
    assert "in flight:" in first and ("node vs random" in first or "random vs node" in first)
    assert any(re.search(r"pace: [0-9.]+ matches/min; 2 left, ETA [0-9]+ .*UTC\)", b) for b in blocks), out
    assert blocks[-1].splitlines()[-1] == "ladder main: every match of its budget is played"
    assert f"played {matches} · waiting 0 · playing 0" in blocks[-2]
    assert "Traceback" not in err


@pytest.mark.timeout(60)
def test_watch_leaves_on_ctrl_c_without_a_traceback(r, admin, api, stub):
    register(stub, admin, "random")
    register(stub, admin, "heuristic")
    assert start(api.address, admin, "--deals", "1").returncode == 0  # no budget, no worker: runs forever
    watch = watch_proc(api.address)
    try:
        assert watch.stdout is not None
        ready, _, _ = select.select([watch.stdout], [], [], 30)
        assert ready and watch.stdout.readline().startswith("ladder pilotta-")
        time.sleep(0.7)  # at least one more refresh
        watch.send_signal(signal.SIGINT)
        try:
            out, err = watch.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            watch.send_signal(signal.SIGUSR1)  # every thread's stack (faulthandler), for the failure's message
            time.sleep(1)
            watch.kill()
            out, err = watch.communicate(timeout=10)
            raise AssertionError(f"the watch did not leave within 20 s of its Ctrl-C; its stacks:\n{err}") from None
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait(10)
    assert watch.returncode == 0
    assert out.rstrip().endswith("stopped watching (the ladder goes on)") and "Traceback" not in err, err
    bad = arena(api.address, "ladder", "status", "--watch", "--interval", "0.1")
    assert bad.returncode == 2 and "--interval must be 0.5 to 60 seconds, not 0.1" in bad.stderr


class SlowStatusApi:
    """A real gRPC server answering LadderStatus only after ``delay_s`` (an arena API under load, or stuck),
    so that a Ctrl-C comes while the watch's call is in flight; ``close`` lets a held reply go."""

    def __init__(self, delay_s: float) -> None:
        self.asked = threading.Event()  # a LadderStatus call has come
        self.answered = threading.Event()  # ... and its reply has been sent
        self._release = threading.Event()

        def status(raw: bytes, context: grpc.ServicerContext) -> bytes:
            self.asked.set()
            self._release.wait(delay_s)
            self.answered.set()
            return bytes(arena_pb2.LadderStatusReply(ladder="pilotta-slow").SerializeToString())

        self.server = grpc.server(futures.ThreadPoolExecutor(4))
        handlers = {"LadderStatus": grpc.unary_unary_rpc_method_handler(status)}
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("pilotta.arena.v1.Arena", handlers),)
        )
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def close(self) -> None:
        self._release.set()
        self.server.stop(0)


# faulthandler's header of each thread's stack, and a line of the watch's loop in one (arena/cli/*.py).
# "Current thread" marks the thread the kernel delivered the signal to, which may be any thread of the
# process (or one of gRPC's without a Python stack: then none is marked): scheduling, not the code.
THREAD_HEADER = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):$", re.M)
IN_WATCH = re.compile(r'File "[^"]*/arena/cli/\w+\.py", line \d+ in watch$', re.M)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_while_a_refresh_is_in_flight_leaves(presses):
    """A Ctrl-C while the refresh is in flight (an API under load, or stuck) leaves when that refresh ends
    (here after 6 s: time enough for the handler to run first, even on a loaded machine) without drawing it;
    a second Ctrl-C ends the process at once, while the call is still in flight (here the API holds its reply
    until the test ends)."""
    api = SlowStatusApi(6.0 if presses == 1 else 120.0)
    watch = watch_proc(api.address)
    try:
        assert api.asked.wait(30)  # started, and waiting for its first LadderStatus
        assert watch.poll() is None
        if presses == 1:
            watch.send_signal(signal.SIGUSR1)  # its stacks on stderr (faulthandler), and it goes on
            watch.send_signal(signal.SIGINT)
        else:
            # Signals that come before Python's handler has run are one (one pending flag per signal), and
            # nothing outside shows when it has run: press again every 0.5 s until a press is a second one.
            deadline = time.monotonic() + 30
            while watch.poll() is None and time.monotonic() < deadline:
                watch.send_signal(signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    watch.wait(0.5)
        out, err = watch.communicate(timeout=30)
        answered = api.answered.is_set()
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait(10)
        api.close()
    if presses == 1:
        assert watch.returncode == 0, err
        assert answered  # it left when the refresh ended ...
        assert out.strip() == "stopped watching (the ladder goes on)"  # ... and did not draw it
        assert "Traceback" not in err, err
        # faulthandler printed every thread's stack, the watch's loop among them (whichever took the signal).
        assert any(IN_WATCH.search(stack) for stack in THREAD_HEADER.split(err)[1:]), err
    else:
        # Killed by the second SIGINT, before the call in flight ended.
        assert watch.returncode == -signal.SIGINT and not answered, (watch.returncode, answered, err)


@pytest.mark.timeout(150)
def test_start_follow_shows_progress_until_the_matches_are_played(r, admin, api, stub, module_redis, tmp_path):
    register(stub, admin, "random")
    register(stub, admin, "node", "random")
    worker = worker_proc(module_redis.url, "w-follow", tmp_path / "worker.log", "--max-matches", "2")
    try:
        followed = start(api.address, admin, "--deals", "1", "--matches", "2", "--follow")
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.startswith("ladder started: ")
    assert "[##############################] 2/2 matches" in followed.stderr
    assert "[------------------------------] 0/2 matches" in followed.stderr  # not a tty: a line per 10 %
    no_budget = start(api.address, admin, "--deals", "1", "--follow")
    assert no_budget.returncode == 2 and "--follow needs --matches N" in no_budget.stderr


@pytest.mark.timeout(60)
def test_status_names_the_slow_bot_holding_the_queue(r, admin, tmp_path: Path):
    """Three bots; "slowbot" has been scheduled least (10 matches) and its one match allowed in flight is
    still on; the two others are 3 ahead, over the slack: no match can be scheduled until slowbot's ends."""
    server = ApiServer(r, "127.0.0.1", 0, feed_ladders=False, update_ratings=False, gauges_interval_s=0).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = arena_pb2_grpc.ArenaStub(channel)
            for name in ("slowbot", "heuristic", "random"):
                register(stub, admin, name, "random" if name == "slowbot" else None)
            started = start(server.address, admin, "--deals", "1", "--matches", "50", "--max-in-flight", "1")
            assert started.returncode == 0, started.stderr
            ladder = stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders[0].ladder
            registry = Registry(r)
            ids = {n: registry.by_name(n).bot_id for n in ("slowbot", "heuristic", "random")}
            scheduler = Scheduler(r, registry, Ratings(r), MatchQueue(r))
            spec = scheduler.create_match(ladder, (ids["slowbot"], ids["heuristic"]), seed=7)
            r.hset(keys.ladder_games(ladder), mapping={ids["slowbot"]: 10, ids["heuristic"]: 13, ids["random"]: 13})
            r.hset(keys.ladder_inflight(ladder), ids["heuristic"], 0)  # its side of that match is over
            plain = arena(server.address, "ladder", "status")
    finally:
        server.stop(grace_s=1.0)
    assert plain.returncode == 0, plain.stderr
    assert "held by slowbot: fewest games, all 1 of its matches in flight" in plain.stdout
    assert spec.match_id in plain.stdout and "slowbot vs heuristic" in plain.stdout


def api_proc(url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """A real ``arena api`` process on ``port`` (0: any free one, which it logs: ``api: serving on HOST:N``) over
    the module's Redis, its output in ``log``."""
    out = open(log, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            arena_cmd("api", "--redis", url, "--host", "127.0.0.1", "--port", str(port), "--log-level", "INFO"),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    finally:
        out.close()


def serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            arena_pb2_grpc.ArenaStub(channel).ListLadders(arena_pb2.ListLaddersRequest(), timeout=2)
            return True
        except grpc.RpcError:
            return False


@pytest.mark.timeout(300)
def test_watch_rides_out_an_arena_restart_and_list_says_running(r, admin, module_redis, tmp_path):
    """The API process is killed (SIGKILL) under a watch and started again on the same port: the watch says
    it cannot reach the arena and keeps trying, then draws the ladder again; only Ctrl-C ends it."""
    # The first API binds a port of its own (one picked here could be taken before it bound it); the second
    # takes it over once the first is killed, as a restarted arena would.
    procs = [api_proc(module_redis.url, 0, tmp_path / "api1.log")]
    watch = None
    try:
        port = logged_port(tmp_path / "api1.log", r"api: serving on \S+:(\d+)", procs[0])
        address = f"127.0.0.1:{port}"
        wait_until(lambda: serving(address), 60, "the first arena api serving")
        with grpc.insecure_channel(address) as channel:
            stub = arena_pb2_grpc.ArenaStub(channel)
            register(stub, admin, "random")
            register(stub, admin, "heuristic")
        assert start(address, admin, "--name", "main", "--deals", "1").returncode == 0  # no budget, no worker
        listed = arena(address, "ladder", "list")
        assert listed.returncode == 0, listed.stderr
        assert re.search(
            r"^main \(pilotta-\S+\) \[default\]: .*; 2 bots; \d+ scheduled; running, no end", listed.stdout
        )
        watch = subprocess.Popen(
            arena_cmd("ladder", "status", "--watch", "--interval", "0.5", "--api", address),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert watch.stdout is not None and watch.stderr is not None
        lines = Lines(watch.stdout)
        assert lines.wait_for(r"^ladder main \(pilotta-\S+\), the default: pilotta, running$", 60), lines.text()
        procs[0].kill()
        assert procs[0].wait(30) == -signal.SIGKILL
        assert lines.wait_for(r"^arena unreachable, retrying in [0-9.]+ s \(try 1\): cannot reach the arena", 60)
        assert watch.poll() is None  # still watching
        procs.append(api_proc(module_redis.url, port, tmp_path / "api2.log"))
        assert lines.wait_for(r"^arena reachable again after \d+ failed tries$", 120), lines.text()
        wait_until(lambda: "\nladder main (" in lines.text().split("arena reachable again", 1)[1], 30, "a block")
        text = lines.text()
        # The waits between tries doubled from the interval: 0.5, 1, 2 ... (at most 30 s).
        waits = [float(w) for w in re.findall(r"retrying in ([0-9.]+) s", text)]
        assert waits[:3] == [0.5, 1.0, 2.0][: len(waits)] and max(waits) <= 30
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=30) == 0  # (its stdout is the Lines thread's to read)
        err = watch.stderr.read()
        assert "Traceback" not in err, err
        assert lines.close().rstrip().endswith("stopped watching (the ladder goes on)")
    finally:
        for p in [*procs, *([watch] if watch else [])]:
            if p.poll() is None:
                p.kill()
                p.wait(10)


@pytest.mark.timeout(60)
def test_watch_of_an_arena_never_reached_exits_3(refused_port: int) -> None:
    done = arena(f"127.0.0.1:{refused_port}", "ladder", "status", "--watch", "--interval", "0.5", timeout=40)
    assert done.returncode == 3 and "cannot reach the arena API" in done.stderr and "retrying" not in done.stdout
