"""The clone pair's law over clone counts: the numeric core of composed shuffles.

:mod:`crowdhide.accounting.shuffle.composition` (whose module docstring derives the pair)
composes the FMT21/FMT23 clone pair, with or without Poisson subsampling, by its PLD. This
module builds the pair's outcomes: the counts ``(N, a)`` of clones plus target
(:func:`_counts_pair`), their mixture over the revealed number ``s`` of sampled residual
users (:func:`_mixture_pair`), the windows' left-out mass as two infinite-loss outcomes
(:func:`_with_rest`) and a bound on every log-probability's rounding error
(:func:`_pair_error`). It is kept apart from the composition (parameters, registry, PLD
grid, the ``composed_shuffle`` entry point) because it is the part with the array
arithmetic and the memory limits; the entry point validates the parameters before calling
it.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.binomial_rows import gammaln_table, row_log_pmf_error, row_windows
from crowdhide.accounting.binomial_tails import (
    Window,
    binom_window,
    window_edges,
    window_log_pmf_error,
)
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.errors import ResourceLimitError

FloatArray = npt.NDArray[np.float64]


#: Largest number of outcomes of the reduced pair (memory and time grow linearly with it).
MAX_PAIR_POINTS = 4_000_000
#: Without subsampling, at most this many distinct clone counts (blocks beyond).
_MAX_CLONE_ROWS = 600
#: Widest window of the x-type count per total (the pair supports n·β up to about 4e6).
_MAX_ROW_WIDTH = 20_001
#: With subsampling, at most this many blocks of the revealed residual count.
_MAX_S_BLOCKS = 60


def _beta(pair: str, eps0: float) -> float:
    if pair == "feldman2021":
        return math.exp(-eps0)
    return 2.0 / (math.exp(eps0) + 1.0)


def _blocks(
    log_w: FloatArray, values: FloatArray, limit: int, *, take: str
) -> tuple[FloatArray, FloatArray]:
    """Merge consecutive window values into at most ``limit`` blocks; each block keeps its
    smallest (``take="first"``) or largest (``"last"``) value and the block's total weight."""
    if values.size <= limit:
        return values, log_w
    width = -(-values.size // limit)
    starts = np.arange(0, values.size, width)
    picks = starts if take == "first" else np.minimum(starts + width, values.size) - 1
    return values[picks], np.logaddexp.reduceat(log_w, starts)


def clone_window(candidates: int, rate: float, log_tail: float) -> tuple[Window, float]:
    """The clone count's window (:func:`_counts_pair`'s first step) and its rows' Bernstein
    half-width at the largest total, checked before any row is allocated: raises
    :class:`ResourceLimitError` where the rows would be wider than :data:`_MAX_ROW_WIDTH`
    (n = 1e9). Its ``log_tail`` is part of the pair's infinite-loss mass (:func:`_with_rest`
    gets ``logaddexp`` of it and the rows' tails), so a caller may read that mass's floor
    without building the rows."""
    big_l = -log_tail
    # the window's last count from its edges alone where binom_window takes them from
    # window_edges (the same hi), before its log-pmf: at n = 1e9 that array is ~1e5 entries
    # the check would throw away
    if candidates > 0 and 0.0 < rate < 1.0:
        largest = window_edges(candidates, rate, log_tail)[1]
    else:  # binom_window's own special cases: all mass at 0, or at ``candidates``
        largest = candidates if rate >= 1.0 else 0
    half = big_l / 3.0 + math.sqrt(big_l**2 / 9.0 + 0.5 * (float(largest) + 1.0) * big_l) + 2.0
    if 2.0 * half + 1.0 > _MAX_ROW_WIDTH:
        raise ResourceLimitError(f"count windows of width {2.0 * half + 1.0:.3g}", parameter="n")
    return binom_window(candidates, rate, log_tail), half


def _counts_pair(
    candidates: int, rate: float, gamma: float, relation: str, alpha: float, log_tail: float
) -> tuple[FloatArray, FloatArray, float, float, npt.NDArray[np.bool_]]:
    """The pair over the counts ``(N, a)`` of clones plus target (see the docstring
    of :mod:`crowdhide.accounting.shuffle.composition`):
    ``candidates`` other users, each a clone with probability ``rate``, target present with
    probability ``gamma``. Returns flat ``(log_p, log_q)``, the log of a bound on the mass
    outside the windows, a bound on the absolute rounding error of every log-probability
    (:func:`_pair_error`) and the outcomes whose loss is exactly 0 as computed and in truth
    (substitute relation, ``a = N/2``: x-type and x′-type counts swap P and Q, and the two
    computations are the same floating-point operations)."""
    win, half = clone_window(candidates, rate, log_tail)
    clones, log_w = win.values, win.log_pmf
    present_only = gamma >= 1.0 and relation == "substitute"
    if present_only:  # the count reveals C; fewer clones dominate (blocks take the smallest)
        rows_max = max(1, min(_MAX_CLONE_ROWS, int(MAX_PAIR_POINTS // (2.0 * half + 1.0))))
        clones, log_w = _blocks(log_w, clones, rows_max, take="first")
        totals = clones + 1.0
    else:
        totals = np.unique(np.concatenate([clones, clones + 1.0]))
    if totals.size * (2.0 * half + 1.0) > MAX_PAIR_POINTS:
        raise ResourceLimitError(
            f"about {totals.size * (2.0 * half + 1.0):.3g} outcomes", parameter="n"
        )
    table = gammaln_table(int(totals.max()) + 3)
    rows = row_windows(totals, 0.5, log_tail, table)
    a, big_n = rows.values, totals[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_scale = math.log(2.0) - np.log(np.maximum(big_n, 1.0))
        log_x = np.log(alpha * a + (1.0 - alpha) * (big_n - a)) + log_scale
        log_y = np.log((1.0 - alpha) * a + alpha * (big_n - a)) + log_scale
    lookup = dict(zip(clones.tolist(), log_w.tolist(), strict=True))
    base = rows.log_pmf
    w_present = np.array([lookup.get(t - 1.0, -np.inf) for t in totals])[:, None]
    present_x = np.where(np.isfinite(base), base + w_present + log_x, -np.inf)
    present_y = np.where(np.isfinite(base), base + w_present + log_y, -np.inf)
    if present_only:
        log_p, log_q = present_x, present_y
    else:
        w_absent = np.array([lookup.get(t, -np.inf) for t in totals])[:, None]
        absent = np.where(np.isfinite(base), base + w_absent, -np.inf)
        lg, l1g = math.log(gamma), (math.log1p(-gamma) if gamma < 1.0 else -np.inf)
        log_p = np.logaddexp(lg + present_x, l1g + absent)
        log_q = np.logaddexp(lg + present_y, l1g + absent) if relation == "substitute" else absent
    # Outside mass: clone-count tail, plus per row the A-window tail (P, Q <= 2 B_N per row).
    row_out = float(np.logaddexp.reduce(rows.log_tail + math.log(2.0)))
    log_p, log_q = log_p.ravel(), log_q.ravel()
    error = _pair_error(win, float(totals.max()), log_p, log_q)
    exact = (2.0 * a == big_n).ravel() & (relation == "substitute")
    return log_p, log_q, float(np.logaddexp(win.log_tail, row_out)), error, exact


def _pair_error(win: Window, largest: float, log_p: FloatArray, log_q: FloatArray) -> float:
    """Bound on the absolute rounding error of the pair's log-probabilities: the clone-count
    window's, the rows' (log-gamma sums up to the largest total, whose cancellation grows
    like N ln N) and a few ulps of every remaining log, product and log-sum-exp, relative
    to the largest log-probability."""
    rows = row_log_pmf_error(largest, 0.5)
    live = np.concatenate([log_p[np.isfinite(log_p)], log_q[np.isfinite(log_q)]])
    scale = float(np.max(np.abs(live))) if live.size else 0.0
    return window_log_pmf_error(win) + rows + 32.0 * MACHINE_EPSILON * (scale + 1.0)


def _mixture_pair(
    others: int,
    res_rate: float,
    clone_rate: float,
    gamma: float,
    alpha: float,
    setting: tuple[str, float, str],
) -> tuple[FloatArray, FloatArray, float, FloatArray]:
    """The pair given the revealed number ``s ~ Bin(others, res_rate)`` of residual users:
    of the ``others − s`` candidates each is a clone with probability ``clone_rate``, the
    target present (informative) with probability ``gamma`` (:func:`_counts_pair`).
    ``setting``: the relation, the windows' log tail and the message when too large."""
    relation, log_tail, too_large = setting
    nn = others + 1
    try:
        s_win = binom_window(nn - 1, res_rate, log_tail)
        probe = _counts_pair(nn - 1, clone_rate, gamma, relation, alpha, log_tail)[0].size
        limit = max(1, min(_MAX_S_BLOCKS, MAX_PAIR_POINTS // max(probe, 1)))
        s_vals, s_logw = _blocks(s_win.log_pmf, s_win.values, limit, take="last")
        parts_p, parts_q, bounds = [], [], [s_win.log_tail]
        # the s blocks' weights (sums of window pmfs: a few ulps each) add their own error
        error = window_log_pmf_error(s_win) + 16.0 * MACHINE_EPSILON * float(np.max(np.abs(s_logw)))
        errors, exacts = [0.0], []
        for s_val, lw in zip(s_vals, s_logw, strict=True):
            cand = int(nn - 1 - s_val)
            lp, lq, bd, err, ex = _counts_pair(cand, clone_rate, gamma, relation, alpha, log_tail)
            parts_p.append(lp + lw)
            parts_q.append(lq + lw)
            bounds.append(bd + lw)
            errors.append(err)
            exacts.append(ex)
    except ValueError as exc:
        raise ResourceLimitError(too_large, parameter="n", value=nn) from exc
    points = sum(x.size for x in parts_p)
    if points > MAX_PAIR_POINTS:
        raise ResourceLimitError(too_large, parameter="n", value=nn)
    bound = float(np.logaddexp.reduce(np.array(bounds)))
    joined = _with_rest(
        np.concatenate(parts_p), np.concatenate(parts_q), bound, np.concatenate(exacts)
    )
    return _with_errors(*joined, error + max(errors))


def _with_errors(
    log_p: FloatArray, log_q: FloatArray, exact: npt.NDArray[np.bool_], error: float
) -> tuple[FloatArray, FloatArray, float, FloatArray]:
    """The pair with its log-probability error and per-outcome loss errors (outcomes that
    neither side can produce dropped, as :class:`DiscretePairCurve` drops them)."""
    keep = np.isfinite(log_p) | np.isfinite(log_q)
    return log_p[keep], log_q[keep], error, np.where(exact[keep], 0.0, 2.0 * error)


def _with_rest(
    log_p: FloatArray, log_q: FloatArray, log_bound: float, exact: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Append the two infinite-loss outcomes, each with the rigorous bound ``e^{log_bound}``
    on the mass the windows left out (``exact``, the outcomes of exact loss, follows)."""
    keep = np.isfinite(log_p) | np.isfinite(log_q)
    log_p, log_q, exact = log_p[keep], log_q[keep], exact[keep]
    out_p: list[float] = []
    for _ in range(2):
        # Only the rigorous bound: ``1 − Σ`` of ~1e5 rounded terms is noise near 1e-13 and
        # would put a floor under δ.
        out_p.append(log_bound)
    # No renormalisation: a total mass above one by the (tiny) bound only adds to δ.
    lp = np.concatenate([log_p, [out_p[0], -np.inf]])
    lq = np.concatenate([log_q, [-np.inf, out_p[1]]])
    return lp, lq, np.concatenate([exact, [False, False]])
