"""The Java sample bot (sample_bots/java, built offline with javac against Debian's jars) over real gRPC: its
handshake, legal answers and error status in both protocol versions, its command line, a clean exit 0 on
SIGTERM (a JVM's own is 143), and docs/submitting.md's Java recipe run as written (check-bot on every game)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import grpc
import pytest
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc
from protocol_helpers import free_port, referee_messages, start_process, stop_process
from test_protocol_bots import ask_through_games

from arena.cli import main as arena_main
from referee.match import wire
from referee.rules import ruleset_names


def command(bot_dir: Path) -> list[str]:
    """The bot's command line as its local manifest gives it (``java ... PilottaBot --seed 1``)."""
    return list(json.loads((bot_dir / "manifest.json").read_text())["command"])


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(900)  # the first run compiles the bot
def test_java_bot_handshake_decisions_and_error_status_over_grpc(java_bot_dir: Path) -> None:
    port = free_port()
    process = start_process([*command(java_bot_dir), "--port", str(port)], java_bot_dir, port)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = bot_pb2_grpc.BotStub(channel)
            hello = stub.Handshake(wire.handshake_request("tests"), timeout=10)
            assert (hello.name, hello.version, hello.author) == ("java-random", "1.0.0", "pilotta-arena")
            assert hello.protocol_version == 2  # offered [1, 2]
            assert sorted(hello.rulesets) == sorted(hello.games) == sorted(ruleset_names())
            assert stub.Handshake(wire.handshake_request("tests", (1,)), timeout=5).protocol_version == 1
            stub.MatchStarted(bot_pb2.MatchStart(match_id="j", ruleset="coinche", seat=bot_pb2.SOUTH), timeout=5)
            assert ask_through_games(stub, seed=13, games=4, game_name="coinche") > 50  # raises on an illegal one
            stub.DealEnded(bot_pb2.DealEnd(match_id="j"), timeout=5)
            stub.MatchEnded(bot_pb2.MatchEnd(match_id="j", scores=[1, 2]), timeout=5)
            with pytest.raises(grpc.RpcError) as e:  # Java's onError: a code and a description, not UNKNOWN
                stub.Decide(bot_pb2.DecideRequest(match_id="j"), timeout=5)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "no legal action" in e.value.details()
            answers = list(stub.Play(iter(referee_messages()), timeout=10))
            assert [(a.decision_id, a.error) for a in answers] == [(1, ""), (2, "")]
            assert answers[0].reply.action in ("pass", "bid H") and answers[1].reply.action == "play JH"
    finally:
        assert stop_process(process) == 0  # SIGTERM: the shutdown hook halts with 0, not the JVM's 143


def test_java_bot_refuses_a_bad_command_line(java_bot_dir: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        # The manifest's command ends with --seed 1; these come after it, as the arena's would.
        return subprocess.run(
            [*command(java_bot_dir), *args], cwd=java_bot_dir, capture_output=True, text=True, timeout=60, env={}
        )

    bad_seed, no_port, unknown = run("--seed", "x"), run(), run("--verbose")
    assert bad_seed.returncode == 2 and "--seed must be a non-negative integer, not x" in bad_seed.stderr
    assert no_port.returncode == 2 and "--port N" in no_port.stderr
    assert unknown.returncode == 2 and "unknown argument --verbose" in unknown.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_java_recipe_check_bot_passes_every_game(
    java_bot_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/submitting.md, the Java recipe: arena check-bot sample_bots/java.
    code = arena_main(["check-bot", str(java_bot_dir), "--logs", str(tmp_path)])
    report = capsys.readouterr().out
    assert code == 0, report
    for game in ruleset_names():
        for phase in ("auction", "play"):
            assert f"PASS  [{game}] legal answers in {phase}" in report, report
    assert "PASS  stops cleanly on SIGTERM" in report and "exited with code 0" in report and "FAIL" not in report
    # The package as uploaded ({java} and its own paths), started here: the same checks pass.
    code = arena_main(["check-bot", str(java_bot_dir / "build" / "package"), "--logs", str(tmp_path)])
    report = capsys.readouterr().out
    assert code == 0 and "FAIL" not in report, report
    assert "PASS  [bela] legal answers in play" in report and "the package is accepted for upload" in report
