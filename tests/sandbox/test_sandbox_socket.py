"""The worker never follows the bot to its socket (issue 23): a bot that makes ``/run/bot/bot.sock`` a
symbolic link to a host socket, once or swapping it back and forth with its real socket as fast as it
can, never has the worker (root, outside the sandbox) connect anywhere but to the socket the bot bound.

Real bubblewrap. A host socket, listening, is what the link names: after every dial the worker made, it
has no connection waiting (a connection made stays in its backlog until accepted: looked at with a
zero-timeout select, no race). The attack runs only inside the sandbox.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Sandbox, SandboxedBot, probe
from referee.match.bots import wait_serving

PYBOT = Path(__file__).resolve().parent / "packages" / "pybot"
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")


@pytest.fixture
def top() -> Iterator[Path]:
    """A directory the sandbox uid can reach (pytest's tmp_path is closed to others), as a package cache is."""
    with tempfile.TemporaryDirectory(prefix="pilotta-socket-") as d:
        os.chmod(d, 0o755)
        yield Path(d)


@pytest.fixture
def host_socket() -> Iterator[tuple[str, socket.socket]]:
    """A host Unix socket listening at a short path (a link naming it stays within a tmpfs inode)."""
    with tempfile.TemporaryDirectory(prefix="h-") as d:
        path = str(Path(d) / "host.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(64)
        try:
            yield path, server
        finally:
            server.close()


def nobody_connected(server: socket.socket) -> bool:
    return select.select([server], [], [], 0)[0] == []


def launch(top: Path, tmp_path: Path, code: str, *args: str) -> SandboxedBot:
    d = top / "pkg"
    d.mkdir()
    os.chmod(d, 0o755)
    (d / "bot.py").write_text(code)
    manifest = json.loads((PYBOT / "manifest.json").read_text())
    manifest["command"] = [*manifest["command"], *args]
    (d / "manifest.json").write_text(json.dumps(manifest))
    pm = parse_package_manifest(manifest, d)
    return Sandbox(work_dir=top / "work").launch(pm.manifest, pm.command, d, tmp_path / "logs")


def wait_for(what: str, cond: Callable[[], bool], timeout_s: float = 60.0) -> None:
    """Until ``cond()`` holds (looked at every 20 ms, at most ``timeout_s``): a state, not a duration."""
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, f"not seen within {timeout_s}s: {what}"
        time.sleep(0.02)


SYMLINK_BOT = """
import os, sys, time

os.symlink(sys.argv[1], "/run/bot/bot.sock")
print("RESULT linked: ok", file=sys.stderr, flush=True)
time.sleep(600)
"""


@pytest.mark.timeout(120)
def test_a_symbolic_link_for_a_socket_is_not_followed(top, tmp_path, host_socket):
    path, server = host_socket
    bot = launch(top, tmp_path, SYMLINK_BOT, path)
    try:
        assert bot.pin is not None
        wait_for("the link refused", lambda: "symbolic link" in bot.pin.why)  # type: ignore[union-attr]
        assert not bot.pin.found.is_set()
        assert not os.path.lexists(bot.run_dir / "bot.sock")  # the worker's endpoint leads nowhere
        assert wait_serving(bot.endpoint, 1.0, bot.process) is not None
    finally:
        bot.stop()
    assert nobody_connected(server)
    assert "RESULT linked: ok" in bot.stderr_path.read_text()


SWAPPING_BOT = """
import os, sys, threading, time

import pilotta_bot

HOST, REAL, LINK = sys.argv[1], "/run/bot/real.sock", "/run/bot/bot.sock"


def swap():
    end = time.monotonic() + 30
    while not os.path.exists(REAL) and time.monotonic() < end:
        time.sleep(0.001)
    n = 0
    while True:
        os.symlink(HOST, "/run/bot/.l")
        os.rename("/run/bot/.l", LINK)  # now a link to the host socket...
        os.link(REAL, "/run/bot/.h")
        os.rename("/run/bot/.h", LINK)  # ...now the real socket again
        n += 1
        if n % 1000 == 0:
            print(f"RESULT swaps: {n}", file=sys.stderr, flush=True)


class Bot:
    name, version, author, games = "swapper", "1", "tests", ("pilotta",)

    def decide(self, obs, legal):
        return legal[0]


threading.Thread(target=swap, daemon=True).start()
pilotta_bot.serve(Bot(), 0, socket=REAL)
"""


def swaps(bot: SandboxedBot) -> int:
    found = re.findall(r"^RESULT swaps: (\d+)$", bot.stderr_path.read_text(errors="replace"), re.M)
    return int(found[-1]) if found else 0


@pytest.mark.timeout(180)
def test_a_link_swapped_back_and_forth_during_the_look_and_the_dials_never_steers_the_worker(
    top, tmp_path, host_socket
):
    path, server = host_socket
    bot = launch(top, tmp_path, SWAPPING_BOT, path)
    try:
        assert bot.wait_socket(60) is None
        assert bot.pin is not None and bot.pin.fd is not None and bot.pin.pid is not None
        # What the worker holds is the real socket's inode (the link's other state is refused).
        real = os.stat(f"/proc/{bot.pin.pid}/root/run/bot/real.sock")
        held = os.fstat(bot.pin.fd)
        assert (held.st_dev, held.st_ino) == (real.st_dev, real.st_ino)
        wait_for("a thousand swaps", lambda: swaps(bot) >= 1000)
        before = swaps(bot)
        # Twenty new channels (each a new connect) while the bot swaps on.
        for _ in range(20):
            assert wait_serving(bot.endpoint, 30, bot.process) is None
        wait_for("more swaps during the dials", lambda: swaps(bot) > before)
    finally:
        bot.stop()
    assert nobody_connected(server)
