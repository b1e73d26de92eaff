"""δ(ε) evaluators of the uncapped scrambler A_σ^{n,d}.

All formulas follow Ladjel, Anciaux, Bellet, Scerri, Section IV and Appendix E, in
convention U (with probability σ a source picks a target uniformly among all T targets),
corrected where the printed forms are wrong:

* Lemma 2 (first form, valid for σ = 0 too)::

      δ(ε) <= Σ_{m=0}^{n−1} Bin(m; n−1, σ) · E[Σ_{i=1}^{m+d+1} L_i]_+ / (m + d + 1)

  with ``L = σ(1 − e^ε) + (1 − σ) T (1[W = t] − e^ε 1[W = t'])``, ``W`` uniform (Eq. 2).
* ``E[Σ_{i=1}^N L_i]_+`` exactly: ``Σ L_i = Nσ(1−e^ε) + (1−σ)T(A − e^ε B)`` with
  ``A ~ Bin(N, 1/T)`` and ``B | A ~ Bin(N − A, 1/(T−1))``; conditioning on A gives
  ``E[(α_A − βB)_+ | A] = α_A F_{M,p}(k*) − β M p F_{M−1,p}(k* − 1)``.
* Hoeffding (Theorem 4 with the sign fixed, a = e^ε − 1) and Bennett (Lemma 3 re-derived;
  the printed form has a spurious factor 1/(aN) and is *not* a valid bound).

Binomial weights are truncated to a window; the mass outside the window is bounded
rigorously (``E[Σ L]_+ <= N · max L``), so every value returned here is an upper bound.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln, xlog1py, xlogy

from crowdhide.accounting.binomial_rows import row_log_pmf_error
from crowdhide.accounting.binomial_tails import (
    BETAINC_TRUSTED,
    UNTRUSTED_ATOL,
    betainc_error,
    binom_sf,
    binom_window,
    block_masses,
    log_binom_pmf,
    tail_edges_many,
    trusted_tail,
    window_edges,
    window_log_pmf_error,
)
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.errors import InvalidParameterError, ResourceLimitError

__all__ = [
    "Lemma2Exact",
    "MonteCarloLemma2",
    "bennett_delta",
    "bennett_published_delta",
    "binomial_window",
    "generic_bennett_delta",
    "generic_hoeffding_delta",
    "hoeffding_delta",
    "lemma5_constants",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Relative safety margin added to exact sums to absorb floating-point rounding.
_ROUNDING_MARGIN = 1e-9
#: Largest CDF lookup table (cells) built by :class:`Lemma2Exact`.
_MAX_TABLE = 4_000_000
#: Tables up to this many cells are built at the first δ(ε) evaluation (cheaper than the
#: CDF fallback's import of scipy.stats, ~0.5 s); larger ones from the second on.
_EAGER_TABLE = 200_000
#: Target size of the flattened (m, A) grid of :class:`Lemma2Exact`.
_MAX_ENTRIES = 300_000


def binomial_window(n: int, p: float, log_tail: float) -> tuple[int, int, float]:
    """Smallest index window ``[lo, hi]`` of ``Bin(n, p)`` whose two tails each have mass at
    most ``exp(log_tail)``, and a rigorous bound on the mass outside it: ``(lo, hi, outside)``
    (:func:`~crowdhide.accounting.binomial_tails.tail_edges_many`).

    Examples
    --------
    >>> lo, hi, outside = binomial_window(1000, 0.1, -30.0)
    >>> lo < 100 < hi, outside <= 2 * math.exp(-30.0)
    (True, True)
    """
    if n <= 0 or p <= 0.0:
        return 0, 0, 0.0
    if p >= 1.0:
        return n, n, 0.0
    lo, hi, outside = tail_edges_many([n], p, log_tail)
    return int(lo[0]), int(hi[0]), float(outside[0])


def _sum_exp(log_terms: FloatArray) -> float:
    """``Σ exp(log_terms)`` without overflow (shift by the maximum); 0 for no terms."""
    if log_terms.size == 0:
        return 0.0
    top = float(np.max(log_terms))
    if top == -np.inf:
        return 0.0
    if top > 700.0:
        # Beyond float range: the bound is vacuous (callers cap δ at 1), not an error.
        return math.inf
    return float(math.exp(top) * np.sum(np.exp(log_terms - top)))


def _binomial_windows(
    n: IntArray, p: float, log_tail: float
) -> tuple[IntArray, IntArray, FloatArray]:
    """Vectorised :func:`binomial_window` over an array of trial counts ``n``."""
    n = np.asarray(n, dtype=np.int64)
    if p >= 1.0:
        return n.copy(), n.copy(), np.zeros(n.size)
    return tail_edges_many(n, p, log_tail)


def lemma5_constants(
    targets: int, sigma: float, epsilon: FloatArray | float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(a, b_paper, b_plus_paper, c)`` of Lemma 5 / Theorem 4 (sign fixed: a = e^ε − 1).

    ``b_paper = (1−σ)T(1+e^ε) − 2σ(1−e^ε)`` (the printed range, valid but loose),
    ``b_plus_paper = (1−σ)T − σ(1−e^ε)`` (valid upper bound on L) and
    ``c = E[L²] = σ(2−σ)(1−e^ε)² + (1−σ)² T (1+e^{2ε})``.
    """
    eps = np.asarray(epsilon, dtype=float)
    a = np.expm1(eps)
    T = float(targets)
    b = (1 - sigma) * T * (1 + np.exp(eps)) + 2 * sigma * a
    b_plus = (1 - sigma) * T + sigma * a
    c = sigma * (2 - sigma) * a**2 + (1 - sigma) ** 2 * T * (1 + np.exp(2 * eps))
    return a, b, b_plus, c


@dataclass(frozen=True)
class _Weights:
    """Truncated Lemma-2 mixture weights ``Bin(m; n−1, γ)`` and the omitted mass."""

    m: IntArray
    log_w: FloatArray
    omitted: float


def _lemma2_weights(
    n: int, gamma: float, log_tail: float, max_components: int = 4096, *, upper: bool = True
) -> _Weights:
    """Mixture weights of Lemma 2, merged into at most ``max_components`` buckets, rounded
    up (``upper``, for the certificates) or down (for the lower bound of
    :class:`ThirdTargetPair`) by a bound on their error.

    Merging is sound: each Lemma 2 term ``E[Σ_{i=1}^N L_i]_+ / N`` is the hockey-stick
    divergence between the laws of ``{W_1..W_{N−1}, Y}`` and ``{W_1..W_{N−1}, Y'}`` (W
    blanket samples), which cannot increase when one more independent W is added
    (post-processing). So a bucket of m values is bounded by its smallest m, given the
    whole bucket weight. The concentration bounds are decreasing in N as well.
    """
    width = 1
    if 0.0 < gamma < 1.0 and n > 1:
        lo, hi, _ = window_edges(n - 1, gamma, log_tail)  # Chernoff edges: a little wider
        width = hi - lo + 1
    if width <= max_components:
        win = binom_window(n - 1, gamma, log_tail)
        m = np.arange(win.lo, win.hi + 1, dtype=np.int64)
        omitted = math.exp(win.log_tail)
        # The window's pmf is normalised over the window: at least the true pmf. A lower
        # value also takes off the mass outside it.
        error = window_log_pmf_error(win)
        log_w = win.log_pmf + error if upper else win.log_pmf - error + math.log1p(-omitted)
        return _Weights(m=m, log_w=log_w, omitted=omitted)
    # Buckets of m over the narrowest window (each bucket counts at its smallest m, so a
    # wider window would loosen the bound), their masses from pairs of tails, rounded.
    lo, hi, omitted = binomial_window(n - 1, gamma, log_tail)
    edges = np.unique(np.linspace(lo, hi + 1, max_components + 1).astype(np.int64))
    m = edges[:-1]
    last = (edges[1:] - 1).astype(np.float64)
    mass = block_masses(np.asarray(n - 1.0), gamma, m.astype(np.float64), last, upper=upper)
    with np.errstate(divide="ignore"):
        log_w = np.log(np.maximum(mass, 0.0))
    return _Weights(m=m, log_w=log_w, omitted=omitted)


def _phi(u: FloatArray) -> FloatArray:
    """``φ(u) = (1 + u) log(1 + u) − u`` without cancellation for small u."""
    u = np.asarray(u, dtype=float)
    small = np.abs(u) < 1e-4
    series = u**2 / 2 - u**3 / 6 + u**4 / 12
    with np.errstate(invalid="ignore"):
        direct = (1 + u) * np.log1p(u) - u
    return np.where(small, series, direct)


def _mix_concentration(
    weights: _Weights, dummies: int, log_e_bound: FloatArray, b_plus_max: FloatArray
) -> FloatArray:
    """Lemma 2 sum for bounds given as ``log E[Σ_{i=1}^N L_i]_+ <= log_e_bound[ε, N]``.

    ``log_e_bound`` has shape (n_eps, n_m); the omitted binomial mass adds ``b_+`` each.
    """
    N = (weights.m + dummies + 1).astype(float)
    terms = weights.log_w[None, :] - np.log(N)[None, :] + log_e_bound
    total = np.array([_sum_exp(row) for row in terms])
    return np.asarray(total + weights.omitted * np.maximum(b_plus_max, 0.0), dtype=float)


def hoeffding_delta(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilon: FloatArray,
    log_tail: float = -60.0,
) -> FloatArray:
    """Theorem 4 with the sign fixed (a = e^ε − 1) and the paper's b; valid upper bound."""
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    a, b, b_plus, _ = lemma5_constants(targets, sigma, eps)
    weights = _lemma2_weights(n, sigma, log_tail)
    N = (weights.m + dummies + 1).astype(float)
    # Logs of the factors: b²/(4a) overflows for subnormal a (ε near 1e-310).
    log_e = (2 * np.log(np.abs(b)) - np.log(4 * a))[:, None] - 2 * N[None, :] * (a**2 / b**2)[
        :, None
    ]
    return np.minimum(_mix_concentration(weights, dummies, log_e, b_plus), 1.0)


def _bennett_core(
    weights: _Weights,
    dummies: int,
    a: FloatArray,
    b_plus: FloatArray,
    c: FloatArray,
    *,
    published: bool,
) -> FloatArray:
    N = (weights.m + dummies + 1).astype(float)
    u = a * b_plus / c
    log1pu = np.log1p(u)
    log_e = (
        # Difference of logs: b_+/log1p(u) overflows for subnormal u (ε near 1e-310).
        (np.log(b_plus) - np.log(log1pu))[:, None]
        - (N[None, :] * (c / b_plus**2)[:, None]) * _phi(u)[:, None]
    )
    if published:
        # The printed Lemma 3 carries an extra 1/(a N): NOT a valid bound (brute force
        # finds counterexamples).
        log_e = log_e - np.log(a)[:, None] - np.log(N)[None, :]
    return _mix_concentration(weights, dummies, log_e, b_plus)


def bennett_delta(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilon: FloatArray,
    log_tail: float = -60.0,
) -> FloatArray:
    """Lemma 2 + Bennett, re-derived (valid upper bound).

    ``E[Σ_{i=1}^N L_i]_+ <= b_+ / log(1 + a b_+/c) · exp(−(N c / b_+²) φ(a b_+/c))`` with
    ``b_+ = (1−σ)T − σ(1−e^ε)`` (Lemma 5) and ``c = E[L²]``.
    """
    return _bennett(targets, sigma, n, dummies, epsilon, log_tail, published=False)


def bennett_published_delta(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilon: FloatArray,
    log_tail: float = -60.0,
) -> FloatArray:
    """Lemma 2 + Bennett **as printed** in the paper (Lemma 3): NOT a valid bound.

    Kept only to reproduce the paper's figures; the brute-force tests show it can be below
    the true δ of the scrambler.
    """
    return _bennett(targets, sigma, n, dummies, epsilon, log_tail, published=True)


def _bennett(
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilon: FloatArray,
    log_tail: float,
    *,
    published: bool,
) -> FloatArray:
    """Lemma 2 + Bennett, re-derived or as printed (``published``), clipped to [0, 1]."""
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    a, _, b_plus, c = lemma5_constants(targets, sigma, eps)
    weights = _lemma2_weights(n, sigma, log_tail)
    out = _bennett_core(weights, dummies, a, b_plus, c, published=published)
    # L is at most (1−σ)T + σ(1−e^ε); where that is <= 0 the sum is never positive.
    true_max = (1 - sigma) * targets - sigma * a
    return np.where(true_max <= 0, 0.0, np.minimum(out, 1.0))


def generic_hoeffding_delta(
    *, eps0: float, gamma: float, n: int, dummies: int, epsilon: FloatArray, log_tail: float = -60.0
) -> FloatArray:
    """Theorem 5 (sign fixed): any ε0-LDP randomizer with blanket probability γ.

    ``b = γ(1 + e^ε)(e^{ε0} − e^{−ε0})`` from Lemma 4 item 2; dummies must be drawn from
    the randomizer's blanket distribution (Remark 2).
    """
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    a = np.expm1(eps)
    b = gamma * (1 + np.exp(eps)) * (math.exp(eps0) - math.exp(-eps0))
    b_plus = gamma * math.exp(eps0) * (1 - np.exp(eps - 2 * eps0))
    weights = _lemma2_weights(n, gamma, log_tail)
    N = (weights.m + dummies + 1).astype(float)
    # Logs of the factors: b²/(4a) overflows for subnormal a (ε near 1e-310).
    log_e = (2 * np.log(np.abs(b)) - np.log(4 * a))[:, None] - 2 * N[None, :] * (a**2 / b**2)[
        :, None
    ]
    out = _mix_concentration(weights, dummies, log_e, np.maximum(b_plus, 0.0))
    return np.where(b_plus <= 0, 0.0, np.minimum(out, 1.0))


def generic_bennett_delta(
    *, eps0: float, gamma: float, n: int, dummies: int, epsilon: FloatArray, log_tail: float = -60.0
) -> FloatArray:
    """Lemma 2 + Bennett with Lemma 4's constants (generic ε0-LDP randomizer)."""
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    a = np.expm1(eps)
    b_plus = gamma * math.exp(eps0) * (1 - np.exp(eps - 2 * eps0))
    c = gamma * math.exp(eps0) * (np.exp(2 * eps) + 1) - 2 * gamma**2 * np.exp(eps - 2 * eps0)
    weights = _lemma2_weights(n, gamma, log_tail)
    safe_b = np.where(b_plus > 0, b_plus, 1.0)
    out = _bennett_core(weights, dummies, a, safe_b, c, published=False)
    return np.where(b_plus <= 0, 0.0, np.minimum(out, 1.0))


class Lemma2Exact:
    """Lemma 2 with ``E[Σ L_i]_+`` computed exactly (no Monte Carlo); a valid upper bound.

    The binomial windows are fixed at construction (they do not depend on ε); the mass they
    omit is bounded by ``max L`` per unit of weight, so :meth:`delta` is always an upper
    bound, tight to about ``exp(log_tail)``.
    """

    def __init__(
        self, *, targets: int, sigma: float, n: int, dummies: int, log_tail: float = -60.0
    ) -> None:
        self.targets, self.sigma, self.n, self.dummies = targets, sigma, n, dummies
        T = targets
        # Keep the flattened (m, A) grid bounded: merge mixture components first, then
        # (for astronomically large n) coarsen the truncation, whose omitted mass is
        # still accounted for, so the result stays an upper bound.
        while True:
            a_width = 2.0 * math.sqrt(2.0 * -log_tail * (n * sigma + dummies + 1) / T) + 3.0
            components = int(min(4096, max(8, _MAX_ENTRIES // a_width)))
            weights = _lemma2_weights(n, sigma, log_tail, components)
            N_m = weights.m + dummies + 1
            lo, hi, outside = _binomial_windows(N_m, 1.0 / T, log_tail)
            sizes = hi - lo + 1
            if int(sizes.sum()) <= 2 * _MAX_ENTRIES or log_tail >= -25.0:
                break
            log_tail = min(log_tail + 20.0, -25.0)
        m_index = np.repeat(np.arange(N_m.size), sizes)
        offsets = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        a_vals = lo[m_index] + offsets
        N = N_m[m_index]
        omitted = weights.omitted + float(np.sum(np.exp(weights.log_w) * outside))
        self._N = N.astype(float)
        self._A = a_vals.astype(float)
        log_w = weights.log_w[m_index]
        # log Bin(A; N, 1/T) by gammaln, raised by a bound on its rounding error
        log_pmf = log_binom_pmf(a_vals, self._N, 1.0 / T)
        log_pmf = log_pmf + row_log_pmf_error(float(N.max()), 1.0 / T)
        self._log_coef = log_w + log_pmf - np.log(self._N)
        self._M = self._N - self._A
        self._omitted = omitted
        self._cdf: FloatArray | None = None
        self._cdf_rtol = 0.0
        self._calls = 0

    @functools.cached_property
    def _table_rows(self) -> IntArray:
        """The trial counts M and M − 1 in use: the rows of the CDF tables."""
        M = self._M.astype(np.int64)
        return np.unique(np.concatenate([M, np.maximum(M - 1, 0)]))

    def _table_cells(self) -> int:
        """Cells of the CDF tables (rows M and M − 1 in use, thresholds up to max A)."""
        return self._table_rows.size * (int(self._A.max()) + 1 if self._A.size else 1)

    def _build_tables(self) -> None:
        """CDF tables of Bin(M, 1/(T−1)) for every M (and M − 1) in use, up to the largest
        threshold k* <= A that can occur; afterwards every δ(ε) is a table lookup."""
        T = self.targets
        p = 1.0 / (T - 1) if T > 1 else 1.0
        M_int = self._M.astype(np.int64)
        rows = self._table_rows
        k_max = int(self._A.max()) if self._A.size else 0
        self._k_max = k_max
        if rows.size * (k_max + 1) > _MAX_TABLE:
            return  # too large for tables: delta() falls back to scipy's binomial CDF
        j = np.arange(k_max + 1)
        diff = rows[:, None] - j[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = (
                gammaln(rows + 1.0)[:, None]
                - gammaln(j + 1.0)[None, :]
                - gammaln(np.maximum(diff, 0) + 1.0)
                + xlogy(j, p)[None, :]
                + xlog1py(np.maximum(diff, 0), -p)
            )
        log_pmf = np.where(diff < 0, -np.inf, log_pmf)
        self._cdf = np.minimum(np.cumsum(np.exp(log_pmf), axis=1), 1.0)
        # relative error of a table entry: the log-pmf's (gammaln cancellation, at most that
        # of the largest row) and the cumulative sum's (positive terms, k_max + 1 roundings)
        worst = row_log_pmf_error(float(rows.max()), p)
        self._cdf_rtol = math.expm1(worst) + (k_max + 2) * MACHINE_EPSILON
        self._row_M = np.searchsorted(rows, M_int)
        self._row_M1 = np.searchsorted(rows, np.maximum(M_int - 1, 0))

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) (Lemma 2, exact expectation)."""
        T, sigma = self.targets, self.sigma
        if T <= 1 or sigma >= 1.0:
            return 0.0
        em = math.exp(epsilon)
        l_max = (1 - sigma) * T + sigma * (1 - em)
        if l_max <= 0:
            return 0.0
        p = 1.0 / (T - 1)
        alpha = self._N * sigma * (1 - em) + (1 - sigma) * T * self._A
        beta = (1 - sigma) * T * em
        self._calls += 1
        if self._calls == 2 or (self._calls == 1 and self._table_cells() <= _EAGER_TABLE):
            self._build_tables()  # a one-off evaluation of a large grid does not pay for them
        k_star = np.floor(alpha / beta)
        M = self._M
        if self._cdf is not None:
            k_star = np.clip(k_star, -1, self._k_max).astype(np.int64)
            cdf_k = np.where(k_star >= 0, self._cdf[self._row_M, np.maximum(k_star, 0)], 0.0)
            cdf_k1 = np.where(k_star >= 1, self._cdf[self._row_M1, np.maximum(k_star - 1, 0)], 0.0)
            err_k, err_k1 = cdf_k * self._cdf_rtol, cdf_k1 * self._cdf_rtol
        else:
            # Without tables: SciPy's binomial CDF from p itself (binom_cdf's rounded 1 − p
            # errs by up to 2e-7 relative at 10^9, which the cancellation in
            # _positive_part_mean magnified to δ 7e-4 looser; betaincc is 5x slower).
            from scipy.stats import binom

            M1 = np.maximum(M - 1, 0)
            cdf_k, cdf_k1 = binom.cdf(k_star, M, p), binom.cdf(k_star - 1, M1, p)
            err_k, err_k1 = betainc_error(cdf_k, M), betainc_error(cdf_k1, M1)
        cond = _positive_part_mean(alpha, beta, M, p, (cdf_k, err_k), (cdf_k1, err_k1))
        cond = _deep_positive_part(cond, alpha, beta, M, p, k_star, (cdf_k, cdf_k1))
        with np.errstate(divide="ignore"):
            log_terms = self._log_coef + np.log(cond)
        total = _sum_exp(log_terms)
        return min(1.0, total * (1 + _ROUNDING_MARGIN) + self._omitted * l_max)


def _positive_part_mean(
    alpha: FloatArray,
    beta: float,
    trials: FloatArray,
    p: float,
    cdf: tuple[FloatArray, FloatArray],
    cdf_shifted: tuple[FloatArray, FloatArray],
) -> FloatArray:
    """An upper bound on ``E[(α − β B)_+]``, ``B ~ Bin(trials, p)``, ``k* = ⌊α/β⌋``, from
    ``cdf = (P(B <= k*), its absolute error)`` and ``cdf_shifted = (P(B' <= k* − 1), its
    error)`` with ``B' ~ Bin(trials − 1, p)``: ``α P(B <= k*) − β trials p P(B' <= k* − 1)``.

    The two terms cancel where B's law below k* sits just under k* — down to about ``1/k*``
    of the terms (2.8e-3 at k* = 5·10^4): a relative margin on the result does not cover
    the terms' own error (at 10^6 trials the bare difference was measured up to 2e-8
    relative *below* the exact value), so the error of each term is added instead.
    """
    (value, error), (value_shifted, error_shifted) = cdf, cdf_shifted
    first = alpha * value
    second = beta * trials * p * value_shifted
    slack = np.abs(alpha) * error + beta * trials * p * error_shifted
    # the products and the difference
    slack = slack + (np.abs(first) + second) * 8.0 * MACHINE_EPSILON
    return np.asarray(np.where(alpha > 0, np.maximum(first - second, 0.0) + slack, 0.0))


def _deep_positive_part(
    cond: FloatArray,
    alpha: FloatArray,
    beta: float,
    trials: FloatArray,
    p: float,
    k_star: FloatArray,
    cdfs: tuple[FloatArray, FloatArray],
) -> FloatArray:
    """``cond`` where both CDFs are at least ``BETAINC_TRUSTED``; below, a proven upper
    bound on ``E[(α − β B)_+]`` (docs/proofs/betainc-underflow.md, scrambler section).

    SciPy's incomplete beta returns 0 (or 1e-3 off) for tails below 4.3e-243: cond was then
    0 where its true value dominated δ (3.8e-270 returned as 3.6e-298 at T = 100, σ = 0,
    d = 72000, ε = 3.4). Both bounds below hold: ``(α − βB)_+ <= α 1{B <= k*}`` gives
    ``α · Chernoff(P(B <= k*))``, and each untrusted CDF is within ``UNTRUSTED_ATOL`` of
    the truth (the tables' subnormal losses, at most 4e6 · 1e-322, are far inside it).
    """
    value, value_shifted = cdfs
    deep_k = value < BETAINC_TRUSTED
    deep_k1 = (value_shifted < BETAINC_TRUSTED) & (k_star >= 1)  # k* < 1: exactly 0
    deep = (deep_k | deep_k1) & (alpha > 0)
    if not deep.any():
        return cond
    loose = cond + UNTRUSTED_ATOL * (
        np.where(deep_k, np.abs(alpha), 0.0) + np.where(deep_k1, beta * trials * p, 0.0)
    )
    chernoff = trusted_tail(value, trials, p, k_star.astype(float), upper=False)
    # the product's rounding, up (the Chernoff exponent's own allowance is used up at 10^9)
    tight = np.where(deep_k, alpha * chernoff * (1.0 + 4.0 * MACHINE_EPSILON), np.inf)
    bound = np.minimum(loose, tight) * (1.0 + 4.0 * MACHINE_EPSILON)
    return np.asarray(np.where(deep, bound, cond), dtype=np.float64)


def expected_positive_sum(*, count: int, targets: int, sigma: float, epsilon: float) -> float:
    """``E[Σ_{i=1}^{count} L_i]_+`` exactly (conditioning on A), for tests and documentation.

    Examples
    --------
    >>> round(expected_positive_sum(count=10, targets=20, sigma=0.2, epsilon=1.0), 6)
    4.190062
    """
    # SciPy's own binomial (not this module's tails): an independent reference for tests.
    from scipy.stats import binom

    T = targets
    em = math.exp(epsilon)
    a_vals = np.arange(count + 1, dtype=float)
    pa = binom.pmf(a_vals, count, 1.0 / T)
    alpha = count * sigma * (1 - em) + (1 - sigma) * T * a_vals
    beta = (1 - sigma) * T * em
    M = count - a_vals
    p = 1.0 / (T - 1) if T > 1 else 1.0
    k_star = np.floor(alpha / beta)
    first = alpha * binom.cdf(k_star, M, p)
    second = beta * M * p * binom.cdf(k_star - 1, np.maximum(M - 1, 0), p)
    cond = np.where(alpha > 0, np.maximum(first - second, 0.0), 0.0)
    return float(np.sum(pa * cond))


class MonteCarloLemma2:
    """Algorithm 2: Monte-Carlo estimate of the Lemma 2 sum (an ESTIMATE, not a bound).

    ``samples`` draws of ``(A, B)`` per mixture component (the paper uses R = 5000), reused
    for every ε (common random numbers, so the estimate is monotone in ε). :meth:`delta`
    returns the estimate and its standard error.
    """

    def __init__(
        self,
        *,
        targets: int,
        sigma: float,
        n: int,
        dummies: int,
        samples: int,
        rng: np.random.Generator,
    ) -> None:
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
            # the standard error divides by samples − 1 (ddof = 1)
            raise InvalidParameterError(
                f"samples must be an integer >= 2, got {samples!r}",
                parameter="samples",
                value=samples,
            )
        self.targets, self.sigma = targets, sigma
        weights = _lemma2_weights(n, sigma, math.log(1e-12))
        N = weights.m + dummies + 1
        T = targets
        pvals = [1.0 / T, 1.0 / T, max(0.0, 1.0 - 2.0 / T)] if T > 2 else [0.5, 0.5, 0.0]
        largest = max_montecarlo_samples(N.size)
        if samples > largest:  # refused before any draw: the work is samples × components
            raise ResourceLimitError(
                f"samples must be <= {largest} here, got {samples}: {N.size} mixture "
                f"components × {samples} samples exceeds {MAX_MONTECARLO_DRAWS:.0e} draws",
                parameter="samples",
                value=samples,
            )
        # One component at a time (the same draws, in the same order, as one call over all
        # components), kept as distinct (A, B) pairs with their counts: the estimate only
        # depends on those, so each ε costs O(pairs), not O(components × samples), and
        # memory stays at one component's draws.
        parts: list[tuple[npt.NDArray[np.int64], ...]] = []
        for j, size in enumerate(N.tolist()):
            draws = rng.multinomial(size, pvals, size=samples)
            pair, count = np.unique(draws[:, 0] * (size + 1) + draws[:, 1], return_counts=True)
            component = np.full(pair.size, j, dtype=np.int64)
            parts.append((component, pair // (size + 1), pair % (size + 1), count))
        comp, A, B, count = (np.concatenate(column) for column in zip(*parts, strict=True))
        self._comp = comp
        self._A, self._B, self._count = A.astype(float), B.astype(float), count.astype(float)
        self._N = N.astype(float)
        self._w = np.exp(weights.log_w)
        self._omitted = weights.omitted
        self.samples = samples

    def delta(self, epsilon: float) -> tuple[float, float]:
        """``(estimate, standard error)`` of the Lemma 2 sum at ε."""
        T, sigma, R = self.targets, self.sigma, self.samples
        em = math.exp(epsilon)
        size = self._N[self._comp]
        total = size * sigma * (1 - em) + (1 - sigma) * T * (self._A - em * self._B)
        pos = np.maximum(total, 0.0) / size
        k = self._N.size
        mean = np.bincount(self._comp, weights=self._count * pos, minlength=k) / R
        square = np.bincount(self._comp, weights=self._count * pos * pos, minlength=k) / R
        var = np.maximum(square - mean * mean, 0.0) * (R / (R - 1))  # ddof = 1
        est = float(np.sum(self._w * mean))
        se = float(math.sqrt(np.sum(self._w**2 * var / R)))
        return est, se


#: Multinomial draws (components × samples) the Monte-Carlo estimate may make: measured
#: ~0.8 µs per draw on a loaded 2-core machine, so 3e7 draws take ~25 s
#: (benchmarks/bench_scrambler_montecarlo.py); 1e6 samples × 54 components took 97 s.
MAX_MONTECARLO_DRAWS = 3 * 10**7


def max_montecarlo_samples(components: int) -> int:
    """The most samples per component within :data:`MAX_MONTECARLO_DRAWS`."""
    return max(2, MAX_MONTECARLO_DRAWS // max(components, 1))


def _third_target_blanket_sums(
    *, T: int, sigma: float, n: int, dummies: int, log_tail: float
) -> tuple[float, FloatArray, FloatArray, IntArray, float]:
    """For each count c2 of balls at the third target: the log sums over the blanket
    mixture ``s0 = log Σ_m G`` and ``s1 = log Σ_m G/N`` of :class:`ThirdTargetPair`, the
    counts c2 whose mass is at least ``exp(log_tail − 10)``, and the mass dropped so far
    (the mixture's omitted weight and the dropped c2), with ``log σ``."""
    K = n + dummies
    weights = _lemma2_weights(n, sigma, min(log_tail, -40.0), max_components=10**9, upper=False)
    m = weights.m
    N = (m + dummies + 1).astype(float)
    c2 = np.arange(K + 1)
    shift = c2[:, None] - (n - 1 - m[None, :])  # blanket+dummy balls at target 2
    with np.errstate(invalid="ignore"):
        log_g = (
            weights.log_w[None, :]
            + gammaln(N + 1)[None, :]
            - (N * math.log(T))[None, :]
            - gammaln(np.maximum(shift, 0) + 1.0)
        )
    log_g = np.where(shift >= 0, log_g, -np.inf)
    s0 = _row_logsumexp(log_g)
    s1 = _row_logsumexp(log_g - np.log(N)[None, :])
    J = (K - c2).astype(float)
    with np.errstate(divide="ignore"):
        log_sig = math.log(sigma) if sigma > 0 else -np.inf
        log_mass_c2 = np.logaddexp(
            J * math.log(T - 1) - gammaln(J + 1) + log_sig + s0,
            math.log((1 - sigma) * T)
            + s1
            + np.log(np.maximum(J, 1e-300))
            + (J - 1) * math.log(T - 1)
            - gammaln(J + 1),
        )
    log_mass_c2 = np.where(J > 0, log_mass_c2, np.logaddexp(log_sig + s0, -np.inf))
    keep_c2 = np.nonzero(log_mass_c2 >= log_tail - 10.0)[0]
    omitted = weights.omitted + _sum_exp(log_mass_c2[log_mass_c2 < log_tail - 10.0])
    return log_sig, s0, s1, keep_c2, omitted


class ThirdTargetPair:
    """Exact δ(ε) of ONE neighbouring pair of the uncapped scrambler: a LOWER bound.

    The pair: the n − 1 common messages all have a third target (target 2), the differing
    message goes to t = 0 or t' = 1 (T >= 3). Exhaustive searches show this pair is the worst
    case for small ε but not for large ε, so its δ(ε) is a lower bound on the scrambler's
    privacy curve (the true ε(δ) is at least the ε this pair needs).

    With ``m ~ Bin(n−1, σ)`` blanket messages among the common ones, the output (c0, c1, c2,
    rest) has ``P_D = Σ_m w_m M_N(u_m)[σ + (1−σ)T c0/N]`` (``N = m + d + 1`` uniform balls,
    ``u_m = c − (n−1−m)e_2``); the T − 3 other targets factor out as ``(T−3)^r / r!`` and the
    split of ``k = c0 + c1`` is Binomial(k, ½), so every (k, c2) state costs O(1) per ε.
    States whose probability is below ``exp(log_tail)`` are dropped and their mass added.
    """

    def __init__(
        self, *, targets: int, sigma: float, n: int, dummies: int, log_tail: float = -60.0
    ) -> None:
        if targets < 3:
            raise InvalidParameterError(
                f"targets must be >= 3 for a third-target pair, got {targets}"
            )
        T, K = targets, n + dummies
        self.sigma, self.targets = sigma, T
        log_sig, s0, s1, keep_c2, omitted = _third_target_blanket_sums(
            T=T, sigma=sigma, n=n, dummies=dummies, log_tail=log_tail
        )
        ks, cs = [], []
        for c in keep_c2:
            k = np.arange(K - c + 1)
            ks.append(k)
            cs.append(np.full(k.size, c))
        k_all = np.concatenate(ks)
        c_all = np.concatenate(cs)
        r_all = (K - c_all - k_all).astype(float)
        base = (
            xlogy(r_all, T - 3.0)
            - gammaln(r_all + 1)
            - gammaln(k_all + 1.0)
            + k_all * math.log(2.0)
        )
        with np.errstate(divide="ignore"):
            log_mass = base + np.logaddexp(
                log_sig + s0[c_all],
                math.log((1 - sigma) * T) + s1[c_all] + np.log(np.maximum(k_all, 1e-300) / 2),
            )
        log_mass = np.where(k_all > 0, log_mass, base + log_sig + s0[c_all])
        keep = log_mass >= log_tail
        self._omitted = omitted + _sum_exp(log_mass[~keep])
        self._k = k_all[keep].astype(np.int64)
        self._log_coef = base[keep] + math.log((1 - sigma) * T) + s1[c_all[keep]]
        with np.errstate(over="ignore"):
            self._ratio = np.exp(s0[c_all[keep]] - s1[c_all[keep]])  # Σ G / Σ G/N
        self.total_mass = _sum_exp(log_mass)  # 1 up to rounding (tested)
        # Survival tables of Bin(k, ½) for the k values in use (scipy beyond 3000).
        k_max = int(self._k.max()) if self._k.size else 0
        self._k_max = k_max
        self._sf = _half_binomial_survival(k_max) if k_max <= 3000 else None

    def _sf_lookup(self, k: IntArray, j: IntArray) -> FloatArray:
        if self._sf is None:
            return binom_sf((j + 1).astype(np.float64), k.astype(np.float64), 0.5)  # P(X > j)
        col = np.clip(j + 1, 0, self._k_max + 1)
        return np.where(j < 0, 1.0, np.where(j >= k, 0.0, self._sf[k, col]))

    def delta(self, epsilon: float) -> float:
        """Exact δ(ε) of the pair (both directions coincide by symmetry), minus nothing:
        the dropped mass is NOT added, so this stays a lower bound."""
        em = math.exp(epsilon)
        sigma, T = self.sigma, self.targets
        k = self._k
        q = sigma * (1 - em) * self._ratio / ((1 - sigma) * T)
        # j = floor((e^ε k − q)/(1 + e^ε)) = k − ceil((k + q)/(1 + e^ε)), written so that
        # a tiny positive gap is not rounded away when e^ε is huge.
        j = k - np.ceil((k + q) / (1 + em)).astype(np.int64)
        first = (q - em * k) * self._sf_lookup(k, j)
        km1 = np.maximum(k - 1, 0)
        second = (1 + em) * (k / 2.0) * self._sf_lookup(km1, j - 1)
        second = np.where(k > 0, second, 0.0)
        value = np.maximum(first + second, 0.0)
        with np.errstate(divide="ignore"):
            return max(0.0, min(1.0, _sum_exp(self._log_coef + np.log(value))))


def _half_binomial_survival(k_max: int) -> FloatArray:
    """``sf[k, j + 1] = P(Bin(k, ½) > j)`` for k = 0..k_max and j = −1..k_max."""
    kk = np.arange(k_max + 1)
    with np.errstate(invalid="ignore"):
        log_pmf = (
            gammaln(kk + 1.0)[:, None]
            - gammaln(kk + 1.0)[None, :]
            - gammaln(np.maximum(kk[:, None] - kk[None, :], 0) + 1.0)
            - kk[:, None] * math.log(2.0)
        )
    log_pmf = np.where(kk[None, :] <= kk[:, None], log_pmf, -np.inf)
    tail = np.cumsum(np.exp(log_pmf)[:, ::-1], axis=1)[:, ::-1]
    return np.concatenate([tail, np.zeros((k_max + 1, 1))], axis=1)


def _row_logsumexp(a: FloatArray) -> FloatArray:
    top = np.max(a, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(
            np.isfinite(top), safe + np.log(np.sum(np.exp(a - safe[:, None]), axis=1)), -np.inf
        )
