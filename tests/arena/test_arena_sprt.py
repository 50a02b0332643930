"""The SPRT on board scores: bounds, LLR and verdicts worked out by hand; error rates on synthetic boards."""

from __future__ import annotations

import math
import random

import pytest

from arena.rating.sprt import Sprt, SprtState, Verdict, likelihood_of_superiority, mean_interval, wald_bounds


def _state(scores: list[float]) -> SprtState:
    state = SprtState()
    for s in scores:
        state = state.add(s)
    return state


def test_wald_bounds_by_hand() -> None:
    # alpha = beta = 0.05: ln(0.05 / 0.95) = -2.944439 and ln(0.95 / 0.05) = ln 19 = 2.944439.
    b = wald_bounds(0.05, 0.05)
    assert b.lower == pytest.approx(-2.944439, abs=1e-6)
    assert b.upper == pytest.approx(2.944439, abs=1e-6)
    # alpha = 0.05, beta = 0.10: ln(0.10 / 0.95) = -2.251292 and ln(0.90 / 0.05) = ln 18 = 2.890372.
    b = wald_bounds(0.05, 0.10)
    assert b.lower == pytest.approx(-2.251292, abs=1e-6)
    assert b.upper == pytest.approx(2.890372, abs=1e-6)


def test_llr_by_hand() -> None:
    # Scores 1, -1, 1, 1: mean 0.5; sample variance ((1+1+1+1) - 2*2/4) / 3 = 1.
    # LLR = n (mu1 - mu0) (2 mean - mu0 - mu1) / (2 var) = 4 * 0.5 * (1 - 0.5) / 2 = 0.5.
    state = _state([1, -1, 1, 1])
    assert state.mean == 0.5
    assert state.variance == pytest.approx(1.0)
    assert Sprt(mu0=0.0, mu1=0.5, min_boards=2).llr(state) == pytest.approx(0.5)


def test_verdicts_at_the_bounds() -> None:
    sprt = Sprt(mu0=0.0, mu1=0.5, alpha=0.05, beta=0.05, min_boards=2)
    # 30 boards alternating 1 and 0: mean 0.5, variance 30*0.25/29 = 0.258621;
    # LLR = 30 * 0.5 * 0.5 / (2 * 0.258621) = 14.5 >= 2.944: H1.
    assert sprt.verdict(_state([1.0, 0.0] * 15)) is Verdict.H1
    # Alternating 0 and -1: mean -0.5, same variance; LLR = 30 * 0.5 * (-1.5) / 0.517241 = -43.5: H0.
    assert sprt.verdict(_state([0.0, -1.0] * 15)) is Verdict.H0
    # Alternating 1 and -1 twice: mean 0, variance 4/3; LLR = 4 * 0.5 * (-0.5) / (8/3) = -0.375: go on.
    assert sprt.verdict(_state([1.0, -1.0, 1.0, -1.0])) is Verdict.CONTINUE


def test_no_verdict_before_min_boards() -> None:
    assert Sprt(mu0=0.0, mu1=0.5, min_boards=30).verdict(_state([1.0, 0.9] * 10)) is Verdict.CONTINUE


@pytest.mark.parametrize(
    ("mu0", "mu1", "alpha", "beta"), [(0.5, 0.5, 0.05, 0.05), (0, 0.1, 0, 0.05), (0, 0.1, 0.05, 1)]
)
def test_bad_parameters_are_refused(mu0: float, mu1: float, alpha: float, beta: float) -> None:
    with pytest.raises(ValueError):
        Sprt(mu0=mu0, mu1=mu1, alpha=alpha, beta=beta)


def test_a_non_finite_score_is_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        SprtState().add(math.nan)


def _run(sprt: Sprt, true_mean: float, rng: random.Random, cap: int = 20_000) -> tuple[Verdict, int]:
    state = SprtState()
    while state.n < cap:
        state = state.add(rng.gauss(true_mean, 1.0))
        verdict = sprt.verdict(state)
        if verdict is not Verdict.CONTINUE:
            return verdict, state.n
    return Verdict.CONTINUE, state.n


def test_error_rates_on_synthetic_boards() -> None:
    """A bot against itself (mean 0 = mu0): H1 accepted at about alpha; a better one (mean mu1): H0 at about beta."""
    sprt = Sprt(mu0=0.0, mu1=0.25, alpha=0.05, beta=0.05, min_boards=20)
    rng = random.Random(20261201)
    runs = 300
    under_h0 = [_run(sprt, 0.0, rng) for _ in range(runs)]
    under_h1 = [_run(sprt, 0.25, rng) for _ in range(runs)]
    false_h1 = sum(v is Verdict.H1 for v, _ in under_h0) / runs
    false_h0 = sum(v is Verdict.H0 for v, _ in under_h1) / runs
    assert all(v is not Verdict.CONTINUE for v, _ in under_h0 + under_h1)
    # Wald's bounds hold the error rates at or below alpha and beta (up to the overshoot and sampling noise):
    # with 300 runs a true rate of 5% has a standard error of 1.3%.
    assert false_h1 <= 0.09
    assert false_h0 <= 0.09
    # And the test decides well before a fixed-size test would: a fixed sample for the same errors needs
    # n = ((1.645 + 1.645) / 0.25)^2 = 173 boards; Wald's test needs on average well under that.
    mean_boards = sum(n for _, n in under_h0 + under_h1) / (2 * runs)
    assert mean_boards < 173


def test_likelihood_of_superiority_and_interval() -> None:
    # Scores 1, -1, 1, 1: mean 0.5, sd 1, standard error 0.5, z = 1: LOS = Phi(1) = 0.841345.
    state = _state([1, -1, 1, 1])
    assert likelihood_of_superiority(state) == pytest.approx(0.841345, abs=1e-6)
    low, high = mean_interval(state)
    assert low == pytest.approx(0.5 - 1.959964 * 0.5)
    assert high == pytest.approx(0.5 + 1.959964 * 0.5)
