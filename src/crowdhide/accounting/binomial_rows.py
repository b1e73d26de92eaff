"""Binomial windows for many rows at once, and expected excesses over them, in log space
(internal; split from :mod:`crowdhide.accounting.binomial_tails`, whose single-window and
incomplete-beta tools they complement).

The accountants that sum ``Σ_j Bin(j; N_r, p) f(j)`` over many totals ``N_r`` at once (the
generic pairs, the clone counts, the binary worst case, the scrambler's rounding allowance)
build one Bernstein-sized window per row (:func:`row_windows`), take expected excesses over a
matrix of thresholds from suffix sums of positive terms only (:func:`row_log_excess_above`,
:class:`RowSuffixSums`) and bound the part outside each window with the Chernoff tail of
:mod:`~crowdhide.accounting.binomial_tails` (:func:`row_log_outside`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from crowdhide.accounting.binomial_tails import _log_tail_vec
from crowdhide.accounting.logmath import log_terms_error

__all__ = [
    "RowSuffixSums",
    "RowWindows",
    "gammaln_table",
    "row_log_excess_above",
    "row_log_outside",
    "row_log_pmf_error",
    "row_windows",
    "rowwise_logsumexp",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RowWindows:
    """For each row r, integers ``lo[r] + 0..width-1`` of Bin(n[r], p) (entries outside
    ``0..n[r]`` have log-pmf ``-inf``) and a bound on the mass outside the window."""

    lo: FloatArray
    values: FloatArray
    log_pmf: FloatArray
    log_tail: FloatArray


def row_windows(n: FloatArray, p: float, log_tail: float, gammaln_table: FloatArray) -> RowWindows:
    """Bernstein-sized windows of Bin(n[r], p) for many rows at once (see :class:`RowWindows`).

    The half-width ``t = L/3 + sqrt(L²/9 + 2 n p(1−p) L)`` makes each Bernstein tail
    ``<= e^{-L}``; the reported tail is the (tighter) Chernoff bound at the actual edges.
    ``gammaln_table[j] = gammaln(j)`` must cover ``max(n) + 2``.
    """
    n = np.asarray(n, dtype=np.float64)
    big_l = -log_tail
    var = float(n.max()) * p * (1.0 - p)
    half = math.ceil(big_l / 3.0 + math.sqrt(big_l**2 / 9.0 + 2.0 * var * big_l)) + 1
    width = 2 * half + 1
    lo = np.floor(n * p) - half
    vals = lo[:, None] + np.arange(width, dtype=np.float64)[None, :]
    inside = (vals >= 0) & (vals <= n[:, None])
    if p <= 0.0 or p >= 1.0:
        target = 0.0 if p <= 0.0 else n[:, None]
        log_pmf = np.where(vals == target, 0.0, -np.inf)
        return RowWindows(lo, vals, log_pmf, np.full(n.shape, -np.inf))
    # a block of rows at a time, its temporaries in the cache (issue 32, s31-krr: the
    # k-RR third-value layout's windows, 1.7 M cells at n = 1e3, δ = 1e-300): the same floats
    log_pmf = np.empty(vals.shape)
    for block in _row_blocks(n.size, width):
        log_pmf[block] = _window_log_pmf(n[block], p, vals[block], inside[block], gammaln_table)
    tail = np.logaddexp(
        _log_tail_vec(n, p, lo - 1.0, upper=False),
        _log_tail_vec(n, p, lo + width, upper=True),
    )
    return RowWindows(lo, vals, log_pmf, tail)


def _row_blocks(rows: int, width: int) -> list[slice]:
    """Blocks of rows of about :data:`_BLOCK_CELLS` cells (at least one row each)."""
    step = max(1, _BLOCK_CELLS // max(width, 1))
    return [slice(r, r + step) for r in range(0, rows, step)]


def _window_log_pmf(
    n: FloatArray,
    p: float,
    vals: FloatArray,
    inside: npt.NDArray[np.bool_],
    gammaln_table: FloatArray,
) -> FloatArray:
    """:func:`row_windows`' log-pmfs of a block of rows (−inf outside ``0..n[r]``)."""
    vi = np.where(inside, vals, 0.0).astype(np.int64)
    ni = n.astype(np.int64)[:, None]
    log_pmf = (
        gammaln_table[ni + 1]
        - gammaln_table[vi + 1]
        - gammaln_table[np.maximum(ni - vi, 0) + 1]
        + vals * math.log(p)
        + (n[:, None] - vals) * math.log1p(-p)
    )
    return np.asarray(np.where(inside, log_pmf, -np.inf), dtype=np.float64)


def row_log_pmf_error(largest: float, p: float) -> float:
    """Bound on the absolute rounding error of :func:`row_windows`' log-pmfs for totals up to
    ``largest``: each is a sum of log-gamma values and two products whose absolute values sum
    to at most ``2 gammaln(N + 1) + N (|ln p| + |ln(1 − p)|)``, and their cancellation errs by
    up to a few ε of that (:func:`~crowdhide.accounting.logmath.log_terms_error`: 4.9e-8 at
    N = 2·10^6, p = 1/2, where 5.9e-9 was measured)."""
    logs = abs(math.log(p)) + abs(math.log1p(-p)) if 0.0 < p < 1.0 else 0.0
    return float(log_terms_error(2.0 * math.lgamma(largest + 1.0), largest * logs))


def row_log_excess_above(
    rows: RowWindows,
    theta: FloatArray,
    n: FloatArray,
    *,
    sums: RowSuffixSums | None = None,
    falling: bool = False,
) -> FloatArray:
    """``log`` of the in-window part of ``E[(X_r − θ[r, i])_+]`` for a matrix of thresholds,
    one row per window row (add :func:`row_log_outside` for the rest).

    Uses ``E[(X − θ)_+] = (a − θ) P(X >= a) + Σ_{j > a} P(X >= j)`` (positive terms only).
    The suffix sums are taken in linear space relative to each row's largest needed pmf
    value; terms that underflow there (relative size < 1e-300) are replaced by a bound, so
    the result stays an upper bound. ``sums`` (built on ``rows``) keeps the suffix sums of
    earlier calls: the same floats, without their exponentials and cumulative sums where a
    row's largest needed pmf value has not moved. ``falling``: each row of ``theta`` is
    non-increasing, so its first needed column, the least of the row's, is its last
    column's (the first column is non-decreasing in θ): the same integers from one column
    instead of a pass over the matrix (issue 32, s35-lower).
    """
    width = rows.log_pmf.shape[1]
    # Rows are taken a block at a time, each block's temporaries small enough to stay in
    # the cache (issue 32, s31-krr: a chunk's matrices were 1-3 MB each, and the ~20 passes
    # over them ran at memory speed); each cell's floats are the same in any block.
    blocks = _row_blocks(theta.shape[0], theta.shape[1])
    if falling:
        first = _columns(theta[:, -1:], rows.lo[:, None], width)[:, 0]
    else:
        first = np.empty(theta.shape[0], dtype=np.int64)
        for block in blocks:  # leftmost column needed per row
            first[block] = _columns(theta[block], rows.lo[block, None], width).min(axis=1)
    np.minimum(first, width - 1, out=first)
    shift, sf_rev, ss_rev = (sums or RowSuffixSums(rows)).sums(first)
    out = np.empty(theta.shape)
    for block in blocks:
        idx = _columns(theta[block], rows.lo[block, None], width)
        suffix = (sf_rev[block], ss_rev[block])
        out[block] = _block_excess(theta[block], rows.lo[block, None], idx, suffix, shift[block])
    return out


#: Cells per block of :func:`row_log_excess_above` (128 kB per temporary).
_BLOCK_CELLS = 16_384


def _columns(theta: FloatArray, lo: FloatArray, width: int) -> npt.NDArray[np.int64]:
    """``clip(floor(θ) + 1 − lo, 0, width)`` as integers: the first column counted."""
    # The same float operations in the same order, done in place (issue 32: 1.6x on the
    # k-RR lower bound's third-value dataset at n = 1e3, δ = 1e-300).
    column = np.floor(theta)
    column += 1.0
    column -= lo
    np.maximum(column, 0.0, out=column)
    np.minimum(column, width, out=column)
    return column.astype(np.int64)


def _block_excess(
    theta: FloatArray,
    lo: FloatArray,
    idx: npt.NDArray[np.int64],
    suffix: tuple[FloatArray, FloatArray],
    shift: FloatArray,
) -> FloatArray:
    """:func:`row_log_excess_above` of a block of rows, given their first counted columns
    ``idx`` and their suffix sums (columns reversed) and shifts."""
    sf_rev, ss_rev = suffix
    width = sf_rev.shape[1]
    floor = width * 1e-300
    inside = idx < width
    safe = np.minimum(idx, width - 1, out=idx)
    at = np.subtract(width - 1, safe)
    at += (np.arange(theta.shape[0]) * width)[:, None]
    sf_at = sf_rev.ravel()[at]
    sf_at += floor
    # Σ_{j > a} P(X >= j): the suffix sum from the next column on, 0 past the last one
    # (there ``at − 1`` is the previous row's, or −1: any place, overwritten; in place, the
    # same floats as a ``where`` over a clipped index, two matrices fewer)
    at -= 1
    ss_at = ss_rev.ravel()[at]
    np.putmask(ss_at, safe == width - 1, 0.0)
    ss_at += width * floor
    body = np.add(lo, safe)  # the first column counted, a = floor(θ) + 1 (or the edge)
    body -= theta
    np.maximum(body, 0.0, out=body)  # (a − θ)_+ P(X >= a) + Σ_{j > a} P(X >= j)
    body *= sf_at
    body += ss_at
    body *= inside
    with np.errstate(divide="ignore"):
        np.log(body, out=body)
    body += shift[:, None]
    return np.asarray(body, dtype=np.float64)


class RowSuffixSums:
    """The suffix sums of :func:`row_log_excess_above` for one :class:`RowWindows`, kept
    across calls (a root search asks nearby ε, where most rows' shifts stay put: 17 of 310
    rows moved between the k-RR lower bound's evaluations at n = 1e3, k = 4).

    Row r's sums are those of ``exp(log_pmf[r] − shift[r])`` from the right, ``shift[r]``
    the largest log-pmf at or right of the row's first needed column. A suffix sum from
    column j adds only columns >= j, one after another from the right, so the sums of every
    needed column (>= first) are the same floats whether the columns left of ``first`` are
    masked out or not: rows are kept whole and recomputed only when their shift changes.
    """

    def __init__(self, rows: RowWindows) -> None:
        self._log_pmf = rows.log_pmf
        self._state: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._top: FloatArray | None = None

    def sums(self, first: npt.NDArray[np.int64]) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(shift, sums from the right, sums of those)``, columns reversed, rows whole."""
        lp = self._log_pmf
        blocks = _row_blocks(lp.shape[0], lp.shape[1])  # (row by row: the same floats)
        if self._top is None:  # max(log_pmf[r, j:]) for every j: exact, as any max is
            top = np.empty(lp.shape)
            for b in blocks:
                top[b] = np.flip(np.maximum.accumulate(np.flip(lp[b], axis=1), axis=1), axis=1)
            self._top = top
        shift = self._top[np.arange(lp.shape[0]), first]
        shift = np.where(np.isfinite(shift), shift, 0.0)
        state = self._state  # replaced whole, never changed in place (threads may share it)
        with np.errstate(over="ignore"):  # only left of ``first``, where no sum is read
            if state is None:
                sf_rev, ss_rev = np.empty(lp.shape), np.empty(lp.shape)
                for b in blocks:
                    rel = np.exp(lp[b] - shift[b, None])
                    sf_rev[b] = np.cumsum(np.flip(rel, axis=1), axis=1)
                    ss_rev[b] = np.cumsum(sf_rev[b], axis=1)
                self._state = (shift, sf_rev, ss_rev)
                return self._state
            stale = np.flatnonzero(state[0] != shift)
            if stale.size == 0:
                return state
            rel = np.exp(lp[stale] - shift[stale, None])
        sf_rev, ss_rev = state[1].copy(), state[2].copy()
        sf_rev[stale] = np.cumsum(np.flip(rel, axis=1), axis=1)
        ss_rev[stale] = np.cumsum(sf_rev[stale], axis=1)
        self._state = (shift, sf_rev, ss_rev)
        return self._state


def row_log_outside(rows: RowWindows, n: FloatArray) -> FloatArray:
    """Per row, log of a bound on the part of ``E[(X − θ)_+]`` from outside the window
    (``tail mass × n``), valid for every θ >= 0."""
    with np.errstate(divide="ignore"):
        return np.asarray(rows.log_tail + np.log(np.maximum(n, 1.0)), dtype=np.float64)


def rowwise_logsumexp(x: FloatArray) -> FloatArray:
    """``log Σ_j exp(x[r, j])`` per row (rows of ``-inf`` give ``-inf``)."""
    m = x.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    scaled = np.subtract(x, m[:, None])  # exp in place: the same floats, one matrix fewer
    np.exp(scaled, out=scaled)
    with np.errstate(divide="ignore"):
        out = np.log(scaled.sum(axis=1)) + m
    return np.asarray(out, dtype=np.float64)


def gammaln_table(size: int) -> FloatArray:
    """``gammaln(j)`` for ``j = 0..size-1`` (``gammaln(0) = inf`` is never used)."""
    table = gammaln(np.arange(size, dtype=np.float64))
    table[0] = 0.0
    return np.asarray(table, dtype=np.float64)
