"""The two legs of a duplicate match played at once (issue 9): each leg by its own four processes, on two
threads, with the record and the result the legs played in turn give.

Real gRPC bots on loopback (in-process test bots; a real process for the crash). Every test runs with
bots speaking protocol version 1 and version 2. The expectations are worked out from the rules of the
runner (``referee/match/run.py``): a forfeit ends the match, its team loses, and it is stated in the leg it
happened in; the other table stops before its next decision.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
from testbot import BOTS_DIR

from referee.errors import RecordError
from referee.match import STOPPED, DecisionEvent, Event, MatchSettings, run_match
from referee.match.bots import load_manifest, start_bot
from referee.match.transport import MatchCancelled
from referee.record import without_timing
from referee.verify_match import verify_match_record

StartBot = Callable[..., tuple[str, Any]]
NAMES = ("north-south", "east-west")  # the two bots: partnered with themselves, one a side in leg 1


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def settings(**kw: Any) -> MatchSettings:
    base: dict[str, Any] = {"seed": 11, "deals": 4, "duplicate": True, "deadline_ms": 2000, "time_bank_ms": 2000}
    base.update(kw)
    return MatchSettings(**base)


def instances(start_bot: StartBot, protocol: int, modes: list[list[str]], **kw: Any) -> list[list[str]]:
    """Eight bot servers, per leg per seat (``modes[leg][seat]``), each named after the bot it plays for:
    the bot of side 0 in leg 1 sits on side 1 in leg 2 (every bot one seat on)."""
    legs = []
    for leg, row in enumerate(modes):
        eps = []
        for seat, mode in enumerate(row):
            side_in_leg_1 = (seat - leg) & 1
            extra = dict(kw)
            if mode == "random":
                extra["seed"] = 100 * leg + seat
            eps.append(start_bot(mode, protocol=protocol, name=NAMES[side_in_leg_1], **extra)[0])
        legs.append(eps)
    return legs


def play(eps: list[list[str]], at_once: bool, **kw: Any) -> Any:
    events: list[Event] = []
    out = run_match(eps[0][:2], settings(**kw), "legs", events.append, seat_endpoints=eps, at_once=at_once)
    return out, events


def decisions_by_bot(record: dict[str, Any]) -> dict[str, int]:
    """The decisions of each bot in the record, both legs: an action per decision, credited by seat."""
    count: dict[str, int] = {}
    for leg in record["legs"]:
        for deal in leg["deals"]:
            for action in deal["actions"]:
                name = leg["players"][action["seat"]]
                count[name] = count.get(name, 0) + 1
    return count


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [3, 11, 29])
def test_legs_at_once_give_the_record_of_legs_in_turn(start_bot, protocol, seed):
    modes = [["random", "random", "random", "first"], ["first", "random", "random", "random"]]
    records, outcomes = [], []
    for at_once in (False, True):
        eps = instances(start_bot, protocol, modes, sleep_ms=2)  # fresh servers: the random ones start again
        out, events = play(eps, at_once, seed=seed)
        assert out.forfeit is None
        records.append(without_timing(out.record))
        outcomes.append(out)
        legs = [e.leg for e in events if isinstance(e, DecisionEvent)]
        last_of_leg_1 = max(i for i, leg in enumerate(legs) if leg == 0)
        first_of_leg_2 = legs.index(1)
        # In turn every event of leg 1 comes first; at once the legs' events come interleaved (a bot that
        # sleeps 2 ms a decision makes leg 1 last far longer than leg 2 takes to start).
        assert (first_of_leg_2 < last_of_leg_1) is at_once
    assert records[0] == records[1]
    turn, once = outcomes
    assert len(once.record["legs"]) == 2 and len(once.record["board_results"]) == 4
    assert (once.winner, once.scores) == (turn.winner, turn.scores)
    # Each bot's statistics add its instances at both tables: one count per decision of the record.
    expected = decisions_by_bot(once.record)
    for out in outcomes:
        assert {b.name: sum(b.counts.values()) for b in out.bots} == expected
        assert {b.name: len(b.latencies_ms) for b in out.bots} == expected
        assert all(b.strikes == 0 for b in out.bots)
    verify_match_record(once.record)


@pytest.mark.timeout(120)
def test_a_forfeit_in_leg_1_while_leg_2_plays_ends_the_match_as_in_turn(start_bot, protocol):
    # Seat 1 of leg 1 (the east-west bot, team 1) answers illegal actions: its 4th is one past 3 strikes.
    # Leg 2's bots (random ones, which bid and play) sleep 20 ms a decision: mid-play when that happens.
    modes = [["random", "illegal", "random", "random"], ["random"] * 4]
    results = []
    for at_once in (False, True):
        eps = instances(start_bot, protocol, modes, sleep_ms=20)
        out, events = play(eps, at_once, max_strikes=3)
        results.append((out, events))
    (turn, _), (once, events) = results
    for out in (turn, once):
        f = out.forfeit
        assert f is not None
        assert (f.team, f.bot, f.seat, f.leg) == (1, "east-west", 1, 0)
        assert f.reason.startswith("bot east-west exceeded 3 strikes (last: illegal_action: ")
        assert out.winner == 0
        assert out.reason == f"forfeit: {f.reason}"
        (ew,) = [b for b in out.bots if b.name == "east-west"]
        assert (ew.strikes, ew.counts["illegal_action"]) == (4, 4)
        assert out.record["result"]["forfeit"] == f.to_json()
        leg_1 = out.record["legs"][0]["result"]
        assert leg_1["forfeit"] == {"side": 1, "seat": 1, "reason": f.reason} and leg_1["over"] is False
    assert once.forfeit == turn.forfeit
    # Leg 1 is the same at both; in turn leg 2 never started, at once it stopped where it was.
    assert without_timing(once.record)["legs"][0] == without_timing(turn.record)["legs"][0]
    assert len(turn.record["legs"]) == 1
    leg_2 = once.record["legs"][1]
    assert leg_2["result"]["stopped"] == STOPPED and leg_2["result"]["over"] is False
    assert "forfeit" not in leg_2["result"]
    assert 1 <= sum(len(d["actions"]) for d in leg_2["deals"]) < 100  # mid-play: 4 boards are ~130 decisions
    assert [lg.reason for lg in once.legs] == ["stopped", "stopped"]
    assert any(isinstance(e, DecisionEvent) and e.leg == 1 for e in events)
    verify_match_record(once.record)
    # A stopped leg is checked like a forfeited one: it says why, in words, and claims nothing else.
    for change, error in [
        ({"stopped": 5}, r"^leg 2: result: stopped must be text saying why the game stopped, not 5$"),
        # (Where it stopped depends on the moment: mid-deal, or between two deals.)
        ({"stopped": None}, r"^leg 2: (deal \d+: the record stops before the deal is over|result: the record ends)"),
        (
            {"forfeit": {"side": 0, "seat": 0, "reason": "x"}},
            r"^leg 2: result: a game is either forfeited or stopped, not both$",
        ),
    ]:
        bad = copy.deepcopy(once.record)
        bad["legs"][1]["result"].update(change)
        with pytest.raises(RecordError, match=error):
            verify_match_record(bad)


@pytest.mark.timeout(120)
def test_a_forfeit_in_leg_2_while_leg_1_plays_ends_the_match_as_in_turn(start_bot, protocol):
    # Seat 2 of leg 2 plays for the east-west bot (leg 1's seat 1, one seat on): it answers illegal
    # actions. Leg 1's bots (random ones) sleep 20 ms a decision.
    modes = [["random"] * 4, ["random", "random", "illegal", "random"]]
    results = []
    for at_once in (False, True):
        eps = instances(start_bot, protocol, modes, sleep_ms=20)
        results.append(play(eps, at_once, max_strikes=3, deals=2)[0])
    turn, once = results
    for out in (turn, once):
        f = out.forfeit
        assert f is not None
        assert (f.team, f.bot, f.seat, f.leg) == (1, "east-west", 2, 1)
        assert out.winner == 0
        leg_2 = out.record["legs"][1]["result"]
        assert leg_2["forfeit"] == {"side": 0, "seat": 2, "reason": f.reason}
    assert once.forfeit == turn.forfeit
    assert without_timing(once.record)["legs"][1] == without_timing(turn.record)["legs"][1]
    # In turn leg 1 was played to its end first; at once it stopped mid-play.
    assert turn.record["legs"][0]["result"]["over"] is True
    leg_1 = once.record["legs"][0]["result"]
    assert leg_1["stopped"] == STOPPED and leg_1["over"] is False and leg_1["reason"] == f"stopped: {STOPPED}"
    verify_match_record(once.record)


@pytest.mark.timeout(120)
def test_a_process_crashing_at_one_table_stops_the_other_and_says_how_it_died(start_bot, protocol, tmp_path):
    # A real process that exits with code 1 on its 12th decision plays seat 3 of leg 1 (north-south, team
    # 0); every other seat is an in-process random bot that sleeps 10 ms a decision.
    crasher = start_bot_process("crash", tmp_path)
    try:
        eps = instances(start_bot, protocol, [["random"] * 4, ["random"] * 4], sleep_ms=10)
        eps[1][3] = crasher.endpoint  # leg 2, seat 3: the north-south bot (leg 1's seat 2, one seat on)
        out = run_match(eps[0][:2], settings(), "crash", seat_endpoints=eps, started=[crasher])
    finally:
        crasher.stop()
    f = out.forfeit
    assert f is not None
    assert (f.team, f.bot, f.seat, f.leg) == (0, "north-south", 3, 1)
    assert "crashed: process exited with code 1" in f.reason
    assert out.winner == 1
    assert out.record["legs"][0]["result"]["stopped"] == STOPPED
    verify_match_record(out.record)


def start_bot_process(name: str, log_dir: Any) -> Any:
    return start_bot(load_manifest(BOTS_DIR / name), log_dir, startup_timeout_s=30)


@pytest.mark.timeout(60)
def test_a_cancel_stops_both_legs(start_bot, protocol):
    eps = instances(start_bot, protocol, [["random"] * 4, ["random"] * 4], sleep_ms=5)
    cancel = threading.Event()
    seen: list[int] = []

    def on_event(event: Event) -> None:
        if isinstance(event, DecisionEvent):
            seen.append(event.leg)
            if len(seen) == 30:
                cancel.set()

    with pytest.raises(MatchCancelled):
        run_match(eps[0][:2], settings(), "cancel", on_event, cancel=cancel, seat_endpoints=eps)
    assert {0, 1} <= set(seen)
    assert len(seen) <= 32  # each table stops before its next decision
    assert not [t for t in threading.enumerate() if t.name == "match-cancel-leg-2"]


@pytest.mark.timeout(60)
def test_legs_one_process_plays_at_both_tables_are_played_in_turn(start_bot, protocol):
    # The same process at seat 0 of both legs: playing at once would have it play two tables at once.
    eps = instances(start_bot, protocol, [["random"] * 4, ["random"] * 4], sleep_ms=1)
    eps[1][1] = eps[0][0]
    events: list[Event] = []
    out = run_match(eps[0][:2], settings(deals=2), "shared", events.append, seat_endpoints=eps)
    assert out.forfeit is None
    legs = [e.leg for e in events if isinstance(e, DecisionEvent)]
    assert legs == sorted(legs)  # every decision of leg 1 before any of leg 2


@pytest.mark.timeout(60)
def test_a_timeout_at_one_table_forfeits_and_the_other_stops(start_bot, protocol):
    # Leg 2's seat 0 plays for the east-west bot (leg 1's seat 3, one seat on) and never answers (it waits
    # until the referee gives up on the call): past its 1,000 ms deadline with no bank, a timeout, and with
    # no strike allowed a forfeit. Every other bot answers in 25 ms: 975 ms before its deadline however loaded
    # the machine, and leg 1's 4 deals (some 160 decisions, 4 s of sleeps at the least) are still being
    # played when leg 2 forfeits, one second and a few decisions in.
    eps = instances(start_bot, protocol, [["random"] * 4, ["random"] * 4], sleep_ms=25)
    eps[1][0] = start_bot("hang", protocol=protocol, name="east-west")[0]
    out = run_match(
        eps[0][:2],
        settings(deadline_ms=1000, time_bank_ms=0, max_strikes=0),
        "slow",
        seat_endpoints=eps,
    )
    f = out.forfeit
    assert f is not None
    assert (f.team, f.bot, f.seat, f.leg) == (1, "east-west", 0, 1)
    assert f.reason.startswith("bot east-west exceeded 0 strikes (last: timeout: no answer within the 1000 ms")
    assert out.winner == 0
    assert out.record["legs"][0]["result"]["stopped"] == STOPPED
    verify_match_record(out.record)


@pytest.mark.timeout(60)
def test_bots_timing_out_at_both_tables_count_no_decision_after_the_forfeit(start_bot, protocol):
    # Every instance answers in 150 ms, past its 100 ms deadline with no bank: both tables time out decision
    # after decision, in step. Strikes are one count per bot for the match: the first bot to reach its 4th
    # forfeits, and that decision is the match's last. The other table's decision, which ends at about the
    # same moment, is not counted (nor shown): a bot never has more than 4 strikes, and the statistics hold
    # exactly the record's decisions and the one that forfeited (played or not, in both arrangements).
    for at_once in (False, True):
        eps = instances(start_bot, protocol, [["sleep"] * 4, ["sleep"] * 4], sleep_ms=150)
        out, events = play(eps, at_once, deadline_ms=100, time_bank_ms=0, max_strikes=3)
        f = out.forfeit
        assert f is not None
        assert f.reason.startswith(f"bot {f.bot} exceeded 3 strikes (last: timeout: ")
        strikes = {b.name: b.strikes for b in out.bots}
        # No bot past 4; how far the other table's bot got depends on how the two tables were scheduled
        # (in step on a quiet machine: 3; one table can lag behind on a loaded one), so it is not asserted.
        assert strikes[f.bot] == 4 and max(strikes.values()) == 4
        assert all(b.counts["timeout"] == b.strikes == sum(b.counts.values()) for b in out.bots)
        played = [a for leg in out.record["legs"] for d in leg["deals"] for a in d["actions"]]
        assert {a.get("outcome") for a in played} == {"timeout"}
        assert sum(strikes.values()) == len(played) + 1  # the forfeiting decision is not played
        decided = [e for e in events if isinstance(e, DecisionEvent)]
        assert len(decided) == len(played) + 1
        verify_match_record(out.record)


@pytest.mark.timeout(60)
def test_a_cold_stop_in_the_callers_thread_stops_both_legs(start_bot, protocol):
    # A worker's second signal raises SystemExit in its main thread, the one that plays leg 1 (here raised
    # from leg 1's event, which that thread reports): run_match lets it through at once, and leg 2, told to
    # stop, ends before its next decision.
    eps = instances(start_bot, protocol, [["random"] * 4, ["random"] * 4], sleep_ms=5)
    seen: list[int] = []

    def on_event(event: Event) -> None:
        if isinstance(event, DecisionEvent):
            seen.append(event.leg)
            if event.leg == 0 and seen.count(0) == 10:
                raise SystemExit("second signal")

    with pytest.raises(SystemExit):
        run_match(eps[0][:2], settings(), "cold", on_event, seat_endpoints=eps)
    assert 1 in seen
    leg_2 = [t for t in threading.enumerate() if t.name == "match-cold-leg-2"]
    for t in leg_2:
        t.join(5.0)  # one decision of 5 ms, at most a notice's deadline more
    assert not [t for t in leg_2 if t.is_alive()]
