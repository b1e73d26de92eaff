"""Binomial windows, rigorous tail bounds and expected excesses in log space (internal).

Every shuffle accountant of :mod:`crowdhide.accounting.shuffle.generic` reduces to sums of the form
``Σ_j Bin(j; N, p) f(j)`` where only a window of ``j`` of width ``O(√N)`` matters. This module
provides

* :func:`binom_window` — the window ``[lo, hi]`` whose two tails each have probability at
  most ``e^{-L}`` (Chernoff–Hoeffding bound ``P(X >= t) <= exp(-N KL(t/N || p))``, a rigorous
  bound, not an approximation), with the log-pmf on the window;
* :class:`ExcessTable` — ``E[(X − θ)_+]`` and ``E[(θ − X)_+]`` for ``X ~ Bin(N, p)`` and many
  thresholds θ, from suffix/prefix sums of positive terms only (no cancellation), in log space.

Windows for many totals at once (one row per total: ``row_windows`` and the expected excesses
over them) are in :mod:`crowdhide.accounting.binomial_rows`.

The log-pmf on the window is built from the exact ratio recurrence
``pmf(j+1)/pmf(j) = (N − j) p / ((j + 1)(1 − p))`` starting at the mode and normalised to sum
to one over the window. Normalising can only *increase* each weight (the true window mass is
``<= 1``), which keeps every δ computed from these weights an upper bound up to rounding; the
rounding error of the recurrence is ``O(window · 1e-16)`` relative.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import betainc, gammaln, xlog1py, xlogy

from crowdhide.accounting._half_memo import PairMemo, pair_keys
from crowdhide.accounting._pmf_lower import binomial_pmf_lower
from crowdhide.accounting._tail_upper import _log_tail_vec as _log_tail_vec
from crowdhide.accounting._tail_upper import log_tail_upper
from crowdhide.accounting.logmath import MACHINE_EPSILON, logsumexp

__all__ = [
    "BETAINC_ATOL",
    "BETAINC_TRUSTED",
    "UNTRUSTED_ATOL",
    "ExcessTable",
    "Window",
    "betainc_error",
    "binom_cdf",
    "binom_cdf_rtol",
    "binom_sf",
    "binom_window",
    "block_masses",
    "contiguous_block_masses",
    "distinct_ranks",
    "edge_tails",
    "log_chernoff_tail",
    "masses_from_tails",
    "masses_from_tails_rows",
    "on_blocks",
    "tail_edges_many",
    "trusted_tail",
    "window_blocks",
    "window_edges",
    "window_log_pmf_error",
]

FloatArray = npt.NDArray[np.float64]

#: Absolute floor for underflow of the incomplete beta.
BETAINC_ATOL = 1e-300

#: Tails (and block masses) from incomplete betas below this are not trusted: SciPy 1.17's
#: ``betainc(a, b, x)`` returns 0 (or values off by 1e-3) where ``x^a`` underflows and
#: ``b < 40``, for true values up to 4.3e-243 (a = 3000, b = 39, x^a = e^-700; 40-digit
#: scan over n <= 1e9 in docs/proofs/betainc-underflow.md); above 1e-200 no error beyond
#: :func:`betainc_error` was seen. Below it an upper bound takes the Chernoff bound instead.
BETAINC_TRUSTED = 1e-200

#: Where SciPy's value is below :data:`BETAINC_TRUSTED` and wrong, the true value is below
#: 4.3e-243 and the returned one below 1.001 times that (same scan): an absolute allowance
#: of 1e-240 per such tail covers it (for lower bounds, which cannot use a Chernoff bound).
UNTRUSTED_ATOL = 1e-240


def _kl(x: float, p: float) -> float:
    """``KL(Ber(x) || Ber(p))`` in nats (``inf`` outside the support)."""
    if p <= 0.0:
        return 0.0 if x <= 0.0 else math.inf
    if p >= 1.0:
        return 0.0 if x >= 1.0 else math.inf
    return float(xlogy(x, x / p) + xlog1py(1.0 - x, -x) - xlog1py(1.0 - x, -p))


def log_chernoff_tail(n: int, p: float, t: float, *, upper: bool) -> float:
    """Log of a rigorous bound on ``P(X >= t)`` (``upper``) or ``P(X <= t)``, X ~ Bin(n, p)."""
    if n == 0:
        return 0.0 if (t <= 0 if upper else t >= 0) else -math.inf
    x = t / n
    if upper:
        if x <= p:
            return 0.0
        if x > 1.0:
            return -math.inf
    else:
        if x >= p:
            return 0.0
        if x < 0.0:
            return -math.inf
    return -n * _kl(x, p)


@dataclass(frozen=True, slots=True)
class Window:
    """Integers ``lo..hi`` of Bin(n, p) with their log-pmf and a bound on the outside mass."""

    n: int
    p: float
    lo: int
    log_pmf: FloatArray
    log_tail: float  # log of a bound on P(X < lo) + P(X > hi)

    @property
    def hi(self) -> int:
        return self.lo + self.log_pmf.size - 1

    @property
    def values(self) -> FloatArray:
        return np.arange(self.lo, self.hi + 1, dtype=np.float64)


def _edge(n: int, p: float, log_tail: float, *, upper: bool) -> int:
    """Smallest ``hi`` (upper) / largest ``lo`` with Chernoff tail beyond it <= e^log_tail."""
    mean = n * p
    if upper:
        lo_t, hi_t = math.floor(mean), n + 1
        # find smallest t in [lo_t, n+1] with bound(X >= t) <= target
        while hi_t - lo_t > 1:
            mid = (lo_t + hi_t) // 2
            if log_chernoff_tail(n, p, mid, upper=True) <= log_tail:
                hi_t = mid
            else:
                lo_t = mid
        return min(hi_t - 1, n)
    lo_t, hi_t = -1, math.ceil(mean)
    while hi_t - lo_t > 1:
        mid = (lo_t + hi_t) // 2
        if log_chernoff_tail(n, p, mid, upper=False) <= log_tail:
            lo_t = mid
        else:
            hi_t = mid
    return max(lo_t + 1, 0)


def binom_window(n: int, p: float, log_tail: float) -> Window:
    """The window of Bin(n, p) outside which each tail has mass ``<= e^{log_tail}``.

    Examples
    --------
    >>> w = binom_window(100, 0.5, -30.0)
    >>> 0 < w.lo < 50 < w.hi < 100
    True
    >>> abs(float(np.exp(w.log_pmf).sum()) - 1.0) < 1e-12
    True
    """
    if n == 0 or p <= 0.0:
        return Window(n, p, 0, np.zeros(1), -math.inf)
    if p >= 1.0:
        return Window(n, p, n, np.zeros(1), -math.inf)
    lo, hi, outside = window_edges(n, p, log_tail)
    js = np.arange(lo, hi + 1, dtype=np.float64)
    mode = min(max(math.floor((n + 1) * p), lo), hi) - lo
    # log pmf(j+1) - log pmf(j) for j = lo..hi-1
    steps = np.log((n - js[:-1]) / (js[:-1] + 1.0)) + (math.log(p) - math.log1p(-p))
    rel = np.empty(js.size)
    rel[mode] = 0.0
    rel[mode + 1 :] = np.cumsum(steps[mode:])
    rel[:mode] = -np.cumsum(steps[:mode][::-1])[::-1]
    log_pmf = rel - float(logsumexp(rel))
    return Window(n, p, lo, log_pmf, outside)


def window_log_pmf_error(win: Window) -> float:
    """Bound on the absolute rounding error of :func:`binom_window`'s log-pmf: a cumulative
    sum of ``hi − lo`` log-ratio steps (each a few ulps of at most ``ln n + |logit p|``, each
    partial sum within the window's span of about ``−log_tail``) and one log-sum-exp
    (measured 1.8e-13 against a bound of 1e-10 at n = 10^6, p = 0.013;
    ``tests/accounting/test_shuffle_composition.py``)."""
    if not 0.0 < win.p < 1.0:
        return 0.0
    step = math.log(win.n + 1.0) + abs(math.log(win.p) - math.log1p(-win.p))
    span = float(np.max(np.abs(win.log_pmf)))
    return float(win.log_pmf.size * MACHINE_EPSILON * (4.0 * step + 2.0 * span + 64.0))


@functools.lru_cache(maxsize=4096, typed=True)
def window_edges(n: int, p: float, log_tail: float) -> tuple[int, int, float]:
    """``(lo, hi, log outside)`` of :func:`binom_window` without its log-pmf (``0 < p < 1``):
    for callers that sum the window in blocks. Memoized (a pure function of its arguments;
    issue 32: the tiers and ε steps of one query asked the same windows again, each a
    bisection of ~20 scalar Chernoff bounds).

    Examples
    --------
    >>> lo, hi, outside = window_edges(10**9, 0.5, -50.0)
    >>> lo < 5 * 10**8 < hi and outside <= -50.0 + math.log(2.0)
    True
    """
    lo = _edge(n, p, log_tail, upper=False)
    hi = _edge(n, p, log_tail, upper=True)
    tail_lo = log_chernoff_tail(n, p, lo - 1, upper=False) if lo > 0 else -math.inf
    tail_hi = log_chernoff_tail(n, p, hi + 1, upper=True) if hi < n else -math.inf
    return lo, hi, float(np.logaddexp(tail_lo, tail_hi))


def _log_accum_reverse(x: FloatArray) -> FloatArray:
    """``out[i] = log Σ_{j >= i} exp(x[j])``."""
    return np.logaddexp.accumulate(x[::-1])[::-1]


class ExcessTable:
    """``E[(X − θ)_+]`` and ``E[(θ − X)_+]`` for X ~ Bin(n, p), many θ, in log space.

    Uses ``E[(X − θ)_+] = (a − θ) P(X >= a) + Σ_{j > a} P(X >= j)`` with ``a`` the smallest
    integer above θ, so every quantity is a sum of positive terms. Contributions from outside
    the window are bounded by ``tail_mass × (n − θ)`` (resp. ``θ``) and *added*, so the result
    is an upper bound.

    Examples
    --------
    >>> t = ExcessTable(binom_window(10, 0.3, -60.0))
    >>> xs = np.arange(11); pmf = np.exp(gammaln(11) - gammaln(xs + 1) - gammaln(11 - xs)
    ...     + xs * np.log(0.3) + (10 - xs) * np.log(0.7))
    >>> exact = float((pmf * np.maximum(xs - 2.5, 0)).sum())
    >>> abs(float(np.exp(t.log_above(np.array([2.5]))[0])) - exact) < 1e-12
    True
    """

    def __init__(self, window: Window) -> None:
        self.w = window
        lp = window.log_pmf
        self._log_sf = _log_accum_reverse(lp)  # P(X >= lo + i) within window
        self._log_ss = np.append(_log_accum_reverse(self._log_sf)[1:], -np.inf)
        # Σ_{j > lo+i} P(X >= j) = Σ_{i' > i} sf[i']
        self._log_cdf = np.logaddexp.accumulate(lp)  # P(X <= lo + i)
        self._log_cs = np.insert(np.logaddexp.accumulate(self._log_cdf)[:-1], 0, -np.inf)
        # Σ_{j < lo+i} P(X <= j) = Σ_{i' < i} cdf[i']

    def log_above(self, theta: FloatArray) -> FloatArray:
        """``log E[(X − θ)_+]`` (upper bound) for each θ."""
        w = self.w
        theta = np.asarray(theta, dtype=np.float64)
        a = np.floor(theta) + 1.0  # smallest integer > θ
        idx = np.clip(a - w.lo, 0, w.log_pmf.size).astype(np.int64)
        inside = idx < w.log_pmf.size
        safe = np.minimum(idx, w.log_pmf.size - 1)
        start = w.lo + safe.astype(np.float64)
        with np.errstate(divide="ignore"):
            head = np.log(np.maximum(start - theta, 0.0)) + self._log_sf[safe]
        val = np.where(inside, np.logaddexp(head, self._log_ss[safe]), -np.inf)
        if w.log_tail > -np.inf:
            with np.errstate(divide="ignore"):
                extra = w.log_tail + np.log(np.maximum(w.n - theta, 0.0))
            val = np.logaddexp(val, extra)
        return np.asarray(val, dtype=np.float64)

    def log_below(self, theta: FloatArray) -> FloatArray:
        """``log E[(θ − X)_+]`` (upper bound) for each θ."""
        w = self.w
        theta = np.asarray(theta, dtype=np.float64)
        b = np.ceil(theta) - 1.0  # largest integer < θ
        idx = np.clip(b - w.lo, -1, w.log_pmf.size - 1).astype(np.int64)
        inside = idx >= 0
        safe = np.maximum(idx, 0)
        end = w.lo + safe.astype(np.float64)
        with np.errstate(divide="ignore"):
            head = np.log(np.maximum(theta - end, 0.0)) + self._log_cdf[safe]
        val = np.where(inside, np.logaddexp(head, self._log_cs[safe]), -np.inf)
        if w.log_tail > -np.inf:
            with np.errstate(divide="ignore"):
                extra = w.log_tail + np.log(np.maximum(theta, 0.0))
            val = np.logaddexp(val, extra)
        return np.asarray(val, dtype=np.float64)


def log_binom_pmf(k: npt.ArrayLike, n: float | FloatArray, p: float) -> FloatArray:
    """Log-pmf of Bin(n, p) by ``gammaln`` (for small n and tests)."""
    kk = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (
            gammaln(n + 1.0)
            - gammaln(kk + 1.0)
            - gammaln(n - kk + 1.0)
            + xlogy(kk, p)
            + xlog1py(n - kk, -p)
        )
    return np.where((kk < 0) | (kk > n), -np.inf, out)


def trusted_tail(
    tail: FloatArray, n: FloatArray, p: float, t: FloatArray, *, upper: bool
) -> FloatArray:
    """An upper bound on the tail ``P(X >= t)`` (``upper``) or ``P(X <= t)`` of Bin(n, p)
    computed as ``tail``: ``tail`` itself where at least :data:`BETAINC_TRUSTED`, below it
    (where the incomplete beta can underflow) the smaller of its Chernoff bound and its
    first term's geometric bound, each rounded up (:func:`log_tail_upper`)."""
    n, t, tail = np.broadcast_arrays(np.asarray(n, float), np.asarray(t, float), tail)
    deep = tail < BETAINC_TRUSTED
    out = np.array(tail, dtype=np.float64)
    if deep.any():
        log_bound = log_tail_upper(n[deep], p, t[deep], upper=upper)
        # exp within an ulp; plus the smallest subnormal for its rounding (and underflow) there
        bound = np.exp(log_bound) * (1.0 + 4.0 * MACHINE_EPSILON) + 5e-324
        out[deep] = np.where(log_bound > -np.inf, np.minimum(bound, 1.0), 0.0)
    return out


def on_blocks(
    mask: npt.NDArray[np.bool_],
    fill: FloatArray | float,
    fn: Callable[..., FloatArray],
    *arrays: FloatArray,
) -> FloatArray:
    """``fn(*arrays)`` on the blocks of ``mask`` only (arrays broadcast to its shape), ``fill``
    elsewhere: the incomplete betas are paid for the blocks that matter."""
    out = np.array(np.broadcast_to(fill, mask.shape), dtype=np.float64)
    if mask.any():
        out[mask] = fn(*(np.broadcast_to(a, mask.shape)[mask] for a in arrays))
    return out


def betainc_error(tail: FloatArray, size: FloatArray | float) -> FloatArray:
    """Bound on the absolute error of a binomial tail ``tail`` of ``Bin(size, p)`` computed
    by :func:`binom_sf` / :func:`binom_cdf` (Boost's regularized incomplete beta, through
    SciPy), above underflow: ``tail · ε (|ln tail| + 40)(16 + √size / 4)``.

    Boost is accurate to a few ulps for moderate parameters, but its relative error grows
    with the parameters and into the deep tails: against 40-digit sums it reached 1.2e-13 at
    n = 10^3, 1.2e-12 at 10^4, 5e-12 at 10^6, 1.2e-11 at 10^7, 4.6e-11 at 10^8 and 7.9e-11
    at 10^9 (tails down to 1e-280; ``tests/accounting/test_binomial_tails.py`` repeats the
    measurement up to 10^6). The model is at least 2.5x above every measured error.

    Examples
    --------
    >>> err = betainc_error(np.array([0.5, 1e-200]), 1e9)
    >>> bool(err[0] < 1e-9 * 0.5 and err[1] < 1e-8 * 1e-200)
    True
    """
    tail = np.asarray(tail, dtype=np.float64)
    # The same floats as ``ε (max(−ln tail, 0) + 40)(16 + √size/4)`` with −ln 0 read as 0, in
    # place (a variation-ratio query makes ~10^4 of these on arrays of up to 3·10^4 tails)
    magnitude = np.zeros(tail.shape)
    np.log(tail, out=magnitude, where=tail > 0.0)
    np.negative(magnitude, out=magnitude)
    np.maximum(magnitude, 0.0, out=magnitude)
    magnitude += 40.0
    magnitude *= MACHINE_EPSILON
    rtol = magnitude * (16.0 + 0.25 * np.sqrt(size))
    return np.asarray(tail * rtol, dtype=np.float64)


def binom_sf(k: FloatArray, n: FloatArray, p: float | FloatArray) -> FloatArray:
    """``P(Bin(n, p) >= k)`` elementwise (Boost's incomplete beta; error bounded by
    :func:`betainc_error` above underflow)."""
    inside = (k >= 1) & (k <= n)
    out = betainc(np.where(inside, k, 1.0), np.where(inside, n - k + 1.0, 1.0), p)
    return np.asarray(np.where(k <= 0, 1.0, np.where(k > n, 0.0, out)), dtype=np.float64)


def _complement(p: float) -> tuple[float, float]:
    """``1 − p = hi + lo`` exactly, ``hi = fl(1 − p)`` (``0 <= p <= 1``): ``1 − hi`` and then
    ``(1 − hi) − p`` are both exact by Sterbenz's lemma."""
    hi = 1.0 - p
    return hi, (1.0 - hi) - p


def binom_cdf(k: FloatArray, n: FloatArray, p: float | FloatArray) -> FloatArray:
    """``P(Bin(n, p) <= k)`` elementwise, as ``I_{1−p}(n − k, k + 1)`` (SciPy's ``betainc``
    is ~7x faster than its ``betaincc``), with ``1 − p`` rounded to a double: error bounded
    by :func:`betainc_error` plus :func:`binom_cdf_rtol` times the value."""
    inside = (k >= 0) & (k <= n - 1)
    a, b = np.where(inside, k + 1.0, 1.0), np.where(inside, n - k, 1.0)
    out = betainc(b, a, 1.0 - p)  # _complement(p)[0], also for p per element
    return np.asarray(np.where(k < 0, 0.0, np.where(k >= n, 1.0, out)), dtype=np.float64)


def binom_cdf_rtol(k: FloatArray, n: FloatArray, p: float) -> FloatArray:
    """Relative error of :func:`binom_cdf` from rounding ``1 − p`` (0 for ``p >= 1/2``).

    With ``q = 1 − p = hi + lo`` the value is ``I_hi(a, b)``, ``a = n − k``, instead of
    ``I_q(a, b)``; the derivative in q is ``n Bin(a − 1; n − 1, q) = (a/q) Bin(a; n, q)``,
    at most ``(a/q) I_q(a, b)`` since the tail holds ``Bin(a; n, q)``. So the relative error
    is at most ``|lo| a/hi``, doubled for the derivative's change over ``[hi, q]`` (a width
    of 6e-17). At n = 10^9 that is 2e-7; for n <= 10^6, 2e-10.

    Examples
    --------
    >>> float(binom_cdf_rtol(np.array([3.0]), np.array([10.0]), 0.75)[0])   # 1 − p exact
    0.0
    >>> 0.0 < float(binom_cdf_rtol(np.array([3.0]), np.array([1e9]), 0.3)[0]) < 3e-7
    True
    """
    hi, lo = _complement(p)
    a = np.maximum(np.asarray(n, dtype=np.float64) - np.asarray(k, dtype=np.float64), 0.0)
    if lo == 0.0:  # 1 − p is exact (also at p = 1, where hi = 0)
        return np.zeros_like(a)
    return np.asarray(2.0 * abs(lo) * a / hi, dtype=np.float64)


def tail_edges_many(
    n: npt.ArrayLike, p: float, log_tail: float
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray]:
    """The narrowest edges ``lo[r], hi[r]`` of Bin(n[r], p) (``0 < p < 1``) whose *exact* tails
    ``P(X < lo)`` and ``P(X > hi)`` are each ``<= e^{log_tail}`` (``log_tail < −1``), and a
    bound on the mass outside them: the two tails plus their :func:`betainc_error`,
    :func:`binom_cdf_rtol` and underflow allowances.

    Narrower than :func:`window_edges` (the Chernoff bound overstates a tail by about
    ``√n``), for callers whose cost or looseness grows with the width. One vectorized
    bisection per side, ``log2(n) + 1`` rounds of incomplete betas.

    Examples
    --------
    >>> lo, hi, outside = tail_edges_many([100, 10**9], 0.3, -30.0)
    >>> clo, chi, _ = window_edges(10**9, 0.3, -30.0)
    >>> clo <= int(lo[1]) < int(hi[1]) <= chi, bool(np.all(outside <= 2.01 * math.exp(-30.0)))
    (True, True)
    """
    n = np.asarray(n, dtype=np.float64)
    mean = n * p
    with np.errstate(divide="ignore"):

        def small(tail: FloatArray) -> npt.NDArray[np.bool_]:
            return np.asarray(np.log(tail) <= log_tail)

        # lo: the largest value in [0, ⌊mean⌋] with P(X <= lo − 1) small (true at 0).
        low, high = np.zeros_like(n), np.floor(mean) + 1.0
        while bool(np.any(high - low > 1.0)):
            open_ = high - low > 1.0
            mid = np.floor((low + high) / 2.0)
            ok = small(trusted_tail(binom_cdf(mid - 1.0, n, p), n, p, mid - 1.0, upper=False))
            low, high = np.where(open_ & ok, mid, low), np.where(open_ & ~ok, mid, high)
        lo = low
        # hi: the smallest value in [⌈mean⌉, n] with P(X >= hi + 1) small (true at n).
        low, high = np.ceil(mean) - 1.0, n.copy()
        while bool(np.any(high - low > 1.0)):
            open_ = high - low > 1.0
            mid = np.floor((low + high) / 2.0)
            ok = small(trusted_tail(binom_sf(mid + 1.0, n, p), n, p, mid + 1.0, upper=True))
            high, low = np.where(open_ & ok, mid, high), np.where(open_ & ~ok, mid, low)
        hi = high
    below = trusted_tail(binom_cdf(lo - 1.0, n, p), n, p, lo - 1.0, upper=False)
    above = trusted_tail(binom_sf(hi + 1.0, n, p), n, p, hi + 1.0, upper=True)
    outside = (
        below * (1.0 + binom_cdf_rtol(lo - 1.0, n, p))
        + above
        + betainc_error(below, n)
        + betainc_error(above, n)
        + 2.0 * BETAINC_ATOL
    )
    return lo.astype(np.int64), hi.astype(np.int64), np.asarray(outside, dtype=np.float64)


def half_sf(k: FloatArray, m: FloatArray) -> FloatArray:
    """``P(Bin(m, 1/2) >= k)`` elementwise."""
    inside = (k >= 1) & (k <= m)
    out = betainc(np.where(inside, k, 1.0), np.where(inside, m - k + 1.0, 1.0), 0.5)
    return np.asarray(np.where(k <= 0, 1.0, np.where(k > m, 0.0, out)), dtype=np.float64)


#: Arrays at least this large have their tails computed once per distinct ``(a*, s)``.
_DEDUP_MIN = 512


def half_tails(a_star: FloatArray, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``P(Bin(s − 1, ½) >= a* − 1)``, ``P(Bin(s, ½) >= a*)`` and ``P(Bin(s, ½) >= a* − 1)``
    elementwise. The blocked sums ask the same integer pair ``(a*, s)`` many times (a cell of
    ``variation_ratio`` at its finest blocking: 26 121 incomplete betas, 2 144 distinct), and
    the three tails of one pair are often those of another (the third tail of ``(a*, s)`` is
    the second of ``(a* − 1, s)``), so large integral arrays are evaluated once per distinct
    :func:`half_sf` argument ``(k, m)``, kept across calls (:data:`_TAIL_MEMO`): the same
    floats, bit for bit (``a*`` is first clipped to ``[0, s + 2]``, where all three tails are
    exactly 1 or 0 beyond: :func:`half_sf` returns those constants without an incomplete
    beta)."""
    a_star, s = np.broadcast_arrays(np.asarray(a_star, dtype=np.float64), np.asarray(s))
    s = np.asarray(s, dtype=np.float64)
    clipped = np.clip(a_star, 0.0, s + 2.0)
    if (
        a_star.size < _DEDUP_MIN
        or not bool(np.all((s >= 0.0) & (s < 2.0**30) & (s == np.floor(s))))
        or not bool(np.all(clipped == np.floor(clipped)))
    ):
        return half_sf(a_star - 1.0, s - 1.0), half_sf(a_star, s), half_sf(a_star - 1.0, s)
    # distinct (a*, s) first (a key decodes exactly to its pair), then the distinct (k, m)
    # of their three tails
    keys, inverse = _distinct((clipped.astype(np.int64) << 31) | s.astype(np.int64))
    a_u, s_u = (keys >> 31).astype(np.float64), (keys & ((1 << 31) - 1)).astype(np.float64)
    pairs, place = _distinct(
        np.concatenate(
            [pair_keys(a_u - 1.0, s_u - 1.0), pair_keys(a_u, s_u), pair_keys(a_u - 1.0, s_u)]
        )
    )
    memo = _TAIL_MEMO if pairs.size <= _TAIL_MEMO.capacity else PairMemo(pairs.size)
    tails = memo.values(pairs, half_sf)[place].reshape(3, keys.size)[:, inverse]
    shape = a_star.shape
    return tails[0].reshape(shape), tails[1].reshape(shape), tails[2].reshape(shape)


def _distinct(key: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The sorted distinct values of ``key`` (flattened) and each element's place among
    them. Where the keys' range and the element index fit in 62 bits together, each index is
    packed below its key and one ``np.sort`` gives both the order and the places (about 3x an
    ``argsort``); otherwise an argsort and a running count (~1.7x faster than ``np.unique``
    or a sort and a ``searchsorted`` at 3e5 keys). Both give the same arrays."""
    flat = key.ravel()
    low = int(flat.min()) if flat.size else 0
    index_bits = max(flat.size - 1, 1).bit_length()
    if flat.size and (int(flat.max()) - low).bit_length() + index_bits <= 62:
        packed = ((flat - low) << index_bits) | np.arange(flat.size)
        packed.sort()
        ordered = (packed >> index_bits) + low
        order = packed & ((1 << index_bits) - 1)
    else:
        order = np.argsort(flat)
        ordered = flat[order]
    return distinct_ranks(ordered, order)


def distinct_ranks(
    ordered: npt.NDArray[np.int64], order: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(distinct keys, each element's rank among them)`` from the keys sorted
    (``ordered``) and the permutation that sorted them (``order``): a running count of where
    the sorted keys change."""
    distinct = np.empty(ordered.size, dtype=bool)
    distinct[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=distinct[1:])
    inverse = np.empty(ordered.size, dtype=np.int64)
    inverse[order] = np.cumsum(distinct) - 1
    return ordered[distinct], inverse


#: ``half_sf`` per distinct integral ``(k, m)``, across calls: up to 2^20 pairs (16 MB). The
#: root search of a shuffle certificate evaluates the same blocks at nearby ε, where most
#: thresholds stay put, and a profile evaluates the same cells at ten ε and three resolutions.
_TAIL_MEMO = PairMemo(1 << 20)


def block_masses(
    n: FloatArray, p: float, lo: FloatArray, hi: FloatArray, *, upper: bool
) -> FloatArray:
    """``P(lo <= Bin(n, p) <= hi)`` elementwise, from the smaller pair of tails (no
    catastrophic cancellation), rounded up (``upper``) or down by a bound on its error.
    Blocks above the mean take the upper tails, the others the lower ones (two incomplete
    betas per block)."""
    n, lo, hi = np.broadcast_arrays(
        np.asarray(n, dtype=np.float64),
        np.asarray(lo, dtype=np.float64),
        np.asarray(hi, dtype=np.float64),
    )
    use_sf = lo > n * p
    use_cdf = ~use_sf

    def sf(k: FloatArray, m: FloatArray) -> FloatArray:
        return binom_sf(k, m, p)

    def cdf(k: FloatArray, m: FloatArray) -> FloatArray:
        return binom_cdf(k, m, p)

    first = on_blocks(use_sf, 0.0, sf, lo, n) + on_blocks(use_cdf, 0.0, cdf, hi, n)
    second = on_blocks(use_sf, 0.0, sf, hi + 1.0, n) + on_blocks(use_cdf, 0.0, cdf, lo - 1.0, n)
    return masses_from_tails(first, second, n, p, lo, hi, use_cdf, upper=upper)


def contiguous_block_masses(n: FloatArray, p: float, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """``block_masses(n, p, lo, hi, upper=True)`` on the live blocks (``lo <= hi``) of rows of
    contiguous blocks (rows x blocks, n one value per row), the same floats for about half
    of the incomplete betas (issue 32: the clone layouts' masses were most of their cost;
    the tails from :func:`edge_tails`). Entries of blocks that are not live are not
    meaningful (the caller discards them)."""
    first, second, use_sf = edge_tails(n, p, lo, hi, lo <= hi)
    return masses_from_tails(first, second, n, p, lo, hi, ~use_sf, upper=True)


def edge_tails(
    n: FloatArray,
    p: float | FloatArray,
    start: FloatArray,
    end: FloatArray,
    live: npt.NDArray[np.bool_],
    shift: float = 0.0,
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """The two tails of each ``live`` block ``[lo, hi] = [start − shift, end − shift]`` of
    ``Bin(n, p)`` that :func:`block_masses` takes (``P(X >= lo)`` and ``P(X > hi)`` above
    the mean, else ``P(X <= hi)`` and ``P(X < lo)``; 0 for blocks not live), and where the
    upper ones are taken: the same floats, about half of the incomplete betas.

    Rows (rows x blocks; ``n`` and ``p`` one value per row, ``p`` a float or a column) of
    contiguous blocks share their tails at the edges ``E = (first start, every end + 1)``:
    block j's ``P(X >= E_j − shift)`` and ``P(X >= E_{j+1} − shift)`` or ``P(X <= E_{j+1} −
    1 − shift)`` and ``P(X <= E_j − 1 − shift)``, one incomplete beta per edge and kind
    that a live block asks for. A row whose live block's start is not the previous block's
    end + 1 would take a wrong edge: there every live block gets its own two tails."""
    lo, hi = start - shift, end - shift
    probs = np.broadcast_to(np.asarray(p, dtype=np.float64), lo.shape)
    use_sf = lo > n * p
    upper_live, lower_live = live & use_sf, live & ~use_sf
    if not ((start[:, 1:] == end[:, :-1] + 1.0) | ~live[:, 1:]).all():  # not contiguous
        first = on_blocks(upper_live, 0.0, binom_sf, lo, n, probs)
        first = first + on_blocks(lower_live, 0.0, binom_cdf, hi, n, probs)
        second = on_blocks(upper_live, 0.0, binom_sf, hi + 1.0, n, probs)
        second = second + on_blocks(lower_live, 0.0, binom_cdf, lo - 1.0, n, probs)
        return first, second, use_sf
    edges = np.concatenate([start[:, :1], end + 1.0], axis=1) - shift
    rows = np.concatenate([n[:, :1], n], axis=1)
    probs = np.concatenate([probs[:, :1], probs], axis=1)  # one value per row
    tables = []
    for wanted, fn, at in ((upper_live, binom_sf, edges), (lower_live, binom_cdf, edges - 1.0)):
        need = np.zeros(edges.shape, dtype=bool)
        need[:, :-1] |= wanted  # block j's left edge
        need[:, 1:] |= wanted  # and its right edge
        table = np.zeros(edges.shape)
        table[need] = fn(at[need], rows[need], probs[need])
        tables.append(table)
    sf, cdf = tables
    first = np.where(upper_live, sf[:, :-1], 0.0) + np.where(lower_live, cdf[:, 1:], 0.0)
    second = np.where(upper_live, sf[:, 1:], 0.0) + np.where(lower_live, cdf[:, :-1], 0.0)
    return first, second, use_sf


def masses_from_tails(
    first: FloatArray,
    second: FloatArray,
    n: FloatArray,
    p: float,
    lo: FloatArray,
    hi: FloatArray,
    use_cdf: npt.NDArray[np.bool_],
    *,
    upper: bool,
) -> FloatArray:
    """:func:`block_masses` from its two tails per block (``P(X >= lo)`` and ``P(X > hi)``,
    or where ``use_cdf`` ``P(X <= hi)`` and ``P(X < lo)``, as :func:`binom_sf` /
    :func:`binom_cdf` give them): their difference rounded up (``upper``) or down by its
    error. For callers that obtain the tails more cheaply (blocks sharing edges)."""
    err = betainc_error(first, n) + betainc_error(second, n) + 2.0 * BETAINC_ATOL
    if p < 0.5:  # the lower tails' rounded complement (binom_cdf_rtol)
        err = err + np.where(
            use_cdf,
            first * binom_cdf_rtol(hi, n, p) + second * binom_cdf_rtol(lo - 1.0, n, p),
            0.0,
        )
    # a tail below BETAINC_TRUSTED may be wrong by up to UNTRUSTED_ATOL
    err = err + UNTRUSTED_ATOL * ((first < BETAINC_TRUSTED) + (second < BETAINC_TRUSTED))
    diff = first - second
    out = np.clip(diff + err if upper else diff - err, 0.0, 1.0)
    if not upper:  # where a tail is untrusted, at least the block's larger end point
        ends = np.maximum(binomial_pmf_lower(n, p, lo), binomial_pmf_lower(n, p, hi))
        untrusted = (first < BETAINC_TRUSTED) | (second < BETAINC_TRUSTED)
        return np.asarray(np.where(untrusted, np.maximum(out, ends), out), dtype=np.float64)
    # below BETAINC_TRUSTED the first tail may have underflowed: its Chernoff bound instead
    deep = out < BETAINC_TRUSTED
    # a tail of 1 keeps an entry as it is; 0 asks for the Chernoff bound
    bound_cdf = trusted_tail(np.where(deep & use_cdf, 0.0, 1.0), n, p, hi, upper=False)
    bound_sf = trusted_tail(np.where(deep & ~use_cdf, 0.0, 1.0), n, p, lo, upper=True)
    bound = np.where(use_cdf, bound_cdf, bound_sf)
    return np.asarray(np.where(deep, np.minimum(bound, out), out), dtype=np.float64)


def window_blocks(
    n: int, p: float, log_tail: float, width_of: Callable[[int, int], int]
) -> tuple[FloatArray, FloatArray, float]:
    """Bin(n, p) on its window (:func:`binom_window`)
    in blocks of ``width_of(lo, size)`` counts: each block's smallest count, the log of its
    mass (rounded up) and the log mass outside the window. Width 1 gives every count with
    its log-pmf; wider blocks take their masses from incomplete betas, so the cost does not
    grow with the window (about 3·10^5 counts at n = 10^9).

    Examples
    --------
    >>> import math
    >>> counts, log_w, outside = window_blocks(10**9, 0.3, -50.0, lambda lo, size: 1000)
    >>> counts.size < 1000   # the window holds ~3·10^5 counts
    True
    >>> total = math.exp(float(np.logaddexp.reduce(log_w)))   # each mass rounded up
    >>> 1.0 - 1e-12 < total < 1.0 + 1e-5
    True
    """
    if n == 0 or not 0.0 < p < 1.0:
        win = binom_window(n, p, log_tail)
        return win.values, win.log_pmf, win.log_tail
    lo, hi, outside = window_edges(n, p, log_tail)
    width = width_of(lo, hi - lo + 1)
    if width <= 1:
        win = binom_window(n, p, log_tail)
        return win.values, win.log_pmf, win.log_tail
    starts = np.arange(lo, hi + 1, width, dtype=np.float64)
    ends = np.minimum(starts + float(width - 1), float(hi))
    # one row of contiguous blocks: block_masses' floats from the tails at shared edges
    mass = contiguous_block_masses(np.full((1, starts.size), float(n)), p, starts[None], ends[None])
    with np.errstate(divide="ignore"):
        log_w = np.log(mass[0])
    return starts, log_w, outside


def masses_from_tails_rows(
    first: FloatArray,
    second: FloatArray,
    n: FloatArray,
    p: float | FloatArray,
    lo: FloatArray,
    hi: FloatArray,
    use_cdf: npt.NDArray[np.bool_],
) -> FloatArray:
    """:func:`masses_from_tails` (``upper=True``) with
    ``p`` per element (broadcast): the same floats. Its complement allowance
    (:func:`binom_cdf_rtol`, only for ``p < 1/2``) is
    added as 0 elsewhere, which leaves the error bound's float unchanged."""
    err = betainc_error(first, n) + betainc_error(second, n) + 2.0 * BETAINC_ATOL
    complement = 1.0 - p  # 1 − p = complement + rest exactly (binom_cdf_rtol)
    rest = (1.0 - complement) - p
    with np.errstate(divide="ignore", invalid="ignore"):
        rtol_hi = 2.0 * np.abs(rest) * np.maximum(n - hi, 0.0) / complement
        rtol_lo = 2.0 * np.abs(rest) * np.maximum(n - (lo - 1.0), 0.0) / complement
    lower = use_cdf & (np.asarray(p) < 0.5) & (rest != 0.0)
    err = err + np.where(lower, first * rtol_hi + second * rtol_lo, 0.0)
    return np.asarray(np.clip(first - second + err, 0.0, 1.0), dtype=np.float64)
