"""What the viewer tests share: records of real games (the engine's, and real matches of real gRPC bots on
loopback) written to files, and reading the page's state in Chromium."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena.cli.view import LocalMatch, load_match, serve_view
from referee.cli import play_random_game
from referee.match import MatchSettings, run_match
from referee.record import RecordExtras, dumps, game_to_record
from referee.rules import get_ruleset

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


def engine_record(tmp: Path, name: str, seed: int, deals: int, ruleset: str = "pilotta") -> Path:
    game = play_random_game(get_ruleset(ruleset, {}), seed, max_deals=deals)
    path = tmp / f"{name}.json"
    path.write_text(dumps(game_to_record(game, RecordExtras(players=PLAYERS, match_id=name))))
    return path


def match_record(tmp: Path, name: str, behaviours: list[testbot.Behaviour], **settings: Any) -> Path:
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
  trump: document.getElementById('trump-info').textContent,
  trumps: q('.hand .card.trump').map((c) => c.dataset.card),
};
"""


def page_state(driver: Any) -> dict[str, Any]:
    state: dict[str, Any] = driver.execute_script(_STATE_JS)
    return state


def open_at(driver: Any, url: str, fragment: str) -> None:
    driver.get("about:blank")  # a new document: the fragment alone would not reload the page
    driver.get(url + fragment)


def click(driver: Any, element_id: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, element_id).click()


def overflowing(driver: Any) -> list[str]:
    return list(
        driver.execute_script(
            """const w = document.documentElement.clientWidth;
            // What scrolls inside its own box (a wide table in an overflow-x: auto box) is not cut off.
            const inScrollBox = (e) => {
              for (let p = e.parentElement; p; p = p.parentElement) {
                if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true;
              }
              return false;
            };
            const out = Array.from(document.querySelectorAll('body *')).filter((e) => {
              const r = e.getBoundingClientRect();
              return r.width && (r.right > w + 0.5 || r.left < -0.5) && !inScrollBox(e); })
              .map((e) => e.tagName + '.' + e.className + '#' + e.id);
            if (document.documentElement.scrollWidth > w) out.push('page: ' + document.documentElement.scrollWidth);
            return out;"""
        )
    )


@contextmanager
def served(files: Mapping[str, Path]) -> Iterator[dict[str, tuple[str, LocalMatch, dict[str, Any]]]]:
    """Each record served by ``arena view``'s server: name -> (viewer URL, the loaded match, the record)."""
    servers = []
    out = {}
    try:
        for name, path in files.items():
            match = load_match(path)
            server, thread = serve_view(match)
            servers.append((server, thread))
            out[name] = (server.url, match, json.loads(path.read_text()))
        yield out
    finally:
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def tables_record(tmp: Path, name: str, behaviours: list[list[testbot.Behaviour]], **settings: Any) -> Path:
    """A duplicate match whose two tables are played at the same time, as an arena worker plays them: one
    server per seat per table (``behaviours[leg][seat]``, the bot of side ``(seat - leg) & 1`` in leg 1)."""
    servers = [[testbot.build_server(b) for b in row] for row in behaviours]
    eps = [[f"127.0.0.1:{port}" for _s, port in row] for row in servers]
    try:
        base: dict[str, Any] = {"seed": 11, "deadline_ms": 500, "time_bank_ms": 2000, "duplicate": True, **settings}
        out = run_match(eps[0][:2], MatchSettings(**base), name, seat_endpoints=eps, at_once=True)
    finally:
        for row in servers:
            for server, _port in row:
                server.stop(0).wait(5)
    path = tmp / f"{name}.json"
    path.write_text(dumps(out.record))
    return path
