"""The pages in a real headless Chromium (through chromedriver and selenium): they render without script
errors, and the replay viewer, clicked step by step, shows what the game record says.

Chromium, chromedriver or selenium missing: skipped with the reason, except under CI=true, where it fails
(CI installs them; a silent skip there would hide a broken browser test).  Every wait is bounded: the
page-load and script timeouts of the driver, and the test's own timeout.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)
from .conftest import EVIL, Arena

SEATS = ("South", "East", "North", "West")
SUIT = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
STRAIN = {**SUIT, "NT": "no trump", "AT": "all trump"}


@pytest.mark.timeout(120)
def test_pages_render_in_chromium_without_errors(arena: Arena, driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    driver.get(arena.url + "/")
    assert "Leaderboard" in driver.title
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.plot g.series path")) >= 4
    links = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "table.board a")]
    assert EVIL in links, "a hostile name shows as text"
    with pytest.raises(NoAlertPresentException):
        _ = driver.switch_to.alert.text
    no_errors(driver)

    driver.get(arena.url + "/matches")
    assert len(driver.find_elements(By.CSS_SELECTOR, "table.matches tbody tr")) == len(arena.results)
    no_errors(driver)

    driver.get(arena.url + "/bots/alpha")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Bot alpha"
    assert driver.find_element(By.CSS_SELECTOR, '[data-stat="contracts_bid"]').text.isdigit()
    no_errors(driver)

    driver.get(arena.url + "/bots/nobody")
    assert driver.find_element(By.ID, "error").text == "There is no bot named “nobody”."
    driver.get_log("browser")  # drop the (expected) 404 from the log read by the next test


# What the viewer must show after the first k actions of a deal, worked out here from the record alone.
def _expected(deal: dict[str, Any], k: int) -> dict[str, Any]:
    hands = [list(h) for h in deal["hands"]]
    plays: list[tuple[int, str]] = []
    auction: list[str] = []
    for a in deal["actions"][:k]:
        code = a["action"]
        if code.startswith("play "):
            card = code.split()[1]
            hands[a["seat"]].remove(card)
            plays.append((a["seat"], card))
        elif not code.startswith("declare ") and not plays:
            auction.append(code)
    n = len(plays)
    trick = plays[(n - 1) // 4 * 4 :] if n else []
    return {"hands": hands, "trick": [c for _s, c in trick], "auction": auction, "tricks": n // 4}


_STATE_JS = """
const q = (sel) => Array.from(document.querySelectorAll(sel));
return {
  step: document.getElementById('step').textContent,
  action: document.getElementById('action').textContent,
  hands: [0, 1, 2, 3].map((s) => q('#hand-' + s + ' .card').map((c) => c.dataset.card)),
  trick: q('#trick .card').map((c) => c.dataset.card),
  auction: q('#auction .calls span:not(.hd)').map((c) => c.textContent).filter((t) => t),
  tricks: q('#tricks tr').length,
  contract: document.getElementById('contract').textContent,
  score: document.getElementById('score').textContent,
};
"""


def _cards(hands: list[list[str]]) -> list[list[str]]:
    return [sorted(h) for h in hands]


def _pretty_card(code: str) -> str:
    return ("10" if code[0] == "T" else code[0]) + SUIT[code[1]]


@pytest.mark.timeout(180)
def test_replay_viewer_steps_through_a_deal_as_the_record_says(
    arena: Arena, driver: Any, tmp_path: Path, screenshots_dir: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    mid = "m-web-00"  # a duplicate pair: two legs
    record = arena.records[mid]
    leg = record["legs"][0]
    deal = next(d for d in leg["deals"] if not d["thrown_in"])
    driver.get(f"{arena.url}/replay/{mid}#1.{deal['number'] + 1}.0")  # leg and deal from 1
    n = len(deal["actions"])
    state = driver.execute_script(_STATE_JS)
    assert state["step"] == f"Step 0 / {n}"
    assert [len(h) for h in state["hands"]] == [8, 8, 8, 8]
    assert _cards(state["hands"]) == _cards(deal["hands"])  # in the viewer's order: trump first
    assert "Press Next" in state["action"]
    players = leg["players"]
    # The screenshot people look at: mid-trick (the 3rd card of the 2nd trick), so it shows a bit of everything.
    shot_at = [i + 1 for i, a in enumerate(deal["actions"]) if a["action"].startswith("play")][6]

    nxt = driver.find_element(By.ID, "next")
    for k in range(1, n + 1):
        nxt.click()
        state = driver.execute_script(_STATE_JS)
        want = _expected(deal, k)
        act = deal["actions"][k - 1]
        assert state["step"] == f"Step {k} / {n}"
        assert _cards(state["hands"]) == _cards(want["hands"]), f"step {k}"
        assert sum(len(h) for h in state["hands"]) == 32 - sum(8 - len(h) for h in want["hands"])
        assert state["trick"] == want["trick"], f"step {k}"
        assert len(state["auction"]) == len(want["auction"])
        assert state["tricks"] == want["tricks"]
        assert state["action"].startswith(f"{SEATS[act['seat']]} ({players[act['seat']]}): ")
        if act["action"].startswith("play "):
            assert _pretty_card(act["action"].split()[1]) in state["action"]
        if "comment" in act:
            assert act["comment"] in state["action"]
        if k == shot_at:
            driver.save_screenshot(str(tmp_path / "replay-mid.png"))
    # The whole auction, the contract and the score as the record states them.
    assert state["auction"] == [_call(c) for c in _expected(deal, n)["auction"]]
    c = deal["contract"]
    assert state["contract"].startswith(f"Contract: {c['value']} {STRAIN[c['strain']]} by {SEATS[c['bidder']]}")
    score = deal["score"]
    for label, key in (("card points", "card_points"), ("written", "written")):
        assert f"{label}{score[key][0]}{score[key][1]}" in state["score"]
    assert f"totals{deal['totals'][0]}{deal['totals'][1]}" in state["score"]
    assert ("contract made" if score["contract_made"] else "contract failed") in state["score"]
    assert driver.find_element(By.ID, "next").get_attribute("disabled") is not None
    no_errors(driver)
    driver.save_screenshot(str(tmp_path / "replay-end.png"))

    driver.find_element(By.ID, "prev").click()
    state = driver.execute_script(_STATE_JS)
    assert state["step"] == f"Step {n - 1} / {n}" and _cards(state["hands"]) == _cards(_expected(deal, n - 1)["hands"])

    # The second leg: same deck, the bots one seat on.
    Select(driver.find_element(By.ID, "deal-select")).select_by_value("2.1")  # leg 2, deal 1
    state = driver.execute_script(_STATE_JS)
    leg2 = record["legs"][1]["deals"][0]
    assert state["step"] == f"Step 0 / {len(leg2['actions'])}" and _cards(state["hands"]) == _cards(leg2["hands"])
    assert driver.find_element(By.ID, "name-0").text.endswith(record["legs"][1]["players"][0])

    shot = tmp_path / "replay-mid.png"
    assert shot.stat().st_size > 10_000
    shutil.copyfile(shot, screenshots_dir / "replay.png")


def _call(code: str) -> str:
    """An auction call as the viewer's auction grid shows it: "bid 90 H" -> "90 ♥"."""
    words = code.split()
    if words[0] != "bid":
        return code
    return " ".join([*words[1:-1], STRAIN[words[-1]]])
