"""The leaderboard, bot and ladder-list pages over real HTTP (and the σ band in a real headless Chromium),
against a real Redis filled through the real arena modules: results per bot version, forfeits, errors,
the ~95 % range, the head-to-head table, ladders with names, running or stopped, and their queue.

The ladder "main": ace (version 1, then 2), king and queen play four rated duplicate matches of boards;
every expected figure below is worked out by hand from these results.
"""

from __future__ import annotations

import html
import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from arena.bots.registry import Registry
from arena.model import BoardEntry, BotStats, LatencySummary, MatchResult
from arena.play.queue import MatchQueue
from arena.rating.ratings import Ratings
from arena.service import Arena as Service
from arena.store.redis_server import connect
from arena.web import serve_web

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)

pytestmark = pytest.mark.timeout(90)
T0 = 1_700_000_000.0


@dataclass
class Site:
    url: str
    r: redis.Redis
    ids: dict[str, str]
    main: str
    side: str
    queued: str

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            assert resp.status == 200
            return str(resp.read().decode())

    def json(self, path: str) -> Any:
        return json.loads(self.get(path))


def _stats(bid: int, made: int, timeouts: int = 0, illegal: int = 0, latency: float = 4.0) -> BotStats:
    return BotStats(
        deals=4,
        points=100,
        contracts_bid=bid,
        contracts_made=made,
        timeouts=timeouts,
        illegal_actions=illegal,
        latency=LatencySummary.from_samples([latency] * 5),
    )


def _result(
    mid: str,
    ladder: str,
    a: str,
    b: str,
    winner: int | None,
    scores: tuple[float, ...],
    stats: dict[str, BotStats],
    versions: dict[str, int],
    i: int,
    forfeit: str | None = None,
) -> MatchResult:
    return MatchResult(
        match_id=mid,
        ladder=ladder,
        seats=(a, b, a, b),
        winner=winner,
        points=(10, 10),
        deals_played=4,
        stats=stats,
        forfeit=forfeit,
        finished=T0 + 60 * i,
        scale="clipped",
        boards=tuple(BoardEntry((0, 0, 0, 0), s) for s in scores),
        versions=versions,
    )


@pytest.fixture(scope="module")
def site(redis_url: str) -> Iterator[Site]:
    r = connect(redis_url)
    r.flushall()
    service = Service(r)
    admin = service.registry.set_admin_token()
    reg = Registry(r)
    ids, tokens = {}, {}
    for name in ("ace", "king", "queen"):
        bot, tokens[name] = reg.register(name, owner="tests", endpoint="127.0.0.1:50071", games=["pilotta"])
        ids[name] = bot.bot_id
    main = service.start_ladder(admin, "pilotta", deals=2, matches=20, name="main").ladder_id
    side = service.start_ladder(admin, "pilotta", deals=3, name="side").ladder_id
    service.stop_ladder(admin, "side")
    ace, king, queen = ids["ace"], ids["king"], ids["queen"]
    v1 = {ace: 1, king: 1}
    results = [
        # ace v1 beats king: boards +1, +0.5; ace bid 3 contracts, made 2, one timeout.
        _result("m-lb-1", main, ace, king, 0, (1.0, 0.5), {ace: _stats(3, 2, timeouts=1), king: _stats(2, 1)}, v1, 1),
        # ace v1 loses to king by forfeit: board -1; ace bid 1, made 0, 3 timeouts and 1 illegal action.
        _result(
            "m-lb-2",
            main,
            ace,
            king,
            1,
            (-1.0,),
            {ace: _stats(1, 0, timeouts=3, illegal=1), king: _stats(1, 1)},
            v1,
            2,
            forfeit="ace timed out 3 times",
        ),
    ]
    queue, ratings = MatchQueue(r), Ratings(r)
    for res in results:
        assert queue.record_result(res)
    _rate_all(ratings)
    reg.update(ace, tokens["ace"], endpoint="127.0.0.1:50072", games=["pilotta"])  # now version 2
    ace_v2 = {ace: _stats(1, 1, latency=9.0), king: _stats(0, 0)}
    kq = {king: _stats(2, 2), queen: _stats(1, 0)}
    later = [
        # ace v2 draws king: boards +0.5, -0.5; ace bid 1, made 1, latency 9 ms.
        _result("m-lb-3", main, ace, king, None, (0.5, -0.5), ace_v2, {ace: 2, king: 1}, 3),
        # king beats queen: boards +0.25, +0.25.
        _result("m-lb-4", main, king, queen, 0, (0.25, 0.25), kq, {king: 1, queen: 1}, 4),
    ]
    for res in later:
        assert queue.record_result(res)
    _rate_all(ratings)
    queued = service.scheduler.create_match(main, (queen, ace), seed=5).match_id  # one match waiting on main
    server, _thread = serve_web(r, "127.0.0.1", 0)
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}", r, ids, main, side, queued)
    finally:
        server.shutdown()
        server.server_close()
        r.close()


def _rate_all(ratings: Ratings) -> None:
    deadline = time.monotonic() + 30
    while ratings.process("lb-tests", count=100) and time.monotonic() < deadline:
        pass


def _row(page: str, attr: str, value: str) -> str:
    m = re.search(rf'<tr {attr}="{re.escape(value)}">(.*?)</tr>', page, re.S)
    assert m, f"no row {attr}={value}"
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", m.group(1)))).strip()


def test_leaderboard_shows_range_version_and_the_current_versions_statistics(site: Site) -> None:
    page = site.get("/")
    ratings = Ratings(site.r)
    ace = ratings.get(site.main, site.ids["ace"])
    king = ratings.get(site.main, site.ids["king"])
    row = _row(page, "data-bot", "ace")
    # Version 2; its one match: made/bid 1 / 1, p50 9 ms (to a bucket: 9 lies in [8.67, 10.84)), no
    # forfeit, no error; the rating (3 matches: W/L/D 1 / 1 / 1) goes on from version 1.
    rng = f"[{ace.mu - 2 * ace.sigma:.1f}, {ace.mu + 2 * ace.sigma:.1f}]"
    assert f" v2 {ace.conservative:.2f} ± {ace.sigma:.2f} {rng} " in f" {row} "
    assert " 3 1 / 1 / 1 1 / 1 " in row
    assert re.search(r" 1 / 1 (9\.\d|10\.\d) ms 0 0 ", row), row
    king_row = _row(page, "data-bot", "king")
    # king (version 1 all along): 4 matches, won 2 (m2, m4), lost 1, drew 1; made 1+1+0+2 = 4 of 2+1+0+2 = 5.
    assert f" v1 {king.conservative:.2f} " in f" {king_row} " and " 4 2 / 1 / 1 4 / 5 " in king_row
    data = site.json("/api/leaderboard?ladder=main")
    by = {x["name"]: x for x in data["rows"]}
    assert data["name"] == "main" and data["default"] is True
    assert by["ace"]["version"] == 2 and by["ace"]["stats"]["matches"] == 1 and by["ace"]["stats"]["version"] == 2
    assert by["ace"]["low"] == pytest.approx(ace.mu - 2 * ace.sigma)


def test_leaderboard_counts_forfeits_and_errors_of_the_version_that_made_them(site: Site) -> None:
    # ace's forfeit and errors were version 1's: the leaderboard (version 2) shows none; queen lost to king,
    # not by forfeit.
    page = site.get("/")
    assert re.search(r" ms 0 0 \d{4}-", _row(page, "data-bot", "ace")) and re.search(
        r" ms 0 0 \d{4}-", _row(page, "data-bot", "queen")
    )
    data = site.json("/api/bots/ace")
    lad = data["ladders"][0]
    v2, v1 = lad["versions"]
    assert (v2["version"], v2["matches"], v2["won"], v2["lost"], v2["drawn"], v2["forfeits"]) == (2, 1, 0, 0, 1, 0)
    assert (v1["version"], v1["matches"], v1["won"], v1["lost"], v1["drawn"], v1["forfeits"]) == (1, 2, 1, 1, 0, 1)
    assert (v1["timeouts"], v1["illegal_actions"], v1["contracts_bid"], v1["contracts_made"]) == (4, 1, 4, 2)
    assert lad["stats"]["matches"] == 3 and lad["stats"]["forfeits"] == 1  # every version together
    [h2h] = lad["head_to_head"]
    assert (h2h["opponent"], h2h["opponent_name"], h2h["won"], h2h["lost"], h2h["drawn"], h2h["boards"]) == (
        site.ids["king"],
        "king",
        1,
        1,
        1,
        5,
    )
    assert h2h["mean"] == pytest.approx(0.1) and h2h["low"] == pytest.approx(0.1 - 1.96 * (0.675 / 5) ** 0.5)


def test_bot_page_has_versions_and_a_head_to_head_table(site: Site) -> None:
    page = site.get("/bots/ace")
    assert _row(page, "data-version", "2").startswith("v2 current 1 0 / 0 / 1 1 / 1")
    assert _row(page, "data-version", "1").startswith("v1 2 1 / 1 / 0 2 / 4")
    assert " 1 4 1 0" in _row(page, "data-version", "1")  # forfeits 1, timeouts 4, illegal 1, errors 0
    # ace against king: 3 matches, W/L/D 1/1/1, 5 boards: +1, +0.5, -1, +0.5, -0.5.  Mean 0.5 / 5 = +0.100;
    # sample variance (2.75 - 5 * 0.01) / 4 = 0.675, so ± 1.96 * sqrt(0.675 / 5) = ± 0.720: [-0.620, +0.820].
    assert _row(page, "data-opponent", "king") == "king 3 1 / 1 / 1 5 +0.100 [-0.620, +0.820]"
    assert "queen" not in re.sub(r"<h2>Recent matches.*", "", page, flags=re.S)  # ace never met queen alone
    king = site.get("/bots/king")
    assert _row(king, "data-opponent", "ace") == "ace 3 1 / 1 / 1 5 -0.100 [-0.820, +0.620]"
    # king against queen: 2 boards of +0.25, no spread: the interval is the mean.
    assert _row(king, "data-opponent", "queen") == "queen 1 1 / 0 / 0 2 +0.250 [+0.250, +0.250]"
    assert "μ ± 2σ" in page


def test_ladder_list_shows_names_state_and_queue_with_the_main_ladder_first(site: Site) -> None:
    page = site.get("/")
    rows = re.findall(r'<tr data-ladder="([^"]+)">', page)
    assert rows[0] == site.main and site.side in rows  # main first
    main = _row(page, "data-ladder", site.main)
    # main: named, the default, running with its 20 matches still to schedule (the one waiting was made by
    # hand, not by the feeder), 1 waiting, 0 playing, 3 bots (all enrolled at start), 0 scheduled.
    # (The default ladder is tagged "default": a ladder named main read "main main".)
    assert main.startswith(f"main default {site.main} pilotta · 2 deals · duplicate running, 20 more to schedule 1 0 ")
    assert re.search(r" \d+ s 3 0$", main), main
    side = _row(page, "data-ladder", site.side)
    assert side.startswith(f"side {site.side} pilotta · 3 deals · duplicate stopped 0 0 —")
    # The boards follow the same order; a ladder is found by its name.
    assert page.index(f'id="ladder-{site.main}"') < page.index(f'id="ladder-{site.side}"')
    one = site.get("/?ladder=side")
    assert f'id="ladder-{site.side}"' in one and f'id="ladder-{site.main}"' not in one
    assert f'<tr data-ladder="{site.side}">' in one and f'data-ladder="{site.main}"' not in one


def test_every_page_names_the_ladder_by_its_name_and_keeps_the_id_in_urls(site: Site) -> None:
    def text(page: str) -> str:
        return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))

    # The bot page: each ladder it plays on by name.
    bot = site.get("/bots/ace")
    assert "<h2>Ladder main: rank " in bot and f"<h2>Ladder {site.main}" not in bot
    assert site.json("/api/bots/ace")["ladders"][0]["ladder_name"] == "main"
    # The match list: its filter lists ladders by name (the id as the value), its ladder column too; the
    # filter takes the name as well as the id.
    matches = site.get("/matches")
    assert (
        f'<option value="{site.main}">main</option>' in matches
        and f'<option value="{site.side}">side</option>' in matches
    )
    for query in (f"?ladder={site.main}", "?ladder=main"):
        page = site.get("/matches" + query)
        assert "<h1>Matches on ladder main</h1>" in page
        cells = re.findall(rf"<td>(main|{re.escape(site.main)})</td>", page)
        assert cells == ["main"] * 4, page
        assert f'<option value="{site.main}" selected>main</option>' in page
    listed = site.json("/api/matches?ladder=main")["matches"]
    assert [(m["ladder"], m["ladder_name"]) for m in listed] == [(site.main, "main")] * 4
    # The replay's header, and its JSON.
    replay = site.get("/replay/m-lb-1")
    assert "ladder main · " in text(replay) and f"ladder {site.main}" not in text(replay)
    assert site.json("/api/replay/m-lb-1")["ladder_name"] == "main"


@pytest.mark.timeout(120)
def test_sigma_band_on_the_rating_plot_in_chromium(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(site.url + "/bots/ace")
    band = driver.find_element(By.CSS_SELECTOR, "svg.plot path.band")
    mu_line = driver.find_elements(By.CSS_SELECTOR, "svg.plot g.series path")[0]
    b, m = band.rect, mu_line.rect
    assert b["height"] > 5 and b["width"] > 100, b
    # The μ line runs inside the band (μ ± 2σ), from its left end to its right end.
    assert b["y"] - 1 <= m["y"] and m["y"] + m["height"] <= b["y"] + b["height"] + 1, (b, m)
    assert abs(b["x"] - m["x"]) < 2 and abs(b["x"] + b["width"] - (m["x"] + m["width"])) < 2, (b, m)
    # It narrows as σ falls: its height at the last match is less than at the prior.
    heights = driver.execute_script(
        """
        const p = document.querySelector('svg.plot path.band');
        const box = p.getBBox(), pts = [];
        for (const x of [box.x + 1, box.x + box.width - 1]) {
          const ys = [];
          for (let y = box.y; y <= box.y + box.height; y += 0.5) {
            const pt = p.ownerSVGElement.createSVGPoint(); pt.x = x; pt.y = y;
            if (p.isPointInFill(pt)) ys.push(y);
          }
          pts.push(ys.length ? ys[ys.length - 1] - ys[0] : 0);
        }
        return pts;
        """
    )
    assert heights[0] > heights[1] > 0, heights
    no_errors(driver)


@pytest.mark.timeout(120)
def test_no_page_is_wider_than_a_phone(site: Site, driver: Any) -> None:
    # A phone, 420 px wide: each page fits; a wide table scrolls inside its own box, not the page.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        widths = {}
        for path in ("/", "/matches", "/bots/ace", "/replay/m-lb-1", "/batch?ladder=main&anchor=king"):
            driver.get(site.url + path)
            widths[path] = driver.execute_script(
                """const w = document.documentElement.clientWidth;
                const scrolls = (e) => { for (let p = e.parentElement; p; p = p.parentElement)
                  if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true; return false; };
                const out = Array.from(document.querySelectorAll('body *')).filter((e) => {
                  const r = e.getBoundingClientRect(); return r.width && r.right > w + 0.5 && !scrolls(e); })
                  .map((e) => e.tagName + '.' + e.className);
                return [document.documentElement.scrollWidth, out.slice(0, 5)];"""
            )
        assert widths == {path: [420, []] for path in widths}, widths  # page width, elements cut off
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    no_errors(driver)
