"""The batch rating: known strengths recovered from simulated boards, values worked out by hand."""

from __future__ import annotations

import math
import random

import pytest

from arena.rating.bradley_terry import ELO_PER_LOGIT, BoardScore, batch_ratings, fit


def test_two_bots_by_hand() -> None:
    # A scores 3 of every 4 boards against the anchor: the maximum-likelihood rating is logit(0.75) = ln 3.
    # The prior (sd 4) shifts it by about r / (sd^2 * n * p (1 - p)) = 1.0986 / (16 * 400 * 0.1875) = 0.0009.
    boards = [BoardScore("a", "random", 1.0 if i % 4 else 0.0) for i in range(400)]
    ratings = fit(boards, anchor="random")
    assert ratings["random"] == 0.0
    assert ratings["a"] == pytest.approx(math.log(3), abs=0.002)
    assert ELO_PER_LOGIT * math.log(3) == pytest.approx(190.85, abs=0.01)


def test_ties_count_half() -> None:
    # Only tied boards: no evidence either way, the rating stays at the anchor's.
    ratings = fit([BoardScore("a", "random", 0.5)] * 50, anchor="random")
    assert ratings["a"] == pytest.approx(0.0, abs=1e-9)


def test_a_bot_that_won_every_board_stays_finite() -> None:
    ratings = fit([BoardScore("a", "random", 1.0)] * 100, anchor="random")
    assert math.isfinite(ratings["a"]) and ratings["a"] > 3


def test_an_anchor_without_boards_is_refused() -> None:
    with pytest.raises(ValueError, match="anchor"):
        fit([BoardScore("a", "b", 1.0)], anchor="random")


@pytest.mark.parametrize("score", [-0.1, 1.5, math.nan])
def test_a_score_outside_zero_one_is_refused(score: float) -> None:
    with pytest.raises(ValueError):
        BoardScore("a", "b", score)


def _simulate(truth: dict[str, float], boards_per_pair: int, rng: random.Random) -> list[BoardScore]:
    bots = sorted(truth)
    out = []
    for i, a in enumerate(bots):
        for b in bots[i + 1 :]:
            p = 1 / (1 + math.exp(truth[b] - truth[a]))
            out += [BoardScore(a, b, 1.0 if rng.random() < p else 0.0) for _ in range(boards_per_pair)]
    return out


def test_known_strengths_are_recovered_inside_their_intervals() -> None:
    truth = {"random": 0.0, "mid": 0.8, "strong": 1.6}
    rng = random.Random(7)
    inside = total = 0
    for trial in range(24):
        rows = batch_ratings(_simulate(truth, 60, rng), anchor="random", rounds=80, seed=trial)
        for row in rows:
            if row.bot == "random":
                continue
            total += 1
            inside += row.low <= truth[row.bot] * ELO_PER_LOGIT <= row.high
    # Nominal coverage 95%: over 48 intervals expect about 45.6; the bootstrap percentile interval is a little
    # narrow on small samples, so allow down to 85%.
    assert inside / total >= 0.85


def test_clearly_separated_bots_come_out_in_order() -> None:
    rows = batch_ratings(_simulate({"random": 0.0, "mid": 1.0, "strong": 2.5}, 200, random.Random(3)), "random", 50)
    assert [r.bot for r in rows] == ["strong", "mid", "random"]
    assert all(r.low <= r.elo <= r.high for r in rows)
    assert rows[0].boards == 400
