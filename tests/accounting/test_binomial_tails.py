"""Binomial windows and block masses against sums in 60-digit arithmetic (``mpmath``; the
float parameter p is binary, so it is taken exactly): every rounded-up mass is at or above
the true one, every rounded-down one at or below, and both are close. These masses feed
every blocked shuffle certificate."""

from __future__ import annotations

import math
import random

import mpmath
import numpy as np
import pytest

from crowdhide.accounting.binomial_tails import (
    BETAINC_ATOL,
    BETAINC_TRUSTED,
    betainc_error,
    binom_cdf,
    binom_cdf_rtol,
    binom_sf,
    binom_window,
    block_masses,
    tail_edges_many,
    window_blocks,
)


def _exact_pmf(n: int, p: float) -> list[mpmath.mpf]:
    with mpmath.workdps(60):
        fp = mpmath.mpf(p)
        return [mpmath.binomial(n, j) * fp**j * (1 - fp) ** (n - j) for j in range(n + 1)]


def _exact_mass(pmf: list[mpmath.mpf], lo: int, hi: int) -> mpmath.mpf:
    with mpmath.workdps(60):
        return mpmath.fsum(pmf[max(lo, 0) : min(hi, len(pmf) - 1) + 1])


# p >= 1/2 takes the lower tails through I_{1-p}(n - k, k + 1), p < 1/2 through betaincc:
# both branches, and both tails, are on the grid.
PROBABILITIES = (0.03, 0.3, 0.5, 0.7, 0.97)


@pytest.mark.parametrize("n", [1, 7, 60, 333])
@pytest.mark.parametrize("p", PROBABILITIES)
def test_block_masses_bracket_the_exact_mass(n: int, p: float) -> None:
    pmf = _exact_pmf(n, p)
    rng = random.Random(n * 1000 + int(p * 100))
    blocks = [(0, n), (0, 0), (n, n), (n // 2, n // 2)]
    blocks += [tuple(sorted((rng.randint(0, n), rng.randint(0, n)))) for _ in range(40)]
    lo = np.array([b[0] for b in blocks], dtype=np.float64)
    hi = np.array([b[1] for b in blocks], dtype=np.float64)
    nn = np.full(lo.shape, float(n))
    upper = block_masses(nn, p, lo, hi, upper=True)
    lower = block_masses(nn, p, lo, hi, upper=False)
    for i, (a, b) in enumerate(blocks):
        exact = _exact_mass(pmf, a, b)
        assert mpmath.mpf(lower[i]) <= exact <= mpmath.mpf(upper[i]), (n, p, a, b)
        if exact < 2 * BETAINC_TRUSTED:  # untrusted incomplete betas: Chernoff bound and 0
            continue
        # The documented error: betainc_error of the two tails taken (upper tails for blocks
        # above the mean), on each side.
        if a > n * p:
            tails = [_exact_mass(pmf, a, n), _exact_mass(pmf, b + 1, n)]
        else:
            tails = [_exact_mass(pmf, 0, b), _exact_mass(pmf, 0, a - 1)]
        values = np.array([float(t) for t in tails])
        errors = betainc_error(values, float(n))
        if a <= n * p and p < 0.5:  # lower tails: 1 − p rounded (binom_cdf_rtol)
            at = np.array([float(b), float(a - 1)])
            errors = errors + values * binom_cdf_rtol(at, np.full(2, float(n)), p)
        allowed = 2.0 * float(errors.sum()) * 1.01 + 4.0 * BETAINC_ATOL
        allowed += 4e-240  # UNTRUSTED_ATOL per untrusted tail, on each side
        assert upper[i] - lower[i] <= allowed, (n, p, a, b)


@pytest.mark.parametrize("p", PROBABILITIES)
def test_tails_match_the_exact_sums(p: float) -> None:
    """Both tails to 1e-12 relative, including the lower tail's complement form (p >= 1/2)."""
    n = 200
    pmf = _exact_pmf(n, p)
    k = np.arange(-1.0, n + 2.0)
    sf = binom_sf(k, np.full(k.shape, float(n)), p)
    cdf = binom_cdf(k, np.full(k.shape, float(n)), p)
    for i, kk in enumerate(k.astype(int).tolist()):
        exact_sf = float(_exact_mass(pmf, kk, n))
        exact_cdf = float(_exact_mass(pmf, 0, kk))
        assert abs(sf[i] - exact_sf) <= 1e-12 * exact_sf + 1e-300, (p, kk)
        assert abs(cdf[i] - exact_cdf) <= 1e-12 * exact_cdf + 1e-300, (p, kk)


@pytest.mark.parametrize(("n", "p"), [(2000, 0.2), (2000, 0.6), (501, 0.97)])
def test_window_blocks_bound_each_block_and_the_outside(n: int, p: float) -> None:
    pmf = _exact_pmf(n, p)
    starts, log_w, log_out = window_blocks(n, p, -40.0, lambda lo, size: 9)
    lo, hi = int(starts[0]), binom_window(n, p, -40.0).hi
    assert np.all(np.diff(starts) == 9)  # contiguous blocks from the window's first count
    ends = [*(int(s) - 1 for s in starts[1:]), hi]
    for start, end, lw in zip(starts.astype(int).tolist(), ends, log_w.tolist(), strict=True):
        exact = _exact_mass(pmf, start, end)
        assert exact <= mpmath.mpf(math.exp(lw)) * (1 + 1e-13), (start, end)
        assert math.exp(lw) <= float(exact) * (1 + 1e-11), (start, end)
    outside = _exact_mass(pmf, 0, lo - 1) + _exact_mass(pmf, hi + 1, n)
    assert float(outside) <= math.exp(log_out)


def test_window_blocks_of_width_one_are_the_window() -> None:
    starts, log_w, log_out = window_blocks(1000, 0.4, -40.0, lambda lo, size: 1)
    win = binom_window(1000, 0.4, -40.0)
    assert np.array_equal(starts, win.values)
    assert np.array_equal(log_w, win.log_pmf)
    assert log_out == win.log_tail


def test_window_blocks_cost_does_not_grow_with_n() -> None:
    """At n = 10^9 the window holds ~3·10^5 counts: 100 blocks are 100 masses, summing to 1."""
    starts, log_w, _ = window_blocks(10**9, 0.3, -50.0, lambda lo, size: -(-size // 100))
    assert starts.size <= 100
    # Each mass is rounded up by its error bound (incomplete beta, 1 − p): ~1e-6 at 10^9.
    assert 1.0 - 1e-12 < float(np.exp(log_w).sum()) < 1.0 + 1e-5


def _tail_above(n: int, k: int, p: float | mpmath.mpf) -> mpmath.mpf:
    """``P(Bin(n, p) >= k)`` for k above the mean, summed upwards in 40 digits from one
    log-gamma pmf (the terms fall geometrically: a few thousand suffice)."""
    with mpmath.workdps(40):
        fp = mpmath.mpf(p)
        log_first = (
            mpmath.loggamma(n + 1)
            - mpmath.loggamma(k + 1)
            - mpmath.loggamma(n - k + 1)
            + k * mpmath.log(fp)
            + (n - k) * mpmath.log(1 - fp)
        )
        term, total, j = mpmath.mpf(1), mpmath.mpf(0), k
        while j <= n and term >= total * mpmath.mpf(10) ** -30:
            total += term
            term = term * (n - j) / (j + 1) * fp / (1 - fp)
            j += 1
        return total * mpmath.exp(log_first)


@pytest.mark.parametrize("n", [10**3, 10**4, 10**5, 10**6])
def test_the_error_model_covers_measured_tails(n: int) -> None:
    """Tails 3 to 37 standard deviations out, both tails (the lower one of Bin(n, p) is the
    upper one of Bin(n, 1 − p), and ``binom_cdf`` takes another route to it). Boost's error
    exceeds 5e-14 (the constant assumed before) here from n = 10^3 on, so the test can fail."""
    rng = np.random.default_rng(n)
    worst = 0.0
    for _ in range(25):
        p = float(rng.choice([0.5, 0.3, 0.7, 0.03, rng.uniform(0.01, 0.99)]))
        k = math.floor(n * p + rng.uniform(3.0, 37.0) * math.sqrt(n * p * (1.0 - p)))
        if not 1 <= k <= n:
            continue
        truth = _tail_above(n, k, p)
        if truth < mpmath.mpf("1e-300"):
            continue
        sf = float(binom_sf(np.array([float(k)]), np.array([float(n)]), p)[0])
        # P(Bin(n, 1 − p) <= n − k) is the same number.
        cdf = float(binom_cdf(np.array([float(n - k)]), np.array([float(n)]), 1.0 - p)[0])
        allowed = float(betainc_error(np.array([float(truth)]), float(n))[0])
        allowed += float(truth) * float(
            binom_cdf_rtol(np.array([float(n - k)]), float(n), 1.0 - p)[0]
        )
        for got in (sf, cdf):
            gap = abs(mpmath.mpf(got) - truth)
            assert gap <= allowed, (n, k, p, float(gap / truth))
            worst = max(worst, float(gap / truth))
    assert worst > 0.0  # the comparison ran


@pytest.mark.parametrize("p", [0.1, 0.3, 1.0 / 3.0, 0.45])
@pytest.mark.parametrize("n", [10**4, 10**6])
def test_lower_tails_cover_the_rounded_complement(n: int, p: float) -> None:
    """``binom_cdf`` evaluates ``I_{1−p}`` at ``1 − p`` rounded to a double: against the exact
    complement (40 digits) its error is within ``betainc_error`` plus ``binom_cdf_rtol``.
    (The rounding moves these tails by ~1e-12 relative at n = 10^6, under the model; the
    check fails for a wrong complement or argument order by orders of magnitude.)"""
    sd = math.sqrt(n * p * (1.0 - p))
    for z in (0.0, 4.0, 8.0, 15.0, 30.0):
        k = math.floor(n * p - z * sd)
        if k < 0:
            continue
        with mpmath.workdps(40):
            truth = _tail_above(n, n - k, 1 - mpmath.mpf(p))  # P(Bin(n, p) <= k)
        got = float(binom_cdf(np.array([float(k)]), np.array([float(n)]), p)[0])
        model = float(betainc_error(np.array([got]), float(n))[0])
        rounding = got * float(binom_cdf_rtol(np.array([float(k)]), np.array([float(n)]), p)[0])
        assert float(abs(mpmath.mpf(got) - truth)) <= model + rounding, (n, p, z)


@pytest.mark.parametrize("p", PROBABILITIES)
@pytest.mark.parametrize("log_tail", [-3.0, -20.0, -60.0])
def test_tail_edges_are_the_narrowest_valid_window(p: float, log_tail: float) -> None:
    """Each exact tail outside the edges is at most e^log_tail, one more value in would break
    that (the window is the narrowest), and the outside bound covers the exact outside mass;
    exact sums in 60 digits."""
    sizes = [1, 2, 7, 60, 333]
    lo, hi, outside = tail_edges_many(sizes, p, log_tail)
    limit = mpmath.exp(log_tail)
    for n, a, b, out in zip(sizes, lo.tolist(), hi.tolist(), outside.tolist(), strict=True):
        pmf = _exact_pmf(n, p)
        below, above = _exact_mass(pmf, 0, a - 1), _exact_mass(pmf, b + 1, n)
        assert below <= limit, (n, a, b)
        assert above <= limit, (n, a, b)
        assert out >= below + above
        assert a == 0 or _exact_mass(pmf, 0, a) > limit  # lo cannot move up
        assert b == n or _exact_mass(pmf, b, n) > limit  # hi cannot move down
        assert out <= 2.0 * float(limit) * (1.0 + 1e-9) + 1e-299
