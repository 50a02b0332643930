"""A batch rating from stored boards: a Bradley–Terry fit with bootstrap confidence intervals.

Pure logic, no I/O (the arena reads the boards, this fits them). Each board is one duplicate board between two
bots, with bot A's score on the board as a fraction in [0, 1] (1 a won board, 0.5 a tied one, 0 a lost one, or a
margin mapped onto [0, 1]). The model, as Chatbot Arena publishes it:

    P(A scores against B) = 1 / (1 + exp(-(r_A - r_B)))

fitted by maximum likelihood with fractional outcomes (Newton's method on the logistic log-likelihood), with
one bot fixed at 0 (the anchor: a fixed version such as random) so that the ratings have a meaning across fits.
A weak Gaussian prior (``prior_sd`` logits) keeps a bot that won every board finite instead of infinite; with the
default of 4 logits it moves a rating fitted from a few hundred boards by a negligible amount.

Ratings are reported on the Elo scale (400 / ln 10 per logit), each with a bootstrap interval: the boards are
resampled with replacement ``rounds`` times, the model refitted, and the 2.5th and 97.5th percentiles taken.
Seat and dealer effects are not fitted: a duplicate board is played at both tables with the partnerships swapped,
which cancels them by construction.

The likelihood depends on the boards only through each pair's number of boards and total score, so the fit
works on those sums (a bootstrap round costs its resampling, not a pass over every board per Newton step).

A rating is *provisional* (shown, not ranked) until its interval is narrower than ``PROVISIONAL_WIDTH_ELO``
and the bot has played ``PROVISIONAL_BOARDS`` boards.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from arena.rating.sprt import SprtState, mean_interval

ELO_PER_LOGIT = 400 / math.log(10)
PROVISIONAL_WIDTH_ELO = 200.0  # the bootstrap interval's width (high - low) below which a rating is ranked
PROVISIONAL_BOARDS = 100  # ... once the bot has played this many boards


@dataclass(frozen=True)
class BoardScore:
    a: str
    b: str
    score: float  # A's score on the board, in [0, 1]

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise ValueError(f"a board is between two different bots, not {self.a!r} against itself")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"a board score is a fraction in [0, 1], not {self.score!r}")


@dataclass(frozen=True)
class BatchRating:
    bot: str
    elo: float
    low: float  # the bootstrap interval's ends, Elo
    high: float
    boards: int

    def provisional(self, width: float = PROVISIONAL_WIDTH_ELO, boards: int = PROVISIONAL_BOARDS) -> bool:
        """Not ranked yet: its interval is ``width`` Elo or wider, or it has played fewer than ``boards``."""
        return self.high - self.low >= width or self.boards < boards


def _pair_sums(boards: Sequence[BoardScore]) -> dict[tuple[str, str], tuple[int, float]]:
    """(a, b) -> (boards, a's total score); each pair once, in the order a < b."""
    sums: dict[tuple[str, str], tuple[int, float]] = {}
    for board in boards:
        a, b, score = (board.a, board.b, board.score) if board.a < board.b else (board.b, board.a, 1.0 - board.score)
        n, total = sums.get((a, b), (0, 0.0))
        sums[(a, b)] = (n + 1, total + score)
    return sums


def fit(boards: Sequence[BoardScore], anchor: str, prior_sd: float = 4.0, iterations: int = 50) -> dict[str, float]:
    """Maximum a posteriori ratings in logits, ``anchor`` at 0."""
    return _fit_sums(_pair_sums(boards), anchor, prior_sd, iterations)


def _fit_sums(
    sums: dict[tuple[str, str], tuple[int, float]], anchor: str, prior_sd: float, iterations: int
) -> dict[str, float]:
    bots = sorted({a for a, _ in sums} | {b for _, b in sums})
    if anchor not in bots:
        raise ValueError(f"the anchor {anchor!r} played none of the boards")
    free = [bot for bot in bots if bot != anchor]
    index = {bot: i for i, bot in enumerate(free)}
    r = [0.0] * len(free)
    precision = 1.0 / (prior_sd * prior_sd)
    for _ in range(iterations):
        grad = [-precision * x for x in r]
        hess = [[0.0] * len(free) for _ in free]
        for i in range(len(free)):
            hess[i][i] = precision
        for (a, b), (n, total) in sums.items():
            ia, ib = index.get(a), index.get(b)
            ra = r[ia] if ia is not None else 0.0
            rb = r[ib] if ib is not None else 0.0
            p = 1.0 / (1.0 + math.exp(rb - ra))
            g, w = total - n * p, n * p * (1.0 - p)
            if ia is not None:
                grad[ia] += g
                hess[ia][ia] += w
            if ib is not None:
                grad[ib] -= g
                hess[ib][ib] += w
            if ia is not None and ib is not None:
                hess[ia][ib] -= w
                hess[ib][ia] -= w
        step = _solve(hess, grad)
        r = [x + s for x, s in zip(r, step, strict=True)]
        if max((abs(s) for s in step), default=0.0) < 1e-10:
            break
    ratings = {bot: r[i] for bot, i in index.items()}
    ratings[anchor] = 0.0
    return ratings


def batch_ratings(
    boards: Sequence[BoardScore], anchor: str, rounds: int = 200, seed: int = 0, prior_sd: float = 4.0
) -> list[BatchRating]:
    """Each bot's Elo-scale rating with its ~95% bootstrap interval, best first."""
    if not boards:
        return []
    point = fit(boards, anchor, prior_sd)
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {bot: [] for bot in point}
    for _ in range(rounds):
        resampled = [boards[rng.randrange(len(boards))] for _ in boards]
        if not any(anchor in (b.a, b.b) for b in resampled):
            continue  # the anchor drew no board: this resample cannot be anchored
        fitted = fit(resampled, anchor, prior_sd)
        for bot in point:
            # A bot that drew no board in this resample is pinned by the prior alone: leave it out.
            if bot in fitted and (bot == anchor or any(bot in (b.a, b.b) for b in resampled)):
                samples[bot].append(fitted[bot])
    played = {bot: sum(bot in (b.a, b.b) for b in boards) for bot in point}
    rows = []
    for bot, value in point.items():
        low, high = _percentiles(samples[bot] or [value], 0.025, 0.975)
        rows.append(BatchRating(bot, value * ELO_PER_LOGIT, low * ELO_PER_LOGIT, high * ELO_PER_LOGIT, played[bot]))
    return sorted(rows, key=lambda row: -row.elo)


def _percentiles(values: list[float], lo: float, hi: float) -> tuple[float, float]:
    ordered = sorted(values)
    last = len(ordered) - 1
    return ordered[round(lo * last)], ordered[round(hi * last)]


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting; the matrix is symmetric positive definite (prior)."""
    n = len(vector)
    m = [[*row, v] for row, v in zip(matrix, vector, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda row: abs(m[row][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for row in range(col + 1, n):
            factor = m[row][col] / m[col][col]
            for k in range(col, n + 1):
                m[row][k] -= factor * m[col][k]
    x = [0.0] * n
    for row in range(n - 1, -1, -1):
        x[row] = (m[row][n] - sum(m[row][k] * x[k] for k in range(row + 1, n))) / m[row][row]
    return x


@dataclass(frozen=True)
class HeadToHead:
    """One pair's boards: A's mean board score against B (from -1 to 1) with its ~95% interval."""

    a: str
    b: str
    boards: int
    mean: float
    low: float
    high: float


def head_to_head(boards: Sequence[BoardScore]) -> list[HeadToHead]:
    """Each pair of bots that met, A before B by name, its boards' mean score for A on the [-1, 1] scale."""
    states: dict[tuple[str, str], SprtState] = {}
    for board in boards:
        a, b, score = (board.a, board.b, board.score) if board.a < board.b else (board.b, board.a, 1.0 - board.score)
        states[(a, b)] = states.get((a, b), SprtState()).add(2.0 * score - 1.0)
    rows = []
    for (a, b), state in sorted(states.items()):
        low, high = mean_interval(state)
        rows.append(HeadToHead(a, b, state.n, state.mean, low, high))
    return rows
