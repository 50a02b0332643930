"""A match watched live in a real headless Chromium: a real worker plays a real match (the real runner, real bot
processes over gRPC) while its page follows it; a bot of ours holds its table still in the fourth trick, so the
page is looked at mid-match, deterministically (no sleep: the test waits on the bot's file and on the page).

During play the page shows the cards played so far (but the last, held until its table goes on) and no other:
checked against the hands of the final record. Once the result is recorded the page turns into the replay, and
every card of every hand is shown.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.store import keys
from tests.arena.arena_testkit import wait_until

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)
from .conftest import Arena

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[1] / "sample_bots"
MATCH = "m-live-chromium"


def _register(reg: Registry, name: str, directory: Path) -> str:
    manifest = json.loads((directory / "manifest.json").read_text())
    bot, _token = reg.register(name, "tests", manifest=manifest, manifest_dir=str(directory))
    return bot.bot_id


def _cards(driver: Any, selector: str) -> list[str]:
    """The cards the page shows now, read in one script: the page redraws itself on every poll, so elements
    found in one call and read in the next may be gone by then (a stale element, not a wrong page)."""
    script = "return Array.from(document.querySelectorAll(arguments[0]), e => e.getAttribute('data-card'));"
    return list(driver.execute_script(script, selector))


@pytest.mark.timeout(400)
def test_a_live_match_shows_no_hidden_card_before_its_end_and_every_card_after(
    arena: Arena, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    gate = tmp_path / "gated"  # the bot's own copy: its "waiting" and "open" files are this test's
    shutil.copytree(HERE / "bots" / "gated", gate)
    reg = Registry(arena.r)
    gated = _register(reg, "gated-live", gate)
    rnd = _register(reg, "random-live", SAMPLES / "random")
    # One played deal at one table; the gated bot in seats 0 and 2 (South, North).
    spec = MatchSpec(MATCH, arena.ladders["pilotta"], "pilotta", 21, (gated, rnd), deals=1, duplicate=False)
    queue = MatchQueue(arena.r)
    assert queue.enqueue(spec)
    # A bank that outlasts the hold: the held decision is an answer in time, not a timeout.
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", time_bank_ms=200_000, startup_timeout_s=60)
    worker = Worker(arena.r, runner, "w-live", block_ms=200)
    errors: list[BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            deadline = time.monotonic() + 300
            while not worker.run_once() and time.monotonic() < deadline:
                pass
        except BaseException as e:
            errors.append(e)
        finally:
            runner.close()
            done.set()

    thread = threading.Thread(target=work, name="live-worker", daemon=True)
    thread.start()
    try:
        wait_until(lambda: (gate / "waiting").exists() or done.is_set(), 180, "the gated bot to hold its table")
        assert not done.is_set(), f"the match ended before the gate: {errors}"
        # The table stands still: its stream holds everything the page will show until the gate opens.
        events = [json.loads(f["e"]) for _id, f in arena.r.xrange(keys.live(MATCH))]
        streamed = [e["action"].split()[1] for e in events if e["kind"] == "action" and e["action"].startswith("play")]
        assert streamed, events
        driver.get(arena.url + "/replay/" + MATCH)
        assert driver.find_element(By.CSS_SELECTOR, ".live-tag").text == "live"
        WebDriverWait(driver, 60).until(lambda d: len(_cards(d, "#live [data-card]")) == len(streamed))
        shown_live = _cards(driver, "[data-card]")  # anywhere on the page
        assert driver.find_elements(By.CSS_SELECTOR, ".hand, #dealt") == []  # no hand anywhere
        names = driver.find_element(By.CSS_SELECTOR, "#live h2").text
        assert "gated-live" in names and "random-live" in names
        assert driver.find_element(By.ID, "live-status").text.startswith("Live: ")
    finally:
        (gate / "open").touch()
    thread.join(300)
    assert not thread.is_alive() and not errors, errors
    assert worker.stats.recorded == 1
    assert not arena.r.exists(keys.live(MATCH))  # dropped once recorded

    result = queue.get_result(MATCH)
    assert result is not None and result.forfeit is None
    deals = json.loads(result.record)["legs"][0]["deals"]
    played_at = next(i for i, d in enumerate(deals) if any(a["action"].startswith("play") for a in d["actions"]))
    deal = deals[played_at]
    plays = [(a["seat"], a["action"].split()[1]) for a in deal["actions"] if a["action"].startswith("play")]
    # The held decision: the first card of the fourth trick by South or North; the card before it is the
    # table's last decision, not yet known to be played when the table stood still: not shown either.
    held = next(i for i, (seat, _c) in enumerate(plays) if i >= 12 and seat in (0, 2))
    expected = [c for _s, c in plays[: held - 1]]
    assert shown_live == expected
    hidden = {c for hand in deal["hands"] for c in hand} - set(expected)
    assert len(hidden) == 32 - len(expected) and not hidden & set(shown_live)

    # The page turns into the replay by itself: every hand of the deal, 32 cards.
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "replay-data"))
    Select(driver.find_element(By.ID, "deal-select")).select_by_value(f"1.{played_at + 1}")
    for seat in range(4):
        assert sorted(_cards(driver, f"#hand-{seat} [data-card]")) == sorted(deal["hands"][seat])
    assert len({c for seat in range(4) for c in _cards(driver, f"#hand-{seat} [data-card]")}) == 32
    no_errors(driver)


def _feed(feed: Any, leg: int, seat_actions: list[tuple[int, str]]) -> None:
    from referee.match import DecisionEvent

    for seat, action in seat_actions:
        feed.on_event(DecisionEvent(leg, 0, seat, "x", "play", action, "ok", 1.0))


@pytest.mark.timeout(120)
def test_a_duplicate_board_appears_in_chromium_once_both_tables_have_played_it(arena: Arena, driver: Any) -> None:
    """The real publisher, stream, API and page, fed a duplicate match's events by hand: board 1 played at table
    1 shows nothing while table 2 still plays it; once table 2 ends it, both tables' cards appear, the winner
    of a trick marked (the seat that leads the next one), a declaration's cards with its deal's score."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from arena.play import live
    from referee.match import DealEvent

    spec = MatchSpec("m-live-dup-page", arena.ladders["pilotta"], "pilotta", 3, ("a", "b"), deals=1)
    feed = live.start(arena.r, spec, [["s1", "e1", "n1", "w1"], ["w1", "s1", "e1", "n1"]])
    calls = [(1, "bid 80 H"), (2, "pass"), (3, "pass"), (0, "pass")]
    # Table 1: North declares and leads; East wins the first trick with the ace (East leads the second).
    table1 = [*calls, (2, "declare 7S-8S-9S"), (2, "play 7S"), (3, "play TS"), (0, "play KS"), (1, "play AS")]
    _feed(feed, 0, [*table1, (1, "play JH"), (2, "play 8H"), (3, "play 9H"), (0, "play QH")])
    feed.on_event(DealEvent(0, 0, (0, 162), (0, 162), False))
    _feed(feed, 1, [*calls, (2, "play 8S")])
    driver.get(arena.url + "/replay/m-live-dup-page")
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "live-status").text == "Live: 1 events so far.")
    assert driver.find_element(By.ID, "live-duplicate").is_displayed()
    assert _cards(driver, "[data-card]") == []  # table 2 still plays board 1: nothing of it at either table
    _feed(feed, 1, [(3, "play 9S"), (0, "play JS"), (1, "play QS")])
    feed.on_event(DealEvent(1, 0, (162, 0), (162, 0), False))
    WebDriverWait(driver, 30).until(lambda d: len(_cards(d, "[data-card]")) == 12)
    assert _cards(driver, '[data-leg="1"] [data-card]') == ["7S", "TS", "KS", "AS", "JH", "8H", "9H", "QH"]
    assert _cards(driver, '[data-leg="2"] [data-card]') == ["8S", "9S", "JS", "QS"]
    assert _cards(driver, '[data-leg="1"] .card.win') == ["AS"]  # East led the next trick
    assert _cards(driver, '[data-leg="2"] .card.win') == []  # its last trick's winner: in the score
    table1_text = driver.find_element(By.CSS_SELECTOR, '[data-leg="1"]').text
    assert "North 7♠-8♠-9♠" in table1_text and "Written 0 – 162" in table1_text
    headings = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#live h2")]
    assert headings == [
        "Table 1: South (s1), East (e1), North (n1), West (w1)",
        "Table 2: South (w1), East (s1), North (e1), West (n1)",
    ]
    # With nothing new, the page is left as it is: two more polls answered, and the heading is still the same
    # element (a redraw on every poll took a reader's text selection away every few seconds).
    polls = "return performance.getEntriesByType('resource').filter(e => e.name.includes('/api/live/')).length;"
    heading, seen = driver.find_element(By.CSS_SELECTOR, "#live h2"), driver.execute_script(polls)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(polls) >= seen + 2)
    assert driver.execute_script("return arguments[0].isConnected;", heading)
    # On a phone, 420 px wide, the page fits (docs/web.md: no page is wider).
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        driver.refresh()
        WebDriverWait(driver, 30).until(lambda d: len(_cards(d, "[data-card]")) == 12)
        assert driver.execute_script("return document.documentElement.scrollWidth") == 420
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    no_errors(driver)
