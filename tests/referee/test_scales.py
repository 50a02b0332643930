"""Board scales on hand-built pairs of tables, each score worked out by hand from the table in
referee/scales.py (IMP steps at 10, 30, 60, 100, 150, 220, 300, 400 Pilotta points; clip at 50)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.scales import ScaleError, as_fraction, board_result, board_score, imps, pilotta_points

# A Pilotta board: at table 1 team 0 made its contract and wrote 112 to team 1's 50; at table 2 team 1, holding
# the same cards, made it too but wrote 90 to team 0's 72. Margin for team 0: (112 - 50) + (72 - 90) = 44.
TABLES = ((112, 50), (72, 90))


def test_a_pilotta_board_on_each_scale() -> None:
    assert board_result("winloss", "pilotta", 0, TABLES).score == 1.0
    assert board_result("clipped", "pilotta", 0, TABLES).score == 44 / 50  # inside the clip
    assert board_result("imp", "pilotta", 0, TABLES).score == 2 / 8  # 30 <= 44 < 60: 2 IMPs
    assert board_result("imp", "pilotta", 0, TABLES).margin == 44


def test_a_swing_of_a_whole_deal() -> None:
    # Table 1: team 0 set team 1's contract, 162 to 0; table 2: team 0 as bidders made it, 162 to 0.
    # Margin 324: clipped to 50 (score 1), 300 <= 324 < 400: 7 IMPs; the other team's is the negation.
    tables = ((162, 0), (162, 0))
    assert board_result("clipped", "pilotta", 0, tables).score == 1.0
    assert board_result("imp", "pilotta", 0, tables).score == 7 / 8
    assert board_result("imp", "pilotta", 0, ((0, 162), (0, 162))).score == -7 / 8


def test_a_board_thrown_in_at_one_table() -> None:
    # Table 1 thrown in (nothing written), table 2 team 1 wrote 26 to team 0's 136: margin -110.
    result = board_result("imp", "pilotta", 3, ((0, 0), (26, 136)), (True, False))
    assert result.margin == -110 and result.score == -4 / 8  # 100 <= 110 < 150: 4 IMPs to team 1
    assert board_result("winloss", "pilotta", 3, ((0, 0), (26, 136))).score == -1.0
    assert board_result("clipped", "pilotta", 3, ((0, 0), (26, 136))).score == -1.0
    assert result.to_json() == {
        "board": 3,
        "points": [[0, 0], [26, 136]],
        "thrown_in": [True, False],
        "margin": -110,
        "score": -0.5,
    }


def test_a_tied_board() -> None:
    for scale in ("winloss", "clipped", "imp"):
        assert board_result(scale, "pilotta", 0, ((90, 72), (72, 90))).score == 0.0
    assert board_score("imp", "pilotta", 9) == 0.0  # under 10 points: no IMP
    assert board_score("winloss", "pilotta", 9) == 1.0


def test_rulesets_are_brought_to_pilotta_points() -> None:
    # Bulgarian writes points divided by ten: a margin of 5 is 50 Pilotta points (162 / 16.2 = 10 each).
    assert pilotta_points("bulgarian", 5) == pytest.approx(50.0)
    assert board_score("clipped", "bulgarian", 5) == pytest.approx(1.0)
    assert board_score("imp", "bulgarian", 5) == 2 / 8  # 50 Pilotta points: 30 <= 50 < 60
    # Coinche writes the contract's value too (262 a deal): a margin of 131 is 81 Pilotta points, 3 IMPs.
    assert pilotta_points("coinche", 131) == pytest.approx(81.0)
    assert board_score("imp", "coinche", 131) == 3 / 8
    assert board_score("imp", "french", 131) == 4 / 8  # French writes 162 a deal: 131 points, 4 IMPs


def test_unknown_scales_and_rulesets_are_named() -> None:
    with pytest.raises(ScaleError, match="unknown board scale 'raw'"):
        board_score("raw", "pilotta", 3)
    with pytest.raises(ScaleError, match="no point unit for ruleset 'skat'"):
        board_score("imp", "skat", 3)
    with pytest.raises(ValueError, match="two tables"):
        board_result("imp", "pilotta", 0, ((1, 2),))


@given(st.integers(-2000, 2000), st.sampled_from(["winloss", "clipped", "imp"]))
def test_scores_are_antisymmetric_bounded_and_monotone(margin: int, scale: str) -> None:
    s = board_score(scale, "pilotta", margin)
    assert -1.0 <= s <= 1.0 and board_score(scale, "pilotta", -margin) == -s
    assert board_score(scale, "pilotta", margin + 1) >= s
    assert 0.0 <= as_fraction(s) <= 1.0
    assert abs(imps(margin)) <= 8
