"""Duplicate matches of boards: each board (pack and dealer) played once at each table, whatever happens at
the other; a board thrown in at one table is its result there and shifts nothing.

The bots make throw-ins happen on demand: team A (``bid_with_jh``) bids only holding the jack of hearts, team B
(``pass``) never bids. Pilotta deals 3-2-3 from the seat after the dealer, so the pack's first card goes to
seat dealer + 1: with the jack of hearts there, the board is played at the table where team A sits in that
seat and thrown in (all four pass) at the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from referee.boards import Board, parse_pack
from referee.cards import card_name
from referee.errors import RecordError
from referee.game import Chance
from referee.match import DUPLICATE_BOARDS, MatchSettings, run_match
from referee.scales import DEFAULT_SCALE
from referee.verify_match import verify_match_record

StartBot = Callable[..., tuple[str, Any]]
ORDER = [r + s for s in "CDHS" for r in "789TJQKA"]


def pack_with_jh_first(rotate: int) -> tuple[int, ...]:
    rest = [c for c in ORDER if c != "JH"]
    rest = rest[rotate:] + rest[:rotate]
    return parse_pack(["JH", *rest])


def settings(**kw: Any) -> MatchSettings:
    base: dict[str, Any] = {"duplicate": True, "deadline_ms": 1000, "time_bank_ms": 5000}
    base.update(kw)
    return MatchSettings(**base)


@pytest.mark.timeout(60)
def test_a_board_thrown_in_at_one_table_shifts_nothing(start_bot: StartBot) -> None:
    a, _ = start_bot("bid_with_jh")
    b, _ = start_bot("pass")
    # Team A sits in seats 0 and 2 at table 1 and in seats 1 and 3 at table 2 (every bot one seat on).
    # Board 1: dealer 0, the jack to seat 1: team B's at table 1 (thrown in), team A's at table 2 (played).
    # Board 2: dealer 3, the jack to seat 0: team A's at table 1 (played), team B's at table 2 (thrown in).
    # Board 3: dealer 1, the jack to seat 2: played at table 1, thrown in at table 2.
    boards = (
        Board(pack_with_jh_first(0), 0),
        Board(pack_with_jh_first(5), 3),
        Board(pack_with_jh_first(11), 1),
    )
    out = run_match([a, b], settings(boards=boards), "boards-thrown")
    assert out.forfeit is None
    legs = out.record["legs"]
    for leg in legs:
        assert len(leg["deals"]) == 3, "each table plays each board once, thrown in or not"
        for deal, board in zip(leg["deals"], boards, strict=True):
            assert deal["deck"] == [card_name(c) for c in board.pack]
            assert deal["dealer"] == board.dealer
    assert [[leg["deals"][i]["thrown_in"] for leg in legs] for i in range(3)] == [
        [True, False],
        [False, True],
        [False, True],
    ]
    assert [b.thrown_in for b in out.boards] == [(True, False), (False, True), (False, True)]
    for result, thrown_table in zip(out.boards, (0, 1, 1), strict=True):
        assert result.points[thrown_table] == (0, 0)
        played = result.points[1 - thrown_table]
        assert played[0] + played[1] > 0  # the played board wrote points
    # The match's points per team are its boards' points, and the record states each board.
    assert list(out.scores) == [sum(r.points[t][team] for r in out.boards for t in (0, 1)) for team in (0, 1)]
    assert [r["thrown_in"] for r in out.record["board_results"]] == [[True, False], [False, True], [False, True]]
    assert out.record["boards"] == 3 and out.record["deals"] is None and out.record["scale"] == DEFAULT_SCALE
    assert all(leg["to_target"] is False for leg in legs)
    assert out.legs[0].reason == "3 boards played"
    verify_match_record(out.record)  # every leg replays, to no target


@pytest.mark.timeout(60)
def test_boards_from_the_seed_are_fixed_before_the_match(start_bot: StartBot) -> None:
    """Without given boards a duplicate match draws its boards from the seed: the seed's packs in turn, the
    dealer one seat on each board from the seed's first dealer, at both tables, however many are thrown in
    (in Pilotta a thrown-in deal is dealt again by the same dealer: in a game it would shift every later one)."""
    a, _ = start_bot("bid_with_jh")
    b, _ = start_bot("pass")
    seed, n = 17, 6
    out = run_match([a, b], settings(seed=seed, deals=n), "boards-seeded")
    chance = Chance(seed)
    first = chance.first_dealer
    legs = out.record["legs"]
    thrown = [deal["thrown_in"] for leg in legs for deal in leg["deals"]]
    assert any(thrown) and not all(thrown)
    for leg in legs:
        assert [d["dealer"] for d in leg["deals"]] == [(first + i) % 4 for i in range(n)]
        assert [d["deck"] for d in leg["deals"]] == [[card_name(c) for c in chance.deck(i)] for i in range(n)]
    assert len(out.boards) == n
    # Each board is thrown in at exactly one table: the jack of hearts is team A's at one table only.
    assert all(sum(r.thrown_in) == 1 for r in out.boards)
    verify_match_record(out.record)


def test_a_duplicate_match_is_a_number_of_boards() -> None:
    assert len(settings().match_boards() or ()) == DUPLICATE_BOARDS
    assert len(settings(deals=5).match_boards() or ()) == 5
    assert settings(duplicate=False, deals=5).match_boards() is None
    with pytest.raises(ValueError, match="unknown board scale 'elo'"):
        settings(deals=2, scale="elo").validate()


@pytest.mark.timeout(60)
def test_verify_refuses_a_board_result_made_wrong(start_bot: StartBot) -> None:
    a, _ = start_bot("random", seed=3)
    b, _ = start_bot("random", seed=4)
    out = run_match([a, b], settings(seed=5, deals=2), "boards-verify")
    verify_match_record(out.record)
    out.record["board_results"][1]["score"] = 0.25 if out.record["board_results"][1]["score"] != 0.25 else 0.5
    with pytest.raises(RecordError, match="board_results"):
        verify_match_record(out.record)
    out.record["scale"] = "elo"
    with pytest.raises(RecordError, match="scale must be one of winloss, clipped, imp"):
        verify_match_record(out.record)
