"""The variation-ratio certificate at many ε at once, on one partition (profile pair, issue 32).

:func:`crowdhide.accounting.shuffle.profile_pair.certified_profile` needs the single-round
certificate δ̄(ε) at 10–30 points of one (ε0, n). Asked one point at a time, each point
refines its own partition of μ in (0, 1] and pays ~20 blocked split-clone sums (2–3 ms
each, half of it per-call overhead) on top of the shared, cached layouts. Here one
partition serves every point: each cell's layout is built once and its blocked sum is
evaluated for all ε together (the incomplete betas of every (block, ε) in one vectorized
call), and the cells are refined where some point's largest cell lies above that point's
level, as :func:`crowdhide.accounting.shuffle.variation_ratio._supremum` refines them for
one point.

**Validity.** The variation-ratio proof (docs/proofs/variation-ratio.md, §6.1) bounds δ(ε)
of *every* ε0-LDP randomizer by the largest bound over *any* partition of (0, 1] into the
bottom region ``[0, μ_b]`` and cells, each cell bounded by
:func:`~crowdhide.accounting.shuffle.variation_ratio._cell_log_delta`'s three bounds (split
system at the cell's corner rates, one report's variation, the mixture bound) at any of the
resolutions :data:`~crowdhide.accounting.shuffle.variation_ratio.SPLIT_TIERS`. The partition
and resolutions chosen here are one such choice, made per (ε0, n) instead of per ε: every
value returned is the same certificate, only refined differently. Each cell's split sum is
:func:`~crowdhide.accounting.shuffle._krr_fast.clone_blocks_log_delta` evaluated per ε on
the same floats (tests check equality with the one-point functions).

**Active points.** A cell's bound need not be computed at every ε at every resolution: any
valid bound serves, and the proposition of §6.1 holds for every μ of a cell, so a cell's
bound also bounds each part it is split into; each coarser resolution's bound is valid too.
So a cell is first bounded at the coarsest resolution (initial cells starting finer), a
part starts from its parent's bound, and the finer evaluation (a resolution up, a part of
its own) is paid only at the ε where the bound in hand is above the *reference* (the pair
at μ = 1, :func:`_levels`): below it a bound decides nothing, since the partition's largest
bound is at least about the reference (the cells near μ = 1 are above it) and the
refinement acts only above its level, which is above the reference. Over the 30 profiles
of the benchmark grid (ε0 in {0.5 … 8}, n in {1e3, 1e4, 1e6}, coarse and fine) every value
is the one from evaluating every ε but one below the refinement floor (ε0 = 1, n = 1e4:
δ 9.93e-17 -> 9.86e-17, a coarser tier's bound, as valid, kept), at 0.83x of the CPU in
all (0.6-1.1x per profile; the gain is at n >= 1e4, where the coarsest tier is cheap).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.binomial_rows import rowwise_logsumexp
from crowdhide.accounting.logmath import kappa_up, rate_up
from crowdhide.accounting.shuffle._krr_fast import (
    CLONE_POINTS,
    S_POINTS,
    _clone_layout,
    _clone_shift,
    heavy_blocks,
)
from crowdhide.accounting.shuffle._profile_excess import excess_upper
from crowdhide.accounting.shuffle._split_clone import PARAMETER_ULPS, _layout
from crowdhide.accounting.shuffle.variation_ratio import (
    BOTTOM_FACTOR,
    BOTTOM_STEPS,
    EPS_RTOL,
    MIN_CELL_RATIO,
    MIXTURE_ABOVE,
    REFINE_FLOOR,
    SLACK_RANGE,
    SPLIT_TIERS,
    TOP_EDGES,
    TOP_POINTS,
    _cell_log_delta,
    _children,
    _initial_cells,
    _width_rate,
    clone_rates,
    finer_tier,
    one_report_log_delta,
    start_tier,
)

__all__ = ["variation_ratio_log_deltas"]

FloatArray = npt.NDArray[np.float64]
_Cell = tuple[float, float]

#: Cell evaluations (each a layout and a vectorized sum over every ε) the refinement may
#: spend beyond the initial cells and the bottom steps (R = 1e4 rounds, δ = 1e-6, ε0 = 8,
#: n = 1e4: ε 6241 at 12, 6219 at 24, 6211 at 48; ε0 = 4, n = 1e3: profile 0.41 s CPU at
#: 12, 0.58 s at 24, 1.0 s at 48).
REFINE_EVALUATIONS = 24
#: Initial cells are bounded at the coarsest resolution first (:func:`_initial`) until one
#: such bound is above the reference at more than this share of the ε.
COARSE_ACTIVE = 0.5


class _PointMemo:
    """Per ε values of the batched bounds below, kept across calls (the coarse profile after
    the fine one, a superset of its points, or the reverse: each asks the cells both
    partitions share at the same ε). Each of them is elementwise in ε: a value is the
    one-point function's float at that ε, whatever else is in the batch (module docstring;
    ``tests/accounting/test_profile_batch.py`` compares them), so a held value is the one a
    new evaluation gives, bit for bit. Keyed by the bound and all its other arguments;
    bounded (least recently used keys dropped)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.lock = threading.Lock()
        self.held: OrderedDict[tuple[object, ...], dict[float, float]] = OrderedDict()

    def cache_clear(self) -> None:
        """Empty the memo (benchmarks of cold queries)."""
        with self.lock:
            self.held.clear()

    def values(
        self, key: tuple[object, ...], eps: FloatArray, evaluate: Callable[[FloatArray], FloatArray]
    ) -> FloatArray:
        """``evaluate(eps)``, its values at ε held under ``key`` taken from the memo and the
        others evaluated in one call (in the order given) and kept."""
        points = eps.tolist()
        with self.lock:
            known = self.held.pop(key, {})
            self.held[key] = known  # most recently used last
            while len(self.held) > self.capacity:
                self.held.popitem(last=False)
            missing = [i for i, e in enumerate(points) if e not in known]
        if missing:
            fresh = evaluate(eps[missing]).tolist()
            with self.lock:
                known.update((points[i], v) for i, v in zip(missing, fresh, strict=True))
            if len(missing) == len(points):
                return np.asarray(fresh, dtype=np.float64)
        return np.array([known[e] for e in points], dtype=np.float64)


#: ``log h`` of a light block (``h = 2``), the float ``np.log`` gives elementwise.
_LOG_TWO = float(np.log(np.full(1, 2.0))[0])
#: :class:`_PointMemo` of the cell, top and bottom bounds: a profile asks 50-300 keys.
_POINT_MEMO = _PointMemo(1 << 13)


def variation_ratio_log_deltas(n: int, eps0: float, eps: FloatArray, log_tail: float) -> FloatArray:
    """The variation-ratio certificate's ``log δ`` at every ε of ``eps`` (``mu_max = 1``),
    on one partition refined for all of them (module docstring): each value is the largest
    cell bound of a partition of (0, 1], a certificate as
    :func:`~crowdhide.accounting.shuffle.variation_ratio.variation_ratio_log_delta` is."""
    eps = np.asarray(eps, dtype=np.float64)
    out = np.full(eps.size, -np.inf)
    live = eps < eps0
    if not live.any():
        return out
    at = eps[live]
    if kappa_up(eps0) >= 1.0:  # ε0 >= ~38: no clones to speak of (as the one-point bound)
        out[live] = [one_report_log_delta(float(e), eps0) for e in at]
        return out
    level = _levels(n, eps0, at, log_tail)
    cells = _initial(n, eps0, at, log_tail, level)
    bottom = _bottom(n, eps0, at, log_tail, level, cells)
    _refine(n, eps0, at, log_tail, level, cells)
    best = np.maximum(bottom, np.max([v for _, v in cells.values()], axis=0))
    out[live] = np.minimum(best, 0.0)
    return out


class _Levels(NamedTuple):
    """Per ε: ``above``, the level the refinement refines to, and ``kept``, the reference
    (the pair at μ = 1) under which a cell's bound is kept as it is: the partition's
    largest bound is at least about it (the cells at μ near 1 are above it), so a bound
    under it decides nothing (module docstring, *Active points*)."""

    above: FloatArray
    kept: FloatArray


def _levels(n: int, eps0: float, eps: FloatArray, log_tail: float) -> _Levels:
    """Per ε the level the one-point refinement refines to: the pair at μ = 1 plus the fall
    of its log δ over a relative step EPS_RTOL in ε, clipped (only chooses, never bounds),
    and that pair's value (the reference)."""
    here = _top_log_deltas(n, eps0, 0.0, eps, log_tail)
    further = _top_log_deltas(n, eps0, 0.0, eps * (1.0 + EPS_RTOL), log_tail)
    with np.errstate(invalid="ignore"):
        drop = np.where(np.isfinite(here - further), here - further, SLACK_RANGE[1])
    slack = np.clip(drop, *SLACK_RANGE)
    above = np.asarray(np.maximum(here, log_tail + REFINE_FLOOR) + slack, dtype=np.float64)
    return _Levels(above, np.asarray(here, dtype=np.float64))


def _initial(
    n: int, eps0: float, eps: FloatArray, log_tail: float, level: _Levels
) -> dict[_Cell, tuple[int, FloatArray]]:
    """The initial cells (the one-point refinement's, from their start tiers,
    :func:`_escalated`). From the lowest μ up, a cell starting finer is first bounded at the
    coarsest resolution (about a tenth of the cost of the finest at n >= 1e4): the finer
    evaluation is then paid only at the ε where that bound is above the reference (module
    docstring, *Active points*; many cells of μ in [0.9, 0.99] are above it at no ε:
    ε0 = 4, n = 1e6, 7 of 13). Once a coarse bound is above it at more than
    :data:`COARSE_ACTIVE` of the ε, the cells above (nearer μ = 1, where the finest tiers
    are needed) start at their own tiers directly."""
    cells: dict[_Cell, tuple[int, FloatArray]] = {}
    coarse_first = True
    for cell in sorted(_initial_cells(1.0)):  # the one-point refinement's policy
        tier = start_tier(cell, 0.0)
        if tier == 0 or cell[1] >= 0.0 or not coarse_first:  # (the top cell has no tiers)
            cells[cell] = _escalated(n, eps0, cell, tier, eps, log_tail, level)
            continue
        coarse = _cell_log_deltas(n, eps0, cell, 0, eps, log_tail)
        coarse_first = float(np.mean(coarse > level.kept)) <= COARSE_ACTIVE
        cells[cell] = _escalated(n, eps0, cell, tier, eps, log_tail, level, coarse)
    return {cell: cells[cell] for cell in _initial_cells(1.0)}  # the one-point order


def _escalated(
    n: int,
    eps0: float,
    cell: _Cell,
    tier: int,
    eps: FloatArray,
    log_tail: float,
    level: _Levels,
    inherited: FloatArray | None = None,
) -> tuple[int, FloatArray]:
    """A cell's bounds at every ε from ``tier`` on, evaluated again at the next resolution
    while the ε farthest above its level asks for it (the one-point policy,
    :func:`~crowdhide.accounting.shuffle.variation_ratio.finer_tier`: above by at most
    :data:`~crowdhide.accounting.shuffle.variation_ratio.TIER_MARGIN`; farther, a wide cell
    is split rather); every resolution is valid, the least per ε is kept.

    ``inherited`` is a bound already known for the cell at every ε (its parent's: the
    proposition of docs/proofs/variation-ratio.md §6.1 holds for every μ of the parent, so
    for every μ of a part of it). A new evaluation, here and at each finer resolution, is
    paid only at the ε where the bound in hand is above the reference (``level.kept``);
    elsewhere it is kept: it decides nothing (module docstring, *Active points*)."""
    if inherited is None:
        values = _cell_log_deltas(n, eps0, cell, tier, eps, log_tail)
    else:  # the cell's own bound where it counts, as if evaluated at every ε
        values = _lowered(n, eps0, cell, tier, eps, log_tail, level, inherited, least=False)
    while True:
        j = int(np.argmax(values - level.above))
        if not finer_tier(float(values[j]), float(level.above[j]), tier):
            break
        tier += 1
        values = _lowered(n, eps0, cell, tier, eps, log_tail, level, values, least=True)
    return tier, values


def _lowered(
    n: int,
    eps0: float,
    cell: _Cell,
    tier: int,
    eps: FloatArray,
    log_tail: float,
    level: _Levels,
    values: FloatArray,
    *,
    least: bool,
) -> FloatArray:
    """``values`` (bounds of ``cell`` at every ε) where they are at most the reference;
    elsewhere the cell's own bound at ``tier``, or (``least``) the lesser of the two."""
    out = np.array(values, dtype=np.float64)
    active = np.asarray(values > level.kept)
    if active.any():
        fresh = _cell_log_deltas(n, eps0, cell, tier, eps[active], log_tail)
        out[active] = np.minimum(out[active], fresh) if least else fresh
    return out


def _bottom(
    n: int,
    eps0: float,
    eps: FloatArray,
    log_tail: float,
    level: _Levels,
    cells: dict[_Cell, tuple[int, FloatArray]],
) -> FloatArray:
    """The bottom region's bound at every ε, its edge μ_b lowered (the released range handed
    to ``cells``, at the coarsest resolution) while it is above the level at some ε."""
    mu_b = TOP_EDGES[-1]
    bottom = _bottom_log_deltas(n, eps0, mu_b, eps, log_tail)
    for _ in range(BOTTOM_STEPS):
        if not (bottom > level.above).any():
            break
        cell = (math.log(mu_b * BOTTOM_FACTOR), math.log(mu_b))
        cells[cell] = _escalated(n, eps0, cell, 0, eps, log_tail, level)
        mu_b *= BOTTOM_FACTOR
        bottom = _bottom_log_deltas(n, eps0, mu_b, eps, log_tail)
    return bottom


def _refine(
    n: int,
    eps0: float,
    eps: FloatArray,
    log_tail: float,
    level: _Levels,
    cells: dict[_Cell, tuple[int, FloatArray]],
) -> None:
    """Split, in turn, the cell farthest above the level at some ε into
    :func:`~crowdhide.accounting.shuffle.variation_ratio._children` equal parts in log μ
    (each from the resolution its parent needed), until none is above, or the cells are
    too narrow, or :data:`REFINE_EVALUATIONS` are spent."""
    spent = 0
    while spent < REFINE_EVALUATIONS:
        wide = {c: v for c, v in cells.items() if c[1] - c[0] > math.log(MIN_CELL_RATIO)}
        if not wide:
            return
        cell = max(wide, key=lambda c: float((wide[c][1] - level.above).max()))
        tier, values = wide[cell]
        j = int(np.argmax(values - level.above))
        if not values[j] > level.above[j]:
            return
        rate = _width_rate(n, eps0, 1.0, float(eps[j]), log_tail)
        parts = _children(float(values[j]), float(level.above[j]), cell[1] - cell[0], rate)
        parts = max(2, min(parts, REFINE_EVALUATIONS - spent))
        step = (cell[1] - cell[0]) / parts
        edges = [cell[0], *(cell[0] + k * step for k in range(1, parts)), cell[1]]
        del cells[cell]
        for child in itertools.pairwise(edges):  # a part of the cell: its bound holds there
            cells[child] = _escalated(n, eps0, child, tier, eps, log_tail, level, values)
            spent += 1


def clone_blocks_log_deltas(
    layout: tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, float],
    kappa: float,
    eps: FloatArray,
    log_tail: float,
) -> FloatArray:
    """:func:`~crowdhide.accounting.shuffle._krr_fast.clone_blocks_log_delta` at every ε of
    ``eps`` (one layout ``(log_w, log_mass, units, g, log_out, c_tail)``): the excesses of
    all heavy blocks at all ε in one vectorized call (the same elementwise floats), then per ε
    the same reductions on the same arrays as the one-point function."""
    log_w, log_mass, units, g, log_out, c_tail = layout
    shape = log_mass.shape
    heavy = heavy_blocks(log_w[:, None] + log_mass, log_tail)
    s = np.broadcast_to(units, shape)[heavy]
    gg = np.broadcast_to(g, shape)[heavy]
    # the per-ε scalars exactly as the one-point function forms them
    bigs = np.array([math.exp(float(e)) for e in eps])
    shifts = np.stack([_clone_shift(gg, kappa, float(e)) for e in eps])
    theta = s[None, :] / 2.0 + shifts
    excess = excess_upper(s, theta)  # excess_half's floats, its pair terms formed once per pair
    # every ε at once: each elementwise operation and each row's reduction is the one-point
    # function's on the same floats (a row sum does not depend on the other rows). A light
    # block's term is log_mass + log 2 at every ε, and a row of light blocks only has the
    # same sum at every ε: reduced once (the same floats), the log paid for heavy blocks only
    live = heavy.any(axis=1)
    rows = np.empty((eps.size, shape[0]))
    log_h = np.full((eps.size, int(live.sum()), shape[1]), _LOG_TWO)
    with np.errstate(divide="ignore"):
        log_h[:, heavy[live]] = np.log(
            excess * ((2.0 * kappa * (1.0 + bigs))[:, None] / gg[None, :])
        )
        terms = (log_mass[live][None] + log_h).reshape(-1, shape[1])
    rows[:, live] = rowwise_logsumexp(terms).reshape(eps.size, -1)
    if not live.all():
        rows[:, ~live] = rowwise_logsumexp(log_mass[~live] + _LOG_TWO)[None, :]
    rows = np.logaddexp(rows, (log_out + math.log(2.0))[None, :])
    total = rowwise_logsumexp(log_w[None, :] + rows)
    return np.asarray(np.logaddexp(total, c_tail + math.log(2.0)), dtype=np.float64)


def _top_log_deltas_each(
    n: int, eps0: float, log_lo: float, eps: FloatArray, log_tail: float
) -> FloatArray:
    """:func:`~crowdhide.accounting.shuffle.variation_ratio._top_log_delta` at every ε: the
    one-rate system with an always-informative target and ``c_inf(e^log_lo)`` clones."""
    c_inf = clone_rates(math.exp(log_lo), eps0)[0]
    m, log_w, _, s_end, log_mass, log_out, c_tail = _clone_layout(
        n, c_inf, rate_up(1.0), log_tail, TOP_POINTS, S_POINTS
    )
    units = np.broadcast_to(m[:, None], s_end.shape)
    layout = (log_w, log_mass, s_end, units, log_out, c_tail)
    return _beyond(clone_blocks_log_deltas(layout, kappa_up(eps0), eps, log_tail), eps, eps0)


def _beyond(values: FloatArray, eps: FloatArray, eps0: float) -> FloatArray:
    """``values`` with −inf where a clone system's target is fully revealed no more
    (``ε >= 2 atanh κ``), as the one-point functions return there."""
    kappa = kappa_up(eps0)
    if kappa < 1.0:
        values = np.where(eps >= 2.0 * math.atanh(kappa), -np.inf, values)
    return np.asarray(values, dtype=np.float64)


def _cell_log_deltas_each(
    n: int, eps0: float, cell: tuple[float, float], tier: int, eps: FloatArray, log_tail: float
) -> FloatArray:
    """:func:`~crowdhide.accounting.shuffle.variation_ratio._cell_log_delta` at every ε (the
    same three bounds, the same floats); cells its fast path does not cover (μ or the
    informative share within rounding of 1, no informative clones) point by point."""
    log_lo, log_hi = cell
    kappa = kappa_up(eps0)
    tv_bound = log_hi + math.log(kappa)
    c_inf = clone_rates(math.exp(log_lo), eps0)[0]
    mu = rate_up(math.exp(log_hi), ulps=PARAMETER_ULPS) if log_hi < 0.0 else 1.0
    c_zero = clone_rates(math.exp(log_hi), eps0)[1] if log_hi < 0.0 else 0.0
    if c_inf < 1e-300 or (log_hi < 0.0 and (mu >= 1.0 or c_inf / (c_inf + c_zero) >= 1.0)):
        return np.array(
            [_cell_log_delta(n, eps0, *cell, float(e), log_tail, tier=tier) for e in eps]
        )
    mixture = np.full(eps.size, np.inf)
    if log_hi >= math.log(MIXTURE_ABOVE):
        mixture = _top_log_deltas(n, eps0, log_lo, eps, log_tail) + min(log_hi, 0.0)
    if log_hi >= 0.0:
        return np.asarray(np.minimum(mixture, tv_bound), dtype=np.float64)
    c_points, s_points, eta = SPLIT_TIERS[tier]
    log_w, s_end, g_low, log_mass, log_out, c_tail = _layout(
        n, mu, c_inf, c_zero, log_tail, c_points, s_points, eta
    )
    split = clone_blocks_log_deltas(
        (log_w, log_mass, s_end, g_low, log_out, c_tail), kappa, eps, log_tail
    )
    return np.asarray(np.minimum(np.minimum(_beyond(split, eps, eps0), mixture), tv_bound))


def _bottom_log_deltas_each(
    n: int, eps0: float, mu_b: float, eps: FloatArray, log_tail: float
) -> FloatArray:
    """:func:`~crowdhide.accounting.shuffle.variation_ratio._bottom_log_delta` at every ε:
    the one-rate system with ``mu2 = mu_b`` and clone probability ``e^{-ε0}``, or one
    report's variation."""
    kappa = kappa_up(eps0)
    m, log_w, _, s_end, log_mass, log_out, c_tail = _clone_layout(
        n, math.exp(-eps0), rate_up(mu_b), log_tail, CLONE_POINTS, S_POINTS
    )
    units = np.broadcast_to(m[:, None], s_end.shape)
    layout = (log_w, log_mass, s_end, units, log_out, c_tail)
    value = _beyond(clone_blocks_log_deltas(layout, kappa, eps, log_tail), eps, eps0)
    return np.asarray(np.minimum(value, math.log(mu_b * kappa)), dtype=np.float64)


def _cell_log_deltas(
    n: int, eps0: float, cell: tuple[float, float], tier: int, eps: FloatArray, log_tail: float
) -> FloatArray:
    """:func:`_cell_log_deltas_each` through :data:`_POINT_MEMO`."""
    key = ("cell", n, eps0, cell, tier, log_tail)
    return _POINT_MEMO.values(
        key, eps, lambda at: _cell_log_deltas_each(n, eps0, cell, tier, at, log_tail)
    )


def _top_log_deltas(
    n: int, eps0: float, log_lo: float, eps: FloatArray, log_tail: float
) -> FloatArray:
    """:func:`_top_log_deltas_each` through :data:`_POINT_MEMO`."""
    key = ("top", n, eps0, log_lo, log_tail)
    return _POINT_MEMO.values(
        key, eps, lambda at: _top_log_deltas_each(n, eps0, log_lo, at, log_tail)
    )


def _bottom_log_deltas(
    n: int, eps0: float, mu_b: float, eps: FloatArray, log_tail: float
) -> FloatArray:
    """:func:`_bottom_log_deltas_each` through :data:`_POINT_MEMO`."""
    key = ("bottom", n, eps0, mu_b, log_tail)
    return _POINT_MEMO.values(
        key, eps, lambda at: _bottom_log_deltas_each(n, eps0, mu_b, at, log_tail)
    )
