"""The deep excess bound of ``_deep_excess`` (issue 32, s36-deep) against exact sums.

``log_half_excess_upper`` bounds ``E[(A − θ)_+]``, ``A ~ Bin(s, ½)``, by its first term times
a geometric series (docs/proofs/variation-ratio.md, §11). Here the excess is summed term by
term in log space (``gammaln``, log-sum-exp over every count above θ: an independent
computation), from moderate tails down to e^-1200 (below the double range), and the bound
must be above it and within 1 % of it in the deep tail. The split clone system with the new
caps is compared with the same system enumerated outcome by outcome (C, the clones' kinds, the
informative count) at a tail level below ``DEEP_EXCESS_TAIL``.

The comparisons can fail: the same bound with one factor ``1/(1 − r)`` dropped (the geometric
series' second moment) falls below the exact excess on the grid, and the split system for
10 % more users falls below the exact one.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from scipy.special import gammaln, logsumexp

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle import _deep_excess
from crowdhide.accounting.shuffle._deep_excess import (
    DEEP_EXCESS_TAIL,
    deep_log_h,
    log_half_excess_upper,
)
from crowdhide.accounting.shuffle._split_clone import split_clone_log_delta
from crowdhide.accounting.shuffle.variation_ratio import clone_rates

FloatArray = npt.NDArray[np.float64]

#: (s, θ) from a few standard deviations out to the far tail, integral θ included.
GRID = [
    (s, s / 2.0 + frac * s / 2.0 + off)
    for s in (3.0, 40.0, 200.0, 1832.0, 20_000.0, 2.0e5)
    for frac in (0.2, 0.5, 0.77, 0.95)
    for off in (0.0, 0.37, 0.999)
]


def _log_binomial(count: float, k: FloatArray, p: float) -> FloatArray:
    inside = (k >= 0.0) & (k <= count)
    kk = np.clip(k, 0.0, count)
    value = gammaln(count + 1.0) - gammaln(kk + 1.0) - gammaln(count - kk + 1.0)
    value = value + kk * math.log(p) + (count - kk) * math.log1p(-p)
    return np.asarray(np.where(inside, value, -np.inf), dtype=np.float64)


def _log_binomial_rows(s: FloatArray, a: FloatArray) -> FloatArray:
    """``log P(Bin(s, ½) = a)`` for a column of s and rows of a inside ``[0, s]``."""
    aa = np.clip(a, 0.0, s)
    return np.asarray(
        gammaln(s + 1.0) - gammaln(aa + 1.0) - gammaln(s - aa + 1.0) - s * math.log(2.0)
    )


def exact_log_excess(s: float, theta: float) -> float:
    """``log E[(A − θ)_+]`` summed over every count above θ (−inf where none is)."""
    a = np.arange(math.floor(theta) + 1.0, s + 1.0)
    if a.size == 0:
        return -math.inf
    return float(logsumexp(_log_binomial(s, a, 0.5) + np.log(a - theta)))


def test_the_bound_is_above_the_exact_excess_and_tight_in_the_deep_tail() -> None:
    s = np.array([case[0] for case in GRID])
    theta = np.array([case[1] for case in GRID])
    bound = log_half_excess_upper(s, theta)
    deep = 0
    for (si, ti), b in zip(GRID, bound, strict=True):
        exact = exact_log_excess(si, ti)
        if not math.isfinite(b):  # no bound (θ within a count of s/2) or no excess at all
            assert b == math.inf or exact == -math.inf
            continue
        assert b >= exact, (si, ti)
        if exact < -200.0:  # the deep tail: the series' ratios change little
            deep += 1
            assert b - exact < 0.01, (si, ti, b - exact)
    assert deep >= 12


def test_the_comparison_catches_a_bound_without_the_second_moment() -> None:
    """Dropping one factor ``1/(1 − r)`` (the series ``Σ i r^i``) lowers the bound by
    ``−ln(1 − r)``: it falls below the exact excess somewhere on the grid."""
    s = np.array([case[0] for case in GRID])
    theta = np.array([case[1] for case in GRID])
    k = np.floor(theta * (1.0 - _deep_excess.THETA_LOWER)) + 1.0
    ratio = np.clip((s - k) / (k + 1.0), 0.0, 0.999)
    perturbed = log_half_excess_upper(s, theta) + np.log1p(-ratio)
    below = [
        b < exact_log_excess(si, ti)
        for (si, ti), b in zip(GRID, perturbed, strict=True)
        if math.isfinite(b)
    ]
    assert any(below)


def test_the_deep_h_matches_the_exact_h_at_the_measured_cell() -> None:
    """At ε0 = 2, n = 1e4, δ = 1e-300 the dominant block (s = 1832, g = 1833) has
    ``log H = −613.03`` exactly; the former bounds said −604.9 (§11)."""
    kappa, eps = kappa_up(2.0), 1.3267486
    big = math.exp(eps)
    s, g = 1832.0, 1833.0
    theta = s / 2.0 + g * math.expm1(eps) / (2.0 * kappa * (1.0 + big))
    exact = exact_log_excess(s, theta) + math.log(2.0 * kappa * (1.0 + big) / g)
    got = float(deep_log_h(np.array([s]), np.array([g]), kappa=kappa, eps=eps)[0])
    assert exact <= got < exact + 0.01


def exact_split_log_delta(
    n: int, kappa: float, mu: float, rates: tuple[float, float], eps: float
) -> float:
    """``log δ(ε)`` of the split clone system by its closed form (docs/proofs/variation-ratio.md,
    §4) with every clone count C, every count u of uninformative units and every excess
    summed term by term in log space (no blocks, no tail bound)."""
    c_inf, c_zero = rates
    big = math.exp(eps)
    total, share = c_inf + c_zero, c_inf / (c_inf + c_zero)
    rho = (1.0 - mu) * share / (mu * (1.0 - share))
    counts = np.arange(0.0, float(n))
    log_count = _log_binomial(float(n - 1), counts, total)
    terms = []
    for count in counts[log_count > log_count.max() - 800.0]:
        u = np.arange(0.0, count + 2.0)  # uninformative units: (1 − T) + Bin(C, 1 − μ')
        log_u = np.logaddexp(
            math.log(mu) + _log_binomial(count, u, 1.0 - share),
            math.log1p(-mu) + _log_binomial(count, u - 1.0, 1.0 - share),
        )
        s = count + 1.0 - u
        g = s + rho * u
        theta = s / 2.0 + g * math.expm1(eps) / (2.0 * kappa * (1.0 + big))
        keep = (log_u > log_u.max() - 800.0) & (np.floor(theta) < s)
        if keep.any():  # every count a above θ, all the kept u at once
            sk, tk = s[keep][:, None], theta[keep][:, None]
            a = np.floor(tk) + 1.0 + np.arange(0.0, float(np.max(sk - np.floor(tk))))[None, :]
            with np.errstate(invalid="ignore", divide="ignore"):
                log_pmf = np.where(a <= sk, _log_binomial_rows(sk, a), -np.inf)
                excess = logsumexp(log_pmf + np.log(np.maximum(a - tk, 0.0)), axis=1)
            log_h = excess + np.log(2.0 * kappa * (1.0 + big) / g[keep])
            terms.append(log_count[int(count)] + float(logsumexp(log_u[keep] + log_h)))
    return float(logsumexp(terms)) if terms else -math.inf


@pytest.mark.parametrize(
    ("n", "eps0", "eps", "mu"),
    [
        (900, 1.0, 0.93, 0.98),
        pytest.param(2000, 0.5, 0.38, 0.995, marks=pytest.mark.slow),
        pytest.param(3000, 1.0, 0.75, 0.99, marks=pytest.mark.slow),
    ],
)
def test_the_split_system_stays_above_its_exact_value_with_the_deep_caps(
    n: int, eps0: float, eps: float, mu: float
) -> None:
    """At a tail level below ``DEEP_EXCESS_TAIL`` (the deep caps on) the blocked split system
    is above the same system summed exactly (5-9 above it at the default blocking); for 10 %
    more users it is below the exact value, so the comparison can fail."""
    kappa = kappa_up(eps0)
    c_inf, c_zero = clone_rates(mu, eps0)
    exact = exact_split_log_delta(n, kappa, mu, (c_inf, c_zero), eps)
    got = split_clone_log_delta(n, kappa, mu, c_inf, c_zero, eps, DEEP_EXCESS_TAIL - 1.0)
    assert exact - 1e-6 <= got
    assert got < exact + 10.0
    more = split_clone_log_delta(
        int(1.1 * n), kappa, mu, c_inf, c_zero, eps, DEEP_EXCESS_TAIL - 1.0
    )
    assert more < exact
