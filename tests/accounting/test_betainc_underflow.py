"""Incomplete betas below ``BETAINC_TRUSTED`` (SciPy's ``betainc`` returns 0 for true tails
up to 4e-243, docs/proofs/betainc-underflow.md): the upper bounds built on them stay above
40-digit references, the lower bounds below, and a 1 % smaller Chernoff exponent breaks it."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy.special import betainc

from crowdhide.accounting import _tail_upper
from crowdhide.accounting.binomial_tails import block_masses, tail_edges_many
from crowdhide.accounting.shuffle._krr_fast import binomial_excess, excess_half

mpmath.mp.dps = 50


def _sf(k: int, n: int, p: float) -> mpmath.mpf:
    """``P(Bin(n, p) >= k)`` summed in 50 digits (n small enough here)."""
    pp = mpmath.mpf(p)
    return mpmath.fsum(
        mpmath.binomial(n, j) * pp**j * (1 - pp) ** (n - j) for j in range(max(k, 0), n + 1)
    )


def _cdf(k: int, n: int, p: float) -> mpmath.mpf:
    return 1 - _sf(k + 1, n, p) if k >= 0 else mpmath.mpf(0)


def _excess_above(theta: float, n: int, p: float) -> mpmath.mpf:
    pp = mpmath.mpf(p)
    return mpmath.fsum(
        (j - mpmath.mpf(theta)) * mpmath.binomial(n, j) * pp**j * (1 - pp) ** (n - j)
        for j in range(max(math.floor(theta) + 1, 0), n + 1)
    )


def test_scipy_betainc_underflows_far_above_the_double_range() -> None:
    # the failure the threshold guards (if SciPy fixes it, this documents the change)
    assert betainc(1636.0, 26.0, 0.6377) == 0.0
    assert _sf(1636, 1661, 0.6377) > mpmath.mpf("1e-276")


def test_block_mass_of_an_underflowed_tail_is_above_the_truth() -> None:
    """The reproducer: main gave 2e-300 for a mass of 3.8e-276."""
    n, p = 1661, 0.6377
    for lo, hi in [(1636, 1640), (1624, 1661), (1630, 1661)]:
        up = block_masses(
            np.array([float(n)]), p, np.array([float(lo)]), np.array([float(hi)]), upper=True
        )
        exact = _sf(lo, n, p) - _sf(hi + 1, n, p)
        assert exact > mpmath.mpf("1e-290")
        assert mpmath.mpf(up[0]) >= exact, (lo, hi)


def test_tail_edges_outside_is_above_the_truth() -> None:
    lo, hi, outside = tail_edges_many([1661], 0.6377, -600.0)
    exact = _sf(int(hi[0]) + 1, 1661, 0.6377) + _cdf(int(lo[0]) - 1, 1661, 0.6377)
    assert mpmath.mpf(outside[0]) >= exact


GRID = [(300, 0.03), (1000, 0.5), (1661, 0.6377), (2000, 0.9)]


@pytest.mark.parametrize(("n", "p"), GRID)
def test_deep_block_masses_bracket_the_exact_mass(n: int, p: float) -> None:
    """Blocks at every depth down to the last count, upper and lower, against 50 digits."""
    starts = np.unique(np.linspace(n * p, n, 60).astype(int))
    for width in (0, 3, 40):
        lo = starts.astype(np.float64)
        hi = np.minimum(lo + width, n)
        nn = np.full(lo.shape, float(n))
        up = block_masses(nn, p, lo, hi, upper=True)
        down = block_masses(nn, p, lo, hi, upper=False)
        for i in range(lo.size):
            exact = _sf(int(lo[i]), n, p) - _sf(int(hi[i]) + 1, n, p)
            assert mpmath.mpf(down[i]) <= exact <= mpmath.mpf(up[i]), (n, p, lo[i], hi[i])


@pytest.mark.parametrize(("n", "p"), [(400, 0.3), (1661, 0.6377), (3000, 0.5)])
def test_deep_excesses_are_above_the_exact_value(n: int, p: float) -> None:
    theta = np.linspace(n * p, n + 0.5, 50)
    up = binomial_excess(theta, np.full(theta.shape, float(n)), p, above=True, upper=True)
    down = binomial_excess(theta, np.full(theta.shape, float(n)), p, above=True, upper=False)
    half = excess_half(np.full(theta.shape, float(n)), theta, upper=True) if p == 0.5 else up
    for i, t in enumerate(theta):
        exact = _excess_above(float(t), n, p)
        assert mpmath.mpf(down[i]) <= exact <= mpmath.mpf(up[i]), (n, p, t)
        assert exact <= mpmath.mpf(half[i])


def test_a_one_percent_steeper_chernoff_exponent_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """P(X = n) = p^n is exactly its Chernoff bound: with the exponent 1 % larger the upper
    block mass drops below it, so the bracket test above can fail (the geometric bound, the
    other half of the deep-tail bound, is switched off here; test_tail_upper.py perturbs it)."""
    monkeypatch.setattr(_tail_upper, "KL_RTOL", -0.01)
    monkeypatch.setattr(_tail_upper, "KL_ATOL", 0.0)
    monkeypatch.setattr(_tail_upper, "log_geometric_tail", lambda *a, **k: np.inf)
    n, p = 1661, 0.6377
    up = block_masses(
        np.array([float(n)]), p, np.array([float(n - 5)]), np.array([float(n)]), upper=True
    )
    assert mpmath.mpf(up[0]) < _sf(n - 5, n, p)


@pytest.mark.parametrize("tau", [0.3, 0.45, 0.93, 0.96, 0.975])
def test_pairs_clone_excess_is_above_the_exact_value(tau: float) -> None:
    """``E[(A − mτ)_+]``, A ~ Bin(m, ½), where ``2^-m`` underflows (m >= 1075)."""
    from crowdhide.accounting.shuffle._pairs import _clone_excess

    m = np.array([1100, 1500], dtype=np.int64)
    value, err = _clone_excess(m, tau, 1.0 - tau, 1e-12)
    for i, mm in enumerate(m.tolist()):
        theta = mm * tau
        exact = mpmath.fsum(
            (j - mpmath.mpf(theta)) * mpmath.binomial(mm, j) / mpmath.mpf(2) ** mm
            for j in range(math.floor(theta) + 1, mm + 1)
        )
        assert exact <= mpmath.mpf(value[i] + err[i]), (mm, tau)
