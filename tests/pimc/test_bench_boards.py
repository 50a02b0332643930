"""The strength benchmark's board runs are resumable and append-only (real processes of
``bench/bench_pimc.py``, the pure-Python kernel, a 0 ms budget so that every board is quick: the bot then
gives the heuristic's answers, against random)."""

from __future__ import annotations

import gzip
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "bench_pimc.py"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), *args, "--pure"], capture_output=True, text=True, timeout=120, check=True
    )


def boards(results: Path, count: int, ruleset: str = "french") -> subprocess.CompletedProcess[str]:
    return bench(
        "boards",
        "--results",
        str(results),
        "--ruleset",
        ruleset,
        "--opponent",
        "random",
        "--boards",
        str(count),
        "--budget-ms",
        "0",
    )


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.slow  # make check leaves it to make test
def test_a_stopped_run_continues_where_it_stopped_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    boards(results, 2)
    assert [json.loads(line)["board"] for line in lines(results)] == [0, 1]
    with results.open("a") as out:
        out.write('{"ruleset": "fre')  # a run killed while writing its third line
    run = boards(results, 4)
    assert "2 boards in" in run.stdout and "2 to play" in run.stdout
    whole = [line for line in lines(results) if line.endswith("}")]
    assert [json.loads(line)["board"] for line in whole] == [0, 1, 2, 3]
    assert len(lines(results)) == 5  # the torn line stays, on a line of its own
    assert "not a whole board line" in bench("figures", str(results)).stderr
    # Asked again for 4 boards: nothing left to play.
    assert "0 to play" in boards(results, 4).stdout
    assert len(lines(results)) == 5


@pytest.mark.slow  # make check leaves it to make test
def test_figures_merge_files_and_count_a_board_once(tmp_path: Path) -> None:
    first, second, merged = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "all.jsonl"
    boards(first, 3)
    boards(second, 5)  # boards 0..4: 0..2 are the same boards as in ``first``
    boards(second, 2, ruleset="bela")
    out = bench("figures", str(first), str(second), "--merge-into", str(merged)).stdout
    rows = [json.loads(line) for line in lines(merged)]
    assert sorted((r["ruleset"], r["board"]) for r in rows) == [("bela", 0), ("bela", 1)] + [
        ("french", b) for b in range(5)
    ]
    margins = [r["margin"] for r in rows if r["ruleset"] == "french"]
    mean = statistics.fmean(margins)
    half = 1.96 * statistics.stdev(margins) / len(margins) ** 0.5
    french = next(line for line in out.splitlines() if line.startswith("french"))
    assert f"5 boards, margin {mean:+.1f} ± {half:.1f} per board" in french
    assert any(line.startswith("bela") and "2 boards" in line for line in out.splitlines())


@pytest.mark.slow  # make check leaves it to make test
def test_a_lifted_deadline_is_a_figure_of_its_own_and_pairs_with_the_default(tmp_path: Path) -> None:
    """Boards played with another ``--deadline-ms`` (the requests' deadline, which caps any budget) never pool
    with the arena's default deadline; ``figures`` pairs the two on the boards both played."""
    results = tmp_path / "r.jsonl"
    boards(results, 3)
    run = bench(
        "boards",
        "--results",
        str(results),
        "--ruleset",
        "french",
        "--opponent",
        "random",
        "--boards",
        "2",
        "--budget-ms",
        "0",
        "--deadline-ms",
        "60000",
    )
    assert "0 boards in" in run.stdout and "2 to play" in run.stdout  # the default's three boards are not its
    rows = [json.loads(line) for line in lines(results)]
    assert [r["settings"].get("deadline_ms") for r in rows] == [None, None, None, 60000, 60000]
    out = bench("figures", str(results)).stdout.splitlines()
    assert sum(line.startswith("french") for line in out) == 2
    assert any("3 boards" in line and "deadline_ms" not in line for line in out if line.startswith("french"))
    assert any('"deadline_ms": 60000' in line and "2 boards" in line for line in out if line.startswith("french"))
    by_board = {(r["settings"].get("deadline_ms"), r["board"]): r["margin"] for r in rows}
    paired = next(line for line in out if line.startswith("paired"))
    first = paired.split(") - (")[0]  # the line reads "(figure X) - (figure Y): mean ± half"
    x, y = (60000, None) if "deadline_ms" in first else (None, 60000)
    diffs = [by_board[(x, b)] - by_board[(y, b)] for b in (0, 1)]
    mean, half = statistics.fmean(diffs), 1.96 * statistics.stdev(diffs) / 2**0.5
    assert paired.startswith("paired, 2 boards:") and paired.endswith(f"{mean:+.1f} ± {half:.1f} per board")


@pytest.mark.slow  # make check leaves it to make test
def test_a_gzipped_results_file_reads_as_the_plain_one_and_ranges_split_a_run(tmp_path: Path) -> None:
    """The published results (bench/results/*.jsonl.gz) read as the files the runs wrote; ``--first`` plays
    a range of boards, so two processes with two files make one figure."""
    low, high = tmp_path / "low.jsonl", tmp_path / "high.jsonl"
    boards(low, 2)
    bench(
        "boards",
        "--results",
        str(high),
        "--ruleset",
        "french",
        "--opponent",
        "random",
        "--boards",
        "4",
        "--first",
        "2",
        "--budget-ms",
        "0",
    )
    assert [json.loads(line)["board"] for line in lines(high)] == [2, 3]
    packed = tmp_path / "all.jsonl.gz"
    packed.write_bytes(gzip.compress((low.read_text() + high.read_text()).encode()))
    margins = [json.loads(line)["margin"] for line in lines(low) + lines(high)]
    mean = statistics.fmean(margins)
    half = 1.96 * statistics.stdev(margins) / len(margins) ** 0.5
    won = sum(m > 0 for m in margins)
    for paths in ([str(packed)], [str(low), str(high)]):
        french = next(line for line in bench("figures", *paths).stdout.splitlines() if line.startswith("french"))
        assert f"4 boards, margin {mean:+.1f} ± {half:.1f} per board" in french
        assert f"won / lost / even {won}/" in french


def test_the_contract_split_counts_contras_by_whose_contract_they_were() -> None:
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench_pimc
    finally:
        sys.path.remove(str(BENCH.parent))

    def c(pimc: bool, value: int, multiplier: int = 1, made: bool = True) -> dict[str, object]:
        return {"pimc": pimc, "bidder": 0, "value": value, "strain": "H", "multiplier": multiplier, "made": made}

    lines = [
        # The same contract at both tables (the other bot took it at the second): the card play compared.
        {"margin": 20, "contracts": [c(True, 100), c(False, 100)]},
        # The pimc bot's contract contra'd, and at the other table the opponent's, undoubled.
        {"margin": -300, "contracts": [c(True, 110, 2, made=False), c(False, 90)]},
        # Its contract surcontra'd at one table, the opponent's contra'd by it at the other.
        {"margin": 100, "contracts": [c(True, 80, 4), c(False, 120, 2, made=False)]},
        {"margin": 0, "contracts": [None, None]},
    ]
    split = bench_pimc.contract_split(lines)
    assert split is not None
    assert (split["pimc_took"], split["pimc_made"], split["other_took"], split["other_made"]) == (3, 2, 3, 2)
    assert split["same"]["boards"] == 1 and split["same"]["mean"] == 20
    assert split["differ"]["boards"] == 2 and split["differ"]["mean"] == -100  # (-300 + 100) / 2
    assert split["thrown_in"] == 1
    multiplied = split["multiplied"]
    assert {k: (v["boards"], v["mean"]) for k, v in multiplied.items() if v["boards"]} == {
        "pimc_x2": (1, -300),
        "pimc_x4": (1, 100),
        "other_x2": (1, 100),
    }
    assert multiplied["other_x4"]["boards"] == 0
