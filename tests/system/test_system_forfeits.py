"""A bot that starts and then forfeits every match (issue 24: it answers what is no action, 4 strikes):
the ladder's forfeit limits suspend its version, with the reason, the match already queued for it is not
played, ListBots says so, and an update lifts it.  Real Redis, the real runner and worker, real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import SAMPLES, TIMEOUT, wait_until

from arena.bots.botlogs import BotLogs
from arena.cli.bot import version_stats_line
from arena.model import ForfeitLimits
from arena.play.ladder import ladder_config
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.service import Arena, BotSource
from arena.store import keys
from referee.match.bots import load_manifest

BOTS = Path(__file__).resolve().parent / "bots"
FORFEIT = "bot leaky exceeded 3 strikes (4 malformed replies)"  # as test_system_trust words it: its 4 answers


@pytest.mark.timeout(180)
def test_a_version_that_keeps_forfeiting_leaves_the_ladder_until_it_is_updated(r, stub, tmp_path) -> None:
    arena = Arena(r)
    reg = arena.registry
    admin = reg.set_admin_token()
    leaky_dir = load_manifest(BOTS / "leaky").directory
    leaky_manifest = json.loads((BOTS / "leaky" / "manifest.json").read_text())
    leaky, owner = reg.register("leaky", "mallory", manifest=leaky_manifest, manifest_dir=str(leaky_dir))
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    good = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))[0]
    # Two forfeits in a row suspend on this ladder (the default, 5, would take 5 matches of the test's time).
    config = ladder_config("pilotta", deals=2, forfeit_limits=ForfeitLimits(in_a_row=2, window=20, in_window=0))
    lid = arena.scheduler.create_ladder(config)
    for b in (leaky, good):
        arena.scheduler.join(lid, b.bot_id)
    # Three matches queued at once, as the feeder does: the third is still waiting when the second suspends.
    specs = [arena.scheduler.create_match(lid, (leaky.bot_id, good.bot_id)) for _ in range(3)]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", warm_bots=False)
    try:
        worker = Worker(r, runner, "w-forfeits", block_ms=200)
        for n in range(3):
            assert worker.run_once() is True, f"match {n + 1} was not handled"
            if n == 0:
                assert reg.get(leaky.bot_id).suspended == ""  # one forfeit is not two in a row
    finally:
        runner.close()
    played = [arena.views.result(s.match_id) for s in specs]
    assert [(p.forfeit, p.winner, p.rated, p.void) for p in played if p] == [
        (FORFEIT, 1, True, False),
        (FORFEIT, 1, True, False),
        ("void: not played: bot leaky is suspended", None, False, True),
    ]
    assert played[2] is not None and played[2].deals_played == 0
    why = f"version 1 forfeited 2 matches in a row (the last: {FORFEIT})"
    assert reg.get(leaky.bot_id).suspended == why
    assert arena.scheduler.in_flight(lid) == {}  # the match not played freed its slots too
    assert [c.bot_id for c in arena.scheduler.candidates(lid)] == [good.bot_id]  # not scheduled any more
    # Two rated matches, not three: the one not played rates nobody.  (The API's ratings updater applies them.)
    wait_until(lambda: all(arena.ratings.is_applied(s.match_id) for s in specs), 60, "the 3 results applied")
    assert arena.ratings.get(lid, good.bot_id).games == 2 and arena.ratings.get(lid, leaky.bot_id).games == 2
    (shown,) = [b for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots if b.name == "leaky"]
    assert shown.suspended == why
    # The owner's view (BotStatus, `arena bot status`): where it stands, its rating, its version's record.
    status = stub.BotStatus(arena_pb2.BotStatusRequest(name="leaky", token=owner), timeout=TIMEOUT)
    assert (status.state, status.state_reason) == ("suspended", why)
    assert json.loads(status.ratings_json)[lid]["games"] == 2
    (v1,) = status.versions
    # Two rated matches, both lost by forfeit; each forfeit was 4 malformed replies (transport errors): 8.
    st = json.loads(v1.stats_json)[lid]
    assert (st["matches"], st["won"], st["lost"], st["forfeits"], st["errors"]) == (2, 0, 2, 2, 8)
    assert version_stats_line(st).startswith("2 matches: 0 won, 2 lost (2 by forfeit), 0 drawn; 0 timeouts, ")
    # Each owner's log of a match says first how it ended (issue 24: the owner's view).
    logs = {b.name: BotLogs(r).recent(b.bot_id) for b in (leaky, good)}
    assert [x.match_id for x in logs["leaky"]] == [specs[1].match_id, specs[0].match_id]  # newest first
    assert all("[referee] ended: forfeited by this bot: " in x.text for x in logs["leaky"])
    assert all("[referee] ended: won: the other side forfeited\n" in x.text for x in logs["heuristic"])
    # An update lifts it, and its counts start again.
    fixed = BotSource(manifest_json=json.dumps(heuristic), manifest_dir=str(SAMPLES / "heuristic"))
    arena.update_bot("leaky", admin, fixed)
    assert reg.get(leaky.bot_id).suspended == "" and r.hget(keys.bot(leaky.bot_id), "forfeits_in_a_row") == "0"
    assert {c.bot_id for c in arena.scheduler.candidates(lid)} == {leaky.bot_id, good.bot_id}
