"""The two-count "all others on x'" lower bound of OUE and RAPPOR (``_same_two_count``).

It claims to be this dataset's exact δ up to blocking and rounding (both only lower it), so
it is checked against the exact δ of the shuffled multiset (d = 3, brute force), against
the worst case over every dataset, and against an independent sum over the counts at
larger n; a 1 % change to either key constant (ν, or the likelihood ratio e^ε0 that fixes
r = 1/(e + 1)) must break the first check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting.shuffle._same_two_count import (
    rappor_same_nu,
    two_count_same_lower_log_delta,
)
from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_lower_curve

from . import _mechanism_matrices as mm

NAMES = ("oue", "rappor")


def _setup(name: str, eps0: float) -> tuple[mm.Matrix, float]:
    if name == "oue":
        return mm.oue(eps0, 3), 0.5
    return mm.rappor(eps0, 3), rappor_same_nu(eps0)


def _exact(r: mm.Matrix, n: int, grid: list[float]) -> list[float]:
    """Exact δ (both directions) of target 0 or 1 with the n − 1 others on 1."""
    return mm.pair_deltas(r, 0, 1, (1,) * (n - 1), grid)


def _grid(eps0: float) -> list[float]:
    return [eps0 * f for f in (0.0, 0.05, 0.15, 0.3, 0.5, 0.7, 0.9)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps0", [0.5, 1.0, 3.0])
def test_equals_the_exact_delta_of_its_dataset(name: str, eps0: float) -> None:
    r, nu = _setup(name, eps0)
    for n in (2, 3, 5, 7):
        grid = _grid(eps0)
        for eps, exact in zip(grid, _exact(r, n, grid), strict=True):
            bound = math.exp(two_count_same_lower_log_delta(n, nu, eps0, eps))
            assert bound <= exact * (1.0 + 1e-9) + 1e-300, (name, eps0, n, eps)
            # blocks of width 1 at these n: the bound is the dataset's δ itself
            assert bound >= exact * (1.0 - 1e-7), (name, eps0, n, eps)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps0", [0.7, 2.0])
def test_below_the_worst_case_over_every_dataset(name: str, eps0: float) -> None:
    r, nu = _setup(name, eps0)
    for n in (3, 5):
        grid = _grid(eps0)
        worst = mm.worst_deltas(r, n, grid)
        for eps, w in zip(grid, worst, strict=True):
            bound = math.exp(two_count_same_lower_log_delta(n, nu, eps0, eps))
            assert bound <= w * (1.0 + 1e-9) + 1e-300


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("which", ["nu", "ratio"])
def test_a_one_percent_change_is_caught(name: str, which: str) -> None:
    """ν 1 % larger, or e^ε0 1 % larger (r = 1/(e + 1) and the weights), exceeds the exact δ
    somewhere on the grid: the brute-force check above can fail."""
    caught = False
    for eps0 in (0.5, 1.0, 3.0):
        r, nu = _setup(name, eps0)
        nu2, eps0_2 = (nu * 1.01, eps0) if which == "nu" else (nu, eps0 + math.log(1.01))
        for n in (2, 3, 5):
            grid = _grid(eps0)
            for eps, exact in zip(grid, _exact(r, n, grid), strict=True):
                bound = math.exp(two_count_same_lower_log_delta(n, nu2, eps0_2, eps))
                caught = caught or bound > exact * (1.0 + 1e-6)
    assert caught


def _independent(n: int, nu: float, eps0: float, eps: float) -> float:
    """The two-count δ summed count by count: s ~ Bin(n, ν), A | s ~ Bin(s, 1/(e + 1))."""
    e, big = math.exp(eps0), math.exp(eps)
    s = np.arange(n + 1)
    ps = binom.pmf(s, n, nu)
    fwd = bwd = 0.0
    for si, pi in zip(s, ps, strict=True):
        a = np.arange(si + 1)
        pa = binom.pmf(a, si, 1.0 / (e + 1.0))
        # Σ_i L(Y_i) with L = e on (1, 0), 1/e on (0, 1), 1 elsewhere
        total = (n - si) + e * a + (si - a) / e
        fwd += pi * float(np.dot(pa, np.maximum(n - big * n + (total - n), 0.0)))
        bwd += pi * float(np.dot(pa, np.maximum(n - big * total, 0.0)))
    return max(fwd, bwd) / n


@pytest.mark.parametrize(("n", "eps0"), [(300, 1.0), (2000, 0.5), (2000, 4.0)])
def test_blocks_only_lower_and_lose_little(n: int, eps0: float) -> None:
    """At n where the blocks are wider than one count: at most, and within 15 % of, the
    independent count-by-count sum (measured 8 % low at δ ≈ 5e-8 with 64 blocks)."""
    nu = rappor_same_nu(eps0)
    for frac in (0.05, 0.2, 0.4):
        eps = frac * eps0 if n < 1000 else frac * eps0 / 8.0
        exact = _independent(n, nu, eps0, eps)
        bound = math.exp(two_count_same_lower_log_delta(n, nu, eps0, eps, points=64))
        assert bound <= exact * (1.0 + 1e-9), (n, eps0, eps)
        if exact > 1e-12:  # deeper, h grows faster across a block (26 % low at δ ≈ 7e-21)
            assert bound >= exact * 0.85, (n, eps0, eps)


def test_beyond_eps0_and_degenerate_input_give_no_bound() -> None:
    assert two_count_same_lower_log_delta(100, 0.5, 1.0, 1.0) == -math.inf
    assert two_count_same_lower_log_delta(100, 1.0, 1.0, 0.1) == -math.inf
    assert two_count_same_lower_log_delta(0, 0.5, 1.0, 0.1) == -math.inf


def test_rappor_lower_bound_rises_and_stays_below_the_certificate() -> None:
    """RAPPOR at ε0 = 1, n = 1e4, δ = 1e-6: the lower bound was 0.023727 (third-value regions);
    the two-count member lifts it to about 0.02511, still below the certificate."""
    low = mechanism_lower_curve(mechanism="rappor", eps0=1.0, n=10**4, d=16).epsilon(1e-6)
    cert = mechanism_curve(mechanism="rappor", eps0=1.0, n=10**4, d=16).epsilon(1e-6)
    assert 0.0250 < low < cert


@pytest.mark.parametrize("eps", [6.0, 7.5, 7.95])
def test_deep_tails_at_most_the_count_by_count_sum(eps: float) -> None:
    """RAPPOR ε0 = 8, n = 2000: δ near e^{−60} … e^{−76}, from s near n."""
    n, eps0 = 2000, 8.0
    nu = rappor_same_nu(eps0)
    exact = _independent(n, nu, eps0, eps)
    bound = math.exp(two_count_same_lower_log_delta(n, nu, eps0, eps))
    assert 0.5 * exact <= bound <= exact * (1.0 + 1e-9)


@pytest.mark.parametrize("eps", [7.5, 7.95])
def test_the_upper_flank_keeps_the_all_informative_outcome(eps: float) -> None:
    """RAPPOR ε0 = 8, n = 1e4: the outcome "every report (0, 1)" alone (probability
    u^{2n} ≈ e^{−366} under x', likelihood ratio e^{ε0}) gives δ_bwd >= u^{2n}(1 − e^{ε − ε0});
    it lies far outside the e^{−40} window, and the flank's blocks of width 1, 1, 2, 4, ...
    from n keep it (without them the bound is 0 here, measured)."""
    n, eps0 = 10**4, 8.0
    t = math.exp(eps0 / 2.0)
    single = 2 * n * math.log(t / (t + 1.0)) + math.log(-math.expm1(eps - eps0))
    bound = two_count_same_lower_log_delta(n, rappor_same_nu(eps0), eps0, eps)
    assert bound >= single - 1e-6
