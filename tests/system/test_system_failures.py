"""Bots that keep failing (issue 9): a version that fails to start in 3 matches in a row is suspended (not
scheduled, the reason shown) until an update; a match in which neither side could play is void, recorded
and never rated.  Real Redis, the real runner, real processes."""

from __future__ import annotations

import json

import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import SAMPLES, TIMEOUT

from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.runner import ArenaRunner
from arena.play.scheduler import LadderConfig
from arena.rating.ratings import Ratings
from arena.service import Arena, BotSource
from arena.store import keys

BROKEN = {
    "name": "broken",
    "version": "0",
    "author": "tests",
    "language": "none",
    "command": ["/nonexistent/bot-binary"],
    "port": {"arg": "--port"},
    "games": ["pilotta"],
}


@pytest.mark.timeout(120)
def test_three_failed_starts_in_a_row_suspend_a_version_until_it_is_updated(r, tmp_path):
    arena = Arena(r)
    reg = arena.registry
    admin = reg.set_admin_token()
    broken = reg.register("broken", "t", manifest=BROKEN, manifest_dir=str(tmp_path))[0]
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    good = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))[0]
    lid = arena.scheduler.create_ladder(LadderConfig("pilotta", deals=1, target=None))
    for b in (broken, good):
        arena.scheduler.join(lid, b.bot_id)
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", warm_bots=False)
    try:
        for n in range(1, 4):
            assert reg.get(broken.bot_id).suspended == ""  # not before the third
            result = runner(MatchSpec(f"m-fail-{n}", lid, "pilotta", n, (broken.bot_id, good.bot_id), deals=1))
            assert result.winner == 1 and result.forfeit == "bot broken could not be started"
            assert not result.void and result.rated
    finally:
        runner.close()
    why = reg.get(broken.bot_id).suspended
    assert why.startswith("version 1 failed to start or answer its Handshake in 3 matches in a row")
    assert [c.bot_id for c in arena.scheduler.candidates(lid)] == [good.bot_id]  # not scheduled
    assert reg.get(good.bot_id).suspended == ""
    # An update lifts it.
    fixed = BotSource(manifest_json=json.dumps(heuristic), manifest_dir=str(SAMPLES / "heuristic"))
    arena.update_bot("broken", admin, fixed)
    assert reg.get(broken.bot_id).suspended == ""
    assert {c.bot_id for c in arena.scheduler.candidates(lid)} == {broken.bot_id, good.bot_id}


@pytest.mark.timeout(90)
def test_a_match_between_two_broken_bots_is_void_and_never_rated(r, tmp_path, refused_port):
    reg = Registry(r)
    broken = reg.register("broken", "t", manifest=BROKEN, manifest_dir=str(tmp_path))[0]
    gone = reg.register("gone", "t", endpoint=f"127.0.0.1:{refused_port}", games=["pilotta"])[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", warm_bots=False)
    try:
        result = runner(MatchSpec("m-void", "lad", "pilotta", 1, (broken.bot_id, gone.bot_id), deals=1))
    finally:
        runner.close()
    assert result.void and not result.rated and result.winner is None
    assert result.forfeit.startswith("void: ")
    assert "bot broken could not be started" in result.forfeit and "bot gone is unreachable" in result.forfeit
    ratings = Ratings(r)
    assert ratings.apply(result) is True  # recorded as handled ...
    assert ratings.leaderboard("lad") == []  # ... and nobody rated: no draw for two broken bots
    assert ratings.get("lad", broken.bot_id).games == 0


@pytest.mark.timeout(120)
def test_a_suspension_shown_in_public_never_quotes_the_bot_nor_names_a_worker_path(r, stub, tmp_path):
    """A bot that writes something and exits at start, three times: ListBots (no token) says it is
    suspended and why in the arena's words, never what the bot wrote (a way out for anything it read) nor
    where the worker keeps its logs; the owner reads its last words in its logs."""
    reg = Registry(r)
    said = {**BROKEN, "command": ["{python}", "-c", "import sys; sys.stderr.write('LEAKED-5e1f\\n'); sys.exit(3)"]}
    leaky, owner_token = reg.register("leaky", "mallory", manifest=said, manifest_dir=str(tmp_path))
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    good = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))[0]
    logs = tmp_path / "worker-logs"
    runner = ArenaRunner(reg, log_dir=logs, warm_bots=False)
    try:
        for n in range(1, 4):
            result = runner(MatchSpec(f"m-leaky-{n}", "lad", "pilotta", n, (leaky.bot_id, good.bot_id), deals=1))
            assert result.forfeit == "bot leaky could not be started"
    finally:
        runner.close()
    (shown,) = [b for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots if b.name == "leaky"]
    assert shown.suspended == (
        "version 1 failed to start or answer its Handshake in 3 matches in a row: it could not be started"
    )
    for private in ("LEAKED", str(tmp_path), "/", "exit", "code 3"):
        assert private not in shown.suspended, private
    owner = stub.BotLogs(arena_pb2.BotLogsRequest(name="leaky", token=owner_token), timeout=TIMEOUT).logs
    assert len(owner) == 3 and all("LEAKED-5e1f" in x.text for x in owner)
    # A suspension stored before the reason was put in public words is shown in them too.
    legacy = (
        "version 1 failed to start or answer its Handshake in 3 matches in a row: bot 'broken' did not start: "
        "the process exited with code 3 before serving; its last words: 'LEAKED-5e1f' (its output: /srv/x.log)"
    )
    r.hset(keys.bot(leaky.bot_id), "suspended", legacy)
    (shown,) = [b for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots if b.name == "leaky"]
    assert shown.suspended.endswith("in 3 matches in a row: it could not be started")
