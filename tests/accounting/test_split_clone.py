"""Rounding of the split clone system's parameters (``accounting/shuffle/_split_clone.py``).

The system is a valid bound only if its clone rates, in the exact arithmetic of the floats
it is evaluated at, are at most the true ones, μ at least the true one, and every g at most
the exact ``s + ρ (C + 1 − s)``. Each check below compares against exact rationals or
40-digit values, and first shows that the naive rounding it replaces fails it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from crowdhide.accounting.logmath import MACHINE_EPSILON, rate_down
from crowdhide.accounting.shuffle._split_clone import (
    PARAMETER_ULPS,
    effective_rates,
    g_lower,
    split_clone_log_delta,
    uninformative_share,
)

_SLACK = 1 - Fraction(PARAMETER_ULPS) * Fraction(MACHINE_EPSILON)


def _rate_pairs(count: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(7)
    c_inf = 10.0 ** rng.uniform(-12.0, -0.5, count)
    ratio = 10.0 ** rng.uniform(-14.0, 3.0, count)  # c_zero / c_inf, often tiny
    return [(float(a), float(min(a * r, 1.0 - a))) for a, r in zip(c_inf, ratio, strict=True)]


def _within(total: float, mu_c: float, c_inf: float, c_zero: float) -> bool:
    c, m = Fraction(total), Fraction(mu_c)
    return c * m <= Fraction(c_inf) * _SLACK and c * (1 - m) <= Fraction(c_zero) * _SLACK


def test_effective_rates_never_claim_clones_of_either_kind_that_do_not_exist() -> None:
    pairs = _rate_pairs(400)
    assert all(_within(*effective_rates(a, z), a, z) for a, z in pairs)
    # lowering only the sum (the old layout) overstates c_zero where c_zero << c_inf
    naive = sum(not _within(rate_down(a + z), a / (a + z), a, z) for a, z in pairs)
    assert naive > 50


def test_g_lower_is_below_the_exact_g_for_every_block() -> None:
    rng = np.random.default_rng(11)
    naive_above = 0
    for _ in range(300):
        mu = float(10.0 ** rng.uniform(-7.0, -1e-4))
        mu_c = float(1.0 - 10.0 ** rng.uniform(-9.0, -0.01))
        rho = (1.0 - mu) * mu_c / (mu * (1.0 - mu_c))
        exact_rho = (1 - Fraction(mu)) * Fraction(mu_c) / (Fraction(mu) * (1 - Fraction(mu_c)))
        counts = np.floor(10.0 ** rng.uniform(0.0, 9.0, 8))
        s = np.floor(rng.uniform(0.0, 1.0, 8) * (counts + 2.0))
        g = g_lower(s, counts, rho)
        old = (1.0 - rho) * s + rho * (counts + 1.0)
        for si, ci, gi, oi in zip(s, counts, g, old, strict=True):
            exact = Fraction(si) + exact_rho * (Fraction(ci) + 1 - Fraction(si))
            assert Fraction(float(gi)) <= exact
            naive_above += Fraction(float(oi)) > exact
    assert naive_above > 50  # the cancelling form lands above the exact g


def _rappor_mu(eps0: float) -> float:
    t = math.exp(eps0 / 2.0)
    keep, flip = t / (t + 1.0), 1.0 / (t + 1.0)
    return keep * keep + flip * flip


def test_uninformative_share_is_below_the_exact_one_near_mu_one() -> None:
    mpmath.mp.dps = 40
    above = 0
    for eps0 in np.linspace(4.0, 40.0, 200):
        t = mpmath.exp(mpmath.mpf(float(eps0)) / 2)
        exact = 1 - (t**2 + 1) / (t + 1) ** 2  # RAPPOR: 1 − μ = 2t/(t + 1)²
        mu = _rappor_mu(float(eps0))
        assert uninformative_share(mu) <= exact
        above += (1.0 - mu) > exact
    assert above > 20  # 1 − fl(μ) overshoots by up to ε/(1 − μ) relative


def test_mu_within_rounding_of_one_falls_back_to_an_always_informative_target() -> None:
    kappa, near_one = math.tanh(1.0), math.nextafter(1.0, 0.0)
    at_top = split_clone_log_delta(1000, kappa, near_one, 0.2, 1e-3, 0.3, -40.0)
    below = split_clone_log_delta(1000, kappa, 0.9, 0.2, 1e-3, 0.3, -40.0)
    assert math.isfinite(at_top)
    assert at_top >= below  # δ is non-decreasing in μ
    no_zero = split_clone_log_delta(1000, kappa, 0.9, 0.2, 0.0, 0.3, -40.0)  # c_zero = 0
    assert below <= no_zero <= at_top


def test_rejects_rates_outside_the_simplex_naming_them() -> None:
    with pytest.raises(ValueError, match=r"c_zero=-0\.1"):
        split_clone_log_delta(100, 0.5, 0.5, 0.2, -0.1, 0.3, -40.0)
