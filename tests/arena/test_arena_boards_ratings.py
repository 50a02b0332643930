"""Ratings from boards against a real Redis: the live rating takes one game per board, the batch rating and
the head-to-head table read the boards the updater stored, the provisional rule; values worked by hand."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from arena.model import BoardEntry, MatchResult, ValidationError
from arena.play.scheduler import LadderConfig
from arena.rating.batch import batch_table, ladder_boards
from arena.rating.bradley_terry import ELO_PER_LOGIT, BatchRating, BoardScore, fit, head_to_head
from arena.rating.ratings import Ratings
from arena.service import Arena
from arena.store import keys

pytestmark = pytest.mark.timeout(60)


def result(match_id: str, seats: tuple[str, str, str, str], scores: list[float], **kw: object) -> MatchResult:
    boards = tuple(BoardEntry((10, 0, 0, 10), s) for s in scores)
    return MatchResult(
        match_id=match_id,
        ladder="lad",
        seats=seats,
        winner=0,
        points=(10, 5),
        deals_played=2,
        scale="imp",
        boards=boards,
        **kw,  # type: ignore[arg-type]
    )


def test_the_live_rating_takes_one_game_per_board(r):
    rt = Ratings(r)
    # The match's winner says team 0, but its boards say: won, tied, lost, lost. Each board is one game.
    assert rt.apply(result("m1", ("a", "b", "a", "b"), [0.25, 0.0, -0.5, -0.125]))
    m = rt.model
    a, b = m.rating(), m.rating()
    for ranks in ([1.0, 2.0], [1.0, 1.0], [2.0, 1.0], [2.0, 1.0]):
        [[a], [b]] = m.rate([[a], [b]], ranks=ranks)
    row = rt.get("lad", "a")
    assert row.mu == pytest.approx(a.mu) and row.sigma == pytest.approx(a.sigma)
    assert row.mu < 25  # two boards lost, one won: below the prior, whatever the match's winner says
    assert (row.games, row.wins, row.boards) == (1, 1, 4)
    # The boards are kept for the batch rating, in one entry per match.
    [raw] = r.lrange(keys.ladder_boards("lad"), 0, -1)
    assert json.loads(raw) == {"match_id": "m1", "a": "a", "b": "b", "scores": [0.25, 0.0, -0.5, -0.125]}
    assert not rt.apply(result("m1", ("a", "b", "a", "b"), [0.25, 0.0, -0.5, -0.125]))  # exactly once
    assert r.llen(keys.ladder_boards("lad")) == 1


def test_teams_of_two_bots_are_not_in_the_batch(r):
    rt = Ratings(r)
    rt.apply(result("m2", ("a", "b", "c", "d"), [1.0]))
    assert rt.get("lad", "c").boards == 1 and r.llen(keys.ladder_boards("lad")) == 0


def test_batch_table_from_stored_boards(r):
    rt = Ratings(r)
    # a scores 0.5 on [-1, 1] (0.75 as a fraction) on each of 40 boards against random: logit(0.75) = ln 3.
    for i in range(10):
        rt.apply(result(f"m{i}", ("a", "random", "a", "random"), [0.5, 0.5, 0.5, 0.5]))
    boards = ladder_boards(r, "lad")
    assert len(boards) == 40 and boards[0] == BoardScore("a", "random", 0.75)
    table = batch_table(r, "lad", "random", rounds=20)
    rows = {row.bot: row for row in table.ratings}
    assert rows["random"].elo == 0.0
    assert rows["a"].elo == pytest.approx(ELO_PER_LOGIT * math.log(3), abs=2.0)  # the prior moves it a little
    [h] = table.head_to_head
    assert (h.a, h.b, h.boards, h.mean) == ("a", "random", 40, 0.5) and h.low == h.high == 0.5
    with pytest.raises(ValueError, match="anchor"):
        batch_table(r, "lad", "nobody")


def test_pair_sums_give_the_fit_of_every_board() -> None:
    # The fit on sums per pair is the fit on the boards: here by hand, a 3-of-4 record in either order.
    one_way = [BoardScore("a", "z", 1.0)] * 3 + [BoardScore("a", "z", 0.0)]
    other_way = [BoardScore("z", "a", 0.0)] * 3 + [BoardScore("z", "a", 1.0)]
    assert fit(one_way * 50, "z")["a"] == pytest.approx(fit(other_way * 50, "z")["a"])
    assert fit(one_way * 50, "z")["a"] == pytest.approx(math.log(3), abs=0.01)


def test_head_to_head_by_hand() -> None:
    # b against a: fractions 1, 0.5, 0 -> scores for a (first by name) -1, 0, +1: mean 0, sd 1, n 3.
    rows = head_to_head([BoardScore("b", "a", 1.0), BoardScore("b", "a", 0.5), BoardScore("a", "b", 1.0)])
    [h] = rows
    half = 1.959964 * 1 / math.sqrt(3)
    assert (h.a, h.b, h.boards, h.mean) == ("a", "b", 3, 0.0)
    assert h.low == pytest.approx(-half) and h.high == pytest.approx(half)


def test_provisional_until_narrow_and_played() -> None:
    assert BatchRating("a", 100.0, 0.0, 199.0, 100).provisional() is False
    assert BatchRating("a", 100.0, 0.0, 200.0, 100).provisional() is True  # the interval is 200 Elo wide
    assert BatchRating("a", 100.0, 50.0, 60.0, 99).provisional() is True  # too few boards


def test_the_boards_list_keeps_the_latest_matches_only(r):
    rt = Ratings(r, boards_cap=3)
    for i in range(5):
        rt.apply(result(f"m{i}", ("a", "random", "a", "random"), [0.5]))
    kept = [json.loads(x)["match_id"] for x in r.lrange(keys.ladder_boards("lad"), 0, -1)]
    assert kept == ["m2", "m3", "m4"]
    assert rt.get("lad", "a").boards == 5  # the rating counted every board; only the list is trimmed


def test_the_batch_table_is_fitted_once_until_a_board_is_added(r):
    service = Arena(r)
    lid = service.scheduler.create_ladder(LadderConfig("pilotta", deals=2, target=None))
    a = service.registry.register("alpha", "tests", endpoint="127.0.0.1:50081", games=["pilotta"])[0].bot_id
    rnd = service.registry.register("random", "tests", endpoint="127.0.0.1:50082", games=["pilotta"])[0].bot_id

    def play(rt: Ratings, mid: str, scores: list[float]) -> None:
        assert rt.apply(dataclasses.replace(result(mid, (a, rnd, a, rnd), scores), ladder=lid))

    rt = Ratings(r)
    for i in range(3):
        play(rt, f"m{i}", [0.5, -0.25])
    first = service.batch_ratings(lid, "random")
    again = service.batch_ratings(lid, "random")
    assert again == first and service.batch.computed == 1  # the second request did not refit
    assert first["boards"] == 6
    play(rt, "m3", [1.0])
    after = service.batch_ratings(lid, "random")
    assert after["boards"] == 7 and service.batch.computed == 2
    # A full list trimmed at its head keeps its length (4 matches: m0-m3, then m1-m4) but gets a new last
    # entry: seen as a change too.  Boards left: m1 2, m2 2, m3 1, m4 1.
    play(Ratings(r, boards_cap=4), "m4", [1.0])
    assert r.llen(keys.ladder_boards(lid)) == 4
    assert service.batch_ratings(lid, "random")["boards"] == 6 and service.batch.computed == 3
    service.registry.register("idle", "tests", endpoint="127.0.0.1:50083", games=["pilotta"])
    with pytest.raises(ValidationError, match="anchor"):  # refused, and nothing cached for it
        service.batch_ratings(lid, "idle")
    assert service.batch.computed == 3
