"""Sample bots in the big compiled languages as uploads (issue 26): each package is built by the recipe of
docs/submitting.md, uploaded through the real API, validated by a worker's validator in the real sandbox
(bubblewrap, its cgroups and seccomp filter) and then plays a ladder match there, one instance per seat.
Real Redis, real gRPC, real bubblewrap; skipped with the reason where a toolchain is missing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api import ApiServer
from arena.bots.packages import PackageCache, PackageStore
from arena.bots.registry import Registry
from arena.bots.validation import Validator
from arena.cli import main as arena_main
from arena.model import MatchSpec
from arena.play.runner import ArenaRunner
from arena.sandbox import Sandbox, probe
from referee.match.bots import REPO_ROOT
from sample_bots.go import build as go_build
from sample_bots.java import build as java_build
from tests.shared_builds import go_package_copy, java_package_copy

PROBE = probe()
TIMEOUT = 30.0


@pytest.fixture
def api(r: redis.Redis) -> Iterator[tuple[str, arena_pb2_grpc.ArenaStub]]:
    """The arena's API on loopback: its address (for the CLI) and a client of it."""
    server = ApiServer(r, "127.0.0.1", 0, gauges_interval_s=0, feed_ladders=False).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield server.address, arena_pb2_grpc.ArenaStub(channel)
    finally:
        server.stop(grace_s=1.0)


def validated_and_played(
    r: redis.Redis,
    api: tuple[str, arena_pb2_grpc.ArenaStub],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    package: Path,
    ruleset: str,
) -> list[str]:
    """Check ``package`` with ``arena check-bot --sandbox``, upload it as ``name`` with ``arena bot submit``
    (docs/submitting.md), validate it in the sandbox (asserting both pass), play a two-deal ladder match of
    ``ruleset`` against the heuristic in the sandbox (asserting no forfeit); what its instances wrote to stderr."""
    assert arena_main(["check-bot", "--sandbox", str(package), "--logs", str(tmp_path / "check")]) == 0
    checked = capsys.readouterr().out
    assert checked.splitlines()[-1] == "verdict: validated (a worker's validation of this upload passes it)", checked
    assert "FAIL" not in checked
    reg = Registry(r)
    reg.set_admin_token()
    heuristic = json.loads((REPO_ROOT / "sample_bots" / "heuristic" / "manifest.json").read_text())
    other = reg.register(
        "heuristic", "t", manifest=heuristic, manifest_dir=str(REPO_ROOT / "sample_bots" / "heuristic")
    )
    address, stub = api
    argv = ["bot", "submit", name, str(package), "--owner", "tests", "--api", address, "--data-dir", str(tmp_path)]
    assert arena_main(argv) == 0
    said = capsys.readouterr().out
    assert f"submitted {name} version 1" in said, said
    token = re.search(r"owner token \(shown once.*\): (\S+)", said)
    assert token is not None, said
    sandbox, cache = Sandbox(), PackageCache(PackageStore(r))
    assert Validator(r, cache, sandbox, "tests", tmp_path / "validation").run_once() == 1
    got = stub.BotStatus(arena_pb2.BotStatusRequest(name=name, token=token.group(1)), timeout=TIMEOUT)
    (v,) = got.versions
    assert v.state == "validated", (v.reason, v.output)
    assert "passed, 0 failed" in v.output
    # A bound for a loaded machine (the default is 15 s): a JVM takes 0.6 s of CPU to serve, which at the load
    # of a parallel suite on 2 cores (20 and more) came to over 15 s for two instances starting at once.
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", sandbox=sandbox, packages=cache, startup_timeout_s=60.0)
    try:
        bot = reg.by_name(name)
        result = runner(MatchSpec(f"m-{name}", "lad", ruleset, 11, (bot.bot_id, other[0].bot_id), deals=2))
    finally:
        runner.close()
    assert result.forfeit is None, result.forfeit
    assert result.deals_played >= 2
    decisions = [a for leg in json.loads(result.record)["legs"] for d in leg["deals"] for a in d["actions"]]
    assert any(a.get("cpu_ms") is not None for a in decisions)  # the instance's cgroup's CPU time
    return [p.read_text() for p in (tmp_path / "logs").rglob("*.stderr.log")]


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(900)  # the first run compiles the bot and gRPC
def test_the_go_package_is_validated_and_plays_a_ladder_match_in_the_sandbox(r, api, tmp_path, capsys):
    try:
        package = go_package_copy(tmp_path / "go-package")  # make -C sample_bots/go package, then a private copy
    except go_build.CannotBuild as e:
        pytest.skip(f"the Go sample bot cannot be built here: {e}")
    # A single static executable (no lib/, no interpreter: not even glibc) and its native manifest.
    assert sorted(p.name for p in package.iterdir()) == ["manifest.json", "pilotta-go-bot"]
    manifest = json.loads((package / "manifest.json").read_text())
    assert (manifest["runtime"], manifest["command"][0], manifest["port"]) == (
        "native",
        "pilotta-go-bot",
        {"socket": "--socket"},
    )
    elf = (package / "pilotta-go-bot").read_bytes()
    assert elf[:4] == b"\x7fELF" and b"/lib64/ld-linux" not in elf  # static: no program interpreter
    said = validated_and_played(r, api, tmp_path, capsys, "go-random", package, "coinche")
    # The executable itself ran, in its sandboxes (one per seat), serving on the socket each gave it.
    served = [t for t in said if "pilotta-go-bot: serving on unix:/run/bot/bot.sock" in t]
    assert len(served) >= 2, said


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(900)  # the first run compiles the bot
def test_the_java_package_is_validated_and_plays_a_ladder_match_in_the_sandbox(r, api, tmp_path, capsys):
    try:
        package = java_package_copy(tmp_path / "java-package")  # make -C sample_bots/java package, then a copy
    except java_build.CannotBuild as e:
        pytest.skip(f"the Java sample bot cannot be built here: {e}")
    # The bot's jar, the jars it runs with (copies: no link), and a manifest for the worker's own Java.
    assert [p.name for p in package.iterdir() if p.is_file()] and not [p for p in package.rglob("*") if p.is_symlink()]
    assert (package / "pilotta-java-bot.jar").is_file() and (package / "lib" / "grpc-netty.jar").is_file()
    manifest = json.loads((package / "manifest.json").read_text())
    assert (manifest["runtime"], manifest["command"][0], manifest["port"]) == ("java", "{java}", {"arg": "--port"})
    said = validated_and_played(r, api, tmp_path, capsys, "java-random", package, "pilotta")
    # The JVM ran in its sandboxes (one per seat), on the loopback port the sandbox's bridge relays to.
    served = [t for t in said if "pilotta-java-bot: serving on 127.0.0.1:50051" in t]
    assert len(served) >= 2, said
