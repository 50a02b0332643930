"""Manifests and manifest bots: validation naming the bad field, start, health wait, stop, stderr."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from testbot import BOTS_DIR

from referee.match.bots import (
    SERVICE_PORTS,
    ManifestError,
    free_port,
    launch_bots,
    load_manifest,
    parse_manifest,
    resolve_bot,
    start_bot,
    wait_serving,
)

GOOD = {
    "name": "b",
    "version": "1",
    "author": "me",
    "language": "python",
    "command": ["{python}", "bot.py"],
    "port": {"arg": "--port"},
    "games": ["pilotta"],
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": ""}, "name"),
        ({"command": []}, "command"),
        ({"command": "python bot.py"}, "command"),
        ({"port": {"arg": "port"}}, "port.arg"),
        ({"port": {"env": "1PORT"}}, "port.env"),
        ({"port": 5000}, "port"),
        ({"games": []}, "games"),
        ({"version": 3}, "version"),
        ({"prot": {"arg": "--port"}}, "prot"),  # a misspelt field is refused, not ignored
    ],
)
def test_bad_manifest_names_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(ManifestError, match=f"'{field}'"):
        parse_manifest({**GOOD, **change}, Path("."), "m.json")


@pytest.mark.timeout(10)
def test_missing_field_and_bad_files(tmp_path: Path) -> None:
    data = dict(GOOD)
    del data["games"]
    with pytest.raises(ManifestError, match="missing field 'games'"):
        parse_manifest(data, tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ManifestError, match="not a readable JSON"):
        load_manifest(tmp_path)
    with pytest.raises(ManifestError, match="no manifest here"):
        load_manifest(tmp_path / "nothing")
    with pytest.raises(ManifestError, match="neither host:port"):
        resolve_bot("no-such-bot")
    assert resolve_bot("127.0.0.1:5000") == "127.0.0.1:5000"


@pytest.mark.timeout(10)
def test_argv_substitutes_python_repo_and_port() -> None:
    m = parse_manifest({**GOOD, "command": ["{python}", "{repo}/x.py"]}, Path("."))
    argv = m.argv(1234)
    assert argv[0].endswith("python") or "python" in argv[0]
    assert argv[1].endswith("/x.py") and "{repo}" not in argv[1]
    assert argv[-2:] == ["--port", "1234"]
    m2 = parse_manifest({**GOOD, "port": {"env": "PORT"}}, Path("."))
    assert m2.env(99)["PORT"] == "99" and m2.argv(99)[-1] == "bot.py"


@pytest.mark.timeout(30)
def test_start_serve_and_stop(tmp_path: Path) -> None:
    m = load_manifest(BOTS_DIR / "first")
    with launch_bots([m, m, "127.0.0.1:1"], tmp_path) as (endpoints, procs):
        assert len(procs) == 1 and procs[0].error is None
        assert endpoints[0] == endpoints[1] == procs[0].endpoint and endpoints[2] == "127.0.0.1:1"
        assert wait_serving(endpoints[0], 2.0) is None
    assert procs[0].process.returncode is not None  # stopped
    assert "test bot first" in procs[0].stderr_path.read_text()  # its stderr kept for its author


@pytest.mark.timeout(30)
def test_bot_that_exits_at_once(tmp_path: Path) -> None:
    bot = start_bot(load_manifest(BOTS_DIR / "never_starts"), tmp_path, startup_timeout_s=10)
    try:
        assert bot.error is not None and "exited with code 3" in bot.error
        assert "cannot start: on purpose" in bot.stderr_path.read_text()
    finally:
        bot.stop(1.0)


@pytest.mark.timeout(30)
def test_bot_that_never_serves_is_bounded_and_killed(tmp_path: Path) -> None:
    t0 = time.monotonic()
    bot = start_bot(load_manifest(BOTS_DIR / "never_serves"), tmp_path, startup_timeout_s=1.0)
    assert bot.error is not None and "not serving after 1s" in bot.error
    assert time.monotonic() - t0 < 5
    assert bot.stop(0.5) is not None


def test_manifests_of_the_test_bots_are_valid() -> None:
    for d in BOTS_DIR.iterdir():
        if (d / "manifest.json").is_file():
            json.loads((d / "manifest.json").read_text())
            load_manifest(d)


def test_a_free_port_is_never_one_of_the_arenas_service_ports() -> None:
    """A fresh clone's test run had its endpoint bot given 50051 by the OS (Linux's ephemeral range holds 50051
    and 50052): the arena's policy refuses an endpoint on its API's port, so the bot played as unreachable.
    Here the sockets offered first are bound to those two ports, real sockets on loopback addresses of
    their own (127.0.0.x: nothing else of the suite listens there); the port given is the next one offered."""
    from arena.bots.limits import DEFAULT_REFUSED_PORTS

    assert DEFAULT_REFUSED_PORTS == SERVICE_PORTS  # one list: what the referee avoids, the policy refuses
    offered: list[socket.socket] = []
    ports: list[int] = []

    def offer() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if len(offered) < 2:  # first 50051, then 50052, as the OS may
            s.bind((f"127.0.0.{77 + len(offered)}", SERVICE_PORTS[1 + len(offered)]))
        else:
            s.bind(("127.0.0.1", 0))
        offered.append(s)
        ports.append(s.getsockname()[1])
        return s

    port = free_port(offer)
    assert ports[:2] == [50051, 50052] and len(ports) == 3 and port == ports[2] and port not in SERVICE_PORTS
    assert all(s.fileno() == -1 for s in offered)  # every offered socket closed again
    assert free_port() not in SERVICE_PORTS
