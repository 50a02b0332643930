"""The replay viewer as a card player reads it, in a real headless Chromium (served by ``arena view``): a forfeit
at both tables of a duplicate match played at once, the trump and the trick's winner marked apart, a 420 px
screen, the duplicate table's multipliers, declarers and arithmetic, a one-seat view where a declaration
becomes public, links to a deal that does not exist, and CPU time in the record's unit.

Records: real engine games and real matches of real gRPC bots on loopback; what the page must say is worked
out by hand from the rules and the record's fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
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
    open_at,
    overflowing,
    page_state,
    served,
    tables_record,
    testbot,
)

LONG = ("east-side-bot-with-a-long-name", "west-side-bot-with-a-long-name")


def _with_cpu(tmp: Path, source: Path, name: str, cpu: list[float]) -> Path:
    """The record at ``source`` with ``cpu_ms`` on its first actions (the rest without: not measured)."""
    record = json.loads(source.read_text())
    actions = record["deals"][0]["actions"]
    for a, ms in zip(actions, cpu, strict=False):
        a["cpu_ms"] = ms
        a["ms"] = 3
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(record))
    return path


@pytest.fixture(scope="module")
def viewers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, LocalMatch, dict[str, Any]]]]:
    tmp = tmp_path_factory.mktemp("viewer-marks")
    b = testbot.Behaviour
    auction = engine_record(tmp, "auction", 3, 1)
    files = {
        "auction": auction,
        "facts": engine_record(tmp, "facts", 5, 2),
        # Both tables at once: "late" answers illegally from its 7th decision at table 1 only, so table 1
        # forfeits and table 2 is stopped by it.
        "tables": tables_record(
            tmp,
            "tables",
            [
                [
                    LateIllegal("random", seed=10 + s, after=6, name="late") if s & 1 else b("random", name="good")
                    for s in range(4)
                ],
                [b("random", seed=20 + s, name="late" if s % 2 == 0 else "good") for s in range(4)],
            ],
            deals=8,
            max_strikes=3,
        ),
        "wide": tables_record(
            tmp,
            "wide",
            [[b("random", seed=10 * leg + s, name=LONG[(s - leg) & 1]) for s in range(4)] for leg in (0, 1)],
            deals=4,
        ),
        "ticks": _with_cpu(tmp, auction, "ticks", [0, 10, 0, 20, 0]),
        "fine": _with_cpu(tmp, auction, "fine", [0.412, 12.5]),
    }
    with served(files) as out:
        yield out


@pytest.mark.timeout(240)
def test_a_forfeit_reads_as_a_forfeit_at_both_tables(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["tables"]
    one, two = record["legs"]
    assert record["result"]["winner"] == 0 and record["result"]["forfeit"]["leg"] == 0  # team 0 ("good") wins
    f = one["result"]["forfeit"]
    assert (f["side"], one["players"][f["seat"]]) == (1, "late") and two["result"]["stopped"]
    # Table 1: the forfeiting leg. "good" holds side 0 (N/S) there and wins by the forfeit.
    open_at(driver, url, f"#1.{len(one['deals'])}.0")
    click(driver, "last")
    text = driver.find_element("id", "leg-result").text
    pts = " – ".join(map(str, one["result"]["scores"]))
    assert text == (
        f"{SEATS[f['seat']]} (late) forfeited: bot late exceeded 3 strikes (last: illegal action). "
        f"good (N/S) win by forfeit (the points stood at {pts} when play stopped)."
    )
    # Table 2: stopped because the match ended at table 1; "good" holds side 1 (E/W) at this table.
    open_at(driver, url, f"#2.{len(two['deals'])}.0")
    click(driver, "last")
    text = driver.find_element("id", "leg-result").text
    pts = " – ".join(map(str, two["result"]["scores"]))
    assert text == (
        f"Stopped: the match ended at the other table (table 1), where {SEATS[f['seat']]} (late) forfeited: bot late"
        f" exceeded 3 strikes (last: illegal action). good (E/W) win the match by forfeit (the points stood at {pts}"
        " when play stopped)."
    )
    body = driver.find_element("tag name", "body").text
    assert "draw" not in body and "win 0 – 0" not in body
    no_errors(driver)


_MARKS_JS = """
const cards = Array.from(document.querySelectorAll('#trick .card'));
const felt = document.querySelector('.felt').getBoundingClientRect();
const info = document.getElementById('trump-info');
return {
  trick: cards.map((c) => ({
    card: c.dataset.card, win: c.classList.contains('win'), trump: c.classList.contains('trump'),
    badge: (c.querySelector('.trump-badge') || {}).textContent || '',
    label: (c.querySelector('.win-label') || {}).textContent || '',
    aria: c.getAttribute('aria-label'), outline: getComputedStyle(c).outlineStyle,
    outlineColor: getComputedStyle(c).outlineColor, border: getComputedStyle(c).borderTopColor})),
  infoBottom: info.getBoundingClientRect().bottom, feltTop: felt.top, info: info.textContent,
  centre: document.getElementById('table-info').textContent,
};
"""


@pytest.mark.timeout(120)
def test_trump_and_the_tricks_winner_are_marked_apart(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["auction"]
    deal = record["deals"][0]
    # Seed 3, deal 1: 250♦ by West, surcontra. Trick 2: East leads the 10♦, North the 9♦, West the 9♣, South
    # the K♦: three trumps; in trump the 9 (14) beats the 10 and the king (J 9 A 10 K Q 8 7), so North wins.
    plays = [i for i, a in enumerate(deal["actions"]) if a["action"].startswith("play ")]
    assert [deal["actions"][i]["action"] for i in plays[4:8]] == ["play TD", "play 9D", "play 9C", "play KD"]
    open_at(driver, url, f"#1.1.{plays[7] + 1}")
    m = driver.execute_script(_MARKS_JS)
    by_card = {c["card"]: c for c in m["trick"]}
    assert sorted(by_card) == ["9C", "9D", "KD", "TD"]
    assert [c for c, x in by_card.items() if x["win"]] == ["9D"]
    assert by_card["9D"]["label"] == "wins" and by_card["9D"]["aria"] == "9♦ (trump) (wins the trick)"
    assert {c for c, x in by_card.items() if x["trump"]} == {"TD", "9D", "KD"}
    assert all(by_card[c]["badge"] == "♦" for c in ("TD", "9D", "KD")) and by_card["9C"]["badge"] == ""
    # The winner's mark is its own: an outline no trump card has, in a colour that is not the trumps' border.
    assert by_card["9D"]["outline"] == "solid" and by_card["TD"]["outline"] == by_card["KD"]["outline"] == "none"
    assert by_card["9D"]["outlineColor"] != by_card["TD"]["border"]
    # The trump is named above the table, not on the felt over North's card.
    assert m["info"] == "Trump: ♦ · 250 ♦ by West (dan) · surcontra" and m["centre"] == ""
    assert m["infoBottom"] <= m["feltTop"]
    no_errors(driver)


@pytest.mark.timeout(120)
def test_the_scores_arithmetic_is_the_records_parts(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["auction"]
    s = record["deals"][0]["score"]
    # 250♦ by West (E/W) surcontra, failed: E/W write 0; N/S the whole deal, 162, and their credited tierce,
    # 20, times 4, no belote: (162 + 20) × 4 = 728.
    assert (s["contract_made"], s["multiplier"], s["declarations"], s["belote"]) == (False, 4, [20, 0], [0, 0])
    assert sum(s["card_points"]) == 162 and s["written"] == [728, 0]
    open_at(driver, url, "#1.1.0")
    click(driver, "last")
    lines = driver.execute_script(
        "return Array.from(document.querySelectorAll('#arithmetic div')).map((d) => d.textContent);"
    )
    assert lines == ["N/S: (162 + 20) × 4 = 728", "E/W: 0 (the contract failed)"]
    no_errors(driver)


@pytest.mark.timeout(240)
def test_duplicate_table_multipliers_declarers_and_sums_at_420_px(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["wide"]
    legs = record["legs"]
    open_at(driver, url, "#1.1.0")
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.dup tr.board-row'))"
        ".map((r) => Array.from(r.cells).map((c) => c.textContent));"
    )
    assert len(rows) == len(record["board_results"])
    seen_mults = set()
    for row, board in zip(rows, record["board_results"], strict=True):
        b = board["board"]
        for t, at in ((0, 1), (1, 5)):
            c = legs[t]["deals"][b]["contract"]
            if c is None:
                assert row[at : at + 2] == ["thrown in", "—"]
                continue
            seen_mults.add(c["multiplier"])
            mult = {1: "", 2: " ×2", 4: " ×4"}[c["multiplier"]]
            assert row[at] == f"{c['value']} {SUIT.get(c['strain'], c['strain'])}{mult}"
            assert row[at + 1] == f"{SEATS[c['bidder']]} · {legs[t]['players'][c['bidder']]}"
    assert seen_mults & {2, 4}, "the record has no contra or surcontra to show"
    # The sums on demand: for each table and team, the record's parts in the rules' form, or the written
    # points alone; each line ends in what the team wrote there.
    sums = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.dup tr.board-row'))"
        ".map((r) => Array.from(r.querySelectorAll('details div')).map((d) => d.textContent));"
    )
    for lines, board in zip(sums, record["board_results"], strict=True):
        want = [(t, team) for t in (0, 1) for team in (0, 1)]  # per table, side 0 then side 1
        assert len(lines) == 4
        for line, (t, side) in zip(lines, want, strict=True):
            team = side ^ t  # team 0 holds side 0 at table 1, side 1 at table 2
            assert line.startswith(f"table {t + 1}, {LONG[team]}: ")
            written = legs[t]["deals"][board["board"]]["score"]["written"][side]
            assert board["points"][t][team] == written
            assert (
                line.endswith(f"= {written}")
                or line.endswith(f": {written} (see the notes)")
                or (written == 0 and line.endswith("0 (the contract failed)"))
            )
    # A phone, 420 px wide: the page is no wider; the duplicate table scrolls inside its own box.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        open_at(driver, url, "#1.1.0")
        click(driver, "last")
        assert driver.execute_script("return document.documentElement.clientWidth") == 420
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 420
        assert overflowing(driver) == []
        box = driver.execute_script(
            "const b = document.querySelector('.dup-box'); return [b.clientWidth, b.scrollWidth];"
        )
        assert box[0] <= 420 < box[1] or box[1] <= box[0]  # it scrolls, or it fits
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    no_errors(driver)


@pytest.mark.timeout(120)
def test_a_partners_declaration_turns_face_up_after_the_first_trick(viewers: Any, driver: Any) -> None:
    from selenium.webdriver.support.ui import Select

    url, _m, record = viewers["facts"]
    deal = record["deals"][1]
    # Seed 5, deal 2: East's tierce TH-JH-QH and West's JS-QS-KS are credited (West's to the king is the best),
    # North's 7C-8C-9C is not. Seen from East's seat: its partner West's tierce is known by kind and points
    # until the first trick, then shown to every seat: its cards face up in West's hand; North's stays hidden.
    assert [(d["seat"], d["credited"]) for d in deal["declarations"] if d["announced"]] == [
        (1, ["TH-JH-QH"]),
        (2, []),
        (3, ["JS-QS-KS"]),
    ]
    plays = [i for i, a in enumerate(deal["actions"]) if a["action"].startswith("play ")]
    open_at(driver, url, f"#1.2.{plays[3]}")  # the first trick's last card not yet played
    Select(driver.find_element("id", "view-select")).select_by_value("1")
    state = page_state(driver)
    assert all(c == "back" for c in state["hands"][3]) and all(c == "back" for c in state["hands"][2])
    assert "West: tierce (20)" in state["declarations"] and "North: tierce (20)" in state["declarations"]
    click(driver, "next")  # the first trick is complete: the contest is settled
    state = page_state(driver)
    played = {deal["actions"][i]["action"].split()[1] for i in plays[:4]}
    west = {"JS", "QS", "KS"} - played
    assert west and set(state["hands"][3][: len(west)]) == west
    assert state["hands"][3][len(west) :] == ["back"] * (len(state["hands"][3]) - len(west))
    assert all(c == "back" for c in state["hands"][2]) and all(c == "back" for c in state["hands"][0])
    assert "West: tierce to the K♠ (20) · credited" in state["declarations"]
    assert "North: tierce (20) · not credited" in state["declarations"]
    Select(driver.find_element("id", "view-select")).select_by_value("all")
    no_errors(driver)


@pytest.mark.timeout(120)
def test_links_count_from_one_and_a_missing_deal_says_so(viewers: Any, driver: Any) -> None:
    url, _m, record = viewers["facts"]
    n2 = len(record["deals"][1]["actions"])
    open_at(driver, url, "#1.2.3")
    state = page_state(driver)
    assert state["deal"] == "1.2" and state["step"] == f"Step 3 / {n2}"
    assert not driver.find_element("id", "link-note").is_displayed()
    assert driver.execute_script("return location.hash") == "#1.2.3"
    open_at(driver, url, "#1.5.0")
    note = driver.find_element("id", "link-note")
    assert note.is_displayed() and note.text == (
        "Leg 1 has no deal 5 (it has 2): the link #1.5.0 points to nothing here. Showing leg 1, deal 1."
    )
    assert page_state(driver)["deal"] == "1.1"
    open_at(driver, url, "#3.1.0")
    assert driver.find_element("id", "link-note").text.startswith("This match has no leg 3 (it has 1)")
    no_errors(driver)


@pytest.mark.timeout(120)
def test_cpu_time_in_the_records_unit(viewers: Any, driver: Any) -> None:
    # Readings in whole 10 ms clock ticks (a bot the referee started, read from /proc): a 0 is less than a
    # tick, and the seat's sum over the deal is given. Actions 1-5: North 0, West 10, South 0, East 20, North 0.
    url, _m, _record = viewers["ticks"]
    open_at(driver, url, "#1.1.5")
    action = page_state(driver)["action"]
    assert action.endswith(" · 3 ms (cpu < 10 ms, in 10 ms ticks; 0 ms over North's 2 decisions of this deal)")
    open_at(driver, url, "#1.1.2")
    assert page_state(driver)["action"].endswith(
        " · 3 ms (cpu 10 ms, in 10 ms ticks; 10 ms over West's 1 decision of this deal)"
    )
    # Readings to the microsecond (a sandboxed bot's cgroup): shown as they are.
    url, _m, _record = viewers["fine"]
    open_at(driver, url, "#1.1.1")
    assert page_state(driver)["action"].endswith(" · 3 ms (cpu 0.41 ms)")
    open_at(driver, url, "#1.1.2")
    assert page_state(driver)["action"].endswith(" · 3 ms (cpu 13 ms)")
    no_errors(driver)
