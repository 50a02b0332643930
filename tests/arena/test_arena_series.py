"""``arena series`` end to end through the CLI: the real sample bots started as processes, real gRPC,
duplicate matches of boards, the running score, the SPRT's decision as the exit code, the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.cli import main
from arena.cli.series import EXIT_DONE, EXIT_H0, EXIT_UNDECIDED, EXIT_USAGE
from arena.rating.sprt import Sprt

SAMPLES = Path(__file__).resolve().parents[2] / "sample_bots"
# The uniform bot: the heuristic wins nearly every board against it, which the SPRT tests below rely on.
HEURISTIC, UNIFORM = str(SAMPLES / "heuristic"), str(SAMPLES / "uniform")
pytestmark = pytest.mark.timeout(180)


def series(tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    out = tmp_path / "series.json"
    code = main(["series", *args, "--out", str(out), "--logs", str(tmp_path / "logs")])
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_sprt_accepts_h1_for_the_stronger_bot_and_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, record = series(tmp_path, HEURISTIC, UNIFORM, "--boards", "200", "--concurrency", "2", "--sprt")
    assert code == EXIT_DONE
    sprt = record["sprt"]
    assert isinstance(sprt, dict) and sprt["verdict"] == "H1" and sprt["llr"] >= sprt["bounds"][1]
    # The heuristic wins nearly every board: the test decides at its first chance, after min_boards.
    boards = record["boards"]
    assert isinstance(boards, list) and len(boards) == Sprt().min_boards
    summary = record["summary"]
    assert isinstance(summary, dict) and summary["boards"] == len(boards)
    assert summary["won"] + summary["tied"] + summary["lost"] == len(boards)
    assert summary["likelihood_of_superiority"] > 0.99
    for board in boards:
        assert set(board) == {"match_id", "seed", "board", "points", "thrown_in", "margin", "score"}
        (a0, b0), (a1, b1) = board["points"]
        assert board["margin"] == a0 - b0 + a1 - b1 and -1 <= board["score"] <= 1
    captured = capsys.readouterr()
    assert "H1 accepted: heuristic is stronger" in captured.out
    assert "boards won/tied/lost" in captured.err and "/200 boards" in captured.err and "LLR" in captured.err


def test_sprt_accepts_h0_for_the_weaker_bot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, record = series(tmp_path, UNIFORM, HEURISTIC, "--boards", "100", "--boards-per-match", "5", "--sprt")
    assert code == EXIT_H0
    sprt = record["sprt"]
    assert isinstance(sprt, dict) and sprt["verdict"] == "H0" and sprt["llr"] <= sprt["bounds"][0]
    assert "H0 accepted: uniform is not stronger" in capsys.readouterr().out


def test_a_series_without_sprt_plays_every_board(tmp_path: Path) -> None:
    code, record = series(
        tmp_path, HEURISTIC, UNIFORM, "--boards", "6", "--boards-per-match", "4", "--scale", "winloss"
    )
    assert code == EXIT_DONE and record["sprt"] is None and record["scale"] == "winloss"
    boards = record["boards"]
    assert isinstance(boards, list) and len(boards) == 6  # a match of 4 boards, then one of 2
    assert [b["board"] for b in boards] == [0, 1, 2, 3, 0, 1]
    assert all(b["score"] in (-1.0, 0.0, 1.0) for b in boards)


def test_an_sprt_short_of_boards_is_undecided(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, record = series(tmp_path, HEURISTIC, UNIFORM, "--boards", "8", "--sprt")
    assert code == EXIT_UNDECIDED  # fewer boards than the test's minimum of 30
    assert record["sprt"]["verdict"] == "continue"  # type: ignore[index]
    assert "undecided after 8 boards" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--boards", "0"], "--boards, --concurrency and --boards-per-match must each be at least 1"),
        (["--sprt", "--mu0", "0.1", "--mu1", "0.05"], "the SPRT needs mu1 > mu0"),
        (["--sprt", "--alpha", "1.5"], "alpha and beta must be in (0, 1)"),
    ],
)
def test_bad_options_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _ = series(tmp_path, HEURISTIC, UNIFORM, *args)
    assert code == EXIT_USAGE and message in capsys.readouterr().err


def test_a_bot_that_is_not_there_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = series(tmp_path, str(tmp_path / "nobot"), UNIFORM)
    assert code == EXIT_USAGE and "nobot" in capsys.readouterr().err


def test_without_out_the_record_goes_to_the_data_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not into the working directory unasked (issue 26): the data dir's series/, and it says where."""
    data = tmp_path / "data"
    argv = ["series", HEURISTIC, UNIFORM, "--boards", "2", "--boards-per-match", "2", "--quiet"]
    code = main([*argv, "--data-dir", str(data), "--logs", str(tmp_path / "logs")])
    assert code == EXIT_DONE
    (written,) = (data / "series").iterdir()
    assert written.name.startswith("series-") and written.suffix == ".json"
    assert len(json.loads(written.read_text())["boards"]) == 2
    assert f"record of every board written to {written}" in capsys.readouterr().err
