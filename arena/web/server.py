"""The arena's web pages and their JSON API: a thin HTTP layer over ``service.Arena``, served by Starlette on uvicorn.

``serve_web(redis_client, host, port) -> (server, thread)`` starts serving in a daemon thread (port 0
picks a free one: ``server.server_address``); ``server.shutdown()`` then ``server.server_close()`` stops it.
``run_web(redis_url, host, port)`` is the blocking entry of ``arena web``; it returns on SIGINT/SIGTERM.

Pages: ``/`` leaderboard per ladder with rating plots, ``/batch?ladder=&anchor=`` the batch rating and the
head-to-head table, ``/matches``, ``/bots/NAME``, ``/replay/MATCH_ID`` (and its record,
``/replay/MATCH_ID/record.json``).
API: ``/api/leaderboard?ladder=``, ``/api/batch?ladder=&anchor=``, ``/api/matches?ladder=&bot=&before=&limit=``,
``/api/bots/NAME``, ``/api/replay/MATCH_ID``, ``/api/live/MATCH_ID?since=`` (a match being played:
``arena.web.live``), ``/api/rating-history/NAME?ladder=``; ``/healthz`` pings Redis.

A handler parses the request, calls one ``Arena`` method, and renders its answer: as JSON, or as HTML
through the templates (``render``).  The arena's typed errors become statuses: unknown bot, ladder or
match 404, a bad query value 400, Redis down 503, an unreadable archived record 500 saying so; anything else
500 (logged).

The server only reads, but for one form: ``POST /bots/NAME/challenge``, the bot's owner challenging another
bot (``arena.web.challenge``: the token in the body, same-origin posts only, a bounded body).
One Starlette route takes every GET (and HEAD) and ``Site.respond`` dispatches on
the raw path, each segment percent-decoded on its own (a bot name may hold a ``/``).  Handlers call Redis
synchronously, so Starlette runs them on its thread pool while uvicorn's event loop keeps accepting.
Robustness: idle connections cost a socket, not a thread; a request head must arrive within
``HEAD_TIMEOUT_S`` and one client may hold at most ``PER_CLIENT_CONNECTIONS`` connections
(``arena.web.guard``); kept-alive connections close after ``KEEP_ALIVE_S``; beyond ``MAX_CONNECTIONS``
uvicorn answers 503; Redis calls are bounded (``arena.views``), and Redis being down gives a 503 page.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import redis
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arena.model import NotFoundError, UnknownBotError, UnknownLadderError, ValidationError
from arena.rating.batch import DEFAULT_ANCHOR
from arena.rating.bradley_terry import PROVISIONAL_BOARDS, PROVISIONAL_WIDTH_ELO
from arena.service import Arena
from arena.store.archive import Archive, RecordUnreadable
from arena.store.redis_server import connect
from arena.views import BotPage, MatchPage
from arena.web import challenge as challenge_mod
from arena.web import live as live_mod
from arena.web.guard import ClientLimits, guarded_protocol
from arena.web.live import BadRequest, NotFound
from arena.web.render import CONTENT_SECURITY_POLICY, Pages, points

log = logging.getLogger(__name__)

HEAD_TIMEOUT_S = 5.0  # a request head must arrive whole within this
PER_CLIENT_CONNECTIONS = 32  # open connections per client address
KEEP_ALIVE_S = 5.0  # an idle kept-alive connection is closed after this
MAX_CONNECTIONS = 1000  # beyond this many open connections, requests get a 503
# From this many open, each new connection closes the longest idle one (arena.web.guard): a reserve of 100
# below MAX_CONNECTIONS for clients that send their request, whatever idle sockets many addresses hold.
EVICT_IDLE_AT = MAX_CONNECTIONS - 100
SHUTDOWN_GRACE_S = 2.0  # requests still running when stopping get this long
_STATIC_TYPES = {
    "style.css": "text/css; charset=utf-8",
    "replay.js": "text/javascript; charset=utf-8",
    "replay_deal.js": "text/javascript; charset=utf-8",
    "replay_score.js": "text/javascript; charset=utf-8",
    "live.js": "text/javascript; charset=utf-8",
}
# A handler: query -> (status, content type, body).
Handler = Callable[[dict[str, str]], tuple[int, str, bytes]]


def load_static() -> dict[str, bytes]:
    """The CSS and JS, read once at start: a package built without them fails now, not on a page view."""
    root = Path(__file__).resolve().parent / "static"
    return {name: (root / name).read_bytes() for name in _STATIC_TYPES}


class Site:
    """The pages and the API, independent of the HTTP server: ``respond(raw_path, query)`` is one request."""

    def __init__(self, r: redis.Redis, archive: Archive | None = None) -> None:
        self.r = r
        self.archive = archive
        self.static = load_static()
        self.pages = Pages()
        self._arena: Arena | None = None
        self._arena_lock = threading.Lock()

    @property
    def arena(self) -> Arena:
        # Built at the first request, not at start: it creates consumer groups, and the web server may
        # start before Redis is up (``arena up`` starts them together).  Redis down: RedisError, a 503.
        with self._arena_lock:
            if self._arena is None:
                self._arena = Arena(self.r, archive=self.archive)
            return self._arena

    # routing --------------------------------------------------------------------------

    def respond(self, raw_path: str, raw_query: str) -> tuple[int, str, bytes, list[tuple[str, str]]]:
        """(status, content type, body, other headers) of a GET of ``raw_path`` (still percent-encoded)."""
        query = {k: v[-1] for k, v in parse_qs(raw_query).items()}
        parts = [unquote(p) for p in raw_path.split("/")[1:]]
        api = parts[:1] == ["api"]
        try:
            route = self._route(parts[1:] if api else parts, api)
            if route is None:
                raise NotFound(f"There is no page at {raw_path}.")
            status, ctype, body = route(query)
        except NotFound as e:
            status, ctype, body = self._error(HTTPStatus.NOT_FOUND, "Not found", str(e), api)
        except BadRequest as e:
            status, ctype, body = self._error(HTTPStatus.BAD_REQUEST, "Bad request", str(e), api)
        except RecordUnreadable as e:  # an archived record gone bad: say so; the log names the file
            status, ctype, body = self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "Record unreadable", str(e), api)
        except redis.RedisError as e:
            log.warning("web: redis unavailable: %s", e)
            status, ctype, body = self._unavailable(api)
        except Exception:
            log.exception("web: error serving %s", raw_path)
            status, ctype, body = self._server_error(api)
        return status, ctype, body, _headers("max-age=3600" if parts[:1] == ["static"] else "no-cache")

    def _unavailable(self, api: bool) -> tuple[int, str, bytes]:
        return self._error(
            HTTPStatus.SERVICE_UNAVAILABLE,
            "Database unavailable",
            "The arena's database cannot be reached right now; try again soon.",
            api,
        )

    def _server_error(self, api: bool) -> tuple[int, str, bytes]:
        return self._error(
            HTTPStatus.INTERNAL_SERVER_ERROR,
            "Server error",
            "Something went wrong on our side; it has been logged.",
            api,
        )

    def respond_challenge(
        self, raw_path: str, body: bytes | None, origin: str | None, referer: str | None, host: str | None, client: str
    ) -> tuple[int, str, bytes, list[tuple[str, str]]]:
        """A POST of the challenge form to ``raw_path`` (``/bots/NAME/challenge``); ``body`` None: it was over
        ``MAX_BODY_BYTES``.  The page says the match id queued, or what was wrong (4xx)."""
        parts = [unquote(p) for p in raw_path.split("/")[1:]]
        bot = parts[1] if len(parts) == 3 and parts[0] == "bots" and parts[2] == "challenge" else ""
        try:
            if not bot:
                # The challenge form is the only thing one may post: elsewhere the method is refused.
                raise challenge_mod.Refused(HTTPStatus.METHOD_NOT_ALLOWED, f"There is no form to post at {raw_path}.")
            if not challenge_mod.same_origin(origin, referer, "http", host):
                raise challenge_mod.Refused(
                    HTTPStatus.FORBIDDEN,
                    "This form is accepted only from the arena's own pages (the request's Origin or Referer "
                    "is another site's, or missing).",
                )
            if body is None:
                raise challenge_mod.Refused(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    f"The form is too large (at most {challenge_mod.MAX_BODY_BYTES} bytes).",
                )
            queued = challenge_mod.challenge(self.arena, bot, challenge_mod.parse_form(body), client)
            status, ctype, page = self._page("challenged.html", f"Challenge {queued.match_id}", "", queued=queued)
        except challenge_mod.Refused as e:
            status, ctype, page = self._error(e.status, "Challenge refused", e.message, False)
        except redis.RedisError as e:
            log.warning("web: redis unavailable: %s", e)
            status, ctype, page = self._unavailable(False)
        except Exception:
            log.exception("web: error serving the challenge at %s", raw_path)
            status, ctype, page = self._server_error(False)
        return status, ctype, page, _headers("no-store")

    def _route(self, p: list[str], api: bool) -> Handler | None:
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
            if one and p[0] == "live":
                return lambda q: _json(live_mod.live_events(self.arena, p[1], q))
            if one and p[0] == "rating-history":
                return lambda q: _json(self._rating_history(p[1], q.get("ladder")))
            return None
        if p in ([""], []):
            return lambda q: self._page(
                "leaderboard.html",
                "Leaderboard",
                "leaderboard",
                boards=self._boards(q),
                ladders=self.arena.list_ladders(),
            )
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
            return lambda q: self._page(
                "bot.html", f"Bot {p[1]}", "", **vars_of(self._bot(p[1])), all_ladders=self.arena.list_ladders()
            )
        if one and p[0] == "replay":
            return lambda q: self._replay_page(p[1])
        if len(p) == 3 and p[0] == "replay" and p[2] == "record.json":
            return lambda q: (200, "application/json", self._record(p[1]).encode())
        if one and p[0] == "static" and p[1] in self.static:
            return lambda q: (200, _STATIC_TYPES[p[1]], self.static[p[1]])
        if p == ["healthz"]:
            return lambda q: (200, "text/plain; charset=utf-8", b"ok\n" if self.arena.ping() else b"no\n")
        return None

    def _page(self, template: str, title: str, active: str, **context: object) -> tuple[int, str, bytes]:
        return _html(self.pages.render(template, title=title, active=active, **context))

    def _error(self, status: HTTPStatus, title: str, message: str, api: bool) -> tuple[int, str, bytes]:
        if api:
            return _json({"error": message}, status)
        page = self.pages.render("error.html", title=title, active="", status=int(status), message=message)
        return _html(page, status)

    # calls of the arena, its errors in the pages' words ------------------------------------

    def _boards(self, q: dict[str, str]) -> list[dict[str, Any]]:
        ladder = q.get("ladder")
        try:
            boards = self.arena.boards(ladder)
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{ladder}”.") from None
        return [
            {
                **b.to_dict(),
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
            boards = [b.to_dict() for b in self.arena.boards(ladder)]
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{ladder}”.") from None
        return boards[0] if ladder else {"ladders": boards}

    def _batch(self, q: dict[str, str]) -> dict[str, Any]:
        try:
            return self.arena.batch_ratings(q.get("ladder") or "", q.get("anchor") or DEFAULT_ANCHOR)
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
            return self.arena.match_page(q.get("ladder"), q.get("bot"), q.get("before") or None, limit)
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{q.get('ladder')}”.") from None
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{q.get('bot')}”.") from None
        except ValidationError as e:
            raise BadRequest(str(e)) from None

    def _bot(self, name: str) -> BotPage:
        try:
            return self.arena.bot_page(name)
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{name}”.") from None

    def _replay(self, match_id: str) -> dict[str, Any]:
        try:
            return self.arena.replay_view(match_id)
        except NotFoundError:
            raise NotFound(f"There is no recorded match “{match_id}”.") from None

    def _replay_page(self, match_id: str) -> tuple[int, str, bytes]:
        try:
            return self._page("replay.html", f"Match {match_id}", "", payload=self._replay(match_id))
        except NotFound:  # being played: its live view (no hand until it is over), else the 404
            live = live_mod.live_context(self.arena, match_id)
            if live is None:
                raise
            return self._page("live.html", f"Match {match_id} (live)", "", **live)

    def _record(self, match_id: str) -> str:
        """A match's record as stored (the replay page's download link)."""
        try:
            return self.arena.replay(match_id)[1]
        except (NotFoundError, ValidationError):
            raise NotFound(f"There is no recorded match “{match_id}”.") from None

    def _rating_history(self, name: str, ladder: str | None) -> dict[str, Any]:
        try:
            return self.arena.rating_history(name, ladder)
        except UnknownBotError:
            raise NotFound(f"There is no bot named “{name}”.") from None
        except UnknownLadderError:
            raise NotFound(f"There is no ladder named “{ladder}”.") from None


def _headers(cache: str) -> list[tuple[str, str]]:
    # same-origin: our own pages' form posts name their origin (a browser sends "Origin: null" under
    # no-referrer), and no other site learns which page linked to it.
    return [
        ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", cache),
    ]


def vars_of(page: BotPage | MatchPage) -> dict[str, object]:
    """A page's fields, as template variables."""
    return {f.name: getattr(page, f.name) for f in dataclasses.fields(page)}


def _json(data: object, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(data, ensure_ascii=False, allow_nan=False).encode()


def _html(text: str, status: int = 200) -> tuple[int, str, bytes]:
    return status, "text/html; charset=utf-8", text.encode()


def build_app(site: Site) -> Starlette:
    """The ASGI application: every GET (and HEAD) goes to ``site.respond``, run on Starlette's thread pool."""

    def endpoint(request: Request) -> Response:
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        status, ctype, body, headers = site.respond(raw_path.decode("latin-1"), request.url.query)
        # The content types name their charset already, so Starlette adds none.
        return Response(body, status_code=status, media_type=ctype, headers=dict(headers))

    async def post(request: Request) -> Response:
        body = await _bounded_body(request, challenge_mod.MAX_BODY_BYTES)
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        client = request.client.host if request.client else ""
        h = request.headers
        status, ctype, page, headers = await run_in_threadpool(
            site.respond_challenge,
            raw_path.decode("latin-1"),
            body,
            h.get("origin"),
            h.get("referer"),
            h.get("host"),
            client,
        )
        return Response(page, status_code=status, media_type=ctype, headers=dict(headers))

    return Starlette(
        routes=[Route("/{path:path}", endpoint, methods=["GET"]), Route("/{path:path}", post, methods=["POST"])]
    )


async def _bounded_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it passes ``limit`` bytes (by its Content-Length or as read)."""
    try:
        if int(request.headers.get("content-length", "0")) > limit:
            return None
    except ValueError:
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body


class WebServer:
    """uvicorn serving ``build_app`` on a socket bound at construction (so a port in use raises OSError
    here), with the connection limits of ``arena.web.guard``."""

    def __init__(self, addr: tuple[str, int], r: redis.Redis, archive: Archive | None = None) -> None:
        self.site = Site(r, archive)
        self.limits = ClientLimits(
            head_timeout_s=HEAD_TIMEOUT_S, per_client=PER_CLIENT_CONNECTIONS, evict_idle_at=EVICT_IDLE_AT
        )
        family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(addr)
            self.socket.listen(1024)
        except OSError:
            self.socket.close()
            raise
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        config = uvicorn.Config(
            build_app(self.site),
            http=guarded_protocol(self.limits),
            lifespan="off",
            ws="none",
            timeout_keep_alive=int(KEEP_ALIVE_S),
            limit_concurrency=MAX_CONNECTIONS,
            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_S),
            server_header=False,
            date_header=False,
            log_config=None,
            access_log=False,
        )
        self.uvicorn = uvicorn.Server(config)
        self._serving = threading.Event()
        self._done = threading.Event()

    def serve_forever(self) -> None:
        """Serve until ``shutdown``, on an event loop of the calling thread's own.  The socket listens
        already, so connections made before the loop runs wait in its backlog."""
        self._serving.set()
        try:
            self.uvicorn.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self) -> None:
        """Stop accepting and finish; returns once ``serve_forever`` has (requests still running get
        ``SHUTDOWN_GRACE_S``, the wait is bounded)."""
        self.uvicorn.should_exit = True
        if self._serving.is_set():
            self._done.wait(SHUTDOWN_GRACE_S + 3)

    def server_close(self) -> None:
        self.socket.close()


def serve_web(
    redis_client: redis.Redis, host: str = "127.0.0.1", port: int = 8080, archive: Archive | None = None
) -> tuple[WebServer, threading.Thread]:
    """Serve in a daemon thread.  ``redis_client`` should come from ``redis_server.connect`` (timeouts);
    archived records are read from ``archive`` (default: ``$ARENA_ARCHIVE_DIR``)."""
    server = WebServer((host, port), redis_client, archive)
    thread = threading.Thread(target=server.serve_forever, name=f"web:{server.server_address[1]}", daemon=True)
    thread.start()
    return server, thread


def run_web(redis_url: str, host: str = "0.0.0.0", port: int = 8080) -> int:
    """Serve until SIGINT or SIGTERM; returns an exit code.  For ``arena web`` (``arena up`` calls ``serve_web``)."""
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
        thread.join(timeout=SHUTDOWN_GRACE_S + 3)
        server.server_close()
        client.close()
    return 0


__all__ = ["Site", "WebServer", "build_app", "run_web", "serve_web"]
