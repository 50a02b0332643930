"""The web pages and their JSON API over real HTTP, against a real Redis filled by the real arena modules."""

from __future__ import annotations

import html
import json
import re
import select
import socket
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

import pytest

from arena.rating import stats
from arena.rating.ratings import Ratings
from arena.store.redis_server import connect
from arena.web import serve_web
from arena.web import server as server_mod
from referee.record import verify_record

from .conftest import EVIL, NO_REPLAY, Arena

pytestmark = pytest.mark.timeout(60)


def _embedded_replay(page: str) -> dict[str, Any]:
    m = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', page, re.S)
    assert m, "the replay page embeds its data"
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_leaderboard_page_ranks_every_rated_bot_with_rating_and_plot(arena: Arena) -> None:
    status, page, headers = arena.get("/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    ratings = Ratings(arena.r)
    for lid in arena.ladders.values():
        assert f"Ladder {lid}" in page
        rows = ratings.leaderboard(lid)
        assert rows, lid
        for row in rows:
            assert f"{row.conservative:.2f}" in page and f"± {row.sigma:.2f}" in page
            assert f"{row.wins} / {row.losses} / {row.draws}" in page
    assert page.count('<svg class="plot"') == len(arena.ladders)
    assert 'class="series"' in page
    for name in ("alpha", "beta", "gamma", "delta"):
        assert f'href="/bots/{name}"' in page
    # One ladder only.
    lid = arena.ladders["coinche"]
    status, page, _ = arena.get(f"/?ladder={lid}")
    assert status == 200 and f"Ladder {lid}" in page and arena.ladders["pilotta"] not in page


def test_api_leaderboard_matches_the_ratings_module(arena: Arena) -> None:
    for lid in arena.ladders.values():
        data = arena.json(f"/api/leaderboard?ladder={lid}")
        expected = Ratings(arena.r).leaderboard(lid)
        assert data["ladder"] == lid and data["config"]["variant"] in ("pilotta", "coinche")
        assert [r["bot_id"] for r in data["rows"]] == [r.bot_id for r in expected]
        assert [r["rank"] for r in data["rows"]] == list(range(1, len(expected) + 1))
        for got, want in zip(data["rows"], expected, strict=True):
            assert got["conservative"] == pytest.approx(want.conservative)
            assert got["games"] == want.games
    everything = arena.json("/api/leaderboard")
    assert sorted(s["ladder"] for s in everything["ladders"]) == sorted(arena.ladders.values())


def test_match_list_shows_every_match_newest_first_and_filters(arena: Arena) -> None:
    status, page, _ = arena.get("/matches")
    assert status == 200
    positions = [page.index(f'href="/replay/{m}"') for m in reversed(list(arena.results))]
    assert positions == sorted(positions), "newest first"
    data = arena.json("/api/matches")
    assert [m["match_id"] for m in data["matches"]] == list(reversed(list(arena.results)))
    assert data["next"] is None
    first = data["matches"][0]
    res = arena.results[first["match_id"]]
    assert first["points"] == list(res.points) and first["winner"] == res.winner
    assert "record" not in first and "stats" not in first  # lists never carry whole records

    lid = arena.ladders["coinche"]
    by_ladder = arena.json(f"/api/matches?ladder={lid}")["matches"]
    assert {m["match_id"] for m in by_ladder} == {m for m, r in arena.results.items() if r.ladder == lid}
    by_bot = arena.json("/api/matches?bot=delta")["matches"]
    assert {m["match_id"] for m in by_bot} == {m for m, r in arena.results.items() if arena.bots["delta"] in r.seats}
    status, page, _ = arena.get("/matches?bot=delta")
    assert status == 200 and page.count('href="/replay/') == len(by_bot)


def test_match_list_pages_with_a_cursor(arena: Arena) -> None:
    seen: list[str] = []
    path = "/api/matches?limit=3"
    for _ in range(10):
        data = arena.json(path)
        seen += [m["match_id"] for m in data["matches"]]
        if not data["next"]:
            break
        path = f"/api/matches?limit=3&before={data['next']}"
    assert seen == list(reversed(list(arena.results)))
    status, page, _ = arena.get("/matches?limit=3")
    assert status == 200 and 'id="older"' in page


def test_bot_page_shows_statistics_rating_and_recent_matches(arena: Arena) -> None:
    status, page, _ = arena.get("/bots/alpha")
    assert status == 200
    bot_id = arena.bots["alpha"]
    for lid in arena.ladders.values():
        st = stats.bot_stats(arena.r, lid, bot_id)
        assert f"Ladder {lid}" in page
        for key in (
            "contracts_bid",
            "contracts_made",
            "capots",
            "declarations",
            "timeouts",
            "illegal_actions",
            "errors",
        ):
            assert f'data-stat="{key}">{getattr(st, key)}<' in page, key
        assert f'data-stat="points_per_deal">{st.points_per_deal:.1f}<' in page
        assert f'data-stat="latency_p50_ms">{st.latency_p50_ms:.1f} ms<' in page
        assert f'data-stat="latency_p99_ms">{st.latency_p99_ms:.1f} ms<' in page
    played = [m for m, r in arena.results.items() if bot_id in r.seats]
    for mid in played:
        assert f'href="/replay/{mid}"' in page

    data = arena.json("/api/bots/alpha")
    assert data["bot"]["bot_id"] == bot_id and data["bot"]["name"] == "alpha"
    assert "endpoint" not in json.dumps(data), "where a bot runs stays private"
    assert {lad["ladder"] for lad in data["ladders"]} == set(arena.ladders.values())
    assert {m["match_id"] for m in data["recent_matches"]} == set(played)


def test_rating_history_api(arena: Arena) -> None:
    lid = arena.ladders["pilotta"]
    data = arena.json(f"/api/rating-history/beta?ladder={lid}")
    hist = Ratings(arena.r).history(lid, arena.bots["beta"])
    assert [p["match_id"] for p in data["ladders"][lid]] == [h.match_id for h in hist]
    assert data["ladders"][lid][-1]["mu"] == pytest.approx(hist[-1].mu)
    everything = arena.json("/api/rating-history/alpha")
    assert set(everything["ladders"]) == set(arena.ladders.values())


@pytest.mark.parametrize("mid", ["m-web-00", "m-web-01"])  # a duplicate pair (two legs) and a single game
def test_replay_page_and_api_carry_the_record(arena: Arena, mid: str) -> None:
    record = arena.records[mid]
    legs = record.get("legs", [record])
    status, page, _ = arena.get(f"/replay/{mid}")
    assert status == 200
    for id_ in ("next", "prev", "deal-select", "step", "action", "trick", "auction", "contract", "score"):
        assert f'id="{id_}"' in page
    data = _embedded_replay(page)
    assert data == arena.json(f"/api/replay/{mid}")
    assert len(data["legs"]) == len(legs)
    for got, leg in zip(data["legs"], legs, strict=True):
        assert got["players"] == leg["players"]
        assert [d["hands"] for d in got["deals"]] == [d["hands"] for d in leg["deals"]]
        assert [d["actions"] for d in got["deals"]] == [d["actions"] for d in leg["deals"]]
        assert all("deck" not in d for d in got["deals"])
        # Trick winners are the rules' own.
        want = [[t.winner for t in vd.deal.tricks] for vd in verify_record(leg).deals]
        assert got["trick_winners"] == want


def test_a_result_without_a_replayable_record_says_so(arena: Arena) -> None:
    status, page, _ = arena.get(f"/replay/{NO_REPLAY}")
    assert status == 200 and 'id="no-replay"' in page and "No replay is stored" in page
    assert 'id="next"' not in page
    assert arena.json(f"/api/replay/{NO_REPLAY}")["legs"] == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/bots/nobody", "There is no bot named “nobody”."),
        ("/replay/m-does-not-exist", "There is no recorded match “m-does-not-exist”."),
        ("/replay/" + quote("../../etc/passwd", safe=""), "There is no recorded match"),
        ("/matches?bot=nobody", "There is no bot named “nobody”."),
        ("/?ladder=no-such-ladder", "There is no ladder named “no-such-ladder”."),
        ("/no/such/page", "There is no page at /no/such/page."),
    ],
)
def test_unknown_things_get_a_clear_404_page(arena: Arena, path: str, message: str) -> None:
    status, page, headers = arena.get(path)
    assert status == 404
    assert headers["Content-Type"].startswith("text/html")
    assert "404 · Not found" in page and html.escape(message, quote=True) in page


@pytest.mark.parametrize(
    "path",
    [
        "/api/bots/nobody",
        "/api/replay/m-nope",
        "/api/rating-history/nobody",
        "/api/matches?bot=nobody",
        "/api/leaderboard?ladder=nope",
        "/api/nothing",
    ],
)
def test_unknown_things_get_a_json_404(arena: Arena, path: str) -> None:
    status, body, headers = arena.get(path)
    assert status == 404 and headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"].startswith("There is no")


def test_bad_query_values_are_400(arena: Arena) -> None:
    assert arena.get("/matches?before=not-a-cursor")[0] == 400
    assert arena.get("/api/matches?limit=lots")[0] == 400


def test_bot_supplied_strings_are_escaped_everywhere(arena: Arena) -> None:
    escaped = html.escape(EVIL, quote=True)
    pages = [
        "/",
        "/matches",
        "/bots/alpha",
        "/bots/" + quote(EVIL, safe=""),
        "/replay/m-web-01",
        "/replay/m-web-06",
        "/matches?bot=" + quote(EVIL, safe=""),
    ]
    for path in pages:
        status, page, headers = arena.get(path)
        assert status == 200, path
        assert EVIL not in page, f"raw bot-supplied markup on {path}"
        assert "Content-Security-Policy" in headers and "script-src 'self'" in headers["Content-Security-Policy"]
        # The only script elements are our own: the replay's data (not executed) and the viewer's scripts.
        assert set(re.findall(r"<script[^>]*>", page)) <= {
            '<script id="replay-data" type="application/json">',
            '<script src="/static/replay_deal.js">',
            '<script src="/static/replay_score.js">',
            '<script src="/static/replay.js">',
        }, path
    status, page, _ = arena.get("/bots/" + quote(EVIL, safe=""))
    assert f"<h1>Bot {escaped}</h1>" in page
    assert "team alpha" not in page and "mallory" in page
    status, page, _ = arena.get("/bots/alpha")
    assert f"owner team alpha {escaped}" in page
    # Comments and names inside the record survive the trip into the page intact, as data.
    status, page, _ = arena.get("/replay/m-web-01")
    assert "\\u003cscript\\u003e" in page
    data = _embedded_replay(page)
    assert data["legs"][0]["deals"][0]["actions"][0]["comment"] == f"opening {EVIL}"
    assert EVIL in data["legs"][0]["players"]


def test_static_files_and_health(arena: Arena) -> None:
    status, body, headers = arena.get("/static/replay.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and "deal-select" in body
    for name, defines in (("replay_deal.js", "window.ReplayDeal"), ("replay_score.js", "window.ReplayScore")):
        status, body, headers = arena.get("/static/" + name)
        assert status == 200 and headers["Content-Type"].startswith("text/javascript") and defines in body
    status, body, headers = arena.get("/static/style.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")
    assert arena.get("/static/../web.py")[0] == 404
    assert arena.get("/healthz")[:2] == (200, "ok\n")


def test_redis_down_gives_503_quickly_not_a_hang(refused_port: int) -> None:
    port = refused_port  # nothing listens there
    client = connect(f"redis://127.0.0.1:{port}/0", timeout_s=1.0)
    server, thread = serve_web(client, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    a = Arena(url=base, r=client, server=server)
    try:
        # Each answers within its own deadline (the client's Redis timeout is 1 s): a 503, not a hang.
        status, page, _ = a.get("/", timeout=10)
        assert status == 503 and "database cannot be reached" in page
        status, body, _ = a.get("/api/leaderboard", timeout=10)
        assert status == 503 and "error" in json.loads(body)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_silent_client_does_not_hold_a_thread_forever(arena: Arena) -> None:
    host, port = arena.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\n")  # ...and never finishes the request
        # Meanwhile other requests are served.
        assert arena.get("/healthz")[0] == 200


# Idle and slow clients (issue 15: 70 idle connections took the old threaded server's 64 slots for 15 s each,
# and /healthz answered 503).


def _addr(arena: Arena) -> tuple[str, int]:
    host, port = arena.url.removeprefix("http://").split(":")
    return host, int(port)


def _closed_by_server(s: socket.socket, within_s: float) -> bool:
    """True if the server closes ``s`` (EOF or reset) within ``within_s``; anything it sent first is read."""
    s.settimeout(0.2)
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if s.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def _answered(s: socket.socket) -> bool:
    """True if the server has sent something on ``s`` or closed it (looked at without waiting)."""
    readable, _, _ = select.select([s], [], [], 0)
    return bool(readable)


def _health_within(arena: Arena, within_s: float) -> float:
    """Seconds until /healthz answers 200 (polled), failing the test after ``within_s``."""
    start = time.monotonic()
    while True:
        try:
            status = arena.get("/healthz", timeout=2)[0]
        except OSError:
            status = 0
        if status == 200:
            return time.monotonic() - start
        assert time.monotonic() - start < within_s, f"/healthz still {status} after {within_s}s"
        time.sleep(0.1)


def test_seventy_idle_connections_leave_healthz_at_200(arena: Arena) -> None:
    # The idle client comes from 127.0.0.2 (all of 127/8 is loopback): another client than the health check.
    idle = [socket.create_connection(_addr(arena), timeout=5, source_address=("127.0.0.2", 0)) for _ in range(70)]
    try:
        assert _health_within(arena, 3.0) < 3.0
        assert arena.get("/api/leaderboard")[0] == 200
        # One client holds at most PER_CLIENT_CONNECTIONS; the rest were refused with a 503 at once: before
        # any held one can time out (HEAD_TIMEOUT_S), so until then whatever answers is a refusal. Polled up
        # to 1 s before that, not given 0.3 s, which a loaded machine may not keep.
        expected = 70 - server_mod.PER_CLIENT_CONNECTIONS
        deadline = time.monotonic() + server_mod.HEAD_TIMEOUT_S - 1
        while len(refused := [s for s in idle if _answered(s)]) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(refused) == expected
        assert all(s.recv(100).startswith(b"HTTP/1.1 503 ") for s in refused)
        # ...and the ones it held are closed once the head timeout has passed without a request.
        held = [s for s in idle if s not in refused]
        assert all(_closed_by_server(s, server_mod.HEAD_TIMEOUT_S + 3) for s in held)
    finally:
        for s in idle:
            s.close()


def test_idle_connections_of_the_same_client_free_healthz_within_the_head_timeout(arena: Arena) -> None:
    idle = [socket.create_connection(_addr(arena), timeout=5) for _ in range(70)]
    try:
        # This client is at its limit, so its own health check waits for its idle connections to time out.
        assert _health_within(arena, server_mod.HEAD_TIMEOUT_S + 3) < server_mod.HEAD_TIMEOUT_S + 3
    finally:
        for s in idle:
            s.close()


def test_a_slowloris_client_is_cut_off_at_the_head_timeout(arena: Arena) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-Pad-%d: y\r\n" % i for i in range(200))
    with socket.create_connection(_addr(arena), timeout=5, source_address=("127.0.0.3", 0)) as s:
        start, sent, cut = time.monotonic(), 0, False
        while time.monotonic() - start < server_mod.HEAD_TIMEOUT_S + 3:
            try:
                s.sendall(head[sent : sent + 1])  # one byte at a time, never finishing the head
            except OSError:
                cut = True
                break
            sent += 1
            if sent % 10 == 0:
                assert arena.get("/healthz", timeout=2)[0] == 200  # served meanwhile
            time.sleep(0.05)
        cut = cut or _closed_by_server(s, 1.0)
        elapsed = time.monotonic() - start
    assert cut, "the server kept a connection whose request head never ended"
    assert server_mod.HEAD_TIMEOUT_S - 0.5 <= elapsed <= server_mod.HEAD_TIMEOUT_S + 3


def test_head_answers_without_a_body_and_other_methods_are_refused(arena: Arena) -> None:
    for method, status in (("HEAD", 200), ("POST", 405), ("DELETE", 405)):
        req = urllib.request.Request(arena.url + "/healthz", method=method)
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                got, body = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            with e:
                got, body = e.code, b""
        assert got == status, method
        if method == "HEAD":
            assert body == b"" and resp.headers["Content-Type"] == "text/plain; charset=utf-8"
