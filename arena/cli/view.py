"""``arena view FILE``: the replay viewer for a record on disk, without an arena.

Serves the web pages' replay viewer (``arena/web/templates/replay.html`` with ``static/replay.js``) for one
match record written by ``arena match --out`` (or one game record, ``referee play --out``) on a local port,
prints its address, and serves until Ctrl-C (SIGINT or SIGTERM) or, with ``--for SECONDS``, until that
time is up. The file is read and replayed first (``referee verify``'s checks): a file that is not JSON, not a
record, or whose stated values the rules do not give is refused with exit code 2 and a message that names
what was wrong, before anything is served.

The viewer is the owner's own: it also shows what the referee noted of a bot's refused answers (the record's
``answer`` and ``error``), which the arena's public pages leave out.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from arena.model.replay import SEAT_NAMES, record_legs, replay_payload
from arena.web.render import CONTENT_SECURITY_POLICY, Pages
from referee.errors import RecordError
from referee.record import verify_record
from referee.record_format import FORMAT, MATCH_RECORD_FORMAT
from referee.verify import load_record
from referee.verify_match import verify_match_record

STATIC = Path(__file__).resolve().parents[1] / "web" / "static"
_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
# As the arena's pages: nothing but the page's own files may load or run.
EXIT_BAD_FILE = 2


@dataclass(frozen=True)
class LocalMatch:
    """A record on disk, checked: its text (for the download link) and the viewer's payload."""

    match_id: str
    text: str
    payload: Mapping[str, Any]


def load_match(path: Path) -> LocalMatch:
    """Read, parse and replay the record at ``path``; RecordError (or OSError) names what is wrong."""
    text = path.read_text(encoding="utf-8")
    record = load_record(text)
    kind = record.get("format")
    if kind == MATCH_RECORD_FORMAT:
        verify_match_record(record)
    elif kind == FORMAT:
        verify_record(record)
    else:
        raise RecordError(f"not a record: field 'format' is {kind!r}, not {MATCH_RECORD_FORMAT!r} or {FORMAT!r}")
    legs = record_legs(record)
    players = _seats(record, legs)
    result = record.get("result") or {}
    forfeit = result.get("forfeit")
    match_id = str(record.get("match_id") or (legs[0].get("match_id") if legs else "") or path.stem)
    summary = {
        "match_id": match_id,
        "ladder": "",
        "seats": players,
        "winner": result.get("winner"),
        "points": result.get("scores"),
        "deals_played": sum(len(leg["deals"]) for leg in legs),
        "forfeit": forfeit.get("reason") if isinstance(forfeit, Mapping) else None,
        "finished": None,
    }
    payload = replay_payload(summary, record, {p: p for p in players}, private=True, record_url="/record.json")
    return LocalMatch(match_id, text, payload)


def _seats(record: Mapping[str, Any], legs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The bot in each seat of the first leg: its ``players``; without a leg (a forfeit before any), the
    match's bots by team (team 0 holds seats 0 and 2); without either, the seats' own names."""
    recorded = legs[0].get("players") if legs else None
    if isinstance(recorded, list) and len(recorded) == 4 and all(isinstance(p, str) for p in recorded):
        return [str(p) for p in recorded]
    bots = record.get("bots")
    if isinstance(bots, list) and all(isinstance(b, Mapping) for b in bots):
        teams = [[str(b.get("name")) for b in bots if b.get("team") == t] for t in (0, 1)]
        if all(teams):
            return [teams[0][0], teams[1][0], teams[0][-1], teams[1][-1]]
    return list(SEAT_NAMES)


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    timeout = 15.0  # a client that does not finish its request is dropped
    server_version = "pilotta-arena-view"

    def log_message(self, format: str, *args: Any) -> None:  # Any: as BaseHTTPRequestHandler declares it
        pass  # the terminal shows the address and errors, not every request

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        m = self.server.match
        status, ctype, body = 404, "text/plain; charset=utf-8", b"not found\n"
        if path in ("/", "/replay/" + quote(m.match_id, safe="")):
            status, ctype, body = 200, "text/html; charset=utf-8", self.server.page
        elif path == "/record.json":
            status, ctype, body = 200, "application/json", m.text.encode()
        elif path.startswith("/static/") and path[8:] in self.server.static:
            name = path[8:]
            status, ctype, body = 200, _TYPES[Path(name).suffix], self.server.static[name]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        if path == "/record.json":
            self.send_header("Content-Disposition", f'attachment; filename="match-{quote(m.match_id)}.json"')
        self.end_headers()
        self.wfile.write(body)


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr: tuple[str, int], match: LocalMatch) -> None:
        self.match = match
        self.static = {p.name: p.read_bytes() for p in STATIC.iterdir() if p.suffix in _TYPES}
        page = Pages().render("replay.html", title=f"Match {match.match_id}", active="", payload=match.payload)
        self.page = page.encode()
        super().__init__(addr, _Handler)

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), int(self.server_address[1])
        return f"http://{host}:{port}/replay/{quote(self.match.match_id, safe='')}"


def serve_view(match: LocalMatch, host: str = "127.0.0.1", port: int = 0) -> tuple[ViewServer, threading.Thread]:
    """Serve the viewer in a daemon thread (port 0: a free one); stop with shutdown() then server_close()."""
    server = ViewServer((host, port), match)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    return server, thread


def cmd_view(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        match = load_match(path)
    except (OSError, UnicodeDecodeError) as e:
        print(f"error: {path}: cannot read it: {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    except RecordError as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    try:
        server, thread = serve_view(match, args.host, args.port)
    except OSError as e:
        print(f"error: cannot listen on {args.host}:{args.port} (--host, --port): {e}", file=sys.stderr)
        return EXIT_BAD_FILE
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    until = f"for {args.seconds:g} s" if args.seconds else "until Ctrl-C"
    print(f"viewer: {server.url} (serving {until})", flush=True)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    try:
        while not stop.wait(0.2) and thread.is_alive():
            if deadline is not None and time.monotonic() >= deadline:
                break
    finally:
        server.shutdown()
        server.server_close()
    return 0


def add_view_parser(sub: Any) -> None:
    p = sub.add_parser(
        "view",
        help="serve the replay viewer for a record written by `arena match`",
        description="Serves the replay viewer for one match record (or game record) on a local port and prints "
        "its address. Exit code 2: the file cannot be read, is not a record, or does not replay.",
        epilog="examples:\n  arena view m.json                 # a record written by arena match --out m.json\n"
        "  arena view var/arena/matches/match-local-1a2b3c4d.json --port 8000   # where arena match puts one",
    )
    p.add_argument("file", metavar="FILE", help="a record written by `arena match --out` or `referee play --out`")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port)")
    p.add_argument(
        "--for",
        dest="seconds",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="stop after this long (0: until Ctrl-C)",
    )
    p.set_defaults(func=cmd_view)
