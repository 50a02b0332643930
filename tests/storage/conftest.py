"""Fixtures of the storage tests: a REAL redis-server per module (flushed per test), and match results whose
records are real engine games of 8 deals per leg, annotated as the referee annotates them (latency and CPU
time on every action), stored exactly as a worker stores them (``MatchQueue.record_result``)."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterator

import pytest
import redis

from arena.model import BotStats, LatencySummary, MatchResult
from arena.store import keys
from arena.store.redis_server import EmbeddedRedis, connect
from referee.cli import play_random_game
from referee.record import ActionNote, RecordExtras, game_to_record
from referee.rules import get_ruleset
from tests.redis_fixtures import module_redis  # noqa: F401 (fixtures, found by pytest)

LADDER = "cy-store"
A, B = "b-alpha", "b-beta"


@pytest.fixture
def r(module_redis: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = connect(module_redis.url)
    client.flushall()
    client.config_set("maxmemory", 0)
    try:
        yield client
    finally:
        client.close()


@functools.cache  # the same arguments always make the same (frozen) result; the maxmemory tests make hundreds
def make_result(match_id: str, seed: int, deals: int = 8, finished: float = 1_700_000_000.0) -> MatchResult:
    """A duplicate pair of ``deals`` deals per leg between A and B, from real engine games."""
    ruleset = get_ruleset("pilotta", {"target": 1_000_000})  # a target no one reaches: exactly ``deals``
    rng = random.Random(seed)
    legs = []
    for leg in range(2):
        game = play_random_game(ruleset, seed, max_deals=deals)
        players = [A, B] * 2 if leg == 0 else [B, A] * 2
        notes = {
            (d, i): ActionNote(latency_ms=round(rng.uniform(1, 900), 3), cpu_ms=round(rng.uniform(0.1, 50), 3))
            for d, deal in enumerate(game.deals)
            for i in range(len(deal.history))
        }
        legs.append(game_to_record(game, RecordExtras(players=players, match_id=match_id, notes=notes)))
    totals = [
        legs[0]["result"]["scores"][0] + legs[1]["result"]["scores"][1],
        legs[0]["result"]["scores"][1] + legs[1]["result"]["scores"][0],
    ]
    record = {
        "format": "pilotta-arena/match-record",
        "format_version": 1,
        "match_id": match_id,
        "legs": legs,
        "result": {"scores": totals},
    }
    n = sum(len(leg["deals"]) for leg in legs)
    stats = {
        bot: BotStats(deals=n, points=totals[side], latency=LatencySummary.from_samples([5.0, 10.0 + side, 80.0]))
        for side, bot in enumerate((A, B))
    }
    return MatchResult(
        match_id=match_id,
        ladder=LADDER,
        seats=(A, B, A, B),
        winner=None if totals[0] == totals[1] else int(totals[1] > totals[0]),
        points=(totals[0], totals[1]),
        deals_played=n,
        stats=stats,
        record=json.dumps(record, separators=(",", ":")),
        finished=finished,
        ruleset="pilotta",
    )


def store_legacy(r: redis.Redis, result: MatchResult) -> None:
    """Store a result as the arena did before records were compressed: the whole JSON in the result key."""
    assert r.set(keys.result(result.match_id), result.to_json(), nx=True)
    r.xadd(keys.RESULTS_STREAM, {"match_id": result.match_id, "ladder": result.ladder})
