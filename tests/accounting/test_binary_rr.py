"""Binary RR worst case by blocks of datasets (crowdhide.accounting.shuffle.binary_rr) and the exact
O(1) lower bound of the "all others on x'" dataset: soundness against exhaustive
enumeration and against the exact worst case over every dataset, coverage of the blocks,
tightness, and a deliberately wrong variant that the same comparison catches."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle.binary_rr import (
    BINARY_BLOCKS_MAX_N,
    binary_rr_worst_curve,
    block_width,
)
from tests.oracles.shuffle import pair_curve, worst_case_delta

EPS0S = (0.1, 0.5, 1.0, 2.0, 4.0, 6.0)


def _dataset(n: int, m: int) -> tuple[int, ...]:
    """m of the other users on x (value 0), the rest on x' (value 1)."""
    return (0,) * m + (1,) * (n - 1 - m)


def _count_pair_delta(n: int, m: int, eps0: float, eps: float) -> float:
    """δ(ε) of dataset m from the law of the count of x-reports, built with scipy's binomial
    pmf and a direct convolution (independent of the code under test)."""
    from scipy.stats import binom

    from crowdhide.accounting.curves import DiscretePairCurve

    p = math.exp(eps0) / (math.exp(eps0) + 1.0)
    others = np.convolve(
        binom.pmf(np.arange(m + 1), m, p), binom.pmf(np.arange(n - m), n - 1 - m, 1 - p)
    )
    law_x = p * np.append(0.0, others) + (1 - p) * np.append(others, 0.0)
    law_y = (1 - p) * np.append(0.0, others) + p * np.append(others, 0.0)
    return DiscretePairCurve.from_probabilities(law_x, law_y).delta(eps)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 11])
@pytest.mark.parametrize("eps0", EPS0S)
def test_blocks_never_below_exhaustive_enumeration(n: int, eps0: float) -> None:
    for blocks in (1, 2, 64):
        curve = binary_rr_worst_curve(eps0=eps0, n=n, blocks=blocks)
        for frac in (0.0, 0.05, 0.3, 0.7):
            truth, _ = worst_case_delta(n, 2, eps0, frac * eps0)
            assert truth <= curve.delta(frac * eps0)


@pytest.mark.parametrize("n", [40, 301])
@pytest.mark.parametrize("eps0", EPS0S)
def test_blocks_never_below_the_exact_worst_case(n: int, eps0: float) -> None:
    """Against the maximum over all n datasets, each exact (itself tested against
    enumeration in test_shuffle_tight.py), at several ε and δ."""
    exact = binary_rr_worst_curve(eps0=eps0, n=n, blocks=n)
    assert exact.width == 1
    for blocks in (3, 16, 64):
        curve = binary_rr_worst_curve(eps0=eps0, n=n, blocks=blocks)
        for frac in (0.0, 0.02, 0.1, 0.3, 0.6):
            assert curve.delta(frac * eps0) >= exact.delta(frac * eps0) * (1.0 - 1e-9)
        for delta in (1e-3, 1e-6, 1e-10):
            assert curve.epsilon(delta) >= exact.epsilon(delta)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1000, 2500])
@pytest.mark.parametrize("eps0", EPS0S)
def test_blocks_never_below_the_exact_worst_case_large(n: int, eps0: float) -> None:
    exact = binary_rr_worst_curve(eps0=eps0, n=n, blocks=n)
    for blocks in (8, 64):
        curve = binary_rr_worst_curve(eps0=eps0, n=n, blocks=blocks)
        for delta in (1e-4, 1e-6, 1e-9):
            assert curve.epsilon(delta) >= exact.epsilon(delta)
        assert curve.delta(0.05 * eps0) >= exact.delta(0.05 * eps0) * (1.0 - 1e-9)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 11, 1001])
@pytest.mark.parametrize("width", [1, 2, 3, 7])
def test_block_cores_cover_every_dataset(n: int, width: int) -> None:
    """Dataset m (forward direction) is a post-processing of core (a, b) iff a <= m and
    b <= n − 1 − m with a + b = n − width; every m must have such a core."""
    if width > (n + 1) // 2:
        with pytest.raises(ValueError, match="width"):
            fast.binary_core_rows(n, width)
        return
    rows = fast.binary_core_rows(n, width)
    assert all(a + b == n - width and a >= 0 and b >= 0 for a, b in rows)
    for m in range(n):
        assert any(a <= m and b <= n - 1 - m for a, b in rows), m


def test_grid_of_datasets_without_dropping_users_is_caught() -> None:
    """Taking the exact δ of one dataset per block (no users dropped) is not a certificate:
    the worst dataset lies between grid points, and the comparison above catches it."""
    n, eps0 = 100, 1.0
    caught = False
    for eps in (0.05, 0.15, 0.3):
        deltas = [_count_pair_delta(n, m, eps0, eps) for m in range(n)]
        width = 8
        grid = max(deltas[m] for m in range(n) if m % width == 0 or (n - 1 - m) % width == 0)
        caught |= grid < max(deltas) * (1.0 - 1e-9)
        curve = binary_rr_worst_curve(eps0=eps0, n=n, blocks=-(-((n - 1) // 2 + 1) // width))
        assert curve.width == width
        assert curve.delta(eps) >= max(deltas)
    assert caught


@pytest.mark.parametrize(("n", "eps0"), [(5000, 0.5), (5000, 4.0), (20_000, 1.0)])
def test_blocks_within_one_percent_of_the_lower_bound(n: int, eps0: float) -> None:
    """The certificate is within 1 % in ε of the exact "all others on x'" dataset, so the
    truth is pinned to 1 % (FMT23 is 12–34 % above at these parameters)."""
    delta = 1e-6
    cert = binary_rr_worst_curve(eps0=eps0, n=n).epsilon(delta)
    low = safe_root(
        lambda e: fast.binary_same_lower_log_delta(n, eps0, e),
        math.log(delta),
        0.0,
        eps0,
        xtol=1e-12,
        lower_side=True,
    )
    assert low <= cert <= 1.01 * low


@pytest.mark.parametrize("n", [1, 2, 6, 40])
@pytest.mark.parametrize("eps0", [0.3, 1.0, 4.0])
def test_same_dataset_lower_bound_is_exact_and_below_the_truth(n: int, eps0: float) -> None:
    same = pair_curve(_dataset(n, 0), 2, eps0)
    for frac in (0.0, 0.1, 0.4, 0.9):
        eps = frac * eps0
        low = math.exp(fast.binary_same_lower_log_delta(n, eps0, eps))
        truth = same.delta(eps)
        assert low <= truth
        assert low == pytest.approx(truth, rel=1e-9, abs=1e-300)
        worst, _ = worst_case_delta(min(n, 9), 2, eps0, eps)
        if n <= 9:
            assert low <= worst


def test_same_dataset_lower_bound_at_large_n_is_finite_and_monotone() -> None:
    for n in (10**6, 10**9):
        values = [fast.binary_same_lower_log_delta(n, 1.0, e) for e in np.linspace(0, 0.02, 9)]
        assert all(math.isfinite(v) or v == -math.inf for v in values)
        assert all(b <= a for a, b in itertools.pairwise(values))


def test_block_width_and_limits() -> None:
    assert block_width(1, 64) == 1
    assert block_width(127, 64) == 1
    assert block_width(129, 64) == 2
    with pytest.raises(ValueError, match="n"):
        binary_rr_worst_curve(eps0=1.0, n=BINARY_BLOCKS_MAX_N + 1)
    with pytest.raises(ValueError, match="eps0"):
        binary_rr_worst_curve(eps0=0.0, n=10)
    with pytest.raises(ValueError, match="blocks"):
        binary_rr_worst_curve(eps0=1.0, n=BINARY_BLOCKS_MAX_N, blocks=10**5)
