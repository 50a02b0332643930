"""Lists in pages (issue 15; issue 9's leftover): ``ListBots``, ``MatchHistory`` and ``Leaderboard`` give a
page and the token of the next, never more than the policy's ``page_max`` rows, and a list never carries a
bot's endpoint or manifest (only its kind).  Real Redis, the real API over gRPC."""

from __future__ import annotations

import time

import grpc
import pytest
from abuse_helpers import TIMEOUT, rpc_error, sample_manifest
from pilotta.arena.v1 import arena_pb2

from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.model import MatchResult, MatchSpec
from arena.play.queue import MatchQueue
from arena.play.scheduler import LadderConfig, Scheduler
from arena.rating.ratings import Ratings
from arena.store import keys

Code = grpc.StatusCode


def _pages(fetch):
    """Every page of a list: fetch(token) -> (rows, next token)."""
    pages, token = [], ""
    while True:
        rows, token = fetch(token)
        pages.append(rows)
        if not token:
            return pages
        assert len(pages) < 20, "the pages never end"


@pytest.mark.timeout(60)
def test_list_bots_in_pages_without_endpoints_or_manifests(r, api, stub):
    reg = Registry(r)
    for name in ("echo", "alpha", "delta", "bravo", "charlie"):
        if name in ("alpha", "delta"):
            reg.register(name, "o", endpoint="192.0.2.1:7000", games=["pilotta"])
        else:
            reg.register(name, "o", manifest=sample_manifest("random"), manifest_dir="/srv/bots/random")
    token = reg.register("foxtrot", "o", endpoint="192.0.2.1:7001", games=["pilotta"])[1]
    reg.retire(reg.by_name("foxtrot").bot_id, token)

    def fetch(include_retired):
        def page(token):
            reply = stub.ListBots(
                arena_pb2.ListBotsRequest(page_token=token, limit=2, include_retired=include_retired),
                timeout=TIMEOUT,
            )
            for b in reply.bots:
                assert (b.endpoint, b.manifest_json) == ("", ""), "a list shows no endpoint and no manifest"
            return [(b.name, b.kind) for b in reply.bots], reply.next_page_token

        return page

    assert _pages(fetch(False)) == [
        [("alpha", "endpoint"), ("bravo", "manifest")],
        [("charlie", "manifest"), ("delta", "endpoint")],
        [("echo", "manifest")],
    ]
    assert [n for page in _pages(fetch(True)) for n, _kind in page][-1] == "foxtrot"
    # The page size is capped by the policy, and a token the arena never gave is refused.
    store_policy(r, Policy(page_max=3))
    assert len(stub.ListBots(arena_pb2.ListBotsRequest(limit=1000), timeout=TIMEOUT).bots) == 3
    e = rpc_error(lambda: stub.ListBots(arena_pb2.ListBotsRequest(page_token="../x"), timeout=TIMEOUT))
    assert e.code() == Code.INVALID_ARGUMENT and "page_token" in e.details()


@pytest.mark.timeout(60)
def test_match_history_and_leaderboard_in_pages(r, api, stub):
    reg = Registry(r)
    bots = [reg.register(f"bot{i}", "o", endpoint="192.0.2.1:7000", games=["pilotta"])[0].bot_id for i in range(4)]
    lid = Scheduler(r, reg, Ratings(r), MatchQueue(r)).create_ladder(LadderConfig("pilotta", deals=1, target=None))
    queue, ratings = MatchQueue(r), Ratings(r)
    # Five matches: bot0 beats bot1, bot2 beats bot3, ... so that the four bots are rated apart.
    pairs = [(0, 1), (2, 3), (0, 2), (1, 3), (0, 3)]
    for i, (a, b) in enumerate(pairs):
        spec = MatchSpec(f"m-{i}", lid, "pilotta", i + 1, (bots[a], bots[b]), deals=1)
        result = MatchResult(spec.match_id, lid, spec.seats(), 0, (100, 50), 1, finished=1.0 + i)
        assert queue.record_result(result)
        ratings.apply(result)  # or the API's own ratings updater applies it first: rated once either way
    deadline = time.monotonic() + 30  # a bound for a loaded machine
    while not all(r.exists(keys.rated(f"m-{i}")) for i in range(len(pairs))):
        assert time.monotonic() < deadline, "the five results were not all rated within 30 s"
        time.sleep(0.05)

    def history(token):
        reply = stub.MatchHistory(arena_pb2.MatchHistoryRequest(ladder=lid, limit=2, page_token=token), timeout=TIMEOUT)
        return [m.match_id for m in reply.matches], reply.next_page_token

    pages = _pages(history)
    assert [m for page in pages for m in page] == ["m-4", "m-3", "m-2", "m-1", "m-0"]  # newest first
    assert [len(p) for p in pages[:2]] == [2, 2]

    def board(token):
        reply = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=lid, limit=3, page_token=token), timeout=TIMEOUT)
        return [(e.rank, e.bot) for e in reply.entries], reply.next_page_token

    pages = _pages(board)
    whole = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=lid), timeout=TIMEOUT).entries
    assert [row for page in pages for row in page] == [(e.rank, e.bot) for e in whole]
    assert [len(p) for p in pages] == [3, 1] and whole[0].bot == "bot0"  # 3 wins of 3
    for bad in ("x", "-1", "99999999"):
        e = rpc_error(
            lambda bad=bad: stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=lid, page_token=bad), timeout=TIMEOUT)
        )
        assert e.code() == Code.INVALID_ARGUMENT and "page_token" in e.details()
