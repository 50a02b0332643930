"""ratings.py + stats.py against a real Redis: exactly-once updates, leaderboard, stats."""

from __future__ import annotations

import threading

import pytest
from arena_testkit import make_spec, play

from arena.model import BotStats, LatencySummary, MatchResult
from arena.play.queue import MatchQueue
from arena.play.worker import snapshot
from arena.rating import stats
from arena.rating.ratings import Ratings
from arena.store import keys

pytestmark = pytest.mark.timeout(60)


def result(match_id: str, seats: tuple[str, str, str, str], winner: int | None, **kw) -> MatchResult:
    return MatchResult(
        match_id=match_id, ladder="lad", seats=seats, winner=winner, points=(10, 5), deals_played=1, **kw
    )


def test_apply_is_exactly_once_and_moves_ratings(r):
    rt = Ratings(r)
    res = result("m1", ("a", "b", "a", "b"), winner=0)
    assert rt.apply(res)
    assert not rt.apply(res)
    a, b = rt.get("lad", "a"), rt.get("lad", "b")
    assert a.mu > 25 > b.mu
    assert (a.games, a.wins, b.games, b.losses) == (1, 1, 1, 1)
    assert [row.bot_id for row in rt.leaderboard("lad")] == ["a", "b"]
    assert r.zscore(keys.leaderboard("lad"), "a") == pytest.approx(a.mu - 3 * a.sigma)
    [h] = rt.history("lad", "a")
    assert h.match_id == "m1" and h.mu == a.mu


def test_self_partnered_bot_is_a_team_of_one(r):
    """A 2-bot duplicate match must move ratings exactly like a 1-v-1 game."""
    rt = Ratings(r)
    rt.apply(result("m1", ("a", "b", "a", "b"), winner=0))
    expected = rt.model.rate([[rt.model.rating()], [rt.model.rating()]], ranks=[1.0, 2.0])
    assert rt.get("lad", "a").mu == pytest.approx(expected[0][0].mu)
    assert rt.get("lad", "a").sigma == pytest.approx(expected[0][0].sigma)


def test_team_of_two_and_draw(r):
    rt = Ratings(r)
    rt.apply(result("m1", ("a", "b", "c", "d"), winner=None))
    rows = {row.bot_id: row for row in rt.leaderboard("lad")}
    assert set(rows) == {"a", "b", "c", "d"}
    assert all(row.draws == 1 and row.games == 1 for row in rows.values())
    assert rows["a"].mu == pytest.approx(rows["b"].mu)


def test_stats_are_accumulated_with_latency_histogram(r):
    rt = Ratings(r)
    lat1 = LatencySummary.from_samples([5.0] * 98 + [400.0, 900.0])
    lat2 = LatencySummary.from_samples([7.0] * 100)
    s1 = BotStats(
        deals=8, points=800, contracts_bid=4, contracts_made=3, capots=1, declarations=2, timeouts=1, latency=lat1
    )
    s2 = BotStats(deals=8, points=400, contracts_bid=2, contracts_made=0, illegal_actions=1, latency=lat2)
    rt.apply(result("m1", ("a", "b", "a", "b"), 0, stats={"a": s1, "b": s2}))
    rt.apply(result("m2", ("a", "b", "a", "b"), 0, stats={"a": s1, "b": s2}))
    rt.apply(result("m2", ("a", "b", "a", "b"), 0, stats={"a": s1, "b": s2}))  # duplicate: ignored
    sa = stats.bot_stats(r, "lad", "a")
    assert (sa.matches, sa.deals, sa.points, sa.contracts_bid, sa.contracts_made) == (2, 16, 1600, 8, 6)
    assert (sa.capots, sa.declarations, sa.timeouts) == (2, 4, 2)
    assert sa.points_per_deal == 100.0 and sa.contract_make_rate == 0.75
    assert sa.latency_count == 200 and sa.latency_max_ms == 900.0
    assert 5.0 <= sa.latency_p50_ms <= 5.0 * 1.25
    assert 400.0 <= sa.latency_p99_ms <= 900.0
    sb = stats.bot_stats(r, "lad", "b")
    assert sb.illegal_actions == 2 and sb.contract_make_rate == 0.0
    assert stats.bot_stats(r, "lad", "nobody").matches == 0


def test_two_updaters_count_each_result_once(r):
    """Results recorded through the queue; two updater threads race over them."""
    q = MatchQueue(r)
    rt1, rt2 = Ratings(r), Ratings(r)
    bots = ["a", "b", "c", "d"]
    n = 60
    for i in range(n):
        x, y = bots[i % 4], bots[(i + 1) % 4]
        assert q.record_result(play(make_spec(f"m{i}", bots=(x, y), ladder="lad", seed=i)))
    stop = threading.Event()
    counts: list[int] = []

    def updater(rt: Ratings, name: str) -> None:
        total = 0
        while total < n and not stop.is_set():
            got = rt.process(name, block_ms=50, count=7)
            total += got
            if got == 0 and all(rt.is_applied(f"m{i}") for i in range(n)):
                break
        counts.append(total)

    threads = [threading.Thread(target=updater, args=(rt, f"u{k}")) for k, rt in enumerate((rt1, rt2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    stop.set()
    assert not any(t.is_alive() for t in threads)
    assert sum(counts) == n
    games = sum(rt1.get("lad", b).games for b in bots)
    assert games == 2 * n  # each match counted once for each of its two bots
    assert sum(stats.bot_stats(r, "lad", b).matches for b in bots) == 2 * n
    assert r.xpending(keys.RESULTS_STREAM, keys.RATINGS_GROUP)["pending"] == 0


def test_stale_entries_of_a_dead_updater_are_taken_over(r):
    q = MatchQueue(r)
    rt = Ratings(r)
    q.record_result(play(make_spec("m1", bots=("a", "b"), ladder="lad")))
    # "u-dead" reads the entry and dies before applying it.
    r.xreadgroup(keys.RATINGS_GROUP, "u-dead", {keys.RESULTS_STREAM: ">"}, count=10)
    assert rt.process("u-live", block_ms=10, min_idle_ms=60_000) == 0  # not stale yet
    assert rt.process("u-live", block_ms=10, min_idle_ms=0) == 1
    assert rt.get("lad", "a").games == 1


def test_snapshot_reports_queue_and_ratings(r):
    q = MatchQueue(r)
    Ratings(r)
    q.enqueue(make_spec("m1"))
    q.record_result(play(make_spec("m0")))
    snap = snapshot(r)
    assert snap["queue_depth"] == 1 and snap["results"] == 1 and snap["ratings_lag"] == 1
    assert snap["dead_letters"] == 0 and snap["workers_alive"] == 0


def test_concurrent_apply_of_the_same_result_counts_once(r):
    """Redelivery race: many updaters apply one result at once; WATCH + marker keep it single."""
    rts = [Ratings(r) for _ in range(8)]
    res = result("m1", ("a", "b", "c", "d"), winner=1)
    outcomes: list[bool] = []
    barrier = threading.Barrier(len(rts))

    def go(rt: Ratings) -> None:
        barrier.wait(timeout=10)
        outcomes.append(rt.apply(res))

    threads = [threading.Thread(target=go, args=(rt,)) for rt in rts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(outcomes) == [False] * 7 + [True]
    assert all(rts[0].get("lad", b).games == 1 for b in "abcd")
    assert len(rts[0].history("lad", "a")) == 1


def test_a_new_version_goes_on_from_the_bots_rating_and_starts_its_statistics_anew(r):
    """The decision (docs/arena.md, "Ratings"): the rating is the bot's and continuous across versions;
    statistics are per version.  Two ladders get the same three results; on "lad" a's third match is its
    version 2, on "same" it is still version 1: the ratings are equal, the per-version statistics not."""
    rt = Ratings(r)
    st = BotStats(deals=2, points=50, contracts_bid=2, contracts_made=1, timeouts=1)
    for ladder, later in (("lad", 2), ("same", 1)):
        for i, (winner, va) in enumerate(((0, 1), (1, 1), (0, later))):
            rt.apply(
                MatchResult(
                    match_id=f"{ladder}-m{i}",
                    ladder=ladder,
                    seats=("a", "b", "a", "b"),
                    winner=winner,
                    points=(10, 5),
                    deals_played=2,
                    stats={"a": st, "b": st},
                    forfeit="b timed out" if winner == 0 and i == 2 else None,
                    versions={"a": va, "b": 1},
                )
            )
    a, same = rt.get("lad", "a"), rt.get("same", "a")
    assert (a.mu, a.sigma, a.games, a.wins, a.losses) == (same.mu, same.sigma, 3, 2, 1)
    v1 = stats.summarize("lad", "a", r.hgetall(keys.bot_version_stats("lad", "a", 1)), 1)
    v2 = stats.summarize("lad", "a", r.hgetall(keys.bot_version_stats("lad", "a", 2)), 2)
    assert (v1.matches, v1.won, v1.lost, v1.contracts_bid, v1.timeouts) == (2, 1, 1, 4, 2)
    assert (v2.matches, v2.won, v2.lost, v2.contracts_bid, v2.timeouts) == (1, 1, 0, 2, 1)
    every = stats.bot_stats(r, "lad", "a")
    assert (every.matches, every.won, every.lost, every.forfeits) == (3, 2, 1, 0)
    # b lost the third match by forfeit (in both ladders), and a result without versions counts only in all.
    assert stats.bot_stats(r, "lad", "b").forfeits == 1
    rt.apply(result("m-old", ("a", "b", "a", "b"), 1, stats={"a": st, "b": st}))
    assert stats.bot_stats(r, "lad", "a").matches == 4
    assert r.hgetall(keys.bot_version_stats("lad", "a", 2))["matches"] == "1"
