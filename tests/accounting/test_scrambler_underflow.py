"""Lemma2Exact where SciPy's incomplete beta underflows (CDFs below 4.3e-243 returned as 0):
the deep terms against 50-digit sums (docs/proofs/betainc-underflow.md)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting import _tail_upper
from crowdhide.accounting.scrambler import bounds

_T, _D, _EPS = 100, 72000, 3.4


def _exact_cond(alpha: float, beta: float, trials: int, k_star: int) -> mpmath.mpf:
    """E[(α − βB)_+] = Σ_{b <= k*} (α − βb) P(B = b), B ~ Bin(trials, 1/(T − 1)), 50 digits."""
    with mpmath.workdps(50):
        p = mpmath.mpf(1) / (_T - 1)
        return mpmath.fsum(
            (mpmath.mpf(alpha) - mpmath.mpf(beta) * b)
            * mpmath.binomial(trials, b)
            * p**b
            * (1 - p) ** (trials - b)
            for b in range(k_star + 1)
        )


@pytest.fixture(scope="module")
def deep_case() -> tuple[bounds.Lemma2Exact, np.ndarray, float]:
    ev = bounds.Lemma2Exact(targets=_T, sigma=0.0, n=10, dummies=_D, log_tail=-690.0)
    em = math.exp(_EPS)
    alpha = (1 - 0.0) * _T * ev._A
    return ev, alpha, _T * em


def _cond(ev: bounds.Lemma2Exact, alpha: np.ndarray, beta: float) -> np.ndarray:
    p = 1.0 / (_T - 1)
    k = np.floor(alpha / beta)
    M = ev._M
    cdf_k, cdf_k1 = binom.cdf(k, M, p), binom.cdf(k - 1, M - 1, p)
    cond = bounds._positive_part_mean(alpha, beta, M, p, (cdf_k, 0 * cdf_k), (cdf_k1, 0 * cdf_k))
    return bounds._deep_positive_part(cond, alpha, beta, M, p, k, (cdf_k, cdf_k1))


def test_deep_terms_bound_the_exact_mean(deep_case: tuple) -> None:  # type: ignore[type-arg]
    ev, alpha, beta = deep_case
    cond = _cond(ev, alpha, beta)
    k = np.floor(alpha / beta)
    # the terms SciPy gets wrong: k* < 39 with a mean of B near 720 (returned 0 on main)
    for i in np.nonzero((k >= 0) & (k <= 38))[0][::5]:
        exact = _exact_cond(float(alpha[i]), beta, int(ev._M[i]), int(k[i]))
        assert cond[i] >= exact > 0
        # Chernoff on α P(B <= k*): its missing √n factor and the terms' cancellation (~k*)
        assert cond[i] <= exact * 1e5


def test_delta_bounds_its_largest_deep_term(deep_case: tuple) -> None:  # type: ignore[type-arg]
    """On main δ(3.4) came back 3.6e-298 (the truncation floor); one term alone is 1e-270."""
    ev, alpha, beta = deep_case
    k = np.floor(alpha / beta)
    i = int(np.argmax(np.where(k <= 38, ev._log_coef + np.log(np.maximum(alpha, 1e-300)), -np.inf)))
    term = mpmath.exp(ev._log_coef[i]) * _exact_cond(
        float(alpha[i]), beta, int(ev._M[i]), int(k[i])
    )
    assert ev.delta(_EPS) >= term > mpmath.mpf(10) ** -290


def test_a_one_percent_steeper_chernoff_exponent_is_caught(
    deep_case: tuple,  # type: ignore[type-arg]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ev, alpha, beta = deep_case
    monkeypatch.setattr(_tail_upper, "KL_RTOL", -0.01)
    # the geometric half of the deep-tail bound off (tests/accounting/test_tail_upper.py)
    monkeypatch.setattr(_tail_upper, "log_geometric_tail", lambda *a, **k: np.inf)
    cond = _cond(ev, alpha, beta)
    k = np.floor(alpha / beta)
    # the largest term with k* < 39 (the deepest ones keep more of the √n slack)
    picks = np.nonzero((k >= 0) & (k <= 38))[0][::5]
    below = [cond[i] < _exact_cond(float(alpha[i]), beta, int(ev._M[i]), int(k[i])) for i in picks]
    assert any(below)
