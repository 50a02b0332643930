"""The match runner against misbehaving bots: every match ends, classified correctly, and nothing hangs.

Every test with bots runs twice: with bots speaking protocol version 1 (unary calls) and version 2 (one
stream per seat). The expected figures are the same for both: a failure is classified alike on either.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testbot import BOTS_DIR

from referee.match import DealEvent, DecisionEvent, MatchSettings, run_match
from referee.match.bots import load_manifest
from referee.record import verify_record, without_timing

StartBot = Callable[..., tuple[str, Any]]


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def start_bot(start_bot: StartBot, protocol: int) -> StartBot:
    """The conftest's test bots, speaking ``protocol``."""

    def start(mode: str = "first", **kw: Any) -> tuple[str, Any]:
        return start_bot(mode, protocol=protocol, **kw)

    return start


def settings(**kw: Any) -> MatchSettings:
    base: dict[str, Any] = {"seed": 11, "deals": 3, "deadline_ms": 500, "time_bank_ms": 1000}
    base.update(kw)
    return MatchSettings(**base)


@pytest.mark.timeout(60)
def test_whole_match_between_good_bots(start_bot: StartBot) -> None:
    a, ba = start_bot("random", seed=1)
    b, _ = start_bot("random", seed=2)
    events: list[Any] = []
    out = run_match([a, b], settings(deals=None), "good", events.append)
    assert out.forfeit is None and out.legs[0].reason == "target reached"
    assert out.winner == out.legs[0].winner
    assert all(x.counts["ok"] == len(x.latencies_ms) > 0 for x in out.bots)
    assert sum(isinstance(e, DealEvent) for e in events) == len(out.record["legs"][0]["deals"])
    assert {e.phase for e in events if isinstance(e, DecisionEvent)} >= {"auction", "play"}
    stats = out.stats_json()["bots"][0]
    assert stats["latency_ms"]["p50"] > 0 and stats["latency_ms"]["p99"] >= stats["latency_ms"]["p50"]
    # Notices: MatchStarted and MatchEnded once per seat, DealEnded per seat per deal.
    deals = len(out.record["legs"][0]["deals"])
    assert ba.notices.count("MatchStarted") == 2 and ba.notices.count("MatchEnded") == 2
    assert ba.notices.count("DealEnded") == 2 * deals
    assert out.bots[0].name == "test-random" and out.bots[1].name == "test-random#2"


@pytest.mark.timeout(60)
def test_timeouts_spend_the_bank_then_strike_then_forfeit(start_bot: StartBot) -> None:
    # The slow bot's first answer takes 600 ms (a sleep: never less), past the 200 ms deadline: the bank
    # pays the 400 ms or more over it, and 1,600 ms of it is left for a loaded machine's delays. Then it never
    # answers (it waits until the referee gives up on the call): its second decision times out after the
    # deadline and what is left of the bank, which it empties, and the next two after the deadline alone:
    # three strikes, one over max_strikes.
    slow, _ = start_bot("hang", after=1, sleep_ms=600)
    good, _ = start_bot("random", seed=3)
    out = run_match([slow, good], settings(deadline_ms=200, time_bank_ms=2000, max_strikes=2), "slow")
    s = out.bots[0]
    assert s.counts["ok"] == 1 and s.counts["timeout"] == 3 and s.strikes == 3
    assert s.time_bank_ms == 0
    assert out.forfeit is not None and out.forfeit.team == 0 and out.winner == 1
    assert "exceeded 2 strikes" in out.forfeit_reason and "timeout" in out.forfeit_reason
    assert out.record["result"]["forfeit"]["reason"] == out.forfeit_reason
    assert out.bots[1].counts["timeout"] == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("mode", "outcome"),
    [
        ("illegal", "illegal_action"),
        ("badindex", "malformed_reply"),
        ("garbage", "malformed_reply"),
        ("oversized", "malformed_reply"),
    ],
)
def test_bad_answers_play_the_default_and_strike(start_bot: StartBot, mode: str, outcome: str) -> None:
    bad, _ = start_bot(mode)
    good, _ = start_bot("random", seed=4)
    events: list[Any] = []
    # A deadline no loaded machine meets late: each bad answer must be classified as what it is, never
    # as a timeout (building the oversized answer takes time).
    out = run_match([good, bad], settings(max_strikes=3, deadline_ms=10_000), f"bad-{mode}", events.append)
    b = out.bots[1]
    assert b.counts[outcome] == 4 and b.counts["ok"] == 0 and b.strikes == 4
    assert out.forfeit is not None and out.forfeit.team == 1 and out.winner == 0
    assert outcome in out.forfeit_reason
    bad_events = [e for e in events if isinstance(e, DecisionEvent) and e.outcome != "ok"]
    assert len(bad_events) == 4 and all(e.outcome == outcome for e in bad_events)
    # The record marks the penalised decisions; the first three were replaced by the first legal action.
    marked = [a for d in out.record["legs"][0]["deals"] for a in d["actions"] if a.get("outcome")]
    assert len(marked) == 3 and all(a["outcome"] == outcome for a in marked)
    verify_record(out.record["legs"][0])  # a forfeited game's record still replays
    # The owner's log names each bad answer by leg and deal counted from 1, as `arena match` and the viewer do:
    # the four come in the first deal's auction and play, from the bot's seats 1 and 3.
    assert len(b.errors) == 4 and all(
        e.startswith(("leg 1 deal 1 seat 1: ", "leg 1 deal 1 seat 3: ")) for e in b.errors
    )


@pytest.mark.timeout(60)
def test_crash_mid_match_forfeits(tmp_path: Path, start_bot: StartBot, protocol: int) -> None:
    good, _ = start_bot("random", seed=5)
    crash = load_manifest(BOTS_DIR / ("crash" if protocol == 1 else "crash_v2"))
    out = run_match([good, crash], settings(log_dir=str(tmp_path), deals=20), "crash")
    b = out.bots[1]
    assert b.counts["crashed"] == 1 and b.counts["ok"] == 11
    assert out.forfeit is not None and out.forfeit.team == 1 and out.winner == 0
    assert "crashed" in out.forfeit_reason


@pytest.mark.timeout(60)
def test_unreachable_endpoint_forfeits(start_bot: StartBot, refused_port: int) -> None:
    good, _ = start_bot("random", seed=6)
    out = run_match([f"127.0.0.1:{refused_port}", good], settings(handshake_deadline_ms=1000), "gone")
    assert out.bots[0].counts["unreachable"] == 1
    assert out.forfeit is not None and out.forfeit.team == 0 and out.winner == 1
    assert "unreachable" in out.forfeit_reason and out.legs == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ["never_starts", "never_serves"])
def test_bot_that_never_starts_forfeits(tmp_path: Path, start_bot: StartBot, name: str) -> None:
    good, _ = start_bot("random", seed=7)
    m = load_manifest(BOTS_DIR / name)
    out = run_match(
        [m, good], settings(log_dir=str(tmp_path), startup_timeout_s=1.0, handshake_deadline_ms=500), f"never-{name}"
    )
    assert out.bots[0].counts["unreachable"] == 1
    assert out.forfeit is not None and out.winner == 1
    assert any("did not start" in e for e in out.bots[0].errors)


@pytest.mark.timeout(60)
def test_failed_notices_are_counted_not_fatal(start_bot: StartBot, protocol: int) -> None:
    if protocol == 2:
        pytest.skip("a version 2 notice is a message on the stream: the bot has no answer to it that could fail")
    rude, _ = start_bot("noticefail")
    good, _ = start_bot("random", seed=8)
    out = run_match([rude, good], settings(), "notices")
    assert out.forfeit is None
    assert out.bots[0].notice_failures == out.bots[0].notices_sent > 0
    assert set(out.bots[0].notice_failures_by_kind) == {"MatchStarted", "DealEnded", "MatchEnded"}
    assert out.bots[1].notice_failures == 0


@pytest.mark.timeout(60)
def test_four_bots_by_seat(start_bot: StartBot) -> None:
    eps = [start_bot("random", seed=i)[0] for i in range(4)]
    out = run_match(eps, settings(), "four")
    assert [b.team for b in out.bots] == [0, 1, 0, 1]
    assert all(b.counts["ok"] > 0 for b in out.bots)


@pytest.mark.timeout(60)
def test_duplicate_swaps_partnerships_on_the_same_decks(start_bot: StartBot) -> None:
    a, _ = start_bot("random", seed=1)
    b, _ = start_bot("random", seed=2)
    out = run_match([a, b], settings(duplicate=True, deals=3), "dup")
    leg1, leg2 = out.record["legs"]
    assert [d["deck"] for d in leg1["deals"][:1]] == [d["deck"] for d in leg2["deals"][:1]]
    assert leg1["deals"][0]["dealer"] == leg2["deals"][0]["dealer"]
    assert out.legs[0].seats == (0, 1, 0, 1) and out.legs[1].seats == (1, 0, 1, 0)
    assert leg1["players"] == ["test-random", "test-random#2"] * 2
    assert leg2["players"] == ["test-random#2", "test-random"] * 2
    # Team points add both legs: team 0 holds side 0 in leg 1 and side 1 in leg 2.
    assert out.scores == (out.legs[0].scores[0] + out.legs[1].scores[1], out.legs[0].scores[1] + out.legs[1].scores[0])
    assert out.winner == (None if out.scores[0] == out.scores[1] else int(out.scores[1] > out.scores[0]))


@pytest.mark.timeout(60)
def test_same_seed_and_answers_give_the_same_record(start_bot: StartBot) -> None:
    records = []
    for _ in range(2):
        a, _ = start_bot("random", seed=21)
        b, _ = start_bot("random", seed=22)
        # The same answers only if none is late: a deadline no loaded machine misses.
        same = settings(duplicate=True, deals=4, deadline_ms=10_000)
        records.append(without_timing(run_match([a, b], same, "same").record))
    assert records[0] == records[1]
    a, _ = start_bot("random", seed=21)
    b, _ = start_bot("random", seed=22)
    other = run_match([a, b], settings(duplicate=True, deals=4, seed=12), "same").record
    assert other != records[0]


@pytest.mark.timeout(30)
def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="2 bots"):
        run_match(["127.0.0.1:1"] * 3, settings(), "x")
    with pytest.raises(ValueError, match="deadline_ms"):
        run_match(["127.0.0.1:1"] * 2, settings(deadline_ms=0), "x")
