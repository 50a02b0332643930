"""Board scales: one duplicate board's result as a score for one team, in [-1, 1].

Pure logic, no I/O. A *board* is one pack and its dealer played at both tables of a duplicate match, the
partnerships swapped; its *margin* for team 0 is what team 0 wrote less what team 1 wrote, added over both
tables (luck of the cards cancels; what is left is play). A scale turns that margin into a board score:

``winloss``   1 for a won board, 0 for a tied one, -1 for a lost one;
``clipped``   the margin clipped to +-50 points, over 50;
``imp``       the margin compressed by ``IMP_TABLE``, like bridge's IMPs, over its top value (8).

Points are first brought to one unit across the family, because the rulesets write on different scales:
Bulgarian Belote writes every total divided by ten (a deal's 162 card points are written as 16), Coinche adds
the contract's value to the points a side made (a made 100 contract writes about 162 + 100 between both
sides, a capot 250 and more), the others write a deal's 162 card points as they are. ``POINT_UNITS`` holds
what an ordinary deal writes in all in each ruleset; a margin is multiplied by ``162 / unit`` into
*Pilotta points* before any scale applies, so a clip at 50 or an IMP step means the same share of a deal
in every ruleset.

Which scale needs the fewest boards to tell two bots apart was measured (``bench/bench_scales.py``;
figures in docs/arena.md); ``DEFAULT_SCALE`` is the winner, the others stay options.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from referee.game import Game

SCALES = ("winloss", "clipped", "imp")
DEFAULT_SCALE = "winloss"  # fewest boards to a decision, measured: docs/arena.md

# What an ordinary deal writes between both sides, per ruleset (see the module docstring).
POINT_UNITS: dict[str, float] = {
    "pilotta": 162.0,
    "french": 162.0,
    "bela": 162.0,
    "bulgarian": 16.2,  # written divided by ten
    "coinche": 262.0,  # the 162 card points and a typical contract of 100 added to the side that made it
}
REFERENCE_UNIT = 162.0
CLIP = 50.0  # Pilotta points

# The IMP-like table in Pilotta points: a board margin of at least IMP_TABLE[k - 1] (and less than
# IMP_TABLE[k]) is worth k IMPs. Steps widen as the margin grows, as bridge's do, so that one swing of a
# whole deal (a contract made at one table and set at the other: about 2 x 162) counts a few boards' worth,
# not the tens of boards' worth a raw margin would make it: 10 points (a belote, a small declaration) is
# one IMP; 100 (most of a deal's card points) is 4; a swing of two whole deals or more is the top, 8.
IMP_TABLE: tuple[int, ...] = (10, 30, 60, 100, 150, 220, 300, 400)
IMP_MAX = len(IMP_TABLE)


class ScaleError(ValueError):
    """An unknown scale or ruleset; the message names it and the known ones."""


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ScaleError(f"unknown board scale {scale!r}: the scales are {', '.join(SCALES)}")
    return scale


def pilotta_points(ruleset: str, points: float) -> float:
    """``points`` written in ``ruleset`` in Pilotta points (162 a deal)."""
    unit = POINT_UNITS.get(ruleset)
    if unit is None:
        raise ScaleError(f"no point unit for ruleset {ruleset!r}: the known ones are {', '.join(POINT_UNITS)}")
    return points * REFERENCE_UNIT / unit


def imps(points: float) -> int:
    """The IMPs of a margin in Pilotta points, signed."""
    steps = bisect.bisect_right(IMP_TABLE, abs(points))
    return steps if points >= 0 else -steps


def board_score(scale: str, ruleset: str, margin: float) -> float:
    """Team 0's score on ``scale`` for a board whose margin (team 0 less team 1, both tables) is ``margin``
    points as ``ruleset`` writes them."""
    check_scale(scale)
    m = pilotta_points(ruleset, margin)
    if scale == "winloss":
        return float((m > 0) - (m < 0))
    if scale == "clipped":
        return max(-CLIP, min(CLIP, m)) / CLIP
    return imps(m) / IMP_MAX


def as_fraction(score: float) -> float:
    """A board score in [-1, 1] as a fraction in [0, 1] (1 won, 0.5 tied, 0 lost), as Bradley–Terry takes it."""
    return (score + 1.0) / 2.0


@dataclass(frozen=True)
class BoardResult:
    """One board of a duplicate match: what each team wrote at each table, and its score for team 0.

    ``points[t]`` is (team 0's, team 1's) points at table ``t`` (table 0 is the first leg); a board thrown in
    at a table wrote nothing there."""

    board: int  # from 0, in the match's order of boards
    points: tuple[tuple[int, int], tuple[int, int]]
    thrown_in: tuple[bool, bool]
    score: float  # team 0's, on the match's scale; team 1's is its negation

    @property
    def margin(self) -> int:
        (a0, b0), (a1, b1) = self.points
        return a0 - b0 + a1 - b1

    def to_json(self) -> dict[str, object]:
        return {
            "board": self.board,
            "points": [list(self.points[0]), list(self.points[1])],
            "thrown_in": list(self.thrown_in),
            "margin": self.margin,
            "score": self.score,
        }


def board_result(
    scale: str,
    ruleset: str,
    board: int,
    points: Sequence[Sequence[int]],
    thrown_in: Sequence[bool] = (False, False),
) -> BoardResult:
    """A board's result from each table's (team 0, team 1) points."""
    if len(points) != 2 or any(len(p) != 2 for p in points):
        raise ValueError(f"a board's points are two tables of (team 0, team 1), not {points!r}")
    (a0, b0), (a1, b1) = points
    score = board_score(scale, ruleset, a0 - b0 + a1 - b1)
    return BoardResult(board, ((a0, b0), (a1, b1)), (bool(thrown_in[0]), bool(thrown_in[1])), score)


def board_results(
    games: Sequence[Game], team_of_side: Sequence[tuple[int, int]], scale: str, ruleset: str
) -> list[BoardResult]:
    """Each board finished at both tables: what each team wrote for it at each table, and its score.
    ``team_of_side[leg]``: the team sitting on side 0 and side 1 at that table."""
    if len(games) != 2:
        return []
    results = []
    for number, pair in enumerate(zip(games[0].deals, games[1].deals, strict=False)):
        if not all(deal.is_over for deal in pair):
            break
        points: list[tuple[int, int]] = []
        for deal, sides in zip(pair, team_of_side, strict=True):
            written = deal.score.written if deal.score is not None else [0, 0]
            by_team = [0, 0]
            for side in (0, 1):
                by_team[sides[side]] += written[side]
            points.append((by_team[0], by_team[1]))
        results.append(board_result(scale, ruleset, number, points, [d.thrown_in for d in pair]))
    return results
