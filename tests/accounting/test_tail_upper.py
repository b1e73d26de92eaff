"""The deep-tail upper bound ``_tail_upper.log_tail_upper`` (s24-deep): above 50-digit binomial
tails over n = 10 … 1e9 and depths down to 1e-1000 (in log space), within a small factor of
them, and caught when its ratio, its value or its rounding allowance is made smaller."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy.special import gammaln, xlog1py, xlogy

from crowdhide.accounting import _tail_upper
from crowdhide.accounting._tail_upper import log_geometric_tail, log_tail_upper
from crowdhide.accounting.logmath import log_terms_error

mpmath.mp.dps = 50

#: Fixed-point bits of the reference sums (each truncation loses below 2^-200 of the first term)
_BITS = 200


def _exact_log_tail(n: int, p: float, k: int, *, upper: bool) -> mpmath.mpf:
    """``log P(X >= k)`` (``upper``) or ``log P(X <= k)``, ``X ~ Bin(n, p)``, to ~45 digits: the
    50-digit log-pmf at k times the sum of the exact term ratios (p's binary fraction, integer
    fixed point), stopped once the rest, below ``term · r/(1 − r)``, is under 2^-160."""
    num_p, den_p = Fraction(p).as_integer_ratio()
    one = 1 << _BITS
    term, total, j = one, 0, k
    while True:
        total += term
        if (j >= n) if upper else (j <= 0):
            break
        if upper:
            num, den = (n - j) * num_p, (j + 1) * (den_p - num_p)
        else:
            num, den = j * (den_p - num_p), (n - j + 1) * num_p
        if num < den and term * num << 160 < (den - num) * one:
            total += term * num // (den - num) + 1  # the geometric rest, rounded up
            break
        term = term * num // den
        j = j + 1 if upper else j - 1
    q = mpmath.mpf(p)
    log_pmf = (
        mpmath.loggamma(n + 1)
        - mpmath.loggamma(k + 1)
        - mpmath.loggamma(n - k + 1)
        + k * mpmath.log(q)
        + (n - k) * mpmath.log1p(-q)
    )
    return log_pmf + mpmath.log(mpmath.mpf(total) / one)


def _at_depth(n: int, p: float, depth: float, *, upper: bool) -> int | None:
    """The outcome whose Chernoff exponent is nearest ``depth`` (natural log) on one side."""
    lo, hi = (math.ceil(n * p), n) if upper else (0, math.floor(n * p))

    def exponent(k: int) -> float:
        x = k / n
        return -n * float(xlogy(x, x / p) + xlog1py(1.0 - x, -x) - xlog1py(1.0 - x, -p))

    if exponent(hi if upper else lo) > depth:
        return None  # the side's far end is not that deep
    while hi - lo > 1:  # the exponent falls away from the mean
        mid = (lo + hi) // 2
        if (exponent(mid) > depth) == upper:
            lo = mid
        else:
            hi = mid
    return hi if upper else lo


def _grid() -> list[tuple[int, float, int, bool]]:
    cases = []
    for n in (10, 1000, 10**6, 10**9):
        for p in (0.5, 0.3, 0.9, 0.01):
            for depth10 in (-30, -300, -1000):
                if n == 10**9 and depth10 == -30:
                    continue  # ~1e5 terms per reference sum: the shallow side is covered below
                for upper in (True, False):
                    k = _at_depth(n, p, depth10 * math.log(10.0), upper=upper)
                    if k is not None:
                        cases.append((n, p, k, upper))
    # the support's edges (one or two terms) and near the mean (where r >= 1: Chernoff)
    cases += [(10, 0.5, 10, True), (10, 0.3, 0, False), (10**9, 0.3, 10**9 - 1, True)]
    cases += [(10**6, 0.5, 500_100, True), (10**6, 0.5, 499_900, False)]
    return cases


GRID = _grid()


def _bound(n: int, p: float, k: int, *, upper: bool) -> float:
    return float(log_tail_upper(float(n), p, float(k), upper=upper)[()])


def _ratio(n: int, p: float, k: int, *, upper: bool) -> float:
    """The bound's term ratio at k, raised as :func:`log_geometric_tail` raises it."""
    r = (n - k) * p / ((k + 1) * (1.0 - p)) if upper else k * (1.0 - p) / ((n - k + 1) * p)
    return r * (1.0 + _tail_upper.RATIO_RTOL)


@pytest.mark.parametrize(("n", "p", "k", "upper"), GRID)
def test_bound_is_above_the_exact_tail_and_close_to_it(
    n: int, p: float, k: int, upper: bool
) -> None:
    exact = _exact_log_tail(n, p, k, upper=upper)
    got = _bound(n, p, k, upper=upper)
    assert got >= exact, (n, p, k, upper)
    if exact < -50.0:  # deep: the geometric bound, within 1 % (Chernoff: off by about √(2π)·z)
        assert got - exact < 0.01, (n, p, k, upper, float(got - exact))
        r = _ratio(n, p, k, upper=upper)
        if r > 0.005:  # a ratio 1 % smaller would give a bound below the truth
            assert got + math.log1p(-r) - math.log1p(-0.99 * r) < exact


def test_grid_reaches_below_1e_1000_at_1e9() -> None:
    deep = [c for c in GRID if c[0] == 10**9 and _bound(*c[:3], upper=c[3]) < -1000 * math.log(10)]
    assert len(deep) >= 4


def test_geometric_bound_is_much_tighter_than_chernoff_in_the_deep_tail() -> None:
    # k = 2 k-RR at n = 1e6 style tail near 1e-300: Chernoff over-states it ~70x
    n, p = 10**6, 0.5
    k = _at_depth(n, p, -300 * math.log(10.0), upper=True)
    assert k is not None
    exact = _exact_log_tail(n, p, k, upper=True)
    chernoff = float(
        _tail_upper._log_tail_vec(np.array(float(n)), p, np.array(float(k)), upper=True)
    )
    assert chernoff - exact > 3.0
    assert _bound(n, p, k, upper=True) - exact < 0.01


def test_value_one_percent_smaller_is_caught() -> None:
    """At P(X >= n) and P(X <= 0) the bound is the one term itself (r = 0) plus its rounding
    allowance: 1 % less is below the truth."""
    for n, p, k, upper in [(10, 0.5, 10, True), (10**6, 0.3, 0, False), (10**9, 0.9, 10**9, True)]:
        exact = _exact_log_tail(n, p, k, upper=upper)
        got = _bound(n, p, k, upper=upper)
        assert got >= exact > got + math.log(0.99)


def test_without_its_rounding_allowance_the_bound_falls_below_the_truth() -> None:
    """At n = 1e9 the log-gamma sums round by up to ~1e-6 (far beyond the few-term tails'
    slack, about r ~ 1e-10 relative): without its allowance (:func:`log_terms_error` of the
    terms) the bound is below the truth at some of these k, with it at none."""
    n, p = 10**9, 0.7
    below = 0
    for k in range(n - 40, n - 10):
        exact = _exact_log_tail(n, p, k, upper=True)
        got = float(log_geometric_tail(float(n), p, float(k), upper=True)[()])
        assert got >= exact
        terms = (gammaln(n + 1.0), gammaln(k + 1.0), gammaln(n - k + 1.0))
        terms += (k * math.log(p), (n - k) * math.log1p(-p))
        geometric = -math.log1p(
            -(n - k) * p / ((k + 1) * (1.0 - p)) * (1.0 + _tail_upper.RATIO_RTOL)
        )
        allowance = float(log_terms_error(*terms, geometric))
        below += got - allowance < exact
    assert below > 0
