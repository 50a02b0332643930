"""The replay viewer in a real headless Chromium, served by ``arena view`` (``arena.cli.view.serve_view``) for records
of real games: the engine's, and real matches of real gRPC bots on loopback (``referee.match.run_match``).

What the page must show is worked out here from the record and the rules, by hand: the auction grid of a
Pilotta deal where a pass skips a seat, the declarations of a deal with their kinds and points, a forfeited
leg (who, why, who won), the boards of a duplicate match side by side, and no element wider than a phone.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.cli.view import LocalMatch, load_match, serve_view
from referee.cli import play_random_game
from referee.match import MatchSettings, run_match
from referee.record import RecordExtras, dumps, game_to_record
from referee.rules import get_ruleset

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)

REFEREE_BOTS = Path(__file__).resolve().parents[1] / "referee" / "bots"
sys.path.insert(0, str(REFEREE_BOTS))

import testbot  # noqa: E402

SEATS = ("South", "East", "North", "West")
SUIT = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
PLAYERS = ["ann", "bob", "cid", "dan"]


class LateIllegal(testbot.Behaviour):
    """Plays at random, then from its ``after``-th decision on answers a card it may not play."""

    def decide(self, request: Any, context: Any) -> Any:
        if self.decisions >= self.after:
            self.mode = "illegal"
        return super().decide(request, context)


def _engine(tmp: Path, name: str, seed: int, deals: int, ruleset: str = "pilotta") -> Path:
    game = play_random_game(get_ruleset(ruleset, {}), seed, max_deals=deals)
    path = tmp / f"{name}.json"
    path.write_text(dumps(game_to_record(game, RecordExtras(players=PLAYERS, match_id=name))))
    return path


def _match(tmp: Path, name: str, behaviours: list[testbot.Behaviour], **settings: Any) -> Path:
    servers = [testbot.build_server(b) for b in behaviours]
    try:
        base: dict[str, Any] = {"seed": 11, "deadline_ms": 500, "time_bank_ms": 2000, **settings}
        out = run_match([f"127.0.0.1:{port}" for _s, port in servers], MatchSettings(**base), name)
    finally:
        for server, _port in servers:
            server.stop(0).wait(5)
    path = tmp / f"{name}.json"
    path.write_text(dumps(out.record))
    return path


@pytest.fixture(scope="module")
def viewers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, LocalMatch, dict[str, Any]]]]:
    """name -> (viewer URL, the loaded match, the record as written)."""
    tmp = tmp_path_factory.mktemp("viewer")
    files = {
        "auction": _engine(tmp, "auction", 3, 1),
        "facts": _engine(tmp, "facts", 5, 2),
        "french": _engine(tmp, "french", 4, 1, "french"),
        "forfeit": _match(
            tmp,
            "forfeit",
            [testbot.Behaviour("random", seed=3, name="good"), LateIllegal("random", seed=4, after=6, name="late")],
            deals=3,
            max_strikes=3,
        ),
        "duplicate": _match(
            tmp,
            "duplicate",
            [testbot.Behaviour("random", seed=1, name="east"), testbot.Behaviour("random", seed=2, name="west")],
            deals=3,
            duplicate=True,
        ),
    }
    served = []
    out = {}
    try:
        for name, path in files.items():
            match = load_match(path)
            server, thread = serve_view(match)
            served.append((server, thread))
            out[name] = (server.url, match, json.loads(path.read_text()))
        yield out
    finally:
        for server, thread in served:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


_STATE_JS = """
const q = (sel) => Array.from(document.querySelectorAll(sel));
return {
  step: document.getElementById('step').textContent,
  action: document.getElementById('action').textContent,
  grid: q('#auction .calls > span').map((c) => c.textContent),
  contract: document.getElementById('contract').textContent,
  hands: [0, 1, 2, 3].map((s) => q('#hand-' + s + ' .card').map((c) => c.dataset.card || 'back')),
  declarations: q('#declarations > div').map((d) => d.textContent),
  tricks: q('#tricks tr').map((r) => Array.from(r.cells).map((c) => c.textContent)),
  score: q('#score tr').map((r) => Array.from(r.cells).map((c) => c.textContent)),
  notes: document.getElementById('score').textContent,
  dealt: q('#dealt .dealt-hand').map((h) => [h.dataset.seat, Array.from(h.querySelectorAll('.card'))
    .map((c) => c.dataset.card)]),
  dealtShown: !document.getElementById('dealt-section').hidden,
  deal: document.getElementById('deal-select').value,
  table: document.getElementById('table-info').textContent,
  trumps: q('.hand .card.trump').map((c) => c.dataset.card),
};
"""


def _state(driver: Any) -> dict[str, Any]:
    state: dict[str, Any] = driver.execute_script(_STATE_JS)
    return state


def _open(driver: Any, url: str, fragment: str) -> None:
    driver.get("about:blank")  # a new document: the fragment alone would not reload the page
    driver.get(url + fragment)


def _click(driver: Any, element_id: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, element_id).click()


@pytest.mark.timeout(120)
def test_the_auction_grid_places_every_call_under_its_own_seat(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["auction"]
    deal = record["deals"][0]
    # The record (seed 3, deal 1): East deals, so North speaks first; the columns are North, West, South,
    # East. North bids 200♦, West 230♥, South passes (for good, in Pilotta), East bids 240♥, North passes,
    # West bids 250♦; South has passed, so East is next and passes; North and West cannot speak, South
    # doubles (contra) and East redoubles (surcontra). Worked out by hand from those nine calls:
    assert [(a["seat"], a["action"]) for a in deal["actions"][:9]] == [
        (2, "bid 200 D"),
        (3, "bid 230 H"),
        (0, "pass"),
        (1, "bid 240 H"),
        (2, "pass"),
        (3, "bid 250 D"),
        (1, "pass"),
        (0, "contra"),
        (1, "surcontra"),
    ]
    grid = [
        ["North", "West", "South", "East"],
        ["200 ♦", "230 ♥", "pass", "240 ♥"],
        ["pass", "250 ♦", "", "pass"],
        ["", "", "contra", "surcontra"],
    ]
    _open(driver, url, "#0.0.8")
    state = _state(driver)
    assert state["contract"] == "Auction in progress"
    assert state["grid"] == [c for row in grid for c in row][: 4 + 11]  # eight calls and the skipped cells
    _click(driver, "next")  # the last call
    state = _state(driver)
    assert state["step"] == f"Step 9 / {len(deal['actions'])}"
    assert state["grid"] == [c for row in grid for c in row]
    assert state["contract"] == "Contract: 250 ♦ by West (dan) · surcontra"
    # Hands, now that diamonds are trump: trump first (J 9 A 10 K Q 8 7), then spades, hearts, clubs in the
    # plain order (A 10 K Q J 9 8 7); North's hand from the record, sorted by hand:
    assert sorted(deal["hands"][2]) == sorted(["9D", "8D", "AS", "TS", "KS", "7S", "JC", "7C"])
    assert state["hands"][2] == ["9D", "8D", "AS", "TS", "KS", "7S", "JC", "7C"]
    assert state["table"] == "trump ♦"
    assert sorted(state["trumps"]) == sorted(c for h in deal["hands"] for c in h if c[1] == "D")
    _click(driver, "last")
    state = _state(driver)
    assert "Auction in progress" not in state["contract"]
    assert state["dealtShown"] and [s for s, _cards in state["dealt"]] == ["0", "1", "2", "3"]
    assert state["dealt"][2][1] == ["9D", "8D", "AS", "TS", "KS", "7S", "JC", "7C"]
    no_errors(driver)

    # French Belote (seed 4): East deals and turns up the 8♦; North passes and West takes diamonds. Before the
    # auction every seat holds five cards; after it, eight (the taker has the turned card).
    url, _m, record = viewers["french"]
    deal = record["deals"][0]
    assert (deal["dealer"], deal["turned_card"]) == (1, "8D")
    assert [(a["seat"], a["action"]) for a in deal["actions"][:2]] == [(2, "pass"), (3, "bid D")]
    _open(driver, url, "#0.0.0")
    state = _state(driver)
    assert state["table"] == "turned up 8♦" and [len(h) for h in state["hands"]] == [5, 5, 5, 5]
    assert "turned up 8♦" in state["action"]
    _click(driver, "next")
    _click(driver, "next")
    state = _state(driver)
    assert state["grid"] == ["North", "West", "South", "East", "pass", "takes ♦"]
    assert state["contract"] == "Contract: West (dan) takes ♦" and state["action"] == "West (dan): takes ♦"
    assert [len(h) for h in state["hands"]] == [8, 8, 8, 8] and "8D" in state["hands"][3]
    assert state["table"] == "trump ♦"
    no_errors(driver)


@pytest.mark.timeout(120)
def test_declarations_trick_points_and_navigation(viewers: Any, driver: Any) -> None:
    from selenium.webdriver.support.ui import Select, WebDriverWait

    url, _m, record = viewers["facts"]
    deal = record["deals"][1]
    # The record (seed 5, deal 2): 250♠ by North; East announces 10♥-J♥-Q♥, North 7♣-8♣-9♣, West J♠-Q♠-K♠,
    # three tierces (20 each). The first trick settles the contest: the side of the best declaration (West's
    # tierce to the king) counts all of its own, East's too, and North's counts for nothing.
    assert [(d["seat"], d["announced"], d["credited"]) for d in deal["declarations"] if d["announced"]] == [
        (1, ["TH-JH-QH"], ["TH-JH-QH"]),
        (2, ["7C-8C-9C"], []),
        (3, ["JS-QS-KS"], ["JS-QS-KS"]),
    ]
    _open(driver, url, "#0.1.0")
    _click(driver, "next-trick")
    state = _state(driver)
    plays = [i for i, a in enumerate(deal["actions"]) if a["action"].startswith("play ")]
    assert state["step"] == f"Step {plays[3] + 1} / {len(deal['actions'])}"
    assert (
        state["declarations"]
        == [
            "South: no declaration",
            "East: tierce to the Q♥ (20) · credited",
            "North: tierce to the 9♣ (20) · not credited",
            "West: tierce to the K♠ (20) · credited",
        ][-len(state["declarations"]) :]
    )
    assert len(state["tricks"]) == 1
    # Each trick's card points with spades trump (J 20, 9 14, A 11, 10 10, K 4, Q 3), counted by hand for
    # the first trick of the record, and the running points per side.
    first = [deal["actions"][i]["action"].split()[1] for i in plays[:4]]
    values = {"J": 2, "9": 0, "A": 11, "T": 10, "K": 4, "Q": 3, "8": 0, "7": 0}
    trump_values = {**values, "J": 20, "9": 14}
    points = sum((trump_values if c[1] == "S" else values)[c[0]] for c in first)
    assert state["tricks"][0][-1] == str(points)
    # The trick list is a way to move: its third row goes to the end of the third trick.
    _click(driver, "last")
    state = _state(driver)
    assert len(state["tricks"]) == 8 and state["tricks"][7][-1].endswith(" +10")  # the last trick's bonus
    trick_points = [int(row[-1].split()[0]) for row in state["tricks"]]
    assert sum(trick_points) + 10 == 162  # a trump deal's card points: 152 in the cards, 10 for the last trick
    assert state["score"][1] == ["in tricks", *map(str, deal["score"]["card_points"])]
    assert state["dealtShown"] and sorted(state["dealt"][0][1]) == sorted(deal["hands"][0])
    driver.execute_script("document.querySelectorAll('#tricks tr')[2].click()")
    assert _state(driver)["step"] == f"Step {plays[11] + 1} / {len(deal['actions'])}"
    # One seat's view: only North's cards, the others face down; at the end only North's hand as dealt.
    Select(driver.find_element("id", "view-select")).select_by_value("2")
    state = _state(driver)
    assert all(c == "back" for s in (0, 1, 3) for c in state["hands"][s]) and "back" not in state["hands"][2]
    assert [len(h) for h in state["hands"]] == [5, 5, 5, 5]
    _click(driver, "last")
    assert [s for s, _cards in _state(driver)["dealt"]] == ["2"]
    Select(driver.find_element("id", "view-select")).select_by_value("all")
    # By deal, and autoplay.
    _click(driver, "prev-deal")
    assert _state(driver)["deal"] == "0.0" and _state(driver)["step"].startswith("Step 0 /")
    _click(driver, "autoplay")
    # Autoplay moves a step every 700 ms: wait for it to have moved two (or more: a poll of a loaded machine
    # may come after the third step; waiting for exactly "Step 2" raced the timer).
    WebDriverWait(driver, 60).until(lambda d: int(_state(d)["step"].split()[1]) >= 2)
    _click(driver, "autoplay")
    assert driver.find_element("id", "autoplay").text == "Autoplay"
    no_errors(driver)


@pytest.mark.timeout(180)
def test_a_forfeited_leg_says_who_forfeited_why_and_who_won(viewers: Any, driver: Any) -> None:
    url, match, record = viewers["forfeit"]
    leg = record["legs"][0]
    forfeit = leg["result"]["forfeit"]
    assert forfeit["side"] == 1 and record["result"]["winner"] == 0  # "late" (East/West) forfeited
    players = leg["players"]
    assert players == ["good", "late", "good", "late"]
    last = len(leg["deals"]) - 1
    _open(driver, url, f"#0.{last}.0")
    _click(driver, "last")
    result = driver.find_element("id", "leg-result").text
    scores = " – ".join(map(str, leg["result"]["scores"]))
    seat = SEATS[forfeit["seat"]]
    assert (
        result
        == f"{seat} (late) forfeited: bot late exceeded 3 strikes (last: illegal action). good (N/S) win {scores}."
    )
    assert "draw" not in driver.find_element("tag name", "body").text
    assert "won by good" in driver.find_element("id", "match-result").text
    # The referee's interventions: what the bot answered and why it was refused (this local viewer shows them).
    _open(driver, url, "#0.0.0")
    _click(driver, "next-intervention")
    refused = [
        (d, i, a) for d, deal in enumerate(leg["deals"]) for i, a in enumerate(deal["actions"]) if "outcome" in a
    ]
    d, i, a = refused[0]
    state = _state(driver)
    assert state["deal"] == f"0.{d}" and state["step"] == f"Step {i + 1} / {len(leg['deals'][d]['actions'])}"
    assert f" · {a['ms']} ms" in state["action"]
    assert (
        f"the referee played this: the answer was not a legal action; the bot answered “{a['answer']}”"
        in state["action"]
    )
    # The record can be downloaded as it was written.
    href = driver.find_element("id", "download").get_attribute("href")
    with urllib.request.urlopen(href, timeout=10) as resp:
        assert resp.read().decode() == match.text
    no_errors(driver)


def _overflowing(driver: Any) -> list[str]:
    return list(
        driver.execute_script(
            """const w = document.documentElement.clientWidth;
            const out = Array.from(document.querySelectorAll('body *')).filter((e) => {
              const r = e.getBoundingClientRect(); return r.width && (r.right > w + 0.5 || r.left < -0.5); })
              .map((e) => e.tagName + '.' + e.className + '#' + e.id);
            if (document.documentElement.scrollWidth > w) out.push('page: ' + document.documentElement.scrollWidth);
            return out;"""
        )
    )


@pytest.mark.timeout(180)
def test_duplicate_boards_side_by_side_and_at_phone_width(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["duplicate"]
    leg1, leg2 = record["legs"]
    _open(driver, url, "#0.0.0")
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.dup tr.board-row'))"
        ".map((r) => Array.from(r.cells).map((c) => c.textContent));"
    )
    assert len(rows) == len(record["board_results"]) == 3
    for row, board in zip(rows, record["board_results"], strict=True):
        b = board["board"]
        d1, d2 = leg1["deals"][b], leg2["deals"][b]
        # Team 0 ("east") holds side 0 at table 1 and side 1 at table 2 (every bot one seat on).
        t1 = d1["score"]["written"]
        t2 = d2["score"]["written"][::-1]
        margin = t1[0] - t1[1] + t2[0] - t2[1]
        assert margin == board["margin"]
        assert row[0] == str(b + 1)
        assert row[2:4] == [str(t1[0]), str(t1[1])] and row[5:7] == [str(t2[0]), str(t2[1])]
        assert row[7] == (f"+{margin}" if margin > 0 else str(margin))
        for cell, d, players in ((row[1], d1, leg1["players"]), (row[4], d2, leg2["players"])):
            c = d["contract"]
            assert cell == (
                "thrown in"
                if c is None
                else f"{c['value']} {SUIT.get(c['strain'], c['strain'])} {players[c['bidder']]}"
            )
    heads = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.dup th')).map((c) => c.textContent);"
    )
    assert heads == ["Board", "Table 1", "east", "west", "Table 2", "east", "west", "Margin"]
    driver.execute_script("document.querySelectorAll('table.dup tr.board-row')[1].cells[1].click()")
    assert _state(driver)["deal"] == "0.1"
    driver.execute_script("document.querySelectorAll('table.dup tr.board-row')[2].cells[5].click()")
    assert _state(driver)["deal"] == "1.2"
    no_errors(driver)

    # A phone, 420 px wide: nothing is cut off or wider than the screen, mid-deal and at its end.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        plays = [i for i, a in enumerate(leg1["deals"][0]["actions"]) if a["action"].startswith("play ")]
        _open(driver, url, f"#0.0.{plays[13] + 1}")
        assert driver.execute_script("return document.documentElement.clientWidth") == 420
        assert _overflowing(driver) == []
        _click(driver, "last")
        assert _state(driver)["dealtShown"]
        assert _overflowing(driver) == []
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    no_errors(driver)
