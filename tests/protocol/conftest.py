"""Fixtures for the protocol tests: real gRPC servers on loopback, in-process or as subprocesses.

Every server listens on 127.0.0.1 on a port the OS picks, every call carries a deadline, and every process
started here is stopped at teardown (SIGTERM, then SIGKILL after a bound).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pilotta_bot
import pytest
from pilotta.arena.v1 import bot_pb2_grpc
from protocol_helpers import NODE_DIR, REPO, start_on_any_port, stop_process

from sample_bots.cpp import build as cpp_build
from sample_bots.go import build as go_build
from sample_bots.heuristic import HeuristicBot
from sample_bots.java import build as java_build
from sample_bots.random import RandomBot
from sample_bots.uniform import UniformBot
from tests.shared_builds import built_cpp_bot, built_go_bot, built_java_bot, exclusive


@pytest.fixture
def serve_bot() -> Iterator[Callable[[pilotta_bot.BotLike], pilotta_bot.RunningBot]]:
    """Start bots in-process with the SDK on free ports; all are stopped at teardown."""
    running: list[pilotta_bot.RunningBot] = []

    def start(bot: pilotta_bot.BotLike) -> pilotta_bot.RunningBot:
        r = pilotta_bot.start(bot, 0)
        running.append(r)
        return r

    yield start
    for r in running:
        r.stop(grace=1.0)


@pytest.fixture
def bot_stub() -> Iterator[Callable[[str], bot_pb2_grpc.BotStub]]:
    channels: list[grpc.Channel] = []

    def connect(address: str) -> bot_pb2_grpc.BotStub:
        channel = grpc.insecure_channel(address)
        channels.append(channel)
        return bot_pb2_grpc.BotStub(channel)

    yield connect
    for channel in channels:
        channel.close()


@pytest.fixture(scope="module")
def sample_bot_addresses() -> Iterator[dict[str, str]]:
    """The uniform, random and heuristic sample bots, in-process."""
    servers = {
        "uniform": pilotta_bot.start(UniformBot(7), 0),
        "random": pilotta_bot.start(RandomBot(7), 0),
        "heuristic": pilotta_bot.start(HeuristicBot(), 0),
    }
    yield {name: r.address for name, r in servers.items()}
    for r in servers.values():
        r.stop(grace=1.0)


@pytest.fixture(scope="session")
def node_bot_dir() -> Path:
    """sample_bots/node with its node_modules installed (npm ci, or npm install without a lock file)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the Node sample bot cannot be tested here")
    # Under a lock, looked at again once held: other test processes (xdist) may be installing them too.
    with exclusive(Path(NODE_DIR) / "package.json"):
        if not (NODE_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
            npm = shutil.which("npm")
            if npm is None:
                pytest.skip("npm is not installed: cannot install the Node sample bot's dependencies")
            lock = NODE_DIR / "package-lock.json"
            command = [npm, "ci" if lock.exists() else "install", "--no-audit", "--no-fund"]
            result = subprocess.run(command, cwd=NODE_DIR, capture_output=True, text=True, timeout=300)
            if result.returncode != 0:
                pytest.fail(f"{' '.join(command)} failed in {NODE_DIR}:\n{result.stdout}\n{result.stderr}")
    return Path(NODE_DIR)


@pytest.fixture(scope="session")
def cpp_bot_dir() -> Path:
    """sample_bots/cpp with its executable built (once: make finds it up to date afterwards)."""
    try:
        return built_cpp_bot()  # under a lock: other test processes may be building it too
    except cpp_build.CannotBuild as e:
        pytest.skip(f"the C++ sample bot cannot be built here: {e}")


@pytest.fixture(scope="session")
def go_bot_dir() -> Path:
    """sample_bots/go with its executable and package built (once: make finds them up to date afterwards)."""
    try:
        return built_go_bot()  # under a lock: other test processes may be building it too
    except go_build.CannotBuild as e:
        pytest.skip(f"the Go sample bot cannot be built here: {e}")


@pytest.fixture(scope="session")
def java_bot_dir() -> Path:
    """sample_bots/java with its jar and package built (once: make finds them up to date afterwards)."""
    try:
        return built_java_bot()  # under a lock: other test processes may be building it too
    except java_build.CannotBuild as e:
        pytest.skip(f"the Java sample bot cannot be built here: {e}")


@pytest.fixture
def python_bot_process() -> Iterator[Callable[[str, list[str]], tuple[subprocess.Popen[bytes], int]]]:
    """Start ``python -m <module> --port 0`` subprocesses from the repo root, each on the port it binds itself
    (``start_on_any_port``); stopped at teardown."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(module: str, extra: list[str]) -> tuple[subprocess.Popen[bytes], int]:
        p, port = start_on_any_port([sys.executable, "-m", module, "--port", "0", *extra], REPO)
        processes.append(p)
        return p, port

    yield start
    for p in processes:
        stop_process(p)
