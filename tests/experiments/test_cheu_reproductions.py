"""The exact λ of Cheu et al.'s shuffled bit sum against enumeration over all datasets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.experiments.cheu_sums import exact_lambda


def _enumerated_delta(n: int, lam: float, eps: float) -> float:
    """max over every dataset of the n − 1 others (all 2^(n−1), no reduction to counts) and
    both directions of the hockey-stick divergence of the count of 1-reports, x_0 = 1 vs 0."""
    keep_one = 1.0 - lam / (2.0 * n)  # P(report 1 | bit 1); P(report 1 | bit 0) = lam / (2n)
    worst = 0.0
    for others in itertools.product((0, 1), repeat=n - 1):
        pmf = np.array([1.0])
        for bit in others:
            p1 = keep_one if bit else 1.0 - keep_one
            pmf = np.convolve(pmf, [1.0 - p1, p1])
        with_one = np.convolve(pmf, [1.0 - keep_one, keep_one])
        with_zero = np.convolve(pmf, [keep_one, 1.0 - keep_one])
        for p, q in ((with_one, with_zero), (with_zero, with_one)):
            worst = max(worst, float(np.maximum(p - math.exp(eps) * q, 0.0).sum()))
    return worst


@pytest.mark.parametrize(("n", "eps", "delta"), [(10, 1.0, 0.02), (12, 0.8, 0.05)])
def test_exact_lambda_brackets_the_enumerated_minimum(n: int, eps: float, delta: float) -> None:
    found = exact_lambda(n=n, epsilon=eps, delta=delta)
    assert found.certified
    # the upper end is private against every dataset ...
    assert _enumerated_delta(n, found.high, eps) <= delta
    # ... and just below the lower end some dataset is not: the bracket holds the minimum
    assert _enumerated_delta(n, found.low * (1 - 1e-3), eps) > delta
    assert found.high / found.low - 1 <= 1e-2


def test_exact_lambda_is_below_the_fast_bound_certificate() -> None:
    from crowdhide.protocols.bitsum import calibrate_bit_sum

    found = exact_lambda(n=2000, epsilon=1.0, delta=1e-6)
    certified, _ = calibrate_bit_sum(n=2000, epsilon=1.0, delta=1e-6, calibration="exact")
    assert found.certified
    assert found.high <= certified * (1 + 1e-9)
