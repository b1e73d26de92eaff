"""The split clone system at δ near 1e-300: the incomplete betas' absolute allowance
(``BETAINC_ATOL`` = 1e-300) no longer floors the evaluation (Chernoff caps in
``_split_clone``: ``_deep_cap`` on block masses, ``_deep_h`` on each block's bound).

Reference: the unblocked sum of the split clone system written from its definition, every
term in log space (log-pmfs and a log-sum-exp over the excess), so nothing underflows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from crowdhide.accounting.shuffle import _split_clone
from crowdhide.accounting.shuffle._split_clone import split_clone_log_delta

FloatArray = np.ndarray


def _log_binom(k: FloatArray, n: float, p: float) -> FloatArray:
    """log Bin(k; n, p), −inf outside 0..n."""
    k = np.asarray(k, dtype=np.float64)
    inside = (k >= 0) & (k <= n)
    kk = np.where(inside, k, 0.0)
    with np.errstate(divide="ignore"):
        out = (
            gammaln(n + 1.0)
            - gammaln(kk + 1.0)
            - gammaln(n - kk + 1.0)
            + kk * math.log(p)
            + (n - kk) * math.log1p(-p)
        )
    return np.where(inside, out, -np.inf)


def _log_alpha_h(units: FloatArray, lam: FloatArray, eps: float) -> FloatArray:
    """log H(λ, s) of the α-pair per s: ``(2λ(1+E)/s) E[(A − θ)_+]``, ``A ~ Bin(s, 1/2)``,
    ``θ = s/2 + s(E − 1)/(2λ(1 + E))``, summed over a in log space (rows: s)."""
    big = math.exp(eps)
    theta = units / 2.0 + units * math.expm1(eps) / (2.0 * lam * (1.0 + big))
    a = np.arange(0.0, float(units.max()) + 1.0)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.log(np.maximum(a - theta[:, None], 0.0)) + _log_binom_rows(a, units)
    return np.asarray(logsumexp(terms, axis=1) + np.log(2.0 * lam * (1.0 + big) / units))


def _log_binom_rows(a: FloatArray, units: FloatArray) -> FloatArray:
    """log Bin(a; s, 1/2) for a row of a against a column of s (−inf for a > s)."""
    s = units[:, None]
    inside = a <= s
    aa = np.where(inside, a, 0.0)
    out = gammaln(s + 1.0) - gammaln(aa + 1.0) - gammaln(s - aa + 1.0) - s * math.log(2.0)
    return np.where(inside, out, -np.inf)


def reference_log_delta(
    n: int, kappa: float, mu: float, c_inf: float, c_zero: float, eps: float
) -> float:
    """log δ of the split clone system, unblocked, every term in log space."""
    mu_c, total = c_inf / (c_inf + c_zero), []
    log_w = _log_binom(np.arange(n), n - 1, c_inf + c_zero)
    for clones in range(n):
        s = np.arange(1, clones + 2, dtype=np.float64)
        log_t = math.log(mu) + _log_binom(s - 1.0, clones, mu_c)
        log_f = math.log1p(-mu) + _log_binom(s, clones, mu_c)
        log_both = np.logaddexp(log_t, log_f)
        lam = kappa * np.exp(log_t - log_both)
        keep = lam > 0.0
        if keep.any():
            h = _log_alpha_h(s[keep], lam[keep], eps)
            total.append(float(logsumexp(log_w[clones] + log_both[keep] + h)))
    return float(logsumexp(total))


# OUE-like systems (μ = 1/2, c_inf = 1/(e+1), c_zero = 1/(2e)) and a revealed-class one
# (ε0, μ, c_inf, c_zero): many clones, so that δ reaches e^-700 at n = 300 (the clone count's
# lower tail times a large α-pair term); informative-heavy, uninformative-heavy, and ε0 = 1
SYSTEMS = [
    (4.0, 0.5, 0.7, 0.29),
    (4.0, 0.3, 0.3, 0.69),
    (1.0, 0.5, 0.6, 0.39),
]


@pytest.mark.parametrize(("eps0", "mu", "c_inf", "c_zero"), SYSTEMS)
def test_the_capped_system_against_the_log_space_sum(
    eps0: float, mu: float, c_inf: float, c_zero: float
) -> None:
    """End to end at n = 200 down to δ ~ e^-400: above the unblocked log-space sum, within
    the blocks' slack (measured under 2 % of log δ)."""
    n, kappa = 200, math.tanh(eps0 / 2.0)
    for frac in (0.2, 0.9):
        ref = reference_log_delta(n, kappa, mu, c_inf, c_zero, frac * eps0)
        got = split_clone_log_delta(n, kappa, mu, c_inf, c_zero, frac * eps0, min(-60.0, ref - 40))
        assert ref - 1e-9 <= got <= ref + 0.02 * abs(ref) + math.log(1.1)


def _exact_log_h(s: FloatArray, g: FloatArray, kappa: float, eps: float) -> FloatArray:
    """log of ``(2κ(1+E)/g) E[(A − s/2 − c_g)_+]`` (``clone_block_h``'s H), in log space."""
    lam = kappa * s / g  # g = κ s/λ: the same θ as the α-pair at λ
    return _log_alpha_h(s, lam, eps)


def _deep_cases(kappa: float, eps: float) -> tuple[FloatArray, FloatArray]:
    s = np.repeat(np.array([200.0, 1000.0, 3000.0]), 40)
    # g from just above s (λ near κ: a deep excess) to where θ passes s (no excess)
    g = s * np.tile(
        np.linspace(1.0, 0.95 * (1 + math.exp(eps)) / math.expm1(eps) * kappa * 2, 40), 3
    )
    g = np.maximum(g, s)
    return s, g


@pytest.mark.parametrize(("eps0", "frac"), [(1.0, 0.5), (4.0, 0.3), (4.0, 0.8)])
def test_deep_h_cap_is_above_the_exact_excess(eps0: float, frac: float) -> None:
    kappa, eps = math.tanh(eps0 / 2.0), frac * eps0
    s, g = _deep_cases(kappa, eps)
    exact = _exact_log_h(s, g, kappa, eps)
    log_cap = _split_clone._deep_log_h(s, g, kappa=kappa, eps=eps)
    assert np.all(log_cap >= exact - 1e-9)
    deep = np.isfinite(exact) & (exact < -700.0)
    assert deep.sum() >= 2  # the cases reach below the old floor (log 1e-300 = −690.8)
    assert np.all(log_cap[deep] <= exact[deep] + 25.0)  # within the cap's polynomial slack
    # the capped h: never below the truth, at most 1e-306 where the truth is that deep
    capped = _split_clone._deep_h(np.ones(s.shape), s, g, kappa=kappa, eps=eps)
    with np.errstate(divide="ignore"):
        assert np.all(np.log(capped) >= exact - 1e-9)
    assert np.all(capped[deep] <= 1e-306)


def _exact_log_block(n: float, p: float, lo: float, hi: float) -> float:
    k = np.arange(lo, hi + 1.0)
    return float(logsumexp(_log_binom(k, n, p)))


def test_deep_block_mass_cap_is_above_the_exact_mass() -> None:
    n, p = 1e5, 0.3
    lo = np.array([0.0, 20.0, 25000.0, 29000.0, 33000.0, 36000.0, 39000.0])
    hi = lo + np.array([19.0, 80.0, 100.0, 3000.0, 500.0, 50.0, 9.0])
    exact = np.array([_exact_log_block(n, p, a, b) for a, b in zip(lo, hi, strict=True)])
    capped = _split_clone._deep_cap(np.zeros(lo.shape), np.full(lo.shape, n), p, lo, hi)
    assert np.all(capped >= exact - 1e-9)
    assert np.all(capped[exact < -800.0] < -790.0)  # the cap, not the 1e-300 floor
    assert (exact < -800.0).sum() >= 3


@pytest.mark.parametrize("scale", [1.01, 0.99])
def test_a_chernoff_exponent_moved_by_one_percent_is_caught(
    scale: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caps' exponents carry only rounding allowances: an exponent 1 % steeper falls
    below the exact excess or mass somewhere in these deep tails (1 % flatter stays sound)."""
    original = _split_clone._chernoff_up

    def moved(log_bound: FloatArray) -> FloatArray:
        return np.asarray(original(log_bound) * scale, dtype=np.float64)

    monkeypatch.setattr(_split_clone, "_chernoff_up", moved)
    kappa, eps = math.tanh(2.0), 0.3 * 4.0
    s, g = _deep_cases(kappa, eps)
    exact = _exact_log_h(s, g, kappa, eps)
    log_cap = _split_clone._deep_log_h(s, g, kappa=kappa, eps=eps)
    h_fails = bool(np.any(log_cap < exact - 1e-9))
    lo, hi = np.array([29000.0, 33000.0, 36000.0]), np.array([32000.0, 33500.0, 36050.0])
    exact_m = np.array([_exact_log_block(1e5, 0.3, a, b) for a, b in zip(lo, hi, strict=True)])
    capped_m = _split_clone._deep_cap(np.zeros(3), np.full(3, 1e5), 0.3, lo, hi)
    m_fails = bool(np.any(capped_m < exact_m - 1e-9))
    assert h_fails == (scale > 1.0)
    assert m_fails == (scale > 1.0)


def _former_deep_log_h(s: FloatArray, g: FloatArray, *, kappa: float, eps: float) -> FloatArray:
    """``_deep_log_h`` as it was before s27-gen: the tail bounds of every element, also
    where ``⌊θ⌋ > s`` (there −inf)."""
    big = math.exp(eps)
    theta = s / 2.0 + g * math.expm1(eps) / (2.0 * kappa * (1.0 + big))
    with np.errstate(invalid="ignore", divide="ignore"):
        edge = np.floor(theta)
        tail = _split_clone._chernoff_up(_split_clone._log_tail_vec(s, 0.5, edge, upper=True))
        deep = tail < math.log(_split_clone.BETAINC_TRUSTED)
        s_b = np.broadcast_to(s, tail.shape)
        edge = np.broadcast_to(edge, tail.shape)
        half = np.full(tail.shape, 0.5)
        tail = _split_clone._geometric_min(tail, deep, s_b, half, (edge, edge), deep)
        return np.asarray(tail + np.log(s * kappa * (1.0 + big) / g) + 1e-9, dtype=np.float64)


@pytest.mark.parametrize(("eps0", "frac"), [(1.0, 0.5), (4.0, 0.3), (4.0, 0.8), (8.0, 0.9)])
def test_deep_log_h_skips_empty_tails_with_the_same_floats(eps0: float, frac: float) -> None:
    """s27-gen: the tail bounds are computed only where ``⌊θ⌋ <= s``; every element keeps the
    former floats, −inf where the tail is empty (which the cases reach), NaN where it was."""
    kappa, eps = math.tanh(eps0 / 2.0), frac * eps0
    s, g = _deep_cases(kappa, eps)
    s = np.concatenate([s, [1.0, 2.0, 5.0, 7.0, 1.0]])
    g = np.concatenate([g, [1.0, 1e6, 2.0, 0.0, math.nan]])  # empty tails, g = 0, NaN
    got = _split_clone._deep_log_h(s, g, kappa=kappa, eps=eps)
    former = _former_deep_log_h(s, g, kappa=kappa, eps=eps)
    assert np.array_equal(got, former, equal_nan=True)
    assert np.isneginf(got).sum() >= 2
    assert np.isfinite(got).sum() >= 5
    # a scalar s against an array g broadcasts as before
    got_b = _split_clone._deep_log_h(np.float64(300.0), g[:40], kappa=kappa, eps=eps)
    former_b = _former_deep_log_h(np.float64(300.0), g[:40], kappa=kappa, eps=eps)
    assert np.array_equal(got_b, former_b, equal_nan=True)
