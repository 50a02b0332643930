"""Protocol version 2 in the match runner: streams per seat, mixed versions, bots that leave or answer
what they were not asked, the handshake's version, and channels kept between matches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from referee.match import DecisionEvent, MatchSettings, run_match
from referee.match.transport import BotLinks
from referee.record import without_timing

StartBot = Callable[..., tuple[str, Any]]


def settings(**kw: Any) -> MatchSettings:
    base: dict[str, Any] = {"seed": 11, "deals": 3, "deadline_ms": 500, "time_bank_ms": 1000}
    base.update(kw)
    return MatchSettings(**base)


@pytest.mark.timeout(60)
def test_one_bot_on_each_version_gives_the_record_of_two_version_1_bots(start_bot: StartBot) -> None:
    records: list[Any] = []
    notices = []
    for protocols in ((1, 1), (1, 2), (2, 2)):
        a, ba = start_bot("random", seed=21, protocol=protocols[0])
        b, bb = start_bot("random", seed=22, protocol=protocols[1])
        out = run_match([a, b], settings(duplicate=True, deals=4), "mixed")
        assert out.forfeit is None
        assert [bot.handshake["protocol_version"] for bot in out.bots if bot.handshake] == list(protocols)
        records.append(without_timing(out.record))
        notices.append((sorted(ba.notices), sorted(bb.notices)))
    assert records[1] == records[0] and records[2] == records[0]
    # The same notices reach the bots either way: per leg a MatchStart per seat, a DealEnd per seat per deal.
    assert notices[1] == notices[0] == notices[2]
    deals = sum(len(leg["deals"]) for leg in records[0]["legs"])
    assert notices[0][0].count("MatchStarted") == 4 and notices[0][0].count("DealEnded") == 2 * deals
    assert notices[0][0].count("MatchEnded") == 2


@pytest.mark.timeout(60)
def test_a_bot_that_closes_its_stream_mid_match_forfeits(start_bot: StartBot) -> None:
    good, _ = start_bot("random", seed=5, protocol=2)
    leaver, _ = start_bot("leave", after=6, protocol=2)
    events: list[Any] = []
    out = run_match([good, leaver], settings(deals=20), "leave", events.append)
    b = out.bots[1]
    assert b.counts["ok"] == 5 and b.counts["crashed"] == 1
    assert out.forfeit is not None and out.forfeit.team == 1 and out.winner == 0
    assert "closed its stream in the middle of the match" in out.forfeit_reason
    assert out.forfeit_reason.startswith(f"bot {b.name} (seat ")
    last = [e for e in events if isinstance(e, DecisionEvent) and e.outcome != "ok"]
    assert [e.outcome for e in last] == ["crashed"]


@pytest.mark.timeout(60)
def test_an_answer_to_a_decision_not_asked_is_malformed(start_bot: StartBot) -> None:
    good, _ = start_bot("random", seed=4, protocol=2)
    liar, _ = start_bot("unsolicited", protocol=2)
    events: list[Any] = []
    out = run_match([good, liar], settings(max_strikes=3), "unsolicited", events.append)
    b = out.bots[1]
    assert b.counts["malformed_reply"] == 4 and b.counts["ok"] == 0 and b.strikes == 4
    assert out.forfeit is not None and out.forfeit.team == 1
    bad = [e for e in events if isinstance(e, DecisionEvent) and e.outcome != "ok"]
    # Its first answer names decision 1001 while the referee waits for decision 1 of that stream.
    assert "an answer to decision 1001, which it was not asked (the referee waits for decision 1)" in bad[0].detail
    assert all("which it was not asked" in e.detail for e in bad)


@pytest.mark.timeout(60)
def test_late_answers_after_a_timeout_are_dropped_not_taken_for_the_next_decision(start_bot: StartBot) -> None:
    # Each answer takes 600 ms (a sleep: never less); the deadline is 400 ms with no bank, so every decision
    # times out, and each late answer arrives while the referee waits for the next decision of that seat (it
    # must drop it). The other bot answers at once, 400 ms before its deadline however loaded the machine.
    slow, behaviour = start_bot("sleep", sleep_ms=600, protocol=2)
    good, _ = start_bot("random", seed=3, protocol=2)
    events: list[Any] = []
    out = run_match([slow, good], settings(deadline_ms=400, time_bank_ms=0, max_strikes=5), "late", events.append)
    s = out.bots[0]
    assert s.counts["timeout"] == 6 and s.counts["malformed_reply"] == 0 and s.counts["ok"] == 0
    assert "exceeded 5 strikes" in out.forfeit_reason
    # Each timeout cuts that seat's stream; the next message for the seat opens a new one with the seat's
    # MatchStart again: 2 streams at the start, 6 reopened, and the MatchEnd reaches both seats.
    assert behaviour.notices.count("MatchStarted") == 2 + 6 and behaviour.notices.count("MatchEnded") == 2
    assert s.notice_failures == 0


@pytest.mark.timeout(60)
def test_a_bot_speaking_an_unknown_version_is_refused(start_bot: StartBot) -> None:
    odd, _ = start_bot("first", protocol=7)
    good, _ = start_bot("random", seed=1, protocol=2)
    out = run_match([odd, good], settings(), "odd")
    assert out.forfeit is not None and out.forfeit.team == 0 and out.legs == []
    assert "it speaks protocol version 7; this referee speaks 1 and 2" in out.forfeit_reason


@pytest.mark.timeout(60)
@pytest.mark.parametrize("protocol", [1, 2])
def test_links_keep_the_channel_and_the_handshake_while_the_bot_behaves(start_bot: StartBot, protocol: int) -> None:
    a, ba = start_bot("random", seed=1, protocol=protocol)
    b, bb = start_bot("random", seed=2, protocol=protocol)
    links = BotLinks()
    try:
        for i in range(3):
            out = run_match([a, b], settings(seed=i), f"warm-{i}", links=links)
            assert out.forfeit is None and all(bot.handshake is not None for bot in out.bots)
        assert ba.handshakes == 1 and bb.handshakes == 1  # the first match's handshake served all three
        assert links.known(a) and links.known(b)
        # A bot that times out leaves its state unknown: the next match shakes hands with it again.
        # (It never answers, whatever the load; the other answers at once, with a whole second to do it.)
        slow, bs = start_bot("hang", protocol=protocol)
        run_match([slow, b], settings(deadline_ms=1000, time_bank_ms=0, max_strikes=0), "slow", links=links)
        assert not links.known(slow) and links.known(b)
        run_match([slow, b], settings(deadline_ms=1000, time_bank_ms=0, max_strikes=0), "slow-2", links=links)
        assert bs.handshakes == 2 and bb.handshakes == 1
    finally:
        links.close()
