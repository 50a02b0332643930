"""The arena's web pages and their JSON API, on the standard library's threaded HTTP server.

``serve_web(redis_client, host, port) -> (server, thread)`` starts serving in a daemon thread (port 0
picks a free one: ``server.server_address``); ``server.shutdown()`` then ``server.server_close()`` stops it.
``run_web(redis_url, host, port)`` is the blocking entry of ``arena web``; it returns on SIGINT/SIGTERM.

Pages: ``/`` leaderboard per ladder with rating plots, ``/matches``, ``/bots/NAME``, ``/replay/MATCH_ID``.
API: ``/api/leaderboard?ladder=``, ``/api/matches?ladder=&bot=&before=&limit=``, ``/api/bots/NAME``,
``/api/replay/MATCH_ID``, ``/api/rating-history/NAME?ladder=``; ``/healthz`` pings Redis.

The server only reads.  Robustness: a request handler waits at most ``REQUEST_TIMEOUT_S`` for a slow
client, at most ``MAX_CONCURRENT`` requests are handled at once (more get a 503 at once rather than a
thread each), Redis calls are bounded (``web_data``), and Redis being down gives a 503 page, not a crash.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis

from arena import web_pages as pages
from arena.model import ID_RE, UnknownBotError
from arena.redis_server import connect
from arena.views import PLOT_BOTS, STREAM_ID_RE, Views

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 15.0
MAX_CONCURRENT = 64
_STATIC_TYPES = {"style.css": "text/css; charset=utf-8", "replay.js": "text/javascript; charset=utf-8"}
# Nothing but our own files may load or run: a string that slipped past escaping still cannot run a script.
_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'"


class NotFound(Exception):
    """The thing asked for does not exist; the message says which, for the 404 page."""


class BadRequest(Exception):
    pass


def load_static() -> dict[str, bytes]:
    """The CSS and JS, read once at start: a package built without them fails now, not on a page view."""
    root = Path(__file__).resolve().parent / "web_static"
    return {name: (root / name).read_bytes() for name in _STATIC_TYPES}


class WebServer(ThreadingHTTPServer):
    daemon_threads = True  # a stuck client never blocks shutdown
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], data: Views) -> None:
        self.data = data
        self.static = load_static()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        super().__init__(addr, Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class Handler(BaseHTTPRequestHandler):
    server: WebServer
    timeout = REQUEST_TIMEOUT_S  # socket timeout while reading the request
    protocol_version = "HTTP/1.1"
    server_version = "pilotta-arena-web"

    def log_message(self, format: str, *args: Any) -> None:
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

    def _route(self, p: list[str], api: bool) -> Callable[[dict[str, str]], tuple[int, str, bytes]] | None:
        d = self.server.data
        one = len(p) == 2 and p[1] != ""
        if api:
            table: dict[str, Callable[[dict[str, str]], Any]] = {
                "leaderboard": lambda q: self._api_leaderboard(q.get("ladder")),
                "matches": lambda q: self._match_page(q)[0],
            }
            if len(p) == 1 and p[0] in table:
                return lambda q: _json(table[p[0]](q))
            if one and p[0] == "bots":
                return lambda q: _json(self._bot(p[1])[0])
            if one and p[0] == "replay":
                return lambda q: _json(self._replay(p[1]))
            if one and p[0] == "rating-history":
                return lambda q: _json(self._rating_history(p[1], q.get("ladder")))
            return None
        if p in ([""], []):
            return lambda q: _html(pages.leaderboard_page(self._sections(q.get("ladder"))))
        if p == ["matches"]:
            return lambda q: _html(pages.matches_page(**self._match_page(q)[1]))
        if one and p[0] == "bots":
            return lambda q: _html(pages.bot_page(**self._bot(p[1])[1]))
        if one and p[0] == "replay":
            return lambda q: _html(pages.replay_page(self._replay(p[1])))
        if one and p[0] == "static" and p[1] in self.server.static:
            return lambda q: (200, _STATIC_TYPES[p[1]], self.server.static[p[1]])
        if p == ["healthz"]:
            return lambda q: (200, "text/plain; charset=utf-8", b"ok\n" if d.ping() else b"no\n")
        return None

    def _error(self, status: HTTPStatus, title: str, message: str, api: bool) -> tuple[int, str, bytes]:
        if api:
            return _json({"error": message}, status)
        return _html(pages.error_page(status, title, message), status)

    # views ------------------------------------------------------------------------------

    def _ladder(self, ladder: str | None) -> str | None:
        if not ladder:
            return None
        if not ID_RE.match(ladder) or ladder not in self.server.data.ladders():
            raise NotFound(f"There is no ladder named “{ladder}”.")
        return ladder

    def _sections(self, ladder: str | None) -> list[dict[str, Any]]:
        d = self.server.data
        wanted = self._ladder(ladder)
        out = []
        for lid, cfg in d.ladders().items():
            if wanted is not None and lid != wanted:
                continue
            rows = [s.to_dict() for s in d.leaderboard(lid)]
            hist = {r["bot_id"]: d.plot_history(lid, r["bot_id"]) for r in rows[:PLOT_BOTS]}
            config = cfg.to_dict() if cfg is not None else None
            out.append({"ladder": lid, "config": config, "rows": rows, "histories": hist})
        return out

    def _api_leaderboard(self, ladder: str | None) -> dict[str, Any]:
        secs = [{"ladder": s["ladder"], "config": s["config"], "rows": s["rows"]} for s in self._sections(ladder)]
        return secs[0] if self._ladder(ladder) else {"ladders": secs}

    def _bot_id(self, name: str) -> str:
        try:
            return self.server.data.bot_id_by_name(name)
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{name}”.") from None

    def _match_page(self, q: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(API reply, page arguments) of a match list."""
        d = self.server.data
        ladder = self._ladder(q.get("ladder"))
        bot_name = q.get("bot") or None
        bot_id = self._bot_id(bot_name) if bot_name else None
        before = q.get("before") or None
        if before is not None and not STREAM_ID_RE.match(before):
            raise BadRequest(f"before={before!r} is not a results cursor (like 1700000000000-0)")
        try:
            limit = int(q.get("limit", "50"))
        except ValueError:
            raise BadRequest("limit must be a whole number") from None
        matches, cursor = d.matches(ladder, bot_id, limit, before)
        names = d.with_names(matches)
        api = {"matches": [{**m, "names": [names[b] for b in m["seats"]]} for m in matches], "next": cursor}
        return api, {
            "matches": matches,
            "names": names,
            "ladders": list(d.ladders()),
            "ladder": ladder,
            "bot_name": bot_name,
            "cursor": cursor,
        }

    def _bot(self, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(API reply, page arguments) of a bot page."""
        d = self.server.data
        bot_id = self._bot_id(name)
        try:
            b = d.bot(bot_id)
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{name}”.") from None
        # Endpoint and manifest stay private: they say where a bot runs.
        info = {
            "bot_id": b.bot_id,
            "name": b.name,
            "owner": b.owner,
            "created": b.created,
            "retired": b.retired,
            "version": b.version,
        }
        ladders = [lad.to_dict() for lad in d.bot_ladders(bot_id)]
        hist = {lad["ladder"]: d.plot_history(lad["ladder"], bot_id) for lad in ladders}
        matches, _ = d.matches(bot_id=bot_id, limit=20)
        names = d.with_names(matches)
        api = {"bot": info, "ladders": ladders, "recent_matches": matches}
        return api, {"bot": info, "ladders": ladders, "histories": hist, "matches": matches, "names": names}

    def _replay(self, match_id: str) -> dict[str, Any]:
        payload = self.server.data.replay(match_id)
        if payload is None:
            raise NotFound(f"There is no recorded match “{match_id}”.")
        return payload

    def _rating_history(self, name: str, ladder: str | None) -> dict[str, Any]:
        d = self.server.data
        bot_id = self._bot_id(name)
        wanted = self._ladder(ladder)
        lids = [wanted] if wanted else [lad.ladder for lad in d.bot_ladders(bot_id)]
        return {"bot": name, "bot_id": bot_id, "ladders": {lid: d.history(lid, bot_id) for lid in lids}}


def _json(data: object, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(data, ensure_ascii=False, allow_nan=False).encode()


def _html(text: str, status: int = 200) -> tuple[int, str, bytes]:
    return status, "text/html; charset=utf-8", text.encode()


def serve_web(
    redis_client: redis.Redis, host: str = "127.0.0.1", port: int = 8080
) -> tuple[WebServer, threading.Thread]:
    """Serve in a daemon thread.  ``redis_client`` should come from ``redis_server.connect`` (timeouts)."""
    server = WebServer((host, port), Views(redis_client))
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
