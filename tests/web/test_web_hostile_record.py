"""A hostile record in the replay viewer, in real headless Chromium: ``arena view`` of a record file someone sent
(every string in it chosen by the attacker), served by ``arena.cli.view.serve_view`` on loopback.

Markup in a player's name, a comment, a refused answer, the referee's error note or the match id must reach the
page as text: no element is made of it and nothing runs. The page's Content-Security-Policy would stop an
inline handler anyway, so the test looks for the elements themselves (an ``<img>`` made of a string is the
injection, whether or not it may run), and for the strings shown as text. The local server answers only its
one record: no other file, however the path is spelled.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from arena.cli.view import LocalMatch, load_match, serve_view
from referee.cli import play_random_game
from referee.record import RecordExtras, dumps, game_to_record
from referee.rules import get_ruleset

from .browser import chromium_driver, no_errors  # noqa: F401  (chromium_driver: the fixture ``driver``)

# Each marks itself in window.__pwned if it ever runs, and makes an element if it is ever parsed as markup.
IMG = "<img class=pwn src=x onerror=\"window.__pwned='img'\">"
SCRIPT = "</script><script class=pwn>window.__pwned='script'</script>"
SVG = "<svg class=pwn onload=\"window.__pwned='svg'\"></svg>"
PLAYERS = [f"ann{IMG}", f"bob{SCRIPT}", f"cid{SVG}", "dan\u2028<!--"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, LocalMatch]]:
    tmp = tmp_path_factory.mktemp("hostile")
    game = play_random_game(get_ruleset("pilotta", {}), 7, max_deals=1)
    record = json.loads(dumps(game_to_record(game, RecordExtras(players=PLAYERS, match_id=f"m{IMG}"))))
    first = record["deals"][0]["actions"][0]
    first.update(comment=f"hi {SVG}", answer=f"ans {IMG}", error=f"err {SCRIPT}")
    path = tmp / "hostile.json"
    path.write_text(json.dumps(record))
    (tmp / "secret.txt").write_text("not for the viewer")
    match = load_match(path)
    server, thread = serve_view(match)
    try:
        yield server.url, match
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.timeout(120)
def test_hostile_strings_in_a_record_show_as_text_and_run_nothing(hostile: Any, driver: Any) -> None:
    url, _match = hostile
    driver.get("about:blank")
    driver.get(url + "#1.1.1")  # the first leg and deal, after the first action: its comment is shown
    state = driver.execute_script(
        "return {pwned: window.__pwned || null, made: document.querySelectorAll('.pwn, img, svg').length,"
        " names: [0, 1, 2, 3].map((s) => document.getElementById('name-' + s).textContent),"
        " text: document.body.textContent, title: document.title};"
    )
    assert state["pwned"] is None, "a string from the record ran"
    assert state["made"] == 0, "a string from the record became an element"
    for seat, name in enumerate(PLAYERS):
        assert name in state["names"][seat], f"seat {seat} shows its name as text"
    for text in (f"hi {SVG}", f"m{IMG}"):
        assert text in state["text"] or text in state["title"], f"{text!r} is shown as text"
    no_errors(driver)


def _get(url: str, path: str) -> tuple[int, bytes]:
    host, port = url.split("/")[2].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_the_local_viewer_serves_its_one_record_and_nothing_else(hostile: Any) -> None:
    url, match = hostile
    assert url.startswith("http://127.0.0.1:"), "bound to loopback by default"
    status, body = _get(url, "/record.json")
    assert status == 200 and json.loads(body)["match_id"] == match.match_id
    for path in (
        "/secret.txt",
        "/../secret.txt",
        "/static/../secret.txt",
        "/static/%2e%2e/secret.txt",
        "/static/..%2fsecret.txt",
        "/static/../../../../etc/passwd",
        "/static//etc/passwd",
        "/replay/../record.json/../secret.txt",
    ):
        status, body = _get(url, path)
        assert status == 404 and b"not for the viewer" not in body and b"root:" not in body, path
