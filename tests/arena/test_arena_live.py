"""The live view's public events (arena.play.live) and their read side (arena.views.live), on a real Redis.

Every expected list is worked out here by hand from the events fed in: what a single table shows once its
table went on past a decision, what a duplicate match shows once both tables have finished a board.
"""

from __future__ import annotations

import json

import pytest

from arena.model import MatchSpec
from arena.play import live
from arena.play.live import LiveAction, LiveDealEnd, LiveFilter, LiveStart, public_action
from arena.store import keys
from arena.views.live import LiveCursorError, live_page, parse_cursor
from referee.match import DealEvent, DecisionEvent


def spec(match_id: str) -> MatchSpec:
    return MatchSpec(match_id, "lad", "pilotta", 7, ("a", "b"), deals=2, duplicate=False)


HAND = ("7S", "9S", "AS", "KH", "QH", "JD", "TC", "8C")


def ok(leg: int, deal: int, seat: int, action: str) -> DecisionEvent:
    return DecisionEvent(leg, deal, seat, "bot", "play" if action.startswith("play") else "auction", action, "ok", 3.0)


def failed(leg: int, deal: int, seat: int, action: str, outcome: str = "illegal_action") -> DecisionEvent:
    """A failed decision as the referee reports it to the bot's author: with the seat's hand and its answer."""
    return DecisionEvent(
        leg, deal, seat, "bot", "play", action, outcome, 4.0, "secret detail", 2, HAND, ("play 7S", "play AS"),
        "play KD i-peeked", 900.0,
    )  # fmt: skip


def deal_end(leg: int, deal: int, written: tuple[int, int], totals: tuple[int, int]) -> DealEvent:
    return DealEvent(leg, deal, written, totals, False)


def test_single_table_shows_a_decision_once_its_table_went_on() -> None:
    f = LiveFilter(1)
    assert f.feed(ok(0, 0, 1, "bid 80 S")) == []  # held: is it played? the next decision says so
    assert f.feed(ok(0, 0, 2, "pass")) == [LiveAction(0, 0, 1, "bid 80 S")]
    assert f.feed(ok(0, 0, 3, "declare 7S-8S-9S")) == [LiveAction(0, 0, 2, "pass")]
    assert f.feed(failed(0, 0, 0, "play 7S", "timeout")) == [LiveAction(0, 0, 3, "declare")]  # no card of it yet
    # The deal ends: the held card was played (a strike, the default card); the declaration's cards go public.
    assert f.feed(deal_end(0, 0, (182, 0), (182, 0))) == [
        LiveAction(0, 0, 0, "play 7S"),
        LiveDealEnd(0, 0, (182, 0), (182, 0), False, ((3, "7S-8S-9S"),)),
    ]
    assert f.feed(ok(0, 1, 2, "play QH belote")) == []


def test_a_failed_decisions_hand_and_a_forfeiting_card_never_get_out() -> None:
    f = LiveFilter(1)
    out = f.feed(ok(0, 0, 1, "play JH"))
    out += f.feed(failed(0, 0, 2, "play 7S"))  # its hand, legal actions, answer and detail: none of it
    out += f.feed(failed(0, 0, 3, "play AS", "crashed"))  # the forfeit: never played, the match ends here
    assert out == [LiveAction(0, 0, 1, "play JH"), LiveAction(0, 0, 2, "play 7S")]
    text = json.dumps([e.to_json() for e in out])
    for secret in ("AS", "9S", "KH", "QH", "JD", "TC", "8C", "secret", "peeked", "KD", "900"):
        assert secret not in text
    # A code of no public form is never shown, whatever it holds.
    for code in ("play 7S AS", "declare 7S", "bid 80 H; AS", "play XX", "hand 7S-9S-AS", ""):
        assert public_action(code) is None, code
    assert public_action("declare none") is None  # not public (test_arena_live_hostile)
    assert public_action("declare 7H-8H-9H JC-JD-JH-JS") == ("declare", "7H-8H-9H JC-JD-JH-JS")


def test_duplicate_boards_appear_once_both_tables_have_played_them() -> None:
    # Two tables at once, interleaved as their threads report; two boards.
    f = LiveFilter(2)
    assert f.feed(ok(0, 0, 1, "bid 80 S")) == []
    assert f.feed(ok(1, 0, 2, "bid 90 H")) == []
    assert f.feed(ok(0, 0, 2, "pass")) == []
    assert f.feed(deal_end(0, 0, (0, 162), (0, 162))) == []  # table 2 still plays board 1
    assert f.feed(ok(0, 1, 3, "pass")) == []  # table 1 is on board 2: nothing of it either
    assert f.feed(ok(1, 0, 3, "pass")) == []
    assert f.feed(deal_end(1, 0, (100, 62), (100, 62))) == [
        LiveAction(0, 0, 1, "bid 80 S"),
        LiveAction(0, 0, 2, "pass"),
        LiveDealEnd(0, 0, (0, 162), (0, 162), False),
        LiveAction(1, 0, 2, "bid 90 H"),
        LiveAction(1, 0, 3, "pass"),
        LiveDealEnd(1, 0, (100, 62), (100, 62), False),
    ]
    assert f.feed(deal_end(0, 1, (10, 0), (10, 162))) == []
    assert f.feed(ok(1, 1, 0, "pass")) == []
    assert f.feed(deal_end(1, 1, (0, 5), (100, 67))) == [
        LiveAction(0, 1, 3, "pass"),
        LiveDealEnd(0, 1, (10, 0), (10, 162), False),
        LiveAction(1, 1, 0, "pass"),
        LiveDealEnd(1, 1, (0, 5), (100, 67), False),
    ]


def test_duplicate_legs_in_turn_show_nothing_of_the_first_until_the_second_plays_the_board() -> None:
    f = LiveFilter(2)
    first = [ok(0, 0, 1, "pass"), deal_end(0, 0, (0, 0), (0, 0)), ok(0, 1, 2, "pass"), deal_end(0, 1, (0, 0), (0, 0))]
    assert [e for ev in first for e in f.feed(ev)] == []  # the whole first leg: held back
    assert f.feed(ok(1, 0, 3, "bid 80 C")) == []
    assert f.feed(failed(1, 0, 0, "play 7S", "crashed")) == []  # table 2 forfeits on board 1: nothing shown
    assert f._played[(1, 0)] == [f._played[(1, 0)][0]] and f._played[(1, 0)][0].action.action == "bid 80 C"


def test_publisher_writes_a_bounded_stream_read_by_cursor(r, monkeypatch: pytest.MonkeyPatch) -> None:
    pub = live.start(r, spec("m-live-1"), [["a", "b", "c", "d"]])
    assert r.ttl(keys.live("m-live-1")) > 0
    for seat, code in enumerate(["pass", "pass", "bid 80 H", "pass", "pass"]):
        pub.on_event(ok(0, 0, seat % 4, code))
    page = live_page(r, "m-live-1", 0)
    assert page is not None and page.next == 5 and not page.recorded and not page.more
    assert page.events[0] == {
        "kind": "start",
        "ruleset": "pilotta",
        "duplicate": False,
        "players": [["a", "b", "c", "d"]],
    }
    assert [e["action"] for e in page.events[1:]] == ["pass", "pass", "bid 80 H", "pass"]  # the last one held
    again = live_page(r, "m-live-1", 3, limit=1)
    assert again is not None and again.next == 4 and again.more and again.events[0]["action"] == "bid 80 H"
    assert live_page(r, "m-live-1", 5) is not None and live_page(r, "m-live-1", 5).events == ()  # type: ignore[union-attr]
    # Played again from the start (its worker died): fewer events than the cursor says "restarted".
    live.start(r, spec("m-live-1"), [["a", "b", "c", "d"]])
    restarted = live_page(r, "m-live-1", 5)
    assert restarted is not None and restarted.restarted and restarted.next == 0
    # Recorded: the replay takes over.
    r.set(keys.result("m-live-1"), "{}")
    assert live_page(r, "m-live-1", 0).recorded  # type: ignore[union-attr]
    # Unknown, or an id no key may hold: nothing.
    assert live_page(r, "m-nobody", 0) is None and live_page(r, "../x", 0) is None
    # Capped: past LIVE_MAX_EVENTS entries nothing more is written.
    monkeypatch.setattr(live, "LIVE_MAX_EVENTS", 3)
    capped = live.start(r, spec("m-live-2"), [["a", "b", "c", "d"]])
    for seat in range(10):
        capped.on_event(ok(0, 0, seat % 4, "pass"))
    capped.end()
    assert r.xlen(keys.live("m-live-2")) == 3
    live.discard(r, "m-live-2")
    assert not r.exists(keys.live("m-live-2"))


def test_cursor_is_checked() -> None:
    assert parse_cursor(None) == 0 and parse_cursor("") == 0 and parse_cursor("17") == 17
    for bad in ("-1", "x", "1.5", "5001", "9" * 30, "0x10"):
        with pytest.raises(LiveCursorError, match="since must be a whole number from 0 to 5000"):
            parse_cursor(bad)


def test_start_carries_names_only() -> None:
    start = LiveStart("pilotta", True, (("a", "b", "c", "d"), ("d", "a", "b", "c")))
    assert LiveFilter(len(start.players)).legs == 2
    assert set(start.to_json()) == {"kind", "ruleset", "duplicate", "players"}


def test_the_worker_drops_the_stream_once_recorded_and_after_a_failed_attempt(r) -> None:
    from arena.play.queue import MatchQueue
    from arena.play.runner import not_played
    from arena.play.worker import Worker

    seen: dict[str, bool] = {}

    def runner(s: MatchSpec):  # the worker's injected runner: it streams, then ends (or fails) as a match does
        live.start(r, s, [["a", "b", "c", "d"]])
        seen[s.match_id] = bool(r.exists(keys.live(s.match_id)))
        if s.match_id == "m-live-fails":
            raise RuntimeError("the runner failed")
        return not_played(s, "bot x is retired")

    queue = MatchQueue(r)
    for match_id in ("m-live-ok", "m-live-fails"):
        assert queue.enqueue(spec(match_id))
    worker = Worker(r, runner, "w-live-test", block_ms=100)
    assert worker.run_once() and worker.run_once()
    assert seen == {"m-live-ok": True, "m-live-fails": True}
    assert worker.stats.recorded == 1 and worker.stats.failures == 1
    assert not r.exists(keys.live("m-live-ok")) and not r.exists(keys.live("m-live-fails"))


def test_a_zombie_attempt_writes_nothing_into_the_attempt_that_replaced_it(r) -> None:
    """A worker thought dead (frozen, its match given to another) wakes and goes on publishing: its events
    must not land in the new attempt's stream, whose own writes go on. Before, the zombie's entry ids ran
    ahead of the new attempt's, were taken, and the new attempt's next write was refused (a smaller id):
    the page then showed the zombie's events and never the new attempt's."""
    zombie = live.start(r, spec("m-live-z"), [["a", "b", "c", "d"]])
    for seat, code in enumerate(["pass", "pass", "pass", "bid 80 H", "pass", "pass", "pass"]):
        zombie.on_event(ok(0, 0, seat % 4, code))  # 1 start + 6 shown (the last one held)
    retry = live.start(r, spec("m-live-z"), [["a", "b", "c", "d"]])
    retry.on_event(ok(0, 0, 0, "bid 90 S"))
    retry.on_event(ok(0, 0, 1, "pass"))  # shows "bid 90 S": the stream has 2 entries
    for seat in range(8):  # the zombie wakes: ids 0-8.. would be past the retry's 0-2
        zombie.on_event(ok(0, 0, (seat + 3) % 4, "pass"))
    retry.on_event(ok(0, 0, 2, "pass"))
    page = live_page(r, "m-live-z", 0)
    assert page is not None and page.attempt == retry.attempt
    assert [e.get("action") for e in page.events] == [None, "bid 90 S", "pass"]  # the start, then the retry's
    assert zombie.broken and not retry.broken
