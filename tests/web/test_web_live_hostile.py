"""A hostile review of a match watched live over HTTP (``/api/live/MATCH_ID?since=N``, ``/replay/MATCH_ID``):
odd cursors, match ids with path tricks, a match recorded while its stream is still there, an attempt that
failed and one played again, the bounds of a reply and of a whole read, the page's CSP and its script's
sinks, and a registered name carrying markup shown in a real Chromium. The real server (tests/web/conftest.py),
the real publisher (arena.play.live), a real Redis."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from arena.model import MatchSpec
from arena.play import live
from arena.play.live import LIVE_MAX_EVENTS
from arena.store import keys
from arena.views.live import LIVE_PAGE
from referee.match import DecisionEvent

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)
from .conftest import EVIL, Arena

SAYS = "since must be a whole number from 0 to 5000, not "


def _spec(match_id: str, duplicate: bool = False) -> MatchSpec:
    return MatchSpec(match_id, "lad", "pilotta", 3, ("a", "b"), deals=2, duplicate=duplicate)


def _calls(feed: live.LivePublisher, n: int, first: int = 0) -> None:
    for i in range(first, first + n):
        feed.on_event(DecisionEvent(0, 0, i % 4, "x", "auction", "pass", "ok", 1.0))


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("%C2%B2", "'²'"),  # a superscript two: str.isdigit() says yes, int() refuses it
        ("%D9%A1%D9%A2", "'١٢'"),  # Arabic-Indic twelve: no whole number as the API writes them
        ("%2B5", "'+5'"),
        ("%205", "' 5'"),
        ("5%20", "'5 '"),
        ("1e3", "'1e3'"),
        ("%EF%BC%95", "'５'"),  # a full-width five
    ],
)
def test_a_cursor_in_other_digits_or_signs_is_refused_by_name(arena: Arena, raw: str, shown: str) -> None:
    live.start(arena.r, _spec("m-hostile-cursor"), [["a", "b", "c", "d"]])
    status, body, _ = arena.get(f"/api/live/m-hostile-cursor?since={raw}")
    assert (status, json.loads(body)["error"]) == (400, SAYS + shown)


def test_a_repeated_cursor_the_last_one_counts(arena: Arena) -> None:
    feed = live.start(arena.r, _spec("m-hostile-repeat"), [["a", "b", "c", "d"]])
    _calls(feed, 4)  # the start and 3 calls written (the 4th held)
    assert arena.json("/api/live/m-hostile-repeat?since=x&since=3")["next"] == 4
    status, body, _ = arena.get("/api/live/m-hostile-repeat?since=3&since=x")
    assert (status, json.loads(body)["error"]) == (400, SAYS + "'x'")


@pytest.mark.parametrize(
    "path",
    [
        "/api/live/",
        "/api/live/m-hostile-ids/extra",
        "/api/live/..%2Fm-hostile-ids",
        "/api/live/m-hostile-ids%00",
        "/api/live/m-hostile-ids%0A",
        "/api/live/%2A",
        "/api/live/m-hostile-*",
    ],
)
def test_match_ids_with_path_tricks_find_nothing(arena: Arena, path: str) -> None:
    live.start(arena.r, _spec("m-hostile-ids"), [["a", "b", "c", "d"]])
    status, _body, _ = arena.get(path)
    assert status == 404, path


def test_a_recorded_match_whose_stream_is_still_there_shows_its_replay_and_no_event(arena: Arena) -> None:
    recorded = next(iter(arena.results))
    feed = live.start(arena.r, _spec(recorded), [["a", "b", "c", "d"]])  # the worker has not dropped it yet
    _calls(feed, 6)
    page = arena.json(f"/api/live/{recorded}")
    assert page == {
        "match_id": recorded,
        "events": [],
        "next": 0,
        "more": False,
        "recorded": True,
        "restarted": False,
        "attempt": "",
    }
    status, body, _ = arena.get(f"/replay/{recorded}")
    assert status == 200 and 'id="replay-data"' in body and 'id="live-data"' not in body
    live.discard(arena.r, recorded)


def test_a_failed_attempts_events_cannot_be_read_once_discarded(arena: Arena) -> None:
    feed = live.start(arena.r, _spec("m-hostile-failed"), [["a", "b", "c", "d"]])
    _calls(feed, 10)
    assert len(arena.json("/api/live/m-hostile-failed")["events"]) == 10
    live.discard(arena.r, "m-hostile-failed")  # the worker, once the attempt failed
    for path in ("/api/live/m-hostile-failed", "/api/live/m-hostile-failed?since=3", "/replay/m-hostile-failed"):
        assert arena.get(path)[0] == 404, path
    # Played again: only the new attempt's start is there, nothing of the first.
    live.start(arena.r, _spec("m-hostile-failed"), [["e", "f", "g", "h"]])
    page = arena.json("/api/live/m-hostile-failed")
    assert page["events"] == [
        {"kind": "start", "ruleset": "pilotta", "duplicate": False, "players": [["e", "f", "g", "h"]]}
    ]


def test_a_restart_is_seen_even_once_the_new_attempt_has_caught_up_with_the_cursor(arena: Arena) -> None:
    feed = live.start(arena.r, _spec("m-hostile-restart"), [["a", "b", "c", "d"]])
    _calls(feed, 6)  # 6 entries written: the start, 5 calls
    first = arena.json("/api/live/m-hostile-restart")
    assert first["next"] == 6 and re.fullmatch("[0-9a-f]{16}", first["attempt"])
    mark = first["attempt"]
    assert arena.json(f"/api/live/m-hostile-restart?since=6&attempt={mark}")["restarted"] is False
    # The worker died; another plays it again and writes 9 entries before the watcher asks again: with a cursor
    # within the new attempt's length, its mark says it is another attempt.
    again = live.start(arena.r, _spec("m-hostile-restart"), [["a", "b", "c", "d"]])
    _calls(again, 9)
    page = arena.json(f"/api/live/m-hostile-restart?since=6&attempt={mark}")
    assert page | {"attempt": ""} == {
        "match_id": "m-hostile-restart",
        "events": [],
        "next": 0,
        "more": True,
        "recorded": False,
        "restarted": True,
        "attempt": "",
    }
    # Read again from 0 (no mark: whichever attempt is there): the new attempt, under its own mark.
    fresh = arena.json("/api/live/m-hostile-restart")
    assert fresh["next"] == 9 and fresh["attempt"] not in ("", mark) and fresh["events"][0]["kind"] == "start"
    for bad in ("x", "ABCDEF0123456789", "0" * 17, "%D9%A1" * 16):
        status, body, _ = arena.get(f"/api/live/m-hostile-restart?attempt={bad}")
        assert status == 400 and json.loads(body)["error"].startswith(
            "attempt must be the 16 hex digits a reply gave, not "
        ), bad


def test_replies_and_a_whole_read_are_bounded(arena: Arena) -> None:
    # A stream at its cap: 5000 entries (the start, then 4999 of 5001 calls: the rest dropped, one held).
    feed = live.start(arena.r, _spec("m-hostile-full"), [[EVIL, EVIL, EVIL, EVIL]])
    _calls(feed, LIVE_MAX_EVENTS + 1)
    assert arena.r.xlen(keys.live("m-hostile-full")) == LIVE_MAX_EVENTS
    since, requests, biggest = 0, 0, 0
    while True:
        status, body, _ = arena.get(f"/api/live/m-hostile-full?since={since}")
        assert status == 200
        page = json.loads(body)
        requests += 1
        biggest = max(biggest, len(body))
        assert len(page["events"]) <= LIVE_PAGE
        since = page["next"]
        if not page["more"]:
            break
        assert requests < 100
    # 5000 entries, 200 a reply: 25 replies; each about 200 short events (a pass is ~60 bytes).
    assert (since, requests) == (LIVE_MAX_EVENTS, LIVE_MAX_EVENTS // LIVE_PAGE)
    assert biggest < 32_000, biggest
    assert arena.json(f"/api/live/m-hostile-full?since={LIVE_MAX_EVENTS}")["events"] == []


def test_the_live_page_is_under_a_strict_csp_and_its_scripts_insert_no_html(arena: Arena) -> None:
    live.start(arena.r, _spec("m-hostile-csp"), [[EVIL, "b", "c", "d"]])
    status, body, headers = arena.get("/replay/m-hostile-csp")
    assert status == 200
    csp = dict(
        [*d.split(" ", 1), ""][:2] for d in (x.strip() for x in headers["Content-Security-Policy"].split(";")) if d
    )
    script_src = csp.get("script-src", csp.get("default-src", ""))
    assert "'self'" in script_src and "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    assert EVIL not in body  # the names come with the events, never in the page's HTML
    # Inline scripts: only the JSON data block (a CSP without 'unsafe-inline' would not run another anyway).
    inline = re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>", body)
    assert inline == [' id="live-data" type="application/json"']
    for name in ("live.js", "replay_deal.js"):
        status, js, _ = arena.get(f"/static/{name}")
        assert status == 200
        code = re.sub(r"//[^\n]*", "", js)  # (their comments say "never innerHTML")
        sinks = re.findall(r"\.(?:inner|outer)HTML\b|insertAdjacentHTML|document\.write|\beval\(|new Function", code)
        assert sinks == [], (name, sinks)


@pytest.mark.timeout(120)
def test_a_registered_name_with_markup_is_shown_as_text_in_chromium(arena: Arena, driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from arena.bots.registry import Registry
    from arena.model import ValidationError

    # The real registry refuses a name with markup; the page must not rely on it (older data, direct writes):
    # the names go into the stream as the runner would write them.
    pwn = "<img src=x onerror=\"document.title='pwned'\">"
    with pytest.raises(ValidationError, match="invalid bot name"):
        Registry(arena.r).register(pwn, owner="mallory", endpoint="127.0.0.1:50053")
    names = [pwn, EVIL, pwn, EVIL]
    feed = live.start(arena.r, _spec("m-hostile-xss"), [names])
    for seat, code in enumerate(["bid 80 H", "pass", "pass", "pass"]):
        feed.on_event(DecisionEvent(0, 0, seat, names[seat], "auction", code, "ok", 1.0))
    feed.on_event(DecisionEvent(0, 0, 0, names[0], "play", "play 7H", "ok", 1.0))
    driver.get(arena.url + "/replay/m-hostile-xss")
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "live-status").text == "Live: 5 events so far.")
    heading = driver.find_element(By.CSS_SELECTOR, "#live h2").text
    assert heading == ", ".join(f"{s} ({n})" for s, n in zip(("South", "East", "North", "West"), names, strict=True))
    assert driver.find_elements(By.CSS_SELECTOR, "#live img, #live script") == []
    assert driver.title != "pwned"
    no_errors(driver)


@pytest.mark.timeout(120)
def test_a_page_following_a_match_played_again_starts_over_in_chromium(arena: Arena, driver: Any) -> None:
    """The first attempt's page, then a new attempt that has written more events than the page's cursor before
    its next poll: the page shows the new attempt alone (its seating, its calls), not a mix of the two."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    first = live.start(arena.r, _spec("m-hostile-again"), [["a1", "a2", "a3", "a4"]])
    _calls(first, 6)
    driver.get(arena.url + "/replay/m-hostile-again")
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "live-status").text == "Live: 6 events so far.")
    again = live.start(arena.r, _spec("m-hostile-again"), [["b1", "b2", "b3", "b4"]])
    for seat, code in enumerate(["bid 80 S", "pass", "pass", "pass", "play 7S", "play 8S", "play 9S", "play TS"]):
        again.on_event(DecisionEvent(0, 0, seat % 4, "x", "auction", code, "ok", 1.0))
    again.on_event(DecisionEvent(0, 0, 0, "x", "play", "play AS", "ok", 1.0))
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "live-status").text == "Live: 9 events so far.")
    assert driver.find_element(By.CSS_SELECTOR, "#live h2").text == "South (b1), East (b2), North (b3), West (b4)"
    auction = driver.find_element(By.CSS_SELECTOR, ".live-auction").text
    assert auction == "Auction: South 80 ♠ · East pass · North pass · West pass", auction
    script = "return Array.from(document.querySelectorAll('#live [data-card]'), e => e.getAttribute('data-card'));"
    played = list(driver.execute_script(script))  # in one script: the page may redraw between two calls
    assert played == ["7S", "8S", "9S", "TS"]
    no_errors(driver)
