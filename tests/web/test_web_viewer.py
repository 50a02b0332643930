"""The replay viewer in a real headless Chromium, served by ``arena view`` (``arena.cli.view.serve_view``) for records
of real games: the engine's, and real matches of real gRPC bots on loopback (``referee.match.run_match``).

What the page must show is worked out here from the record and the rules, by hand: the auction grid of a
Pilotta deal where a pass skips a seat, the declarations of a deal with their kinds and points, a forfeited
leg (who, why, who won), the boards of a duplicate match side by side, and no element wider than a phone.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from arena.cli.view import LocalMatch

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)
from .viewer_helpers import (
    SEATS,
    SUIT,
    LateIllegal,
    click,
    engine_record,
    match_record,
    open_at,
    overflowing,
    page_state,
    served,
    testbot,
)


@pytest.fixture(scope="module")
def viewers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, LocalMatch, dict[str, Any]]]]:
    """name -> (viewer URL, the loaded match, the record as written)."""
    tmp = tmp_path_factory.mktemp("viewer")
    files = {
        "auction": engine_record(tmp, "auction", 3, 1),
        "facts": engine_record(tmp, "facts", 5, 2),
        "french": engine_record(tmp, "french", 4, 1, "french"),
        "forfeit": match_record(
            tmp,
            "forfeit",
            [testbot.Behaviour("random", seed=3, name="good"), LateIllegal("random", seed=4, after=6, name="late")],
            deals=3,
            max_strikes=3,
        ),
        "duplicate": match_record(
            tmp,
            "duplicate",
            [testbot.Behaviour("random", seed=1, name="east"), testbot.Behaviour("random", seed=2, name="west")],
            deals=3,
            duplicate=True,
        ),
    }
    with served(files) as out:
        yield out


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
    open_at(driver, url, "#1.1.8")
    state = page_state(driver)
    assert state["contract"] == "Auction in progress"
    assert state["grid"] == [c for row in grid for c in row][: 4 + 11]  # eight calls and the skipped cells
    click(driver, "next")  # the last call
    state = page_state(driver)
    assert state["step"] == f"Step 9 / {len(deal['actions'])}"
    assert state["grid"] == [c for row in grid for c in row]
    assert state["contract"] == "Contract: 250 ♦ by West (dan) · surcontra"
    # Hands, now that diamonds are trump: trump first (J 9 A 10 K Q 8 7), then spades, hearts, clubs in the
    # plain order (A 10 K Q J 9 8 7); North's hand from the record, sorted by hand:
    assert sorted(deal["hands"][2]) == sorted(["9D", "8D", "AS", "TS", "KS", "7S", "JC", "7C"])
    assert state["hands"][2] == ["9D", "8D", "AS", "TS", "KS", "7S", "JC", "7C"]
    # The trump is named above the table with the contract, not on the felt among the cards.
    assert state["table"] == "" and state["trump"] == "Trump: ♦ · 250 ♦ by West (dan) · surcontra"
    assert sorted(state["trumps"]) == sorted(c for h in deal["hands"] for c in h if c[1] == "D")
    click(driver, "last")
    state = page_state(driver)
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
    open_at(driver, url, "#1.1.0")
    state = page_state(driver)
    assert state["table"] == "turned up 8♦" and [len(h) for h in state["hands"]] == [5, 5, 5, 5]
    assert "turned up 8♦" in state["action"]
    click(driver, "next")
    click(driver, "next")
    state = page_state(driver)
    assert state["grid"] == ["North", "West", "South", "East", "pass", "takes ♦"]
    assert state["contract"] == "Contract: West (dan) takes ♦" and state["action"] == "West (dan): takes ♦"
    assert [len(h) for h in state["hands"]] == [8, 8, 8, 8] and "8D" in state["hands"][3]
    assert state["table"] == "" and state["trump"] == "Trump: ♦ · West (dan) takes ♦"
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
    open_at(driver, url, "#1.2.0")
    click(driver, "next-trick")
    state = page_state(driver)
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
    click(driver, "last")
    state = page_state(driver)
    assert len(state["tricks"]) == 8 and state["tricks"][7][-1].endswith(" +10")  # the last trick's bonus
    trick_points = [int(row[-1].split()[0]) for row in state["tricks"]]
    assert sum(trick_points) + 10 == 162  # a trump deal's card points: 152 in the cards, 10 for the last trick
    assert state["score"][1] == ["in tricks", *map(str, deal["score"]["card_points"])]
    assert state["dealtShown"] and sorted(state["dealt"][0][1]) == sorted(deal["hands"][0])
    driver.execute_script("document.querySelectorAll('#tricks tr')[2].click()")
    assert page_state(driver)["step"] == f"Step {plays[11] + 1} / {len(deal['actions'])}"
    # One seat's view: North's cards, and of the others only the cards of the declarations the first trick
    # showed to every seat (East's and West's tierces, credited; not North's own lost one, which it sees
    # anyway), face up before the hidden ones; at the end only North's hand as dealt.
    Select(driver.find_element("id", "view-select")).select_by_value("2")
    state = page_state(driver)
    played = {deal["actions"][i]["action"].split()[1] for i in plays[:12]}
    shown = {1: {"TH", "JH", "QH"} - played, 3: {"JS", "QS", "KS"} - played, 0: set()}
    for s, cards in shown.items():
        hand = state["hands"][s]
        assert set(hand[: len(cards)]) == cards and hand[len(cards) :] == ["back"] * (5 - len(cards)), (s, hand)
    assert "back" not in state["hands"][2]
    assert [len(h) for h in state["hands"]] == [5, 5, 5, 5]
    click(driver, "last")
    assert [s for s, _cards in page_state(driver)["dealt"]] == ["2"]
    Select(driver.find_element("id", "view-select")).select_by_value("all")
    # By deal, and autoplay.
    click(driver, "prev-deal")
    assert page_state(driver)["deal"] == "1.1" and page_state(driver)["step"].startswith("Step 0 /")
    click(driver, "autoplay")
    # Autoplay moves a step every 700 ms: wait for it to have moved two (or more: a poll of a loaded machine
    # may come after the third step; waiting for exactly "Step 2" raced the timer).
    WebDriverWait(driver, 60).until(lambda d: int(page_state(d)["step"].split()[1]) >= 2)
    click(driver, "autoplay")
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
    open_at(driver, url, f"#1.{last + 1}.0")
    click(driver, "last")
    result = driver.find_element("id", "leg-result").text
    scores = " – ".join(map(str, leg["result"]["scores"]))
    seat = SEATS[forfeit["seat"]]
    assert (
        result
        == f"{seat} (late) forfeited: bot late exceeded 3 strikes (last: illegal action). good (N/S) win by forfeit"
        f" (the points stood at {scores} when play stopped)."
    )
    assert "draw" not in driver.find_element("tag name", "body").text
    assert "won by good" in driver.find_element("id", "match-result").text
    # The referee's interventions: what the bot answered and why it was refused (this local viewer shows them).
    open_at(driver, url, "#1.1.0")
    click(driver, "next-intervention")
    refused = [
        (d, i, a) for d, deal in enumerate(leg["deals"]) for i, a in enumerate(deal["actions"]) if "outcome" in a
    ]
    d, i, a = refused[0]
    state = page_state(driver)
    assert state["deal"] == f"1.{d + 1}" and state["step"] == f"Step {i + 1} / {len(leg['deals'][d]['actions'])}"
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


@pytest.mark.timeout(180)
def test_duplicate_boards_side_by_side_and_at_phone_width(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["duplicate"]
    leg1, leg2 = record["legs"]
    open_at(driver, url, "#1.1.0")
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
        assert row[3:5] == [str(t1[0]), str(t1[1])] and row[7:9] == [str(t2[0]), str(t2[1])]
        assert row[9] == (f"+{margin}" if margin > 0 else str(margin))
        for cells, d, players in ((row[1:3], d1, leg1["players"]), (row[5:7], d2, leg2["players"])):
            c = d["contract"]
            # The contract with its multiplier (contra x2, surcontra x4: the record's contract.multiplier), then
            # the declarer's seat and bot.
            mult = {1: "", 2: " ×2", 4: " ×4"}[c["multiplier"]] if c else ""
            assert cells == (
                ["thrown in", "—"]
                if c is None
                else [
                    f"{c['value']} {SUIT.get(c['strain'], c['strain'])}{mult}",
                    f"{SEATS[c['bidder']]} · {players[c['bidder']]}",
                ]
            )
    heads = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.dup th')).map((c) => c.textContent);"
    )
    assert heads == [
        "Board",
        "Table 1",
        "Declarer",
        "east",
        "west",
        "Table 2",
        "Declarer",
        "east",
        "west",
        "Margin",
        "How",
    ]
    driver.execute_script("document.querySelectorAll('table.dup tr.board-row')[1].cells[1].click()")
    assert page_state(driver)["deal"] == "1.2"
    driver.execute_script("document.querySelectorAll('table.dup tr.board-row')[2].cells[5].click()")
    assert page_state(driver)["deal"] == "2.3"
    no_errors(driver)

    # A phone, 420 px wide: nothing is cut off or wider than the screen, mid-deal and at its end.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        plays = [i for i, a in enumerate(leg1["deals"][0]["actions"]) if a["action"].startswith("play ")]
        open_at(driver, url, f"#1.1.{plays[13] + 1}")
        assert driver.execute_script("return document.documentElement.clientWidth") == 420
        assert overflowing(driver) == []
        click(driver, "last")
        assert page_state(driver)["dealtShown"]
        assert overflowing(driver) == []
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    no_errors(driver)
