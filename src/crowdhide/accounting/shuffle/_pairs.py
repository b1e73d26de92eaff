"""Hockey-stick divergences of the reduced pairs behind the shuffle bounds (internal).

All functions return ``log δ(ε)`` as an *upper bound* on the exact divergence of the stated
pair: tails outside the summation windows are bounded rigorously and added (see
:mod:`crowdhide.accounting.binomial_tails`), and a bound on floating-point error is added where a
difference of two tail probabilities is taken.

Notation: ``e = e^{ε0}``, ``E = e^{ε}``; k-RR keeps the true value with probability
``p = e/(e+k−1)`` and reports each other value with probability ``q = 1/(e+k−1)``.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import betainc

from crowdhide.accounting.binomial_rows import (
    RowSuffixSums,
    RowWindows,
    gammaln_table,
    row_log_excess_above,
    row_log_outside,
    row_log_pmf_error,
    row_windows,
    rowwise_logsumexp,
)
from crowdhide.accounting.binomial_tails import (
    BETAINC_TRUSTED,
    _log_tail_vec,
    betainc_error,
    binom_window,
    trusted_tail,
    window_blocks,
)
from crowdhide.accounting.curves import DiscretePairCurve
from crowdhide.accounting.logmath import MACHINE_EPSILON, kappa_up, logsumexp, rate_down
from crowdhide.accounting.shuffle._far_half import far_rule_holds, far_tail
from crowdhide.accounting.shuffle._krr_fast import binomial_excess

__all__ = [
    "clone_pair_log_delta",
    "krr_config_curves",
    "krr_same_log_delta",
    "krr_third_log_delta",
]

FloatArray = npt.NDArray[np.float64]

#: Above this many distinct clone counts the clone pairs are evaluated on blocks of counts,
#: using that the conditional divergence is non-increasing in the count (adding a clone is a
#: post-processing applied to both distributions); the block's smallest count is used, so the
#: result stays an upper bound.
MAX_CLONE_POINTS = 1500
#: For very wide windows (clone-count standard deviation above ``_WIDE_SD``) the conditional
#: divergence changes so slowly with the count that fewer blocks lose < 1e-4 relative in δ.
_WIDE_SD, _WIDE_POINTS = 3000.0, 200
#: Largest n for the exact k-RR pair computations (work and memory grow like n).
KRR_EXACT_MAX_N = 5_000_000


def _sf(k: npt.NDArray[np.int64], m: npt.NDArray[np.int64]) -> FloatArray:
    """``P(Bin(m, 1/2) >= k)`` elementwise (1 for k <= 0, 0 for k > m).

    Uses the regularized incomplete beta ``I_{1/2}(k, m − k + 1)`` (Boost; its error is
    bounded by :func:`~crowdhide.accounting.binomial_tails.betainc_error`). Note:
    ``scipy.special.bdtrc`` (Cephes) is wrong by far more than that for m ~ 1e9 (it returns
    0.84 for P(Bin(949979994, 1/2) >= m/2)), so it is not used.
    """
    kf = k.astype(np.float64)
    mf = m.astype(np.float64)
    inside = (k >= 1) & (k <= m)
    a = np.where(inside, kf, 1.0)
    b = np.where(inside, mf - kf + 1.0, 1.0)
    out = np.asarray(betainc(a, b, 0.5), dtype=np.float64)
    return np.where(k <= 0, 1.0, np.where(k > m, 0.0, out))


def _far_sf(
    k: npt.NDArray[np.int64], m: npt.NDArray[np.int64], *, far: npt.NDArray[np.bool_]
) -> FloatArray:
    """:func:`_sf`, and 0 where ``far``: there :func:`_clone_excess`'s slope tail has a
    Chernoff bound of at most ``_far_half.FAR_LEVEL``, so its first tail is below
    ``BETAINC_TRUSTED`` as computed, and its value and error are the deep bound and 0 from
    any tails below it (issue 32, s28-tiny: docs/proofs/betainc-underflow.md, "Far tails")."""
    out = np.zeros(k.shape)
    near = ~far if far_rule_holds(BETAINC_TRUSTED) else np.ones(k.shape, dtype=bool)
    if near.any():
        out[near] = _sf(k[near], m[near])
    return out


def _clone_excess(
    m: npt.NDArray[np.int64], tau: float, tau_c: float, theta_rtol: float
) -> tuple[FloatArray, FloatArray]:
    """``E[(A − mτ)_+]`` for A ~ Bin(m, 1/2), and a bound on its error.

    ``tau_c = 1 − τ`` is passed separately, computed without cancellation: near τ = 1 (large
    ε0 and ε) the excess is ``E[(m(1−τ) − B)_+]`` with ``B = m − A ~ Bin(m, 1/2)``, where
    ``mτ`` itself would have rounded to an integer and lost it all. The error bound covers
    the incomplete-beta tails and the threshold: the excess is 1-Lipschitz in it with slope
    ``P(A > θ)``, and θ carries a relative error of at most ``theta_rtol``.
    """
    mf = m.astype(np.float64)
    if tau <= 0.5:
        theta = m * tau
        a_star = np.floor(theta).astype(np.int64) + 1
        # far tails take their deep bound without incomplete betas (_far_sf)
        sf = functools.partial(_far_sf, far=far_tail(mf, (a_star - 1).astype(np.float64)))
        half_m = sf(a_star - 1, m - 1)  # Σ_{a >= a*} a Bin(a; m, 1/2) = m/2 · this
        with_theta = sf(a_star, m)
        first, second = 0.5 * m * half_m, theta * with_theta
        slope = sf(a_star - 1, m)  # P(A >= a* − 1): covers θ moved by less than one
    else:
        theta = m * tau_c  # E[(θ − B)_+] = Σ_{b <= b*} (θ − b) Bin(b; m, 1/2)
        b_star = np.ceil(theta).astype(np.int64) - 1
        sf = functools.partial(_far_sf, far=far_tail(mf, (m - b_star - 1).astype(np.float64)))
        with_theta = sf(m - b_star, m)  # P(B <= b*)
        half_m = sf(m - b_star, m - 1)  # Σ_{b <= b*} b Bin(b; m, 1/2) = m/2 · this
        first, second = theta * with_theta, 0.5 * m * half_m
        slope = sf(m - b_star - 1, m)  # P(B <= b* + 1)
    value = np.maximum(first - second, 0.0)
    # betainc underflows below ~1e-308: each tail is then off by at most that, times m.
    error = 0.5 * m * betainc_error(half_m, mf) + theta * betainc_error(with_theta, mf)
    error = error + m * 1e-307 + theta_rtol * theta * slope
    # SciPy returns 0 for true tails up to 4e-243 (docs/proofs/betainc-underflow.md): below
    # BETAINC_TRUSTED the excess is bounded by Chernoff bounds of its first tail and slope
    tail, other = (half_m, with_theta) if tau <= 0.5 else (with_theta, half_m)
    # the second term is >= 0: dropped where its tail is untrusted
    value = np.asarray(np.where(other < BETAINC_TRUSTED, first, value), dtype=np.float64)
    deep = tail < BETAINC_TRUSTED
    if deep.any():
        marks = np.where(deep, 0.0, 1.0)  # 0 asks trusted_tail for the Chernoff bound
        if tau <= 0.5:  # m/2 P(Bin(m − 1, ½) >= a* − 1) + shift P(A >= a* − 1)
            first_edge = slope_edge = (a_star - 1).astype(np.float64)
            size, scale = mf - 1.0, 0.5 * mf
        else:  # θ P(B <= b*) + shift P(B <= b* + 1), B = m − A
            first_edge = (m - b_star).astype(np.float64)
            slope_edge = first_edge - 1.0
            size, scale = mf, np.asarray(theta, dtype=np.float64)
        edges = (first_edge, slope_edge)
        bound = scale * trusted_tail(marks, size, 0.5, edges[0], upper=True)
        bound = bound + theta_rtol * theta * trusted_tail(marks, mf, 0.5, edges[1], upper=True)
        value = np.asarray(np.where(deep, bound, value), dtype=np.float64)
        error = np.asarray(np.where(deep, 0.0, error), dtype=np.float64)
    return value, error


@functools.lru_cache(maxsize=64)
def _clone_weights(
    n: int, beta: float, log_tail: float
) -> tuple[npt.NDArray[np.int64], FloatArray, float]:
    """Clone counts to evaluate and their log-weights (independent of ε, hence cached)."""
    points = MAX_CLONE_POINTS
    if math.sqrt((n - 1) * beta * (1.0 - beta)) > _WIDE_SD:
        points = _WIDE_POINTS
    # Blocks of equal width; evaluate at each block's smallest count (upper bound).
    # the clone rate rounded down: fewer clones is always a valid system
    starts, log_w, log_outside = window_blocks(
        n - 1,
        rate_down(beta),
        log_tail,
        lambda lo, size: -(-size // points) if size > points else 1,
    )
    counts = starts.astype(np.int64)
    counts.setflags(write=False)
    log_w.setflags(write=False)
    return counts, log_w, log_outside


def clone_pair_log_delta(n: int, eps0: float, beta: float, eps: float, log_tail: float) -> float:
    """``log`` of the divergence of the clone pair of Feldman, McMillan & Talwar.

    ``C ~ Bin(n−1, β)``, ``A | C ~ Bin(C, 1/2)``; ``P = α·(A+1, C−A) + (1−α)·(A, C−A+1)`` and
    ``Q`` the same with the two components swapped, ``α = e^{ε0}/(e^{ε0}+1)``. FMT21 uses
    ``β = e^{−ε0}``, FMT23 ``β = 2/(e^{ε0}+1)``. The pair is symmetric under swapping the
    coordinates, so one direction suffices. With ``m = C + 1``,
    ``P_C(a) − e^ε Q_C(a) = Bin(a; m, 1/2) (2 g/m) (a − mτ)`` where
    ``g = (e−1)(1+E)/(e+1)`` and ``τ = (eE − 1)/((e−1)(1+E))``.
    """
    if eps >= eps0:
        return -math.inf
    big = math.exp(eps)
    g = -math.expm1(-eps0) / (1.0 + math.exp(-eps0)) * (1.0 + big)  # (e-1)(1+E)/(e+1)
    tau = math.expm1(eps + eps0) / (math.expm1(eps0) * (1.0 + big))
    tau_c = math.expm1(eps0 - eps) / (math.expm1(eps0) * (1.0 + 1.0 / big))  # (e−E)/((e−1)(1+E))
    # A few roundings, each amplified by at most the size of the exponent (exp's condition).
    theta_rtol = (16.0 + 2.0 * (eps + eps0)) * MACHINE_EPSILON
    counts, log_w, log_outside = _clone_weights(n, beta, log_tail)
    m = counts + 1
    excess, err = _clone_excess(m, tau, tau_c, theta_rtol)
    with np.errstate(divide="ignore"):
        log_inner = np.log(excess + err) + math.log(2.0 * g) - np.log(m.astype(np.float64))
    body = float(logsumexp(log_w + log_inner))
    return float(np.logaddexp(body, log_outside))


def _krr_params(k: int, eps0: float) -> tuple[float, float, float]:
    denom = math.exp(eps0) + k - 1.0
    return math.exp(eps0) / denom, 1.0 / denom, math.exp(eps0)


_CHUNK_CELLS = 400_000  # cells per vectorized chunk (a few MB per array)


#: The ε-independent rows of :func:`krr_third_log_delta` are kept for the last few
#: (n, k, ε0, tail) when they hold at most this many cells (a root search evaluates one
#: curve about ten times at one tail level); larger ones are rebuilt per call. A cell
#: holds two doubles, and an a cell three more once evaluated (its suffix maxima and two
#: suffix sums, :class:`RowSuffixSums`): at most about 2 x 80 MB are kept. Every layout of
#: n <= 1000 fits (at δ = 1e-300: 0.6-2.5e6 cells, 20-100 ms to build).
_LAYOUT_CACHE_CELLS = 2_100_000


@dataclass(frozen=True)
class _ThirdValueChunk:
    """One chunk of s rows of the third-value dataset, independent of ε."""

    s: FloatArray
    a_rows: RowWindows
    # The c window's columns where some row has mass, then its last column (where θ is
    # smallest, so row_log_excess_above finds each row's first needed a column there):
    # the values of those, the log-pmfs of the former (:func:`_third_value_inner`).
    c_values: FloatArray
    c_log_pmf: FloatArray
    c_span: tuple[int, int, int]  # (first, end) of the kept columns and the window's width
    log_outside: FloatArray
    # the a rows' suffix sums, kept between the ε of a root search (same floats)
    a_sums: RowSuffixSums


@dataclass(frozen=True)
class _ThirdValueLayout:
    """Everything of :func:`krr_third_log_delta` that does not depend on ε."""

    s_log_pmf: FloatArray
    chunks: tuple[_ThirdValueChunk, ...]
    log_tails: tuple[float, float]  # s window's tail, c windows' tails weighted by s
    rounding: float  # the gammaln tables' (the s rows at 1/2, the c rows at p_z)


def _third_value_layout(n: int, k: int, eps0: float, log_tail: float) -> _ThirdValueLayout:
    """The windows of s = a + b (Bin(n, 2q)), of a given s (Bin(s, 1/2)) and of c given s
    (Bin(n − s, p_z)), in chunks of s rows of about :data:`_CHUNK_CELLS` cells."""
    p, q, _ = _krr_params(k, eps0)
    p_z = min(p / (1.0 - 2.0 * q), 1.0) if k > 3 else 1.0
    s_win = binom_window(n, 2.0 * q, log_tail)
    s_all = s_win.values
    table = gammaln_table(n + 3)
    probe_a = row_windows(s_all[-1:], 0.5, log_tail, table).values.shape[1]
    probe_c = row_windows(n - s_all[:1], p_z, log_tail, table).values.shape[1]
    chunk = max(1, _CHUNK_CELLS // (probe_a + probe_c))
    chunks, extras = [], []
    for start in range(0, s_all.size, chunk):
        s = s_all[start : start + chunk]
        a_rows = row_windows(s, 0.5, log_tail, table)
        c_rows = row_windows(n - s, p_z, log_tail, table)
        outside = row_log_outside(a_rows, s)
        sums = RowSuffixSums(a_rows)
        values, log_pmf, span = _kept_columns(c_rows)
        chunks.append(_ThirdValueChunk(s, a_rows, values, log_pmf, span, outside, sums))
        extras.append(c_rows.log_tail)
    c_tail = float(logsumexp(s_win.log_pmf + np.concatenate(extras)))
    rounding = row_log_pmf_error(n, 0.5) + row_log_pmf_error(n, p_z)
    return _ThirdValueLayout(s_win.log_pmf, tuple(chunks), (s_win.log_tail, c_tail), rounding)


_cached_third_value_layout = functools.lru_cache(maxsize=2)(_third_value_layout)


def _kept_columns(rows: RowWindows) -> tuple[FloatArray, FloatArray, tuple[int, int, int]]:
    """The c window's columns that some row has mass in (the window is Bernstein-sized for
    the largest count and about 1.3-2x wider than the support at δ = 1e-300, n = 1e3), and
    its last column's values after them (see :class:`_ThirdValueChunk`)."""
    live = np.flatnonzero(np.isfinite(rows.log_pmf).any(axis=0))
    width = rows.values.shape[1]
    first, end = (int(live[0]), int(live[-1]) + 1) if live.size else (0, 0)
    values = np.concatenate([rows.values[:, first:end], rows.values[:, -1:]], axis=1)
    return values, np.ascontiguousarray(rows.log_pmf[:, first:end]), (first, end, width)


def _third_value_inner(chunk: _ThirdValueChunk, theta: FloatArray) -> FloatArray:
    """Per s row, ``log Σ_c Bin(c) E[(A − θ_c)_+]`` over the window: the floats of
    ``rowwise_logsumexp(c_log_pmf + row_log_excess_above(...))`` over the whole c window,
    computed on its kept columns (issue 32, s31-krr). Each cell's excess depends on the row's
    first needed a column, the one of its smallest θ: θ falls with c (every operation on
    the way is monotone), so that is the last column's, which ``theta`` ends with. A
    dropped column's term is −inf (no mass): it adds exp(−inf) = 0 to the row's sum and
    nothing to its maximum, so the sum is taken over a zero-filled row of the full width
    (the same pairwise order, the same floats)."""
    first, end, width = chunk.c_span
    rows = chunk.s.size
    if end == first:
        return np.full(rows, -np.inf)
    excess = row_log_excess_above(chunk.a_rows, theta, chunk.s, sums=chunk.a_sums, falling=True)
    out = np.empty(rows)
    step = max(1, _BLOCK_CELLS // width)  # rows at a time, their temporaries in the cache
    # one zero-filled buffer for every block: only the kept columns are written, the rest
    # stay 0 (s35-lower: the same rows summed, without a fresh matrix per block)
    buffer = np.zeros((min(step, rows), width))
    for r in range(0, rows, step):
        block = slice(r, r + step)
        terms = chunk.c_log_pmf[block] + excess[block, :-1]
        top = terms.max(axis=1)
        top = np.where(np.isfinite(top), top, 0.0)
        np.subtract(terms, top[:, None], out=terms)
        scaled = buffer[: terms.shape[0]]
        np.exp(terms, out=scaled[:, first:end])
        with np.errstate(divide="ignore"):
            out[block] = np.log(scaled.sum(axis=1)) + top
    return out


#: Cells per block of :func:`_third_value_inner`'s sums (128 kB per temporary).
_BLOCK_CELLS = 16_384


def _third_value_cells(n: int, k: int, eps0: float, log_tail: float) -> int:
    """About how many cells the layout holds: s rows times the a and c window widths."""
    _, q, _ = _krr_params(k, eps0)
    big_l = -log_tail
    rows = 2.0 * math.sqrt(2.0 * n * 2.0 * q * big_l) + big_l
    width = 4.0 * math.sqrt(2.0 * n * big_l) + 2.0 * big_l
    # No window is wider than its count can go: at most n + 1 rows of s, and the a and c
    # windows of a row hold at most s + 1 and n − s + 1 cells (issue 32: at n = 1e3 and
    # δ = 1e-300 the unclipped estimate, 9e6, rebuilt a 1.7e6-cell layout on every call).
    return int(min(rows, n + 1.0) * min(width, 2.0 * (n + 1.0)))


def krr_third_log_delta(n: int, k: int, eps0: float, eps: float, log_tail: float) -> float:
    """Exact ``log δ(ε)`` of shuffled k-RR (k >= 3) when all other users hold one value z ∉ {x, x'}.

    With ``h`` the output histogram, ``a, b, c`` its counts of x, x', z and ``Mult_n`` the
    multinomial law of n reports with probabilities ``(q, q, p, q, ...)``,
    ``P(h | x) = Mult_n(h) (W + (e−1) a)/n`` with ``W = n − c(1 − 1/e)`` (and ``b`` for x').
    Hence ``δ(ε) = (1/n) Σ_{s,c} Bin(s; n, 2q) Bin(c; n−s, p/(1−2q)) (e−1)(1+E)
    E[(A − θ)_+]``, ``A ~ Bin(s, 1/2)``, ``θ = (V/(e−1) + E s)/(1+E)``, ``V = (E−1) W``;
    the pair is symmetric (swap a and b), so one direction suffices. Work is
    ``O(√n · √n)`` cells, vectorized in chunks of s; the windows, which do not depend on ε,
    are kept between calls where they are small (:data:`_LAYOUT_CACHE_CELLS`).
    """
    if eps >= eps0:
        return -math.inf
    cached = _third_value_cells(n, k, eps0, log_tail) <= _LAYOUT_CACHE_CELLS
    layout = (_cached_third_value_layout if cached else _third_value_layout)(n, k, eps0, log_tail)
    _, _, e = _krr_params(k, eps0)
    big = math.exp(eps)
    em1 = math.expm1(eps0)
    shrink = -math.expm1(-eps0)  # 1 − 1/e
    parts = []
    for chunk in layout.chunks:
        s, cs = chunk.s, chunk.c_values
        # θ = (expm1(ε) (n − c (1 − 1/e)) / (e − 1) + E s) / (1 + E), each step in place
        # (the same floats: the same operations in the same order, one matrix)
        theta = cs * shrink
        np.subtract(n, theta, out=theta)
        theta *= math.expm1(eps)
        theta /= em1
        theta += big * s[:, None]
        theta /= 1.0 + big
        parts.append(np.logaddexp(_third_value_inner(chunk, theta), chunk.log_outside))
    log_parts = np.concatenate(parts)
    scale = math.log(em1) + math.log1p(big) - math.log(n)
    total = float(logsumexp(layout.s_log_pmf + log_parts)) + scale
    # Outside mass: each output contributes at most P(h | x) <= e·Mult_n(h).
    for extra in layout.log_tails:
        total = float(np.logaddexp(total, extra + math.log(e)))
    return total + layout.rounding


def _excess_p(theta: FloatArray, n: FloatArray, p: float, *, above: bool) -> FloatArray:
    """``E[(A − θ)_+]`` (``above``) or ``E[(θ − A)_+]`` for A ~ Bin(n, p), rounded up."""
    return binomial_excess(theta, n, p, above=above, upper=True)


def krr_same_log_delta(n: int, k: int, eps0: float, eps: float, log_tail: float) -> float:
    """Exact ``log δ(ε)`` of shuffled k-RR when all other users hold x' (both directions).

    With ``a, b`` the counts of x and x' and ``Mult_n`` the law of n reports with probabilities
    ``(q, p, q, ...)``: ``P(h | x') = Mult_n(h)`` and
    ``P(h | x) = Mult_n(h) (n − b(1 − 1/e) + (e−1) a)/n``; ``b ~ Bin(n, p)`` and
    ``a | b ~ Bin(n − b, 1/(k−1))``. The inner expectations are differences of binomial
    tails (incomplete beta), so the work is ``O(√n)``.
    """
    if eps >= eps0:
        return -math.inf
    p, _q, e = _krr_params(k, eps0)
    big = math.exp(eps)
    em1 = math.expm1(eps0)
    shrink = -math.expm1(-eps0)
    b_win = binom_window(n, p, log_tail)
    b = b_win.values
    rest = n - b
    w = n - b * shrink
    theta_f = (big * n - w) / em1
    theta_b = (n / big - w) / em1
    if k == 2:  # a = n − b exactly
        fwd = np.maximum(rest - theta_f, 0.0)
        bwd = np.maximum(theta_b - rest, 0.0)
    else:
        fwd = _excess_p(theta_f, rest, 1.0 / (k - 1), above=True)
        bwd = _excess_p(theta_b, rest, 1.0 / (k - 1), above=False)
    with np.errstate(divide="ignore"):
        log_scale = math.log(em1) - math.log(n)
        forward = float(logsumexp(b_win.log_pmf + np.log(fwd))) + log_scale
        backward = float(logsumexp(b_win.log_pmf + np.log(bwd))) + log_scale + eps
    total = max(forward, backward)
    return float(np.logaddexp(total, b_win.log_tail + math.log(e)))


def _group_step(arr: FloatArray, probs: tuple[float, float, float, float]) -> FloatArray:
    """Add one report with category probabilities (x, x', z, rest) to a count array."""
    out = arr * probs[3]
    out[1:, :, :] += arr[:-1, :, :] * probs[0]
    out[:, 1:, :] += arr[:, :-1, :] * probs[1]
    out[:, :, 1:] += arr[:, :, :-1] * probs[2]
    return out


def krr_config_curves(
    n: int, k: int, eps0: float
) -> list[tuple[tuple[int, int, int], DiscretePairCurve]]:
    """Exact curves of shuffled k-RR for every dataset class of the other ``n − 1`` users.

    A class is ``(j, l, m)``: j others hold x, l hold x', m hold third values (for k-RR only
    the counts of x, x' and one third value z matter; putting all third values on one z is
    without loss of generality — verified by exhaustive enumeration in the tests). Classes
    ``(j, l, m)`` and ``(l, j, m)`` give the same symmetric curve, so ``l <= j``.
    The output statistic is the count triple (x, x', z) of the histogram, a sufficient
    statistic (the remaining k − 3 values are exchangeable under every class).
    """
    p, q, _ = _krr_params(k, eps0)
    rest = max(k - 3, 0) * q
    on_x = (p, q, q if k >= 3 else 0.0, rest)
    on_y = (q, p, q if k >= 3 else 0.0, rest)
    on_z = (q, q, p, rest)
    out: list[tuple[tuple[int, int, int], DiscretePairCurve]] = []
    size = n + 1
    for j in range(n):
        for l_count in range(min(j, n - 1 - j) + 1):
            m = n - 1 - j - l_count
            if k == 2 and m > 0:
                continue
            arr = np.zeros((size, size, size))
            arr[0, 0, 0] = 1.0
            for probs, count in ((on_x, j), (on_y, l_count), (on_z, m)):
                for _ in range(count):
                    arr = _group_step(arr, probs)
            pa = _group_step(arr, on_x).ravel()
            qa = _group_step(arr, on_y).ravel()
            keep = (pa > 0) | (qa > 0)
            total_p, total_q = pa[keep].sum(), qa[keep].sum()
            curve = DiscretePairCurve.from_probabilities(pa[keep] / total_p, qa[keep] / total_q)
            out.append(((j, l_count, m), curve))
    return out


def krr_config_count(n: int, k: int) -> int:
    """Number of dataset classes enumerated by :func:`krr_config_curves`."""
    return sum(
        1
        for j, l_count in itertools.product(range(n), range(n))
        if l_count <= min(j, n - 1 - j) and not (k == 2 and n - 1 - j - l_count > 0)
    )


def krr_clone_log_delta(n: int, k: int, eps0: float, eps: float, log_tail: float) -> float:
    """``log δ(ε)`` of the k-RR clone reduction: a certificate for shuffled k-RR.

    Every other user's report law decomposes as ``K(v) = 2r · (K(x) + K(x'))/2 + (1 − 2r) R_v``
    with ``r = q/(p+q) = 1/(e+1)`` and ``R_v >= 0`` for *every* value v (for v = x it is
    ``((1−r)K(x) − rK(x'))/(1−2r)``, for v = x' symmetric, for a third value it puts no mass
    on x, x'). Revealing which users are "clones" and the residual reports (independent of
    the target's value) can only help the adversary, so the divergence of
    ``(C, histogram of the target's and the C clones' reports)`` bounds δ for every dataset,
    ``C ~ Bin(n−1, 2r)`` — the FMT23 decomposition, but keeping the clones' k-RR noise
    (each clone reports from ``π = (K(x) + K(x'))/2``).

    With ``m = C + 1``, counts ``a, b`` of x, x', ``s = a + b``, ``μ = (p+q)/2`` and
    ``κ = (e−1)/(e+1)``: ``P(a, b | x, C) = Mult_m(a, b) (m − κ s + 2κ a)/m`` where
    ``Mult_m`` has cell probabilities ``(μ, μ, 1 − 2μ)``; so
    ``δ = Σ_C Bin(C) Σ_s Bin(s; m, 2μ) (2κ(1+E)/m) E[(A − θ)_+]``, ``A ~ Bin(s, 1/2)``,
    ``θ = (2κE s + (E−1)(m − κ s))/(2κ(1+E))``; the pair is symmetric in (a, b).
    """
    if eps >= eps0:
        return -math.inf
    p, q, _ = _krr_params(k, eps0)
    big = math.exp(eps)
    mu2 = p + q  # 2μ: probability that a clone reports x or x'
    kappa = kappa_up(eps0)  # (e-1)/(e+1), rounded up (a garbling covers the rest)
    c_win = binom_window(n - 1, 2.0 * q / (p + q), log_tail)
    cs = c_win.values
    ms = cs + 1.0
    table = gammaln_table(n + 3)
    # Rows: every s that is plausible for some C in the window.
    var = float(ms[-1]) * mu2 * (1 - mu2)
    half = math.ceil(-log_tail / 3.0 + math.sqrt(log_tail**2 / 9.0 - 2.0 * var * log_tail)) + 1
    s_lo = max(0, math.floor(mu2 * ms[0]) - half)
    s_hi = min(int(ms[-1]), math.ceil(mu2 * ms[-1]) + half)
    s_all = np.arange(s_lo, s_hi + 1, dtype=np.float64)
    mi = ms.astype(np.int64)
    log_scale_c = c_win.log_pmf - np.log(ms)
    parts = []
    probe = row_windows(s_all[-1:], 0.5, log_tail, table).values.shape[1]
    chunk = max(1, _CHUNK_CELLS // (probe + cs.size))
    for start in range(0, s_all.size, chunk):
        s = s_all[start : start + chunk]
        si = s.astype(np.int64)[:, None]
        valid = si <= mi[None, :]
        if mu2 >= 1.0:  # k = 2: every clone reports x or x'
            log_bin_s = np.where(si == mi[None, :], 0.0, -np.inf)
        else:
            log_bin_s = np.where(
                valid,
                table[mi + 1][None, :]
                - table[si + 1]
                - table[np.maximum(mi[None, :] - si, 0) + 1]
                + s[:, None] * math.log(mu2)
                + (ms[None, :] - s[:, None]) * math.log1p(-mu2),
                -np.inf,
            )
        weight = log_bin_s + log_scale_c[None, :]
        a_rows = row_windows(s, 0.5, log_tail, table)
        theta = (
            2.0 * kappa * big * s[:, None] + math.expm1(eps) * (ms[None, :] - kappa * s[:, None])
        ) / (2.0 * kappa * (1.0 + big))
        excess = row_log_excess_above(a_rows, theta, s)
        inner = rowwise_logsumexp(weight + excess)
        outside = row_log_outside(a_rows, s) + rowwise_logsumexp(weight)
        parts.append(np.logaddexp(inner, outside))
    total = float(logsumexp(np.concatenate(parts))) + math.log(2.0 * kappa * (1.0 + big))
    # Mass outside the windows: each outcome contributes at most P(.|x) <= (1+κ) Mult <= 2 Mult.
    if mu2 >= 1.0:
        s_tail = np.where((ms < s_lo) | (ms > s_hi), 0.0, -np.inf)
    else:
        s_tail = np.logaddexp(
            _log_tail_vec(ms, mu2, np.full(ms.shape, s_lo - 1.0), upper=False),
            _log_tail_vec(ms, mu2, np.full(ms.shape, s_hi + 1.0), upper=True),
        )
    outside_mass = np.logaddexp(float(logsumexp(c_win.log_pmf + s_tail)), c_win.log_tail)
    total = float(np.logaddexp(total, outside_mass + math.log(2.0)))
    # the gammaln tables' rounding (the a rows at 1/2, the s counts at mu2)
    return total + row_log_pmf_error(n, 0.5) + row_log_pmf_error(n, mu2)
