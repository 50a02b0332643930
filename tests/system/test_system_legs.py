"""A worker's duplicate pair with a manifest bot that dies mid-match (issue 9): the legs are played at once
by eight processes of the pool, the bot's side forfeits, the public reason is the arena's own words, and
its owner's log says how the process died (its exit code), as ``arena match`` does. Real processes, real
gRPC, real Redis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from system_helpers import SAMPLES

from arena.bots.botlogs import BotLogs
from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.runner import ArenaRunner
from referee.match import STOPPED
from referee.verify_match import verify_match_record

CRASH = Path(__file__).resolve().parents[1] / "referee" / "bots" / "crash"  # exits with 1 on its 12th decision


@pytest.mark.timeout(120)
def test_a_bot_dying_mid_match_forfeits_and_its_owner_reads_its_exit_code(r, tmp_path):
    reg = Registry(r)
    crasher = reg.register(
        "crasher", "tests", manifest=json.loads((CRASH / "manifest.json").read_text()), manifest_dir=str(CRASH)
    )[0]
    rnd = json.loads((SAMPLES / "random" / "manifest.json").read_text())
    other = reg.register("random", "tests", manifest=rnd, manifest_dir=str(SAMPLES / "random"))[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs")
    try:
        spec = MatchSpec("m-dies", "lad", "pilotta", 5, (crasher.bot_id, other.bot_id), deals=8)
        result = runner(spec)
    finally:
        runner.close()
    # The crasher holds team 0 (seats 0 and 2 of leg 1); each of its four processes exits on its 12th
    # decision, and the first to go ends the match.
    assert result.winner == 1
    assert result.forfeit == "bot crasher crashed"
    record = json.loads(result.record)
    forfeit = record["result"]["forfeit"]
    assert (forfeit["team"], forfeit["bot"]) == (0, "crasher")
    # The other table was stopped where it was (unless it had finished first: 8 boards are ~300 decisions,
    # 12 of each crasher process's come long before).
    other_leg = record["legs"][1 - forfeit["leg"]]["result"]
    assert other_leg.get("stopped") == STOPPED and other_leg["over"] is False
    verify_match_record(record)
    (log,) = BotLogs(r).recent(crasher.bot_id, "m-dies")
    assert "process exited with code 1" in log.text
    assert "process exited" not in result.record  # never in public
