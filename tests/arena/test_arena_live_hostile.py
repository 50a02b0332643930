"""A hostile review of the live view (arena.play.live): the referee's events in unusual orders, fed to the real
``LiveFilter`` / ``LivePublisher`` on a real Redis, and the stream read back as a watcher reads it.

The promise checked (docs/web.md "Watching a match live"): while a match is played nobody learns a card that
is not public yet at its table. Every expected list is worked out by hand from the rules:

- a card or a call is public once played (the next decision at its table, or the deal's end, says it was);
- a declaration is public as *announced* (its cards only once every card has been played);
- ``declare none`` is not public at all: a seat is asked to declare only when it holds a declaration
  (referee.deal.start_play, docs/protocol.md), and ``declare none`` keeps it hidden, so the other seats
  never learn that it was asked; showing it would tell everyone that seat holds a sequence or a four;
- a duplicate board is public once both tables have finished it, whatever order they finish boards in;
- a forfeit's decision is never played; a failed decision's hand, answer and detail are the author's alone;
- an attempt that failed is gone, and the next one deals other boards (Seeds.for_attempt).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from arena.model import MatchSpec
from arena.play import live
from arena.play.live import LiveAction, LiveDealEnd, LiveFilter, public_action
from arena.store import keys
from arena.views.live import live_page
from referee.match import DealEvent, DecisionEvent
from tests.arena.arena_testkit import wait_until

PLAYERS = [["s", "e", "n", "w"], ["w", "s", "e", "n"]]
# The failing seat's hand: none of these cards is played in the scenarios below, so none may get out.
HAND = ("9H", "TH", "JH", "QD", "KD", "AC", "8C")
SECRET = ("secret<b>detail", "i-peeked", "1234.5")


def spec(match_id: str, duplicate: bool = False) -> MatchSpec:
    return MatchSpec(match_id, "lad", "pilotta", 11, ("a", "b"), deals=2, duplicate=duplicate)


def ok(leg: int, deal: int, seat: int, action: str) -> DecisionEvent:
    phase = "play" if action.startswith("play") else "declare" if action.startswith("declare") else "auction"
    return DecisionEvent(leg, deal, seat, "bot", phase, action, "ok", 3.0, bank_left_ms=1234.5)


def failed(leg: int, deal: int, seat: int, action: str, outcome: str) -> DecisionEvent:
    """A failed decision as the referee builds it (runner.step): the default action, the detail, the trick, the
    seat's hand, its legal actions and what it answered, for the bot's author."""
    return DecisionEvent(
        leg, deal, seat, "bot", "play", action, outcome, 5.0, "secret<b>detail", 3,
        (action.removeprefix("play "), *HAND), (action, "play 9H"), "play KD i-peeked", 1234.5,
    )  # fmt: skip


def end(leg: int, deal: int, written: tuple[int, int], totals: tuple[int, int], thrown_in: bool = False) -> DealEvent:
    return DealEvent(leg, deal, written, totals, thrown_in)


def stream(r, match_id: str) -> list[dict[str, object]]:
    page = live_page(r, match_id, 0, limit=5000)
    assert page is not None
    return list(page.events)


def assert_no_secret(events: list[dict[str, object]]) -> None:
    text = json.dumps(events)
    for s in SECRET:
        assert s not in text, s
    for card in HAND:
        assert card not in text, card


def test_declare_none_is_never_shown_and_releases_nothing() -> None:
    # West leads; North holds a tierce it keeps hidden: the other seats never learn North was asked.
    f = LiveFilter(1)
    assert f.feed(ok(0, 0, 3, "play 7S")) == []
    assert f.feed(ok(0, 0, 2, "declare none")) == []  # not public: nothing new, not even West's card
    assert f.feed(ok(0, 0, 2, "play 8S")) == [LiveAction(0, 0, 3, "play 7S")]
    assert f.feed(end(0, 0, (0, 162), (0, 162))) == [
        LiveAction(0, 0, 2, "play 8S"),
        LiveDealEnd(0, 0, (0, 162), (0, 162), False, ()),
    ]
    assert public_action("declare none") is None


def test_declare_none_never_reaches_the_stream(r) -> None:
    pub = live.start(r, spec("m-hostile-none"), PLAYERS[:1])
    for e in (ok(0, 0, 0, "bid 80 S"), ok(0, 0, 1, "pass"), ok(0, 0, 2, "declare none"), ok(0, 0, 2, "play 7S")):
        pub.on_event(e)
    pub.on_event(end(0, 0, (0, 0), (0, 0)))
    pub.end()
    events = stream(r, "m-hostile-none")
    assert [e.get("action") for e in events if e["kind"] == "action"] == ["bid 80 S", "pass", "play 7S"]
    assert "none" not in json.dumps(events)


def test_codes_must_be_exact_a_trailing_newline_is_no_public_form() -> None:
    # ``$`` also matches before a final newline, ``\d`` any script's digit: the exact forms, matched whole.
    for code in ("play 7S\n", "pass\n", "bid 80 H\n", "declare 7H-8H-9H\n", "play 7S belote\n", "bid ٨٠ H"):
        assert public_action(code) is None, repr(code)


def test_duplicate_boards_finished_out_of_step_appear_one_by_one() -> None:
    # Table 2 runs two boards ahead of table 1; each board appears when table 1 (the later one) ends it.
    f = LiveFilter(2)
    out = []
    for e in (
        ok(1, 0, 0, "bid 80 H"),
        end(1, 0, (0, 162), (0, 162)),
        ok(1, 1, 1, "pass"),
        end(1, 1, (0, 0), (0, 162), True),
        ok(1, 2, 2, "bid 90 S"),  # board 3 at table 2: table 1 has not even dealt it
        ok(1, 2, 3, "pass"),
    ):
        out += f.feed(e)
    assert out == []
    assert f.feed(ok(0, 0, 3, "bid 100 C")) == []
    assert f.feed(end(0, 0, (162, 0), (162, 0))) == [
        LiveAction(0, 0, 3, "bid 100 C"),
        LiveDealEnd(0, 0, (162, 0), (162, 0), False),
        LiveAction(1, 0, 0, "bid 80 H"),
        LiveDealEnd(1, 0, (0, 162), (0, 162), False),
    ]
    assert f.feed(ok(0, 1, 0, "pass")) == []
    assert f.feed(end(0, 1, (0, 0), (162, 0), True)) == [
        LiveAction(0, 1, 0, "pass"),
        LiveDealEnd(0, 1, (0, 0), (162, 0), True),
        LiveAction(1, 1, 1, "pass"),
        LiveDealEnd(1, 1, (0, 0), (0, 162), True),
    ]  # and nothing of board 3, which table 1 has still to play
    # Table 2 forfeits on board 3; a stray end of board 3 at table 1 shows nothing (table 2 never ended it).
    assert f.feed(failed(1, 2, 0, "play 7S", "crashed")) == []
    assert f.feed(end(0, 2, (0, 0), (162, 0))) == []


def test_a_forfeit_mid_board_at_one_duplicate_table_shows_nothing_of_the_board(r) -> None:
    # Both tables on board 1; table 2 has finished it, table 1 forfeits on its last trick: nothing of the
    # board, at either table, ever reaches the stream (the replay shows it once recorded).
    pub = live.start(r, spec("m-hostile-dupforfeit", duplicate=True), PLAYERS)
    for e in (
        ok(0, 0, 0, "bid 80 S"),
        ok(1, 0, 0, "bid 80 S"),
        ok(0, 0, 0, "play 7S"),
        ok(1, 0, 0, "play 7S"),
        ok(1, 0, 1, "play AS"),
        end(1, 0, (162, 0), (162, 0)),
        ok(1, 1, 2, "pass"),  # table 2 is on board 2 already
        ok(0, 0, 1, "play AS"),
        failed(0, 0, 2, "play 8S", "timeout"),
        failed(0, 0, 3, "play 9S", "crashed"),  # the forfeit
    ):
        pub.on_event(e)
    pub.end()
    events = stream(r, "m-hostile-dupforfeit")
    assert [e["kind"] for e in events] == ["start", "end"]
    assert_no_secret(events)


def test_a_held_decision_is_released_by_its_own_table_only() -> None:
    # Table 1's last card of board 1 is held; table 2's decisions and its end of board 1 say nothing of it.
    f = LiveFilter(2)
    assert f.feed(ok(0, 0, 1, "play AS")) == []
    for e in (ok(1, 0, 0, "pass"), ok(1, 0, 1, "pass"), end(1, 0, (0, 0), (0, 0), True), ok(1, 1, 2, "pass")):
        assert f.feed(e) == []
    # Table 1's next decision is a forfeit: the held card was played, the forfeit's card never is; the board is
    # not over at table 1, so nothing is shown.
    assert f.feed(failed(0, 0, 2, "play KS", "crashed")) == []
    assert f._played[(0, 0)][0].action == LiveAction(0, 0, 1, "play AS")
    assert f._held.get(0) is not None and f._held[0].action.action == "play KS"  # held for ever: never shown


def test_a_declaration_announced_then_a_forfeit_never_shows_its_cards(r) -> None:
    pub = live.start(r, spec("m-hostile-declforfeit"), PLAYERS[:1])
    for e in (
        ok(0, 0, 0, "bid 80 H"),
        ok(0, 0, 1, "pass"),
        ok(0, 0, 2, "pass"),
        ok(0, 0, 3, "pass"),
        ok(0, 0, 1, "declare 9H-TH-JH"),  # East's tierce: announced, its cards in East's hand
        ok(0, 0, 1, "play 7C"),
        failed(0, 0, 2, "play AC", "illegal_action"),  # a strike, the default card played
        failed(0, 0, 3, "play 8D", "unreachable"),  # the forfeit
    ):
        pub.on_event(e)
    pub.end()
    events = stream(r, "m-hostile-declforfeit")
    actions = [(e["seat"], e["action"]) for e in events if e["kind"] == "action"]
    assert actions == [
        (0, "bid 80 H"),
        (1, "pass"),
        (2, "pass"),
        (3, "pass"),
        (1, "declare"),
        (1, "play 7C"),
        (2, "play AC"),
    ]
    assert [e["kind"] for e in events if e["kind"] != "action"] == ["start", "end"]
    # The tierce's cards, West's forfeit card, the hand, the detail, the answer, the bank: none of it.
    text = json.dumps(events)
    for s in ("9H", "TH", "JH", "8D", "KD", "secret", "peeked", "1234"):
        assert s not in text, s


def test_a_thrown_in_deal_then_belote_and_the_last_trick(r) -> None:
    pub = live.start(r, spec("m-hostile-thrown"), PLAYERS[:1])
    feed = [ok(0, 0, s, "pass") for s in (1, 2, 3, 0)] + [end(0, 0, (0, 0), (0, 0), True)]
    # Deal 2: South takes hearts; the last trick's last card is shown only with the deal's end.
    feed += [ok(0, 1, 2, "bid 80 H"), ok(0, 1, 3, "pass"), ok(0, 1, 0, "pass"), ok(0, 1, 1, "pass")]
    feed += [ok(0, 1, 2, "play QH belote"), ok(0, 1, 3, "play 7H"), ok(0, 1, 0, "play 8H")]
    feed += [ok(0, 1, 1, "play KH"), end(0, 1, (252, 0), (252, 0))]
    for e in feed:
        pub.on_event(e)
    events = stream(r, "m-hostile-thrown")
    assert events[1:6] == [
        *({"kind": "action", "leg": 0, "deal": 0, "seat": s, "action": "pass"} for s in (1, 2, 3, 0)),
        {
            "kind": "deal",
            "leg": 0,
            "deal": 0,
            "written": [0, 0],
            "totals": [0, 0],
            "thrown_in": True,
            "declarations": [],
        },
    ]
    assert [e["action"] for e in events[6:14]] == [
        "bid 80 H", "pass", "pass", "pass", "play QH belote", "play 7H", "play 8H", "play KH",
    ]  # fmt: skip
    assert events[14] == {
        "kind": "deal", "leg": 0, "deal": 1, "written": [252, 0], "totals": [252, 0], "thrown_in": False,
        "declarations": [],
    }  # fmt: skip
    assert len(events) == 15


def test_the_last_card_of_a_deal_waits_for_its_end(r) -> None:
    pub = live.start(r, spec("m-hostile-last"), PLAYERS[:1])
    for e in (ok(0, 0, 0, "play 7S"), ok(0, 0, 1, "play 8S")):
        pub.on_event(e)
    assert [e.get("action") for e in stream(r, "m-hostile-last")] == [None, "play 7S"]  # 8S not yet: held


def test_a_failed_attempt_is_gone_and_the_next_deals_from_its_own_seed(r) -> None:
    from arena.play.queue import MatchQueue
    from arena.play.runner import not_played
    from arena.play.worker import Worker

    seeds: list[int] = []
    at_start: list[bool] = []

    def runner(s: MatchSpec):  # the worker's injected runner: streams as the real one does, fails once
        at_start.append(bool(r.exists(keys.live(s.match_id))))
        seeds.append(s.seed)
        pub = live.start(r, s, PLAYERS[:1])
        pub.on_event(ok(0, 0, 0, "play 7S"))
        pub.on_event(ok(0, 0, 1, "play 8S"))
        if len(seeds) == 1:
            raise RuntimeError("the runner failed mid-match")
        return not_played(s, "bot x is retired")

    queue = MatchQueue(r)
    from arena.bots.trust import Seeds

    arena_seed = Seeds(r).seed("m-hostile-retry")  # the arena's own seed: a retry changes it
    assert queue.enqueue(dataclasses.replace(spec("m-hostile-retry"), seed=arena_seed))
    # Left pending by the failure, it is retried once idle for ``stale_ms``: 1 ms here, so at once.
    worker = Worker(r, runner, "w-hostile", block_ms=100, stale_ms=1)
    assert worker.run_once()
    # The failed attempt's stream is gone: its events can no longer be read.
    assert not r.exists(keys.live("m-hostile-retry")) and live_page(r, "m-hostile-retry", 0) is None
    wait_until(lambda: worker.run_once() and len(seeds) == 2, timeout=60, what="the match played again")
    assert len(seeds) == 2 and at_start == [False, False]
    assert seeds[0] == arena_seed and seeds[1] != arena_seed
    assert seeds[1] == Seeds(r).seed("m-hostile-retry/2")


def test_every_rulesets_every_action_but_declare_none_has_a_public_form() -> None:
    """Random games of every ruleset: each action's code is a call, a card or a declaration in its exact form
    (else it would silently be missing from the live view), and ``declare none`` alone is not shown."""
    from referee.cli import play_random_game
    from referee.rules import get_ruleset
    from referee.rules.registry import ruleset_names

    kinds: dict[str, set[str]] = {}
    for name in ruleset_names():
        for seed in range(4):
            game = play_random_game(get_ruleset(name), seed, max_deals=3)
            for deal in game.deals:
                for seat, action in deal.history:
                    code = deal.code(action, seat)
                    shown = public_action(code)
                    assert (shown is None) == (code == "declare none"), (name, code)
                    kinds.setdefault(name, set()).add(code.split()[0] if shown is None else shown[0].split()[0])
    # The games did reach every kind of action (else this test would prove little).
    assert all({"bid", "play"} <= k for k in kinds.values()), kinds
    assert all(any(word in k for k in kinds.values()) for word in ("pass", "declare", "contra", "surcontra")), kinds


@pytest.mark.timeout(300)
def test_a_real_duplicate_match_never_streams_anything_before_it_may(r, tmp_path, monkeypatch) -> None:
    """A real match (the real runner, sample bots over gRPC, both tables at once, 2 boards): after every event
    the referee reports, the stream is checked against the events so far. Each action shown is one its table
    has gone on past, of a board both tables have finished; each deal's end shown is of such a board; no
    ``declare none``; no card in an action but the card played."""
    from pathlib import Path

    from arena.bots.registry import Registry
    from arena.play.runner import ArenaRunner

    samples = Path(__file__).resolve().parents[2] / "sample_bots"
    reg = Registry(r)

    def register(name: str, sample: str) -> str:
        manifest = json.loads((samples / sample / "manifest.json").read_text())
        return reg.register(name, "tests", manifest=manifest, manifest_dir=str(samples / sample))[0].bot_id

    seen: list[DecisionEvent | DealEvent] = []
    violations: list[str] = []
    publishers: list[live.LivePublisher] = []
    original = live.LivePublisher.on_event

    def checked(self: live.LivePublisher, event: DecisionEvent | DealEvent) -> None:
        original(self, event)
        if self not in publishers:
            publishers.append(self)
        seen.append(event)
        ended = {(e.leg, e.deal_number) for e in seen if isinstance(e, DealEvent)}
        for _id, fields in r.xrange(self.key):
            e = json.loads(fields["e"])
            if e["kind"] not in ("action", "deal"):
                continue
            where = (e["leg"], e["deal"])
            if not all((leg, e["deal"]) in ended for leg in range(2)):
                violations.append(f"{e} shown before both tables ended board {e['deal'] + 1}")
            if e["kind"] == "action":
                made = [
                    i
                    for i, d in enumerate(seen)
                    if isinstance(d, DecisionEvent)
                    and (d.leg, d.deal_number, d.seat) == (where[0], where[1], e["seat"])
                    and (d.action == e["action"] or (e["action"] == "declare" and d.action.startswith("declare ")))
                ]
                if not any(any(x.leg == e["leg"] for x in seen[i + 1 :]) for i in made):
                    violations.append(f"{e} shown before its table went on past it")
                if e["action"] == "declare none" or "none" in e["action"]:
                    violations.append(f"{e}: declare none is not public")

    monkeypatch.setattr(live.LivePublisher, "on_event", checked)
    h, rnd = register("heuristic", "heuristic"), register("random", "random")
    runner = ArenaRunner(reg, log_dir=tmp_path, startup_timeout_s=60)
    try:
        result = runner(MatchSpec("m-hostile-real", "lad", "pilotta", 17, (h, rnd), deals=2))
    finally:
        runner.close()
    assert result.forfeit is None
    assert len(publishers) == 1 and not publishers[0].broken
    assert violations == []
    # Both boards were shown in the end: 2 boards x 2 tables of deal ends.
    events = [json.loads(f["e"]) for _id, f in r.xrange(keys.live("m-hostile-real"))]
    assert sorted((e["leg"], e["deal"]) for e in events if e["kind"] == "deal") == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # Every decision the referee reported at each table, in its public form, is in the stream (none forfeited).
    public = [(d.leg, d.deal_number, d.seat, public_action(d.action)) for d in seen if isinstance(d, DecisionEvent)]
    expected = sorted((leg, deal, seat, p[0]) for leg, deal, seat, p in public if p is not None)
    shown = sorted((e["leg"], e["deal"], e["seat"], e["action"]) for e in events if e["kind"] == "action")
    assert shown == expected
