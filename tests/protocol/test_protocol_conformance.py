"""Every sample bot passes `arena check-bot` for every game the engine has, and the Python and Node.js
bots play whole matches together over real gRPC."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.cli import main as arena_main
from referee.match import MatchSettings, run_match
from referee.match.bots import load_manifest
from referee.record import verify_record
from referee.rules import ruleset_names

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(240)
@pytest.mark.parametrize("bot", ["uniform", "random", "heuristic"])
def test_python_sample_bots_pass_check_bot(bot: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["check-bot", str(REPO / "sample_bots" / bot), "--logs", str(tmp_path)]) == 0
    report = capsys.readouterr().out
    for game in ruleset_names():
        assert f"PASS  [{game}] legal answers in play" in report, report


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(240)
def test_node_sample_bot_passes_check_bot_for_every_game(
    node_bot_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = arena_main(["check-bot", str(node_bot_dir), "--logs", str(tmp_path)])
    report = capsys.readouterr().out
    assert code == 0, report
    for game in ruleset_names():
        # The bot says it plays every game; each must have been checked in every phase it reached.
        assert f"PASS  [{game}] legal answers in auction" in report, report
        assert f"PASS  [{game}] legal answers in play" in report, report
    assert "FAIL" not in report


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(180)
@pytest.mark.parametrize("game", ["pilotta", "bulgarian"])
def test_python_and_node_bots_play_a_duplicate_match_together(node_bot_dir: Path, tmp_path: Path, game: str) -> None:
    heuristic, node = load_manifest(REPO / "sample_bots" / "heuristic"), load_manifest(node_bot_dir)
    outcome = run_match(
        [heuristic, node],
        MatchSettings(ruleset=game, seed=5, deals=4, duplicate=True, log_dir=str(tmp_path)),
        f"mixed-{game}",
    )
    assert outcome.forfeit is None, outcome.forfeit_reason
    assert len(outcome.record["legs"]) == 2
    for bot in outcome.bots:
        assert bot.counts["ok"] > 0 and bot.strikes == 0, bot.to_json()
    for leg in outcome.record["legs"]:
        assert verify_record(leg).game.played_deals >= 1  # each leg replays from scratch


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(900)  # the first run compiles the bot
def test_cpp_sample_bot_passes_check_bot_for_every_game(
    cpp_bot_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = arena_main(["check-bot", str(cpp_bot_dir), "--logs", str(tmp_path)])
    report = capsys.readouterr().out
    assert code == 0, report
    for game in ruleset_names():
        assert f"PASS  [{game}] legal answers in auction" in report, report
        assert f"PASS  [{game}] legal answers in play" in report, report
    assert "FAIL" not in report
