"""Helpers of the system tests (a unique basename: test folders are not packages)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
from pilotta.arena.v1 import arena_pb2

from arena.play.ladder import net_of_reservations
from arena.store import keys

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_bots"
T = TypeVar("T")
TIMEOUT = 10.0  # deadline of every gRPC call in these tests


def wait_until(pred: Callable[[], T], timeout_s: float, what: str, poll_s: float = 0.1) -> T:
    """Poll ``pred`` until it returns something truthy; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(poll_s)


def logged_port(log: Path, pattern: str, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> int:
    """The port a server started with port 0 says in its log that it got (``pattern``: a regular expression
    whose first group is the port, e.g. ``r"health on \\S+:(\\d+)"``). A port the test picked and handed over
    could be taken by another process in between; one the server bound itself cannot."""

    def found() -> int | None:
        if proc.poll() is not None:
            raise AssertionError(f"the process exited ({proc.returncode}) before logging its port:\n{log.read_text()}")
        m = re.search(pattern, log.read_text(errors="replace")) if log.exists() else None
        return int(m.group(1)) if m else None

    return wait_until(found, timeout_s, f"the port in {log.name} ({pattern})")


def manifest_source(name: str) -> arena_pb2.BotSource:
    d = SAMPLES / name
    return arena_pb2.BotSource(manifest_json=(d / "manifest.json").read_text(), manifest_dir=str(d))


def register(stub: Any, admin: str, name: str, sample: str | None = None) -> str:
    """Register a sample bot (an operator manifest: the ``admin`` token) through the API; returns its owner
    token."""
    reply = stub.RegisterBot(
        arena_pb2.RegisterBotRequest(name=name, owner="tests", source=manifest_source(sample or name), token=admin),
        timeout=TIMEOUT,
    )
    return str(reply.owner_token)


def rpc_error(fn: Callable[[], Any]) -> grpc.RpcError:
    """The RpcError a call raises (fails the test if it succeeds)."""
    try:
        fn()
    except grpc.RpcError as e:
        return e
    raise AssertionError("the call succeeded; an error was expected")


_RESERVATIONS = (keys.LADDER_RUNS_RESERVED, keys.LADDER_RUNS_RESERVED_AT)


def keyspace(r: Any) -> dict[str, Any]:
    """Every key with its type and whole value: to compare before and after a refused call.  Left out: the
    rate-limit counters (``pa:rate:*``: an attempt that reaches the network counts, refused or not), and the
    ladder feeder's working state: within each tick a started ladder's feeder reserves matches of its budget
    (``keys.LADDER_RUNS_RESERVED*``, counted in ``keys.LADDER_RUNS_SCHEDULED`` at once) and gives back those it
    could not schedule.  So the scheduled counts are read with the reservations in one transaction and shown
    net of them: the matches actually enqueued.  A key deleted between the scan and its read was not there at
    any one moment, so it is left out too."""
    out: dict[str, Any] = {}
    for k in sorted(r.scan_iter("*")):
        if k.startswith("pa:rate:") or k in _RESERVATIONS:
            continue
        t = r.type(k)
        if t == "none":
            continue
        if t == "string":
            v: Any = r.get(k)
        elif t == "hash":
            v = _enqueued(r) if k == keys.LADDER_RUNS_SCHEDULED else r.hgetall(k)
        elif t == "set":
            v = sorted(r.smembers(k))
        elif t == "zset":
            v = r.zrange(k, 0, -1, withscores=True)
        elif t == "list":
            v = r.lrange(k, 0, -1)
        elif t == "stream":
            v = r.xrange(k)
        else:
            v = None
        out[k] = (t, v)
    return out


def _enqueued(r: Any) -> dict[str, int]:
    """Each ladder's scheduled matches less those its feeders hold reserved, read at one moment."""
    pipe = r.pipeline(transaction=True)
    pipe.hgetall(keys.LADDER_RUNS_SCHEDULED)
    pipe.hgetall(keys.LADDER_RUNS_RESERVED)
    return net_of_reservations(*pipe.execute())


def arena_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "arena.cli", *args]


def worker_proc(url: str, worker_id: str, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """A real ``arena worker`` process (no health or metrics port: several run side by side)."""
    out = open(log, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            arena_cmd(
                "worker",
                "--redis",
                url,
                "--worker-id",
                worker_id,
                "--health-port",
                "-1",
                "--log-level",
                "WARNING",
                *extra,
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=dict(os.environ),
        )
    finally:
        out.close()


def last_json_line(path: Path) -> dict[str, Any]:
    for line in reversed(path.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            data: dict[str, Any] = json.loads(line)
            return data
    raise AssertionError(f"no JSON line in {path}:\n{path.read_text(errors='replace')[-2000:]}")


def children(pid: int) -> list[int]:
    """Direct children of a process (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid:
            out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"  # a zombie has exited
