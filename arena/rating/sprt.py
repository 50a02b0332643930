"""A sequential probability ratio test on board scores: "is A stronger than B?", stopping as soon as it can say.

Pure logic, no I/O. Each observation is one board's score for bot A against bot B on some scale (win/loss,
clipped margin, ...). The hypotheses are about the mean board score ``mu``: H0 ``mu = mu0`` against H1
``mu = mu1`` (``mu1 > mu0``; typically H0 "no better" ``mu0 = 0`` and H1 "better by a board-score unit that
matters"). As in fishtest's GSPRT, the variance is not assumed but estimated from the scores seen so far, and the
log-likelihood ratio is the normal one with that variance:

    LLR(n) = n * (mu1 - mu0) * (2 * mean - mu0 - mu1) / (2 * var)

Wald's bounds for error rates ``alpha`` (accept H1 when H0 holds) and ``beta`` (accept H0 when H1 holds):

    lower = ln(beta / (1 - alpha))      accept H0 when LLR <= lower
    upper = ln((1 - beta) / alpha)      accept H1 when LLR >= upper

Before ``min_boards`` scores the variance estimate is too rough to trust, so the test does not decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


class Verdict(Enum):
    CONTINUE = "continue"
    H0 = "H0"  # accepted: A is not stronger by mu1 (the mean is mu0 or less)
    H1 = "H1"  # accepted: A is stronger (the mean is mu1 or more)


@dataclass(frozen=True)
class SprtBounds:
    lower: float
    upper: float


def wald_bounds(alpha: float, beta: float) -> SprtBounds:
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError(f"alpha and beta must be in (0, 1), not {alpha} and {beta}")
    return SprtBounds(lower=math.log(beta / (1 - alpha)), upper=math.log((1 - beta) / alpha))


@dataclass(frozen=True)
class SprtState:
    """What the test knows after some boards: running sums, so one update is O(1)."""

    n: int = 0
    total: float = 0.0
    total_sq: float = 0.0

    def add(self, score: float) -> SprtState:
        if not math.isfinite(score):
            raise ValueError(f"a board score must be a finite number, not {score!r}")
        return SprtState(self.n + 1, self.total + score, self.total_sq + score * score)

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0

    @property
    def variance(self) -> float:
        """The sample variance (n - 1 in the denominator); 0 until two scores."""
        if self.n < 2:
            return 0.0
        return max(0.0, (self.total_sq - self.total * self.total / self.n) / (self.n - 1))


@dataclass(frozen=True)
class Sprt:
    mu0: float = 0.0
    mu1: float = 0.05
    alpha: float = 0.05
    beta: float = 0.05
    min_boards: int = 30
    # A floor on the variance: a test whose boards all scored the same would otherwise divide by zero (and a
    # bot that always ties itself has no evidence either way, which a tiny floor still lets the LLR show).
    min_variance: float = 1e-6

    def __post_init__(self) -> None:
        if not self.mu1 > self.mu0:
            raise ValueError(f"the SPRT needs mu1 > mu0, not mu0={self.mu0}, mu1={self.mu1}")
        wald_bounds(self.alpha, self.beta)
        if self.min_boards < 2:
            raise ValueError(f"min_boards must be at least 2, not {self.min_boards}")

    @property
    def bounds(self) -> SprtBounds:
        return wald_bounds(self.alpha, self.beta)

    def llr(self, state: SprtState) -> float:
        if state.n < 2:
            return 0.0
        var = max(state.variance, self.min_variance)
        return state.n * (self.mu1 - self.mu0) * (2 * state.mean - self.mu0 - self.mu1) / (2 * var)

    def verdict(self, state: SprtState) -> Verdict:
        if state.n < self.min_boards:
            return Verdict.CONTINUE
        llr, bounds = self.llr(state), self.bounds
        if llr >= bounds.upper:
            return Verdict.H1
        if llr <= bounds.lower:
            return Verdict.H0
        return Verdict.CONTINUE


def likelihood_of_superiority(state: SprtState) -> float:
    """P(mean > 0) under the normal approximation of the mean: fishtest's "LOS"."""
    if state.n < 2 or state.variance == 0.0:
        return 0.5 if state.mean == 0 else float(state.mean > 0)
    z = state.mean / math.sqrt(state.variance / state.n)
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def mean_interval(state: SprtState, z: float = 1.959964) -> tuple[float, float]:
    """The mean board score's ~95% normal interval."""
    if state.n < 2:
        return (-math.inf, math.inf)
    half = z * math.sqrt(state.variance / state.n)
    return (state.mean - half, state.mean + half)
