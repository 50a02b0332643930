"""Leaving the ladder (issue 24): a version that forfeits too often is suspended, with the reason, by the
ladder's forfeit limits; a match queued for a bot suspended or retired since is not played (void, unrated,
shown why) and frees its bots' slots; a new version lifts a suspension and starts its counts anew.  Real
Redis; the runner's not-played path starts no bot process."""

from __future__ import annotations

import json

import pytest

from arena.bots.registry import Registry
from arena.model import ForfeitLimits, ValidationError
from arena.model.replay import public_reason
from arena.play.ladder import ladder_config
from arena.play.runner import ArenaRunner
from arena.play.scheduler import LadderConfig
from arena.play.worker import Worker
from arena.service import Arena
from arena.store import keys
from referee.match.bots import REPO_ROOT

SAMPLE = REPO_ROOT / "sample_bots" / "random"
WHY = "bot leaky exceeded 3 strikes (4 illegal actions)"  # a public forfeit reason, as the runner words it


def _manifest_bot(reg: Registry, name: str) -> str:
    manifest = json.loads((SAMPLE / "manifest.json").read_text())
    return reg.register(name, "tests", manifest=manifest, manifest_dir=str(SAMPLE))[0].bot_id


def _counted(reg: Registry, bot_id: str, limits: ForfeitLimits, forfeits: str) -> list[bool]:
    """Note one match per letter of ``forfeits`` (F: forfeited, .: not); whether each call suspended."""
    return [reg.note_forfeit(bot_id, 1, x == "F", WHY, limits) for x in forfeits]


def test_forfeits_in_a_row_suspend_a_version_and_a_match_without_one_ends_the_run(r) -> None:
    reg = Registry(r)
    bot = _manifest_bot(reg, "leaky")
    limits = ForfeitLimits(in_a_row=3, window=20, in_window=0)
    # F F . F F F: the clean third match ends the first run at 2; the second run reaches 3 at the sixth
    # match, though the version forfeited 4 of its first 5 (the window's limit is off).
    assert _counted(reg, bot, limits, "FF.FFF") == [False] * 5 + [True]
    assert reg.get(bot).suspended == f"version 1 forfeited 3 matches in a row (the last: {WHY})"
    assert not reg.playable(reg.get(bot))
    # Suspended once: further forfeits (a match still in flight) neither suspend again nor change the reason.
    assert _counted(reg, bot, limits, "F") == [False]
    assert reg.get(bot).suspended.startswith("version 1 forfeited 3 matches in a row")


def test_a_forfeit_rate_over_the_window_suspends_a_version(r) -> None:
    reg = Registry(r)
    bot = _manifest_bot(reg, "flaky")
    limits = ForfeitLimits(in_a_row=0, window=4, in_window=3)
    # F . F . F: 3 forfeits in 5 matches, but the window holds the last 4 (. F . F: 2): not yet.  One more F:
    # the last 4 are F . F . -> newest first F, F, ., F = 3 of 4: suspended.
    assert _counted(reg, bot, limits, "F.F.F") == [False] * 5
    assert _counted(reg, bot, limits, "F") == [True]
    assert reg.get(bot).suspended == f"version 1 forfeited 3 of its last 4 matches (the last: {WHY})"
    assert r.lrange(keys.bot_forfeits(bot), 0, -1) == ["1", "1", "0", "1"]


def test_a_new_version_lifts_the_suspension_and_counts_anew_and_an_old_versions_match_judges_nothing(r) -> None:
    reg = Registry(r)
    admin = reg.set_admin_token()
    bot = _manifest_bot(reg, "leaky")
    limits = ForfeitLimits(in_a_row=2, window=20, in_window=0)
    assert _counted(reg, bot, limits, "FF") == [False, True]
    manifest = json.loads((SAMPLE / "manifest.json").read_text())
    reg.update(bot, admin, manifest=manifest, manifest_dir=str(SAMPLE))
    assert reg.get(bot).suspended == "" and reg.get(bot).version == 2
    assert r.hget(keys.bot(bot), "forfeits_in_a_row") == "0" and not r.exists(keys.bot_forfeits(bot))
    # A match version 1 played (a pinned seat queued before the update) counts for nothing now.
    assert [reg.note_forfeit(bot, 1, True, WHY, limits) for _ in range(3)] == [False] * 3
    assert reg.get(bot).suspended == "" and not r.exists(keys.bot_forfeits(bot))
    # Version 2 starts from 0: one forfeit is not two in a row.
    assert reg.note_forfeit(bot, 2, True, WHY, limits) is False
    assert reg.note_forfeit(bot, 2, True, WHY, limits) is True
    assert reg.get(bot).suspended.startswith("version 2 forfeited 2 matches in a row")


def test_forfeit_limits_are_ladder_settings_with_documented_defaults() -> None:
    assert ForfeitLimits() == ForfeitLimits(in_a_row=5, window=20, in_window=10)  # docs/arena.md, "Suspension"
    default = ladder_config("pilotta")
    # The defaults are left out of the ladder's id: a ladder started before the limits keeps its id and ratings.
    assert "forfeit_limits" not in default.canonical()
    stored_before = json.dumps({k: v for k, v in default.to_dict().items() if k != "forfeit_limits"})
    assert LadderConfig.from_json(stored_before) == default
    other = ladder_config("pilotta", forfeit_limits=ForfeitLimits(in_a_row=2))
    assert other.ladder_id != default.ladder_id
    assert LadderConfig.from_json(other.to_json()).forfeit_limits == ForfeitLimits(in_a_row=2)
    with pytest.raises(ValidationError, match=r"forfeit_limits.window must be an integer 1..1000, not 0"):
        ForfeitLimits(window=0)
    with pytest.raises(ValidationError, match=r"forfeit_limits.in_window must be an integer 0..20, not 21"):
        ForfeitLimits(in_window=21)
    with pytest.raises(ValidationError, match=r"forfeit_limits has unknown fields \['in_row'\]"):
        ForfeitLimits.from_dict({"in_row": 3})


@pytest.mark.parametrize("left", ["suspended", "retired"])
def test_a_match_queued_for_a_bot_that_left_is_not_played_and_frees_the_slots(r, tmp_path, left) -> None:
    arena = Arena(r)
    reg = arena.registry
    admin = reg.set_admin_token()
    a, b = _manifest_bot(reg, "alpha"), _manifest_bot(reg, "beta")
    lid = arena.scheduler.create_ladder(ladder_config("pilotta", deals=1))
    for bot in (a, b):
        arena.scheduler.join(lid, bot)
    spec = arena.scheduler.create_match(lid, (a, b))
    assert arena.scheduler.in_flight(lid) == {a: 1, b: 1}
    # It leaves after the match was queued, before a worker takes it.
    if left == "suspended":
        r.hset(keys.bot(a), "suspended", "version 1 forfeited 5 matches in a row")
    else:
        reg.retire(a, admin)
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", warm_bots=False)
    try:
        worker = Worker(r, runner, "w-leaving", block_ms=200)
        assert worker.run_once() is True
    finally:
        runner.close()
    assert worker.stats.recorded == 1 and worker.stats.failures == 0  # ended, not failed nor dead-lettered
    result = arena.views.result(spec.match_id)
    assert result is not None
    assert result.void and not result.rated and result.winner is None and result.deals_played == 0
    assert result.forfeit == f"void: not played: bot alpha is {left}"
    assert arena.scheduler.in_flight(lid) == {}  # both bots' slots are free again
    assert arena.ratings.process("t", block_ms=0) == 1 and arena.ratings.leaderboard(lid) == []
    # Shown as such in public (the lists reduce a reason to its generic words; these are generic).
    (shown,), _ = arena.match_history(ladder=lid)
    assert shown.void and shown.forfeit == f"void: not played: bot alpha is {left}"
    assert public_reason("void: not played: bot alpha is suspended; bot x said /etc") == (
        "void: not played: bot alpha is suspended"
    )


def test_the_forfeit_limits_through_the_api_and_the_ladder_list() -> None:
    from pilotta.arena.v1 import arena_pb2

    from arena.api.messages import forfeit_limits
    from arena.cli.ladder import ladder_line

    # A field left out of the request is its default: in_a_row 2 given, window 20 and in_window 10 kept.
    assert forfeit_limits(arena_pb2.ForfeitLimits(in_a_row=2)) == ForfeitLimits(in_a_row=2, window=20, in_window=10)
    assert forfeit_limits(arena_pb2.ForfeitLimits(in_window=0)) == ForfeitLimits(in_window=0)  # 0: that limit off
    info = arena_pb2.LadderInfo(ladder="pilotta-x", ruleset="pilotta", deals=16, duplicate=True)
    info.forfeit_limits.CopyFrom(arena_pb2.ForfeitLimits(in_a_row=5, window=20, in_window=10))
    assert "suspending" not in ladder_line(info)  # the defaults go without saying
    info.forfeit_limits.CopyFrom(arena_pb2.ForfeitLimits(in_a_row=2, window=20, in_window=10))
    assert ", suspending a version at 2 forfeits in a row or 10 of its last 20 matches (0: off);" in ladder_line(info)


def test_the_leaderboard_shows_a_suspended_bot_apart_unranked_with_its_public_reason(r) -> None:
    from arena.model import MatchResult

    arena = Arena(r)
    reg = arena.registry
    a, b, c = (_manifest_bot(reg, n) for n in ("alpha", "beta", "gamma"))
    lid = arena.scheduler.create_ladder(ladder_config("pilotta", deals=1))
    for n, (x, y) in enumerate(((a, b), (b, c), (a, c)), 1):  # alpha wins both, beta beats gamma
        won = MatchResult(f"m-{n}", lid, (x, y, x, y), 0, (100, 62), 1, finished=float(n))
        assert arena.ratings.apply(won) is True
    # Suspended the way an older arena wrote it, the bot's own words in it: shown in the arena's words.
    legacy = "version 1 failed to start or answer its Handshake in 3 matches in a row: bot 'alpha' said LEAKED"
    r.hset(keys.bot(a), "suspended", legacy)
    _lid, rows, _next = arena.leaderboard(lid)
    # alpha won both its matches, so it led by rating; it is now listed last, unranked, with why.
    assert [(s.name, s.rank, s.state) for s in rows] == [
        ("beta", 1, "active"),
        ("gamma", 2, "active"),
        ("alpha", 0, "suspended"),
    ]
    assert (
        rows[2].reason
        == "version 1 failed to start or answer its Handshake in 3 matches in a row: it could not be started"
    )
    assert reg.bot_state(reg.get(a)).reason == rows[2].reason  # the registry's words: one definition


def test_a_count_repeated_after_a_lost_reply_counts_once(r) -> None:
    """The runner retries its counting while Redis is down; a try that Redis applied but whose reply was lost
    is tried again with the same once-key (the match and seat) and counts nothing more, where it used to
    count the match twice: two forfeits of one match made a run of two, and a suspension one match early."""
    reg = Registry(r)
    bot = _manifest_bot(reg, "retried")
    limits = ForfeitLimits(in_a_row=2, window=20, in_window=0)
    assert reg.note_forfeit(bot, 1, True, WHY, limits, "m-1/a") is False
    assert reg.note_forfeit(bot, 1, True, WHY, limits, "m-1/a") is False  # the same call again
    assert r.hget(keys.bot(bot), "forfeits_in_a_row") == "1" and r.lrange(keys.bot_forfeits(bot), 0, -1) == ["1"]
    assert reg.get(bot).suspended == ""
    assert reg.note_forfeit(bot, 1, True, WHY, limits, "m-2/a") is True  # the next match: two in a row
    # Failed starts: the same, keyed by the match.
    other = _manifest_bot(reg, "slow-start")
    assert [reg.note_start(other, 1, True, "no Handshake answer", "m-7") for _ in range(3)] == [False] * 3
    assert r.hget(keys.bot(other), "start_failures") == "1"
    assert reg.note_start(other, 1, True, "no Handshake answer", "m-8") is False
    assert reg.note_start(other, 1, True, "no Handshake answer", "m-9") is True
    assert reg.get(other).suspended == (
        "version 1 failed to start or answer its Handshake in 3 matches in a row: no Handshake answer"
    )
    # Without a key (a caller that does not retry), every call counts, as before.
    third = _manifest_bot(reg, "no-key")
    assert [reg.note_start(third, 1, True) for _ in range(3)] == [False, False, True]
    assert reg.get(third).suspended.endswith("in 3 matches in a row: it could not be started")
