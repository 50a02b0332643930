"""A match watched live over HTTP: ``/api/live/MATCH_ID?since=N`` (bounded replies, a checked cursor, unknown
matches 404), the match's page while it is played (the live view, no hand in it), and the leaderboard that
reloads itself while a ladder it shows runs (and only then)."""

from __future__ import annotations

import json
import re

import pytest

from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play import live
from arena.play.ladder import start_ladder, stop_ladder
from arena.play.queue import MatchQueue
from arena.play.scheduler import Scheduler
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.views.live import LIVE_PAGE
from referee.match import DecisionEvent

from .conftest import Arena

CARDS = re.compile(r"\b[789TJQKA][CDHS]\b")


def _spec(match_id: str) -> MatchSpec:
    return MatchSpec(match_id, "lad", "pilotta", 3, ("a", "b"), deals=2, duplicate=False)


def _decision(n: int, action: str) -> DecisionEvent:
    return DecisionEvent(0, 0, n % 4, "x", "auction", action, "ok", 1.0)


def test_live_endpoint_pages_bounded_by_cursor(arena: Arena) -> None:
    feed = live.start(arena.r, _spec("m-live-http"), [["north<b>", "east", "south", "west"]])
    calls = ["pass"] * (LIVE_PAGE + 50)
    for n, code in enumerate(calls):
        feed.on_event(_decision(n, code))
    first = arena.json("/api/live/m-live-http")
    # The start, then LIVE_PAGE - 1 calls: one reply holds LIVE_PAGE events at most, and says more wait.
    assert len(first["events"]) == LIVE_PAGE and first["next"] == LIVE_PAGE and first["more"] is True
    assert first["events"][0]["players"] == [["north<b>", "east", "south", "west"]]
    rest = arena.json(f"/api/live/m-live-http?since={first['next']}")
    # Written: the start and every call but the last (held until its table goes on): 1 + 249.
    assert rest["next"] == 1 + len(calls) - 1 and rest["more"] is False and not rest["recorded"]
    assert len(rest["events"]) == 1 + len(calls) - 1 - LIVE_PAGE
    # The page of a match being played: the live view, its script and no card anywhere in it.
    status, body, headers = arena.get("/replay/m-live-http")
    assert status == 200 and 'id="live-data"' in body and "/static/live.js" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert CARDS.findall(body) == []
    status, js, _ = arena.get("/static/live.js")
    assert status == 200 and ".innerHTML" not in js


@pytest.mark.parametrize(
    ("query", "status", "says"),
    [
        ("?since=-1", 400, "since must be a whole number from 0 to 5000, not '-1'"),
        ("?since=abc", 400, "since must be a whole number from 0 to 5000, not 'abc'"),
        ("?since=5001", 400, "since must be a whole number from 0 to 5000, not '5001'"),
        ("?since=" + "9" * 200, 400, "since must be a whole number from 0 to 5000, not '99999999999999999999'"),
    ],
)
def test_live_endpoint_refuses_a_bad_cursor(arena: Arena, query: str, status: int, says: str) -> None:
    live.start(arena.r, _spec("m-live-bad"), [["a", "b", "c", "d"]])
    got, body, _ = arena.get("/api/live/m-live-bad" + query)
    assert (got, json.loads(body)["error"]) == (status, says)


def test_live_endpoint_unknown_recorded_and_restarted(arena: Arena) -> None:
    for path in ("/api/live/m-nobody", "/api/live/%2E%2E%2Fetc", "/api/live/" + "x" * 300):
        status, body, _ = arena.get(path)
        assert status == 404 and "being played or recorded" in json.loads(body)["error"], path
    status, body, _ = arena.get("/replay/m-nobody")
    assert status == 404 and "There is no recorded match “m-nobody”." in body
    # A recorded match: the replay takes over (the page reloads into it).
    recorded = next(iter(arena.results))
    assert arena.json(f"/api/live/{recorded}")["recorded"] is True
    # Played again from the start: a cursor past its events says so, and the page reads again from 0.
    live.start(arena.r, _spec("m-live-again"), [["a", "b", "c", "d"]])
    assert arena.json("/api/live/m-live-again?since=40") | {"events": [], "attempt": ""} == {
        "match_id": "m-live-again",
        "events": [],
        "next": 0,
        "more": True,
        "recorded": False,
        "restarted": True,
        "attempt": "",
    }
    # Its result recorded, the worker drops the stream: the page is the replay again.
    live.discard(arena.r, "m-live-again")
    assert arena.get("/api/live/m-live-again")[0] == 404


def test_leaderboard_reloads_itself_only_while_a_ladder_runs(arena: Arena) -> None:
    reg = Registry(arena.r)
    sched = Scheduler(arena.r, reg, Ratings(arena.r), MatchQueue(arena.r))
    ladder = arena.ladders["pilotta"]
    refresh = '<meta http-equiv="refresh" content="15" id="auto-refresh">'
    assert refresh not in arena.get("/")[1]
    start_ladder(sched, sched.ladder(ladder))
    try:
        assert refresh in arena.get("/")[1]
        assert refresh in arena.get(f"/?ladder={ladder}")[1]
        other = arena.ladders["coinche"]
        assert refresh not in arena.get(f"/?ladder={other}")[1]  # that ladder does not run
    finally:
        stop_ladder(sched, ladder)
    assert refresh not in arena.get("/")[1] and refresh not in arena.get(f"/?ladder={ladder}")[1]
    # Started for 2 matches: running while it has them to schedule; idle once it has scheduled them (as the
    # feeder counts them) and none waits or plays: no reload then.
    start_ladder(sched, sched.ladder(ladder), matches=2)
    try:
        assert refresh in arena.get(f"/?ladder={ladder}")[1]
        arena.r.hincrby(keys.LADDER_RUNS_SCHEDULED, ladder, 2)
        assert refresh not in arena.get(f"/?ladder={ladder}")[1]
    finally:
        stop_ladder(sched, ladder)


def test_the_leaderboard_links_each_match_being_played_to_its_live_page(arena: Arena) -> None:
    from html import escape

    from .conftest import EVIL

    ladder = arena.ladders["pilotta"]
    q = MatchQueue(arena.r)
    playing = MatchSpec("m-playing-now", ladder, "pilotta", 5, (arena.bots["alpha"], arena.bots[EVIL]), deals=2)
    waiting = MatchSpec("m-waiting-now", ladder, "pilotta", 6, (arena.bots["beta"], arena.bots["gamma"]), deals=2)
    assert q.enqueue(playing)
    claimed = q.claim("w-test", block_ms=100)
    assert claimed is not None and claimed.spec.match_id == "m-playing-now"
    assert q.enqueue(waiting)
    try:
        status, body, _ = arena.get(f"/?ladder={ladder}")
        assert status == 200
        # The one a worker plays, named by its bots (one bot a side: shown once), escaped; not the one waiting.
        link = f'<a href="/replay/m-playing-now" data-match="m-playing-now">alpha – {escape(EVIL)}</a>'
        assert link in body and "m-waiting-now" not in body
        other = arena.ladders["coinche"]
        assert "m-playing-now" not in arena.get(f"/?ladder={other}")[1]  # another ladder's page: not there
        # The JSON of the leaderboard says the same.
        board = arena.json(f"/api/leaderboard?ladder={ladder}")
        assert board["playing"] == [{"match_id": "m-playing-now", "bots": ["alpha", EVIL, "alpha", EVIL]}]
    finally:
        q.ack(claimed)
        again = q.claim("w-test", block_ms=100)
        assert again is not None and again.spec.match_id == "m-waiting-now"
        q.ack(again)
