"""The owners' logs and their retention, on a real Redis with a clock the test sets (no sleeps): a bot's
logs of its last N matches and of the last D days are kept, whichever keeps more, never more than the most;
pruning deletes at most PRUNE_BATCH logs at a time; logs an older arena kept in one list still read, and move.
The settings come from the arena's Policy, which `arena up` / `arena api` set with --logs-keep-... flags."""

from __future__ import annotations

import pytest

from arena.bots.botlogs import DAY_S, PRUNE_BATCH, BotLog, BotLogs, LogRetention
from arena.bots.limits import Policy, load_policy, store_policy
from arena.cli.main import build_parser, main
from arena.cli.up import _policy
from arena.model import ValidationError
from arena.store import keys

NOW = 1_800_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _log(n: int, ts: float) -> BotLog:
    return BotLog(f"m-{n}", 1, ts, f"match {n}\n")


def _kept(logs: BotLogs, bot: str = "b-1") -> list[str]:
    """Every match id the bot's logs are kept for, newest first."""
    return [x.match_id for x in logs.recent(bot, limit=10_000)]


def test_the_defaults_keep_200_matches_or_7_days_and_at_most_2000() -> None:
    assert LogRetention() == LogRetention.of(Policy()) == LogRetention(200, 7.0, 2000)


def test_a_bot_that_plays_one_match_a_day_keeps_its_last_200(r) -> None:
    clock = Clock(NOW)
    logs = BotLogs(r, clock=clock)
    for n in range(250):  # m-0 250 days ago ... m-249 a day ago
        clock.now = NOW - (250 - n) * DAY_S + 1
        logs.add("b-1", _log(n, clock.now))
    # 7 days keep only m-242 (exactly 7 days old) to m-249: the 200 matches keep more, m-50 to m-249.
    assert _kept(logs) == [f"m-{n}" for n in range(249, 49, -1)]
    assert r.zcard(keys.bot_log_index("b-1")) == 200 and not r.exists(keys.bot_log("b-1", "m-49"))


def test_a_busy_bot_keeps_every_match_of_the_last_7_days_then_drops_them_a_batch_at_a_time(r) -> None:
    clock = Clock(NOW)
    logs = BotLogs(r, clock=clock)
    for n in range(300):  # a match a minute: 300 matches in the last 5 hours
        clock.now = NOW - (300 - n) * 60.0
        logs.add("b-1", _log(n, clock.now))
    assert len(_kept(logs)) == 300  # the 7 days keep more than the 200 matches
    # Eight days later, one more match: the 101 logs past the newest 200 are all older than 7 days, and one
    # add deletes at most PRUNE_BATCH (100) of them.
    clock.now = NOW + 8 * DAY_S
    logs.add("b-1", _log(300, clock.now))
    assert PRUNE_BATCH == 100 and len(_kept(logs)) == 301 - 100
    assert _kept(logs)[-1] == "m-100"  # m-0..m-99 went, the oldest first
    assert logs.prune("b-1") == 1 and logs.prune("b-1") == 0
    assert _kept(logs) == [f"m-{n}" for n in range(300, 100, -1)]


def test_a_log_exactly_as_old_as_the_days_is_kept_and_an_older_one_beyond_the_matches_goes(r) -> None:
    clock = Clock(NOW)
    logs = BotLogs(r, LogRetention(matches=2, days=1, most=10), clock)
    for n, age_days in enumerate((3.0, 1.0, 0.5, 0.0)):
        r.zadd(keys.bot_log_index("b-1"), {f"m-{n}": NOW - age_days * DAY_S})
        r.set(keys.bot_log("b-1", f"m-{n}"), _log(n, NOW - age_days * DAY_S).to_json())
    # Two are past the newest two (m-0, m-1); of them only m-0 is older than a day.
    assert logs.prune("b-1") == 1
    assert _kept(logs) == ["m-3", "m-2", "m-1"]


def test_never_more_than_the_most_whatever_their_age(r) -> None:
    clock = Clock(NOW)
    logs = BotLogs(r, LogRetention(matches=3, days=7, most=5), clock)
    for n in range(8):  # eight matches in the last eight minutes: the 7 days would keep them all
        clock.now = NOW + 60 * n
        logs.add("b-1", _log(n, clock.now))
    assert _kept(logs) == ["m-7", "m-6", "m-5", "m-4", "m-3"]


def test_recent_reads_the_newest_20_or_one_match_and_bots_apart(r) -> None:
    logs = BotLogs(r, clock=Clock(NOW))
    for n in range(25):
        logs.add("b-1", _log(n, NOW - 1000 + n))
    logs.add("b-2", BotLog("m-0", 2, NOW, "another bot's\n"))
    assert [x.match_id for x in logs.recent("b-1")] == [f"m-{n}" for n in range(24, 4, -1)]
    assert [x.text for x in logs.recent("b-1", "m-3")] == ["match 3\n"]  # older than the 20 shown, still kept
    assert logs.recent("b-1", "m-99") == []
    assert [(x.version, x.text) for x in logs.recent("b-2")] == [(2, "another bot's\n")]
    assert logs.kept(["b-1", "b-2", "b-3"], "m-0") == {"b-1": True, "b-2": True, "b-3": False}


def test_logs_an_older_arena_kept_in_a_list_are_read_then_moved(r) -> None:
    # An older arena: one list per bot, newest first.
    r.lpush(keys.bot_logs("b-1"), _log(0, NOW - 20).to_json(), _log(1, NOW - 10).to_json())
    logs = BotLogs(r, clock=Clock(NOW))
    assert [x.match_id for x in logs.recent("b-1")] == ["m-1", "m-0"]
    assert [x.text for x in logs.recent("b-1", "m-0")] == ["match 0\n"]
    assert logs.kept(["b-1"], "m-0") == {"b-1": True} and logs.kept(["b-1"], "m-7") == {"b-1": False}
    logs.add("b-1", _log(2, NOW))
    assert not r.exists(keys.bot_logs("b-1"))
    assert _kept(logs) == ["m-2", "m-1", "m-0"] and logs.kept(["b-1"], "m-0") == {"b-1": True}


def test_the_retention_is_the_policys_and_the_flags_set_it(r) -> None:
    policy = Policy.from_dict({"logs_keep_matches": 50, "logs_keep_days": 2, "logs_most_matches": 60})
    store_policy(r, policy)
    assert LogRetention.of(load_policy(r)) == LogRetention(50, 2.0, 60)
    assert "last 50 matches and of the last 2 days" in LogRetention.of(policy).describe()
    with pytest.raises(ValidationError, match=r"logs_most_matches \(10\) must be at least logs_keep_matches \(200\)"):
        Policy(logs_most_matches=10)
    with pytest.raises(ValidationError, match="logs_keep_days must be a whole number of at least 1, not 0"):
        Policy(logs_keep_days=0)
    args = build_parser().parse_args(["up", "--logs-keep-matches", "500", "--logs-most-matches", "900"])
    assert _policy(args) == Policy(logs_keep_matches=500, logs_keep_days=7, logs_most_matches=900)
    assert _policy(build_parser().parse_args(["api"])) is None  # nothing given: the stored policy stays


def test_arena_up_refuses_a_retention_that_makes_no_sense(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["up", "--data-dir", str(tmp_path), "--logs-keep-matches", "300", "--logs-most-matches", "100"])
    assert code == 2
    assert "logs_most_matches (100) must be at least logs_keep_matches (300)" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before anything started
