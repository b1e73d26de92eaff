"""The proven lower bounds used where SciPy's incomplete beta is not trusted (s23-main):
``binomial_pmf_lower``, the excess floor of ``_krr_fast`` and the lower block masses of
``masses_from_tails``, each against 50-digit values, and each caught when 1 % too large."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from crowdhide.accounting._pmf_lower import binomial_pmf_lower
from crowdhide.accounting.binomial_tails import binom_sf, masses_from_tails
from crowdhide.accounting.shuffle._krr_fast import excess_floor

mp.mp.dps = 50

#: (n, p, k): central, deep (below 1e-200, where the floors act), subnormal-adjacent
CASES = [
    (10, 0.5, 3),
    (1661, 0.6377, 1636),
    (3000, 0.9, 2000),
    (10**6, 0.5, 500_000),
    (10**6, 0.5, 501_500),
    (10**9, 0.3, 300_021_000),
    (2000, 0.02, 400),
]


def _pmf(n: int, p: float, k: int) -> mp.mpf:
    q = mp.mpf(p)
    return mp.binomial(n, k) * q**k * (1 - q) ** (n - k)


@pytest.mark.parametrize(("n", "p", "k"), CASES)
def test_pmf_lower_is_below_and_close_to_the_exact_value(n: int, p: float, k: int) -> None:
    exact = _pmf(n, p, k)
    got = float(binomial_pmf_lower(float(n), p, float(k))[()])
    assert got <= exact
    if exact > mp.mpf("1e-300"):
        # log-gamma cancellation allowance: about 4e-5 relative at n = 1e9
        assert got >= exact * (1 - mp.mpf("1e-4"))
        assert got * 1.01 > exact  # a bound 1 % larger would not be a lower bound


def test_pmf_lower_is_zero_outside_the_support() -> None:
    got = binomial_pmf_lower(np.array([10.0, 10.0]), 0.3, np.array([-1.0, 11.0]))
    assert got.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(("n", "p", "theta"), [(1661, 0.6377, 1635.4), (3000, 0.9, 1999.7)])
def test_excess_floor_is_below_the_exact_excess(n: int, p: float, theta: float) -> None:
    below = mp.mpf(theta)
    exact = mp.fsum((below - j) * _pmf(n, p, j) for j in range(int(theta) + 1))
    above = mp.fsum((j - below) * _pmf(n, p, j) for j in range(int(theta) + 1, n + 1))
    shift = np.array(1e-9)
    below_k, above_k = int(theta), int(theta) + 1
    nearest = {
        False: (below - below_k) * _pmf(n, p, below_k),
        True: (above_k - below) * _pmf(n, p, above_k),
    }
    for side, truth in ((False, exact), (True, above)):
        floor = float(excess_floor(np.array(float(n)), p, np.array(theta), shift, above=side))
        assert 0.0 < floor <= truth
        # it is the nearest outcome's term (less θ's shift), not more: 1 % more is caught
        assert nearest[side] * (1 - mp.mpf("1e-6")) <= floor <= nearest[side]
        assert floor * 1.01 > nearest[side]


def test_lower_block_masses_are_below_the_exact_mass_where_betainc_underflows() -> None:
    n, p = 1661.0, 0.6377
    lo, hi = np.array([1636.0, 1641.0]), np.array([1640.0, 1661.0])
    first, second = binom_sf(lo, n, p), binom_sf(hi + 1.0, n, p)
    got = masses_from_tails(
        first, second, np.full(2, n), p, lo, hi, np.zeros(2, dtype=bool), upper=False
    )
    for (a, b), value in zip(zip(lo, hi, strict=True), got, strict=True):
        exact = mp.fsum(_pmf(int(n), p, j) for j in range(int(a), int(b) + 1))
        assert 0.0 < value <= exact
        assert value * 1.01 > _pmf(int(n), p, int(a))  # it is the end point's pmf
