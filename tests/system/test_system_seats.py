"""One instance per seat, and no instance sees a board twice (issue 9): a spy bot that plays both seats of
a side and both legs of a duplicate pair counts the hidden cards it can name. Under the arena's runner it
names none; given one process for both seats and both legs (how matches ran before), it names hundreds,
so the count is a test that can fail.  Real processes, real gRPC, real Redis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from system_helpers import SAMPLES

from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.runner import ArenaRunner
from referee.match import MatchSettings, run_match
from referee.match.bots import parse_manifest

SPY = Path(__file__).resolve().parent / "bots" / "spy"


def spy_manifest(report: Path) -> dict:
    return {
        "name": "spy",
        "version": "1",
        "author": "tests",
        "language": "python",
        "command": ["{python}", "bot.py", "--report", str(report)],
        "port": {"arg": "--port"},
        "games": ["pilotta"],
    }


def reports(report: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(report.glob("*.json"))]


@pytest.mark.timeout(120)
def test_one_process_for_both_seats_and_both_legs_lets_a_spy_name_hidden_cards(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    spy = parse_manifest(spy_manifest(report), SPY)
    random_bot = parse_manifest(json.loads((SAMPLES / "random" / "manifest.json").read_text()), SAMPLES / "random")
    out = run_match([spy, random_bot], MatchSettings(seed=4, deals=3, duplicate=True), "m-pooled")
    assert out.forfeit is None
    (one,) = reports(report)  # one process sat in seats 0 and 2, then 1 and 3
    assert one["seats"] == [0, 1, 2, 3]
    assert one["hidden_known"] > 100


@pytest.mark.timeout(180)
@pytest.mark.parametrize("warm", [True, False])
def test_under_the_arena_a_spy_on_both_seats_and_both_legs_names_no_hidden_card(r, tmp_path, warm):
    report = tmp_path / "report"
    report.mkdir()
    reg = Registry(r)
    spy = reg.register("spy", "tests", manifest=spy_manifest(report), manifest_dir=str(SPY))[0]
    rnd = json.loads((SAMPLES / "random" / "manifest.json").read_text())
    other = reg.register("random", "tests", manifest=rnd, manifest_dir=str(SAMPLES / "random"))[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", warm_bots=warm)
    try:
        # The spy partnered with itself (both seats of side 0), a duplicate pair: its four seats of the
        # two legs; then a second match, on a new seed, which warm instances may play.
        for n, seed in enumerate((4, 9)):
            result = runner(MatchSpec(f"m-spy-{n}", "lad", "pilotta", seed, (spy.bot_id, other.bot_id), deals=3))
            assert result.forfeit is None
    finally:
        runner.close()
    found = reports(report)
    assert len(found) == (4 if warm else 8)  # warm: the second match reuses the first's four processes
    assert all(len(f["seats"]) == (1 if not warm else len(f["seats"])) for f in found)
    assert sum(f["decisions"] for f in found) > 40
    assert [f["hidden_known"] for f in found] == [0] * len(found)
