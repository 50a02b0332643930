"""Helpers of the protocol tests: free ports, waiting for SERVING, starting and stopping bot processes.

A module of its own (not conftest) so that test modules can import it by a name no other test folder uses.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pilotta.arena.v1 import bot_pb2

from tests.ports import start_listening

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "sample_bots" / "node"
CALL_TIMEOUT = 5.0  # seconds: the deadline of every call the tests make


LISTENING = re.compile(r"listening on [^\s:]+:(\d+)")


def free_port() -> int:
    # The OS picks a free port, which a process started next binds, unless another process took it
    # meanwhile: only for the bots that cannot say which port they got (Go, C++); the others listen on port
    # 0 and say it (start_on_any_port).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_serving(address: str, timeout: float = 20.0, process: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until the gRPC health service at ``address`` says SERVING (or fail, naming why)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                out = process.stdout.read().decode(errors="replace") if process.stdout else ""
                raise AssertionError(f"bot process exited with {process.returncode} before serving:\n{out}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError as error:
                last = error
            time.sleep(0.1)
    raise AssertionError(f"no SERVING health from {address} within {timeout}s (last error: {last})")


def start_process(
    command: list[str], cwd: Path, port: int, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
    )
    try:
        wait_serving(f"127.0.0.1:{port}", process=process)
    except BaseException:
        stop_process(process)
        raise
    return process


def start_on_any_port(
    command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 20.0
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a bot told to listen on port 0 (``command`` says so, or ``env``'s PORT) and return it with the port
    it got, read from the line it prints once listening (``bot NAME listening on HOST:PORT``: the Python SDK's
    and the Node bot's; ``tests/ports.py``), once it serves."""
    started = start_listening(command, LISTENING.pattern, cwd, env, timeout)
    try:
        wait_serving(f"127.0.0.1:{started.port}", timeout)
    except BaseException:
        stop_process(started.process)
        raise
    return started.process, started.port


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
    if process.stdout:
        process.stdout.close()
    return int(process.returncode)


def referee_messages() -> list[bot_pb2.RefereeMessage]:
    """A short Play stream as a referee sends it: MatchStart, a decision, a DealEnd, a decision, MatchEnd."""
    start = bot_pb2.MatchStart(match_id="m", ruleset="coinche", game="coinche", seat=bot_pb2.NORTH, bots=["x"] * 4)
    obs = bot_pb2.Observation(ruleset="coinche", seat=bot_pb2.NORTH, phase=bot_pb2.AUCTION, hand=["JH"])
    return [
        bot_pb2.RefereeMessage(match_started=start),
        bot_pb2.RefereeMessage(
            decision_id=1, decide=bot_pb2.DecideRequest(match_id="m", observation=obs, legal_actions=["pass", "bid H"])
        ),
        bot_pb2.RefereeMessage(deal_ended=bot_pb2.DealEnd(match_id="m", deal_number=0, written=[0, 162])),
        bot_pb2.RefereeMessage(
            decision_id=2, decide=bot_pb2.DecideRequest(match_id="m", observation=obs, legal_actions=["play JH"])
        ),
        bot_pb2.RefereeMessage(match_ended=bot_pb2.MatchEnd(match_id="m", winner_side=1, scores=[0, 162])),
    ]
