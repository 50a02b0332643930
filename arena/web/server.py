"""The arena's web pages and their JSON API: a thin HTTP layer over ``service.Arena``.

``serve_web(redis_client, host, port) -> (server, thread)`` starts serving in a daemon thread (port 0
picks a free one: ``server.server_address``); ``server.shutdown()`` then ``server.server_close()`` stops it.
``run_web(redis_url, host, port)`` is the blocking entry of ``arena web``; it returns on SIGINT/SIGTERM.

Pages: ``/`` leaderboard per ladder with rating plots, ``/batch?ladder=&anchor=`` the batch rating and the
head-to-head table, ``/matches``, ``/bots/NAME``, ``/replay/MATCH_ID`` (and its record,
``/replay/MATCH_ID/record.json``).
API: ``/api/leaderboard?ladder=``, ``/api/batch?ladder=&anchor=``, ``/api/matches?ladder=&bot=&before=&limit=``,
``/api/bots/NAME``, ``/api/replay/MATCH_ID``, ``/api/rating-history/NAME?ladder=``; ``/healthz`` pings Redis.

A handler parses the request, calls one ``Arena`` method, and renders its answer: as JSON, or as HTML
through the templates (``render``).  The arena's typed errors become statuses: unknown bot, ladder or
match 404, a bad query value 400, Redis down 503; anything else 500 (logged).

The server only reads.  Robustness: a request handler waits at most ``REQUEST_TIMEOUT_S`` for a slow
client, at most ``MAX_CONCURRENT`` requests are handled at once (more get a 503 at once rather than a
thread each), Redis calls are bounded (``arena.views``), and Redis being down gives a 503 page, not a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis

from arena.batch import DEFAULT_ANCHOR
from arena.bradley_terry import PROVISIONAL_BOARDS, PROVISIONAL_WIDTH_ELO
from arena.model import NotFoundError, UnknownBotError, UnknownLadderError, ValidationError
from arena.redis_server import connect
from arena.service import Arena
from arena.views import BotPage, MatchPage
from arena.web.render import Pages, points

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 15.0
MAX_CONCURRENT = 64
_STATIC_TYPES = {"style.css": "text/css; charset=utf-8", "replay.js": "text/javascript; charset=utf-8"}
# Nothing but our own files may load or run: a string that slipped past escaping still cannot run a script.
_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
# A route: query -> (status, content type, body).
Route = Callable[[dict[str, str]], tuple[int, str, bytes]]


class NotFound(Exception):
    """The thing asked for does not exist; the message says which, for the 404 page."""


class BadRequest(Exception):
    pass


def load_static() -> dict[str, bytes]:
    """The CSS and JS, read once at start: a package built without them fails now, not on a page view."""
    root = Path(__file__).resolve().parent / "static"
    return {name: (root / name).read_bytes() for name in _STATIC_TYPES}


class WebServer(ThreadingHTTPServer):
    daemon_threads = True  # a stuck client never blocks shutdown
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], r: redis.Redis) -> None:
        self.r = r
        self.static = load_static()
        self.pages = Pages()
        self._arena: Arena | None = None
        self._arena_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        super().__init__(addr, Handler)

    @property
    def arena(self) -> Arena:
        # Built at the first request, not at start: it creates consumer groups, and the web server may
        # start before Redis is up (``arena up`` starts them together).  Redis down: RedisError, a 503.
        with self._arena_lock:
            if self._arena is None:
                self._arena = Arena(self.r)
            return self._arena

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        # Any: socketserver types the client address as _RetAddress, which typeshed does not export.
        if not self._slots.acquire(blocking=False):
            if isinstance(request, socket.socket):
                with contextlib.suppress(OSError):
                    request.sendall(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class Handler(BaseHTTPRequestHandler):
    server: WebServer
    timeout = REQUEST_TIMEOUT_S  # socket timeout while reading the request
    protocol_version = "HTTP/1.1"
    server_version = "pilotta-arena-web"

    def log_message(self, format: str, *args: Any) -> None:  # Any: as BaseHTTPRequestHandler declares it
        log.debug("%s " + format, self.address_string(), *args)

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def do_GET(self) -> None:
        self._dispatch(head=False)

    # routing --------------------------------------------------------------------------

    def _dispatch(self, head: bool) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        api = parts[:1] == ["api"]
        try:
            route = self._route(parts[1:] if api else parts, api)
            if route is None:
                raise NotFound(f"There is no page at {url.path}.")
            status, ctype, body = route(query)
        except NotFound as e:
            status, ctype, body = self._error(HTTPStatus.NOT_FOUND, "Not found", str(e), api)
        except BadRequest as e:
            status, ctype, body = self._error(HTTPStatus.BAD_REQUEST, "Bad request", str(e), api)
        except redis.RedisError as e:
            log.warning("web: redis unavailable: %s", e)
            status, ctype, body = self._error(
                HTTPStatus.SERVICE_UNAVAILABLE,
                "Database unavailable",
                "The arena's database cannot be reached right now; try again soon.",
                api,
            )
        except Exception:
            log.exception("web: error serving %s", self.path)
            status, ctype, body = self._error(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                "Server error",
                "Something went wrong on our side; it has been logged.",
                api,
            )
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "max-age=3600" if parts[:1] == ["static"] else "no-cache")
        # One request per connection: an idle keep-alive connection would hold a thread and one of the
        # MAX_CONCURRENT slots for REQUEST_TIMEOUT_S; a page is only three requests.
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _route(self, p: list[str], api: bool) -> Route | None:
        one = len(p) == 2 and p[1] != ""
        if api:
            if p == ["leaderboard"]:
                return lambda q: _json(self._api_leaderboard(q.get("ladder")))
            if p == ["matches"]:
                return lambda q: _json(self._match_page(q).to_dict())
            if p == ["batch"]:
                return lambda q: _json(self._batch(q))
            if one and p[0] == "bots":
                return lambda q: _json(self._bot(p[1]).to_dict())
            if one and p[0] == "replay":
                return lambda q: _json(self._replay(p[1]))
            if one and p[0] == "rating-history":
                return lambda q: _json(self._rating_history(p[1], q.get("ladder")))
            return None
        if p in ([""], []):
            return lambda q: self._page("leaderboard.html", "Leaderboard", "leaderboard", boards=self._boards(q))
        if p == ["matches"]:
            return lambda q: self._page("matches.html", "Matches", "matches", **vars_of(self._match_page(q)))
        if p == ["batch"]:
            return lambda q: self._page(
                "batch.html",
                "Batch rating",
                "leaderboard",
                table=self._batch(q),
                width=PROVISIONAL_WIDTH_ELO,
                min_boards=PROVISIONAL_BOARDS,
            )
        if one and p[0] == "bots":
            return lambda q: self._page("bot.html", f"Bot {p[1]}", "", **vars_of(self._bot(p[1])))
        if one and p[0] == "replay":
            return lambda q: self._page("replay.html", f"Match {p[1]}", "", payload=self._replay(p[1]))
        if len(p) == 3 and p[0] == "replay" and p[2] == "record.json":
            return lambda q: (200, "application/json", self._record(p[1]).encode())
        if one and p[0] == "static" and p[1] in self.server.static:
            return lambda q: (200, _STATIC_TYPES[p[1]], self.server.static[p[1]])
        if p == ["healthz"]:
            return lambda q: (200, "text/plain; charset=utf-8", b"ok\n" if self.server.arena.ping() else b"no\n")
        return None

    def _page(self, template: str, title: str, active: str, **context: object) -> tuple[int, str, bytes]:
        return _html(self.server.pages.render(template, title=title, active=active, **context))

    def _error(self, status: HTTPStatus, title: str, message: str, api: bool) -> tuple[int, str, bytes]:
        if api:
            return _json({"error": message}, status)
        page = self.server.pages.render("error.html", title=title, active="", status=int(status), message=message)
        return _html(page, status)

    # calls of the arena, its errors in the pages' words ------------------------------------

    def _boards(self, q: dict[str, str]) -> list[dict[str, Any]]:
        ladder = q.get("ladder")
        try:
            boards = self.server.arena.boards(ladder)
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{ladder}”.") from None
        return [
            {
                "ladder": b.ladder,
                "config": b.config.to_dict() if b.config is not None else None,
                "rows": [s.to_dict() for s in b.standings],
                "series": [
                    (s.name, points(b.histories[s.bot_id], "conservative"))
                    for s in b.standings
                    if b.histories.get(s.bot_id)
                ],
            }
            for b in boards
        ]

    def _api_leaderboard(self, ladder: str | None) -> dict[str, Any]:
        try:
            boards = [b.to_dict() for b in self.server.arena.boards(ladder)]
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{ladder}”.") from None
        return boards[0] if ladder else {"ladders": boards}

    def _batch(self, q: dict[str, str]) -> dict[str, Any]:
        try:
            return self.server.arena.batch_ratings(q.get("ladder") or "", q.get("anchor") or DEFAULT_ANCHOR)
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{q.get('ladder')}”.") from None
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{q.get('anchor') or DEFAULT_ANCHOR}” to anchor on.") from None
        except ValidationError as e:
            raise BadRequest(str(e)) from None

    def _match_page(self, q: dict[str, str]) -> MatchPage:
        try:
            limit = int(q.get("limit", "50"))
        except ValueError:
            raise BadRequest("limit must be a whole number") from None
        try:
            return self.server.arena.match_page(q.get("ladder"), q.get("bot"), q.get("before") or None, limit)
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{q.get('ladder')}”.") from None
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{q.get('bot')}”.") from None
        except ValidationError as e:
            raise BadRequest(str(e)) from None

    def _bot(self, name: str) -> BotPage:
        try:
            return self.server.arena.bot_page(name)
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{name}”.") from None

    def _replay(self, match_id: str) -> dict[str, Any]:
        try:
            return self.server.arena.replay_view(match_id)
        except NotFoundError:
            raise NotFound(f"There is no recorded match “{match_id}”.") from None

    def _record(self, match_id: str) -> str:
        """A match's record as stored (the replay page's download link)."""
        try:
            return self.server.arena.replay(match_id)[1]
        except (NotFoundError, ValidationError):
            raise NotFound(f"There is no recorded match “{match_id}”.") from None

    def _rating_history(self, name: str, ladder: str | None) -> dict[str, Any]:
        try:
            return self.server.arena.rating_history(name, ladder)
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{name}”.") from None
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{ladder}”.") from None


def vars_of(page: BotPage | MatchPage) -> dict[str, object]:
    """A page's fields, as template variables."""
    return {f.name: getattr(page, f.name) for f in dataclasses.fields(page)}


def _json(data: object, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(data, ensure_ascii=False, allow_nan=False).encode()


def _html(text: str, status: int = 200) -> tuple[int, str, bytes]:
    return status, "text/html; charset=utf-8", text.encode()


def serve_web(
    redis_client: redis.Redis, host: str = "127.0.0.1", port: int = 8080
) -> tuple[WebServer, threading.Thread]:
    """Serve in a daemon thread.  ``redis_client`` should come from ``redis_server.connect`` (timeouts)."""
    server = WebServer((host, port), redis_client)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, name=f"web:{server.server_address[1]}", daemon=True
    )
    thread.start()
    return server, thread


def run_web(redis_url: str, host: str = "0.0.0.0", port: int = 8080) -> int:
    """Serve until SIGINT or SIGTERM; returns an exit code.  For ``arena web`` and ``arena up``."""
    client = connect(redis_url)
    try:
        server, thread = serve_web(client, host, port)
    except OSError as e:
        log.error("web: cannot listen on %s:%s: %s", host, port, e)
        return 2
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    # Printed, not logged: whoever runs `arena web` should see where to point a browser.
    bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
    print(f"web: serving on http://{bound_host}:{bound_port}/", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5) and thread.is_alive():
            pass
    finally:
        server.shutdown()
        server.server_close()
        client.close()
    return 0


__all__ = ["WebServer", "run_web", "serve_web"]
