"""Laplace's two-count "all others on +1" lower member (``randomizers.laplace_two_region``,
docs/proofs/mechanism-certificates.md section 1h).

The member claims to be the exact δ of one post-processing of the shuffled output: the
counts of reports below −c and above c when the target holds −1 or +1 and every other user
+1. So it is checked against (a) the region masses integrated independently from the
Laplace densities, (b) the exact δ of those counts by brute force over every count vector,
and a 1 % change to either key constant (ν, or the ratio r = p/q) must break (b).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.integrate import quad

from crowdhide.accounting.shuffle._same_two_count import two_count_same_lower_log_delta
from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_lower_curve
from crowdhide.accounting.shuffle.randomizers import (
    laplace_two_count_threshold,
    laplace_two_region,
)


def _density(x: float, b: float) -> Callable[[float], float]:
    return lambda y: math.exp(-abs(y - x) / b) / (2.0 * b)


def _masses(c: float, b: float) -> tuple[float, float]:
    """``(P_{−1}(y < −c), P_{+1}(y < −c))`` by numerical integration of the densities."""
    f_minus, f_plus = _density(-1.0, b), _density(1.0, b)
    lo = -1.0 - 60.0 * b
    kink = min(-1.0, -c)  # the density of −1 has its kink at −1
    p = sum(quad(f_minus, a, z, epsabs=0.0, epsrel=1e-13)[0] for a, z in [(lo, kink), (kink, -c)])
    q = quad(f_plus, lo, -c, epsabs=0.0, epsrel=1e-13)[0]
    return p, q


@pytest.mark.parametrize("eps0", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("c", [0.0, 0.3, 0.9, 1.0, 1.5, 2.5])
def test_region_constants_equal_the_integrated_masses(eps0: float, c: float) -> None:
    b = 2.0 / eps0
    p, q = _masses(c, b)
    nu, log_ratio = laplace_two_region(c, b)
    assert nu == pytest.approx(p + q, rel=1e-10)
    assert log_ratio == pytest.approx(math.log(p / q), rel=1e-10, abs=1e-12)


def _count_deltas(p: float, q: float, n: int, grid: list[float]) -> list[float]:
    """Exact δ (both directions) of the counts (below −c, above c) among the n reports:
    target on −1 (laws (p, q, rest)) or +1 ((q, p, rest)), the n − 1 others on +1."""
    rest = 1.0 - p - q
    laws: list[dict[tuple[int, int], float]] = []
    for target in ((p, q, rest), (q, p, rest)):
        law = {}
        for a, bb in itertools.product(range(n + 1), repeat=2):
            if a + bb > n:
                continue
            total = 0.0  # the target's class, then the others' multinomial
            for cls, pt in enumerate(target):
                ao, bo = a - (cls == 0), bb - (cls == 1)
                m = n - 1
                if ao < 0 or bo < 0 or ao + bo > m:
                    continue
                coef = math.comb(m, ao) * math.comb(m - ao, bo)
                total += pt * coef * q**ao * p**bo * rest ** (m - ao - bo)
            law[(a, bb)] = total
        laws.append(law)
    out = []
    for eps in grid:
        big = math.exp(eps)
        fwd = sum(max(laws[0][k] - big * laws[1][k], 0.0) for k in laws[0])
        bwd = sum(max(laws[1][k] - big * laws[0][k], 0.0) for k in laws[0])
        out.append(max(fwd, bwd))
    return out


def _grid(top: float) -> list[float]:
    return [top * f for f in (0.0, 0.05, 0.15, 0.3, 0.5, 0.7, 0.9)]


@pytest.mark.parametrize("eps0", [0.5, 1.0, 3.0])
def test_equals_the_exact_delta_of_its_counts(eps0: float) -> None:
    b = 2.0 / eps0
    for c in (laplace_two_count_threshold(eps0), 0.2, 1.3):
        p, q = _masses(c, b)
        nu, log_ratio = laplace_two_region(c, b)
        for n in (2, 3, 5, 7):
            grid = _grid(log_ratio)
            for eps, exact in zip(grid, _count_deltas(p, q, n, grid), strict=True):
                bound = math.exp(two_count_same_lower_log_delta(n, nu, log_ratio, eps))
                assert bound <= exact * (1.0 + 1e-9) + 1e-300, (eps0, c, n, eps)
                assert bound >= exact * (1.0 - 1e-7), (eps0, c, n, eps)  # width-1 blocks


@pytest.mark.parametrize("which", ["nu", "ratio"])
def test_a_one_percent_change_is_caught(which: str) -> None:
    caught = False
    for eps0 in (0.5, 1.0, 3.0):
        b = 2.0 / eps0
        c = laplace_two_count_threshold(eps0)
        p, q = _masses(c, b)
        nu, log_ratio = laplace_two_region(c, b)
        nu2, lr2 = (nu * 1.01, log_ratio) if which == "nu" else (nu, log_ratio + math.log(1.01))
        for n in (2, 3, 5):
            grid = _grid(log_ratio)
            for eps, exact in zip(grid, _count_deltas(p, q, n, grid), strict=True):
                bound = math.exp(two_count_same_lower_log_delta(n, nu2, lr2, eps))
                caught = caught or bound > exact * (1.0 + 1e-6)
    assert caught


def test_thresholds_maximize_the_signal_measured() -> None:
    got = [laplace_two_count_threshold(e) for e in (0.5, 1.0, 2.0, 4.0, 8.0)]
    assert got == pytest.approx([0.505, 0.545, 0.655, 0.8, 0.9])


def test_the_laplace_lower_bound_rises_and_stays_below_the_certificate() -> None:
    """ε0 = 1, n = 1e4, δ = 1e-6: 0.029690 (one region) → 0.030630 (both tails counted);
    ε0 = 4, n = 1e3, δ = 1e-300: 2.7461 → 3.8849 (the certificate answers 4)."""
    low = mechanism_lower_curve(mechanism="laplace", eps0=1.0, n=10**4).epsilon(1e-6)
    cert = mechanism_curve(mechanism="laplace", eps0=1.0, n=10**4).epsilon(1e-6)
    assert 0.0306 < low < cert
    deep = mechanism_lower_curve(mechanism="laplace", eps0=4.0, n=10**3).epsilon(1e-300)
    assert 3.88 < deep < 4.0


def test_no_bound_at_or_beyond_the_regions_ratio() -> None:
    nu, log_ratio = laplace_two_region(0.8, 0.5)
    assert two_count_same_lower_log_delta(100, nu, log_ratio, log_ratio) == -math.inf
    assert np.isfinite(two_count_same_lower_log_delta(100, nu, log_ratio, 0.5 * log_ratio))
