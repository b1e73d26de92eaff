"""The expected positive part behind :class:`Lemma2Exact` against 50-digit sums, where its
two terms cancel."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting.binomial_tails import betainc_error
from crowdhide.accounting.scrambler.bounds import (
    _lemma2_weights,
    _positive_part_mean,
    binomial_window,
)

_P = 1.0 / 19.0
_BETA = 3.0


def _exact(alpha: float, trials: int, k_star: int) -> mpmath.mpf:
    """Σ_{b <= k*} (α − βb) P(B = b), summed down from k* until the terms stop counting."""
    with mpmath.workdps(50):
        q, a, beta = mpmath.mpf(_P), mpmath.mpf(alpha), mpmath.mpf(_BETA)
        log_c = mpmath.loggamma(trials + 1)
        total, b = mpmath.mpf(0), k_star
        while b >= 0:
            log_pmf = (
                log_c
                - mpmath.loggamma(b + 1)
                - mpmath.loggamma(trials - b + 1)
                + b * mpmath.log(q)
                + (trials - b) * mpmath.log1p(-q)
            )
            term = (a - beta * b) * mpmath.exp(log_pmf)
            total += term
            if b < k_star - 5 and term < total * mpmath.mpf(10) ** -45:
                break
            b -= 1
        return total


@pytest.mark.parametrize(("trials", "fraction"), [(10**5, 0.8), (10**6, 0.85), (10**6, 0.95)])
def test_positive_part_bounds_the_exact_mean_under_cancellation(
    trials: int, fraction: float
) -> None:
    k_star = int(trials * _P * fraction)  # below the mean: the terms cancel to ~1/k*
    alpha = np.array([_BETA * (k_star + 0.37)])
    m = np.array([float(trials)])
    cdf = binom.cdf(k_star, trials, _P)
    cdf_shifted = binom.cdf(k_star - 1, trials - 1, _P)
    bound = _positive_part_mean(
        alpha,
        _BETA,
        m,
        _P,
        (np.array([cdf]), betainc_error(np.array([cdf]), m)),
        (np.array([cdf_shifted]), betainc_error(np.array([cdf_shifted]), m - 1)),
    )
    exact = _exact(float(alpha[0]), trials, k_star)
    # the bare difference is off by up to 2e-8 relative here, 2e-8 *below* the exact value
    # at (10^6, 0.85) with SciPy 1.17: beyond the 1e-9 relative margin of Lemma2Exact.delta
    assert float(bound[0]) >= float(exact)
    assert float(bound[0]) <= float(exact) * (1.0 + 1e-5)


@pytest.mark.parametrize(
    ("n", "gamma", "components"),
    [(1, 0.3, 4096), (2, 0.5, 4096), (40, 0.1, 4096), (300, 0.7, 4096), (300, 0.3, 7)],
)
def test_lemma2_weights_bracket_the_binomial_weights(n: int, gamma: float, components: int) -> None:
    """Upper weights (of a bucket: its whole mass) and the omitted mass are at least the
    exact Bin(n − 1, γ) masses, lower weights at most (60-digit sums); ``components = 7``
    merges the window into buckets."""
    with mpmath.workdps(60):
        g = mpmath.mpf(gamma)
        pmf = [mpmath.binomial(n - 1, j) * g**j * (1 - g) ** (n - 1 - j) for j in range(n)]
        for upper in (True, False):
            w = _lemma2_weights(n, gamma, -20.0, components, upper=upper)
            if components < 4096:
                _, hi, _ = binomial_window(n - 1, gamma, -20.0)
                ends = [*w.m[1:].tolist(), hi + 1]
            else:
                ends = [m + 1 for m in w.m.tolist()]
            for a, b, log_w in zip(w.m.tolist(), ends, w.log_w.tolist(), strict=True):
                exact, weight = mpmath.fsum(pmf[a:b]), mpmath.exp(log_w)
                assert weight >= exact if upper else weight <= exact, (upper, a, b)
            assert w.omitted >= 1 - mpmath.fsum(pmf[int(w.m[0]) : ends[-1]])
