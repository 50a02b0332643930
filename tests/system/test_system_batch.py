"""Ratings from boards on a real ladder: the API, its ratings updater, a real ``arena worker`` process playing
the real sample bots (random, the Node.js bot, heuristic) with the real runner. The live OpenSkill rating is
fed each board; the batch rating refits every stored board; both put the clearly weaker bot (random) last,
and the head-to-head table agrees with them."""

from __future__ import annotations

import shutil

import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import SAMPLES, TIMEOUT, register, rpc_error, wait_until, worker_proc

from arena.rating.bradley_terry import PROVISIONAL_BOARDS
from arena.rating.ratings import Ratings

MATCHES, BOARDS = 12, 3
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (SAMPLES / "node" / "node_modules").is_dir(),
    reason="the Node.js sample bot needs node and its modules (make node-deps)",
)


@needs_node
@pytest.mark.timeout(170)
def test_live_and_batch_ratings_give_the_same_order(r, admin, api, stub, module_redis, tmp_path):
    # "random" (the batch rating's default anchor) plays as the uniform bot: it loses nearly every board, so
    # the order below is clear on a few dozen boards.
    register(stub, admin, "random", "uniform")
    for name in ("heuristic", "node"):
        register(stub, admin, name)
    run = stub.StartLadder(
        arena_pb2.StartLadderRequest(token=admin, variant="pilotta", deals=BOARDS, matches=MATCHES, max_in_flight=2),
        timeout=TIMEOUT,
    )
    worker = worker_proc(
        module_redis.url, "w-batch", tmp_path / "w.log", "--max-matches", str(MATCHES), "--bot-logs", str(tmp_path)
    )
    try:

        def rated():
            board = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=run.ladder), timeout=TIMEOUT)
            return board if sum(e.games for e in board.entries) == 2 * MATCHES else None

        live = wait_until(rated, 150, f"{MATCHES} matches played and rated")
        assert worker.wait(timeout=30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    batch = stub.BatchRatings(arena_pb2.BatchRatingsRequest(ladder=run.ladder), timeout=TIMEOUT)
    assert batch.anchor == "random" and batch.boards == MATCHES * BOARDS
    by_elo = [row.bot for row in sorted(batch.ratings, key=lambda row: -row.elo)]
    by_mu = [e.bot for e in sorted(live.entries, key=lambda e: -e.mu)]
    # random is clearly below both others (it loses nearly every board); heuristic and node are close on a
    # few dozen boards, so only the clearly separated order is asserted, in both ratings.
    assert by_elo[-1] == by_mu[-1] == "random" and set(by_elo[:2]) == set(by_mu[:2]) == {"heuristic", "node"}
    rows = {row.bot: row for row in batch.ratings}
    assert rows["random"].elo == 0.0 and rows["heuristic"].elo > 0 and rows["node"].elo > 0
    assert sum(row.boards for row in batch.ratings) == 2 * MATCHES * BOARDS
    # Too few boards to be ranked: every rating is provisional, shown without a rank.
    assert all(row.provisional and not row.HasField("rank") for row in batch.ratings)
    assert all(row.boards < PROVISIONAL_BOARDS for row in batch.ratings)
    # Head to head: each pair that met, its mean board score for the first (by name) against the second.
    pairs = {(h.a, h.b): h for h in batch.head_to_head}
    assert sum(h.boards for h in pairs.values()) == MATCHES * BOARDS
    if ("heuristic", "random") in pairs:
        assert pairs[("heuristic", "random")].mean > 0
    if ("node", "random") in pairs:
        assert pairs[("node", "random")].mean > 0
    # The live rating was fed each board: games count matches, boards the boards rated.
    rows_live = Ratings(r).leaderboard(run.ladder)
    assert sum(row.games for row in rows_live) == 2 * MATCHES
    assert sum(row.boards for row in rows_live) == 2 * MATCHES * BOARDS
    # A bad anchor is named.
    error = rpc_error(
        lambda: stub.BatchRatings(arena_pb2.BatchRatingsRequest(ladder=run.ladder, anchor="nobody"), timeout=TIMEOUT)
    )
    assert "nobody" in error.details()
