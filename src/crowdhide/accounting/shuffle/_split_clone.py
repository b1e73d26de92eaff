"""The split clone system: informative and uninformative clones at separate rates (internal).

Setting (see :mod:`crowdhide.accounting.shuffle.mechanisms`): in the three-point space
{+, 0, −} the target reports ``+`` / ``−`` with probabilities ``(μ/2)(1 ± κ)`` (signs
swapped for x') and ``0`` otherwise; each of the other n − 1 users is, independently, an
*informative clone* (a fair ± coin) with probability ``c_inf``, an *uninformative clone*
(``0``) with probability ``c_zero``, and otherwise reports something independent of the
target's value. The adversary is told the number C of clones, not their kinds. Given C, let
``s`` be the number of ``±`` reports among the target and the clones: ``s = T + I`` with
``T ~ Ber(μ)`` (the target informative) and ``I ~ Bin(C, μ')``, ``μ' = c_inf/(c_inf +
c_zero)``; s has the same law under x and x', and given s the target is informative with
probability

    post(s) = μ s (1 − μ') / (μ s (1 − μ') + (1 − μ)(C − s + 1) μ'),

so the s informative reports are the α-pair of :mod:`crowdhide.accounting.shuffle._krr_fast` with
``λ = κ post(s)``. Writing ``g(s) = κ s/λ = a s + b_C`` (linear in s: ``a = 1 − ρ``,
``b_C = ρ (C + 1)``, ``ρ = (1 − μ) μ' / (μ (1 − μ'))``; ``μ = μ'`` gives g = C + 1, the
one-rate clone system),

    H = (2κ(1 + E)/g) · E[(A_s − s/2 − g (E − 1)/(2κ(1 + E)))_+],   A_s ~ Bin(s, 1/2).

Both factors decrease in g and the expectation is non-decreasing in s at a fixed offset, so a
block of s is bounded by (its largest s, its smallest g); δ given C is non-increasing in C
(one more clone is simulated by the adversary), so a block of C is bounded by its smallest C.
Windows drop tails whose mass (H <= 1) is added back.

**Rounding.** The parameters arrive rounded by the few operations of their formulas, and
the system is evaluated at floating-point values; it stays an upper bound because

* μ is raised by :data:`PARAMETER_ULPS` ulps: with the others' laws fixed, δ is
  non-decreasing in the target's μ (the pair at a smaller μ is a mixture of the pair at the
  larger one and a report independent of the target's value);
* the clone rates are replaced by ``(c μ', c (1 − μ'))`` with μ' the rounded ratio and the
  total c lowered until *both* are at most the given rates less :data:`PARAMETER_ULPS`
  ulps (:func:`effective_rates`). Lowering only the sum is not enough: where
  ``c_zero << c_inf``, ``1 − fl(μ')`` is off by ``ε c_inf/c_zero`` relative and claims
  uninformative clones that do not exist;
* g is computed as ``s + ρ (C + 1 − s)`` (no cancellation, unlike ``(1 − ρ) s + ρ (C + 1)``
  when ρ >> 1) and lowered by the rounding of ρ (:func:`g_lower`): H decreases in g.

Callers compute the uninformative rate from ``1 − μ`` with μ raised the same way
(:func:`uninformative_share`), since ``1 − μ`` near μ = 1 magnifies μ's rounding.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from crowdhide.accounting._tail_upper import log_geometric_tail
from crowdhide.accounting.binomial_tails import (
    BETAINC_TRUSTED,
    _log_tail_vec,
    binom_cdf,
    binom_sf,
    edge_tails,
    masses_from_tails_rows,
    on_blocks,
    window_blocks,
    window_edges,
)
from crowdhide.accounting.logmath import MACHINE_EPSILON, rate_down, rate_up
from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle._cumulative_masses import (
    cumulative_log_masses,
    cumulative_rows,
)
from crowdhide.accounting.shuffle._deep_excess import DEEP_EXCESS_TAIL, deep_log_h
from crowdhide.accounting.shuffle._far_half import far_excess, far_exponent, far_rule_holds
from crowdhide.accounting.shuffle._krr_fast import (
    _ETA,
    _THETA_RTOL,
    LIGHT_MARGIN,
    FloatArray,
    _clone_shift,
    _half_excess_core,
    _window_edges,
    clone_block_h,
    clone_noise_log_delta,
    heavy_blocks,
    terms_total,
)
from crowdhide.accounting.shuffle._layout_columns import clone_width as _clone_width
from crowdhide.accounting.shuffle._layout_columns import column_groups, padded, split_rows
from crowdhide.accounting.shuffle._layout_columns import used_columns as _used_columns
from crowdhide.errors import InvalidParameterError

__all__ = [
    "PARAMETER_ULPS",
    "effective_rates",
    "g_lower",
    "split_clone_log_delta",
    "split_clone_log_deltas",
    "uninformative_share",
]

#: How far (in ulps) the split system's inputs may be off the exact values their formulas
#: stand for: a handful of correctly rounded operations each (exp/expm1, tanh raised by
#: ``kappa_up``, sums, products, one quotient) — 32 leaves a factor of about 2.
PARAMETER_ULPS = 32

#: Most blocks of clone counts and of s per clone count (g varies across an s block, unlike
#: the one-rate system). 64 x 192: k-RR (d = 16, ε0 = 4, n = 1e3) 1.387 vs 1.448 with 64 x 96;
#: about 0.2-0.6 s per ε query at n = 1e3 ... 1e5, under 0.1 s at n = 1e9.
SPLIT_C_POINTS = 64
SPLIT_S_POINTS = 192


def uninformative_share(mu: float) -> float:
    """``1 − μ`` for a μ rounded by up to :data:`PARAMETER_ULPS` ulps, never above the
    exact value's ``1 − μ`` (μ raised first; the difference is exact for μ >= 1/2).

    Examples
    --------
    >>> 0.0 < uninformative_share(0.999) < 1.0 - 0.999
    True
    """
    return max(0.0, 1.0 - rate_up(mu, ulps=PARAMETER_ULPS))


def effective_rates(c_inf: float, c_zero: float) -> tuple[float, float]:
    """``(c, μ')``: a clone total and informative share whose rates ``c μ'`` and
    ``c (1 − μ')``, in exact arithmetic on these floats, are at most ``c_inf`` and
    ``c_zero`` lowered by :data:`PARAMETER_ULPS` ulps (module docstring).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> c, mu_c = effective_rates(0.3, 1e-9)
    >>> F(c) * F(mu_c) < F(0.3) and F(c) * (1 - F(mu_c)) < F(1e-9)
    True
    """
    mu_c = c_inf / (c_inf + c_zero)
    # each quotient and 1 − μ' are rounded once (1 − μ' exactly when μ' >= 1/2)
    total = min(c_inf / mu_c, c_zero / (1.0 - mu_c))
    return rate_down(total, ulps=2 * PARAMETER_ULPS), mu_c


def g_lower(s: FloatArray, counts: FloatArray, rho: float | FloatArray) -> FloatArray:
    """``g = s + ρ (C + 1 − s)`` rounded down: ρ carries at most 8 roundings (its formula
    and μ, μ' near 1), the sum and product two more. Exact for integer counts below 2^53.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> rho = 1e6 / 3.0
    >>> g = g_lower(np.array([4.0]), np.array([5.0]), rho)
    >>> F(float(g[0])) <= 4 + F(rho) * 2
    True
    """
    g = s + rho * (counts + 1.0 - s)
    return np.asarray(g * (1.0 - 16.0 * MACHINE_EPSILON), dtype=np.float64)


def _edge_masses(
    counts: FloatArray,
    p: float | FloatArray,
    s_start: FloatArray,
    s_end: FloatArray,
    live: npt.NDArray[np.bool_],
    shift: float,
) -> FloatArray:
    """``block_masses(counts, p, s_start − shift, s_end − shift, upper=True)`` on the
    ``live`` blocks (0 elsewhere), the same floats for a quarter of the incomplete betas: a
    row's live blocks are contiguous (:func:`_split`), so they share the tails at their
    edges (:func:`~crowdhide.accounting.binomial_tails.edge_tails`; tests check the floats
    against :func:`block_masses`). ``p`` may be a column (one value per row: rows of
    several systems stacked, :func:`_build_layouts`)."""
    first, second, use_sf = edge_tails(counts, p, s_start, s_end, live, shift)
    lo, hi = s_start - shift, s_end - shift
    mass = masses_from_tails_rows(first, second, counts, p, lo, hi, ~use_sf)
    return np.asarray(np.where(live, mass, 0.0), dtype=np.float64)


#: Relative allowance on a Chernoff exponent ``n KL``: its few roundings (``xlogy``,
#: ``xlog1py``, a product by n <= 1e9) are below 1e-12 of it where it prunes (n KL >= 10).
CHERNOFF_RTOL = 1e-9

#: Absolute allowance on a Chernoff exponent where it only caps a value (:func:`_deep_cap`):
#: the cancellation in ``KL`` (three terms of size <= |ln p| + 1, each rounded) times n <= 1e9
#: is below 1e-6; 1e-5 holds it on the safe side at every size.
CHERNOFF_ATOL = 1e-5


def _trusted(log_mass: FloatArray, log_chernoff: FloatArray) -> FloatArray:
    """``log_mass`` capped by the Chernoff bound ``log_chernoff`` (both upper bounds on the
    same mass), or that bound alone where ``log_mass`` is below :data:`BETAINC_TRUSTED`:
    SciPy's ``betainc`` underflows to 0 well above the double range
    (docs/proofs/betainc-underflow.md), and a difference of two zero tails is then only its
    2e-300 allowance: below the truth."""
    capped = np.minimum(log_mass, log_chernoff)
    deep = log_mass < math.log(BETAINC_TRUSTED)
    return np.asarray(np.where(deep, log_chernoff, capped), dtype=np.float64)


def _chernoff_up(log_bound: FloatArray) -> FloatArray:
    """A Chernoff exponent (<= 0) raised by its rounding allowances, capped at 0."""
    raised = log_bound * (1.0 - CHERNOFF_RTOL) + CHERNOFF_ATOL
    return np.asarray(np.minimum(raised, 0.0), dtype=np.float64)


def _deep_cap(
    log_mass: FloatArray, counts: FloatArray, p: float | FloatArray, lo: FloatArray, hi: FloatArray
) -> FloatArray:
    """``log_mass`` of blocks ``[lo, hi]`` of ``Bin(counts, p)`` capped by a Chernoff bound
    on the block's mass (``P(X >= lo)`` above the mean, ``P(X <= hi)`` below it), both
    upper bounds, so the smaller is one. An incomplete beta carries an absolute allowance
    of :data:`~crowdhide.accounting.binomial_tails.BETAINC_ATOL` (1e-300): without the cap,
    every deep block's mass is at least that, and at δ near 1e-300 the certificate sat at
    that floor (OUE, ε0 = 1, n = 1e6: ε0 at δ = 1e-300, 0.030 at 1e-250). The s blocks of
    :func:`_build_layouts` are capped the same way by :func:`_chernoff_light`'s bound. Below
    :data:`BETAINC_TRUSTED` the bound alone is kept (:func:`_trusted`)."""
    counts = np.broadcast_to(counts, lo.shape)
    probs = np.broadcast_to(p, lo.shape)
    up = lo > counts * probs
    bound = np.zeros(lo.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound[up] = _log_tail_vec(counts[up], probs[up], lo[up], upper=True)
        bound[~up] = _log_tail_vec(counts[~up], probs[~up], hi[~up], upper=False)
    deep = log_mass < math.log(BETAINC_TRUSTED)
    bound = _geometric_min(_chernoff_up(bound), deep, counts, probs, (lo, hi), up)
    return _trusted(log_mass, bound)


def _cap_exact(
    log_mass: FloatArray,
    log_bound: FloatArray,
    exact: npt.NDArray[np.bool_],
    counts: FloatArray,
    mu_c: FloatArray,
    blocks: tuple[FloatArray, FloatArray],
) -> FloatArray:
    """The exact blocks' log masses capped by :func:`_chernoff_light`'s Chernoff bounds
    (rounded up), lowered to the geometric bound of the same tail where the mass is deep."""
    s_start, s_end = blocks
    deep = exact & (log_mass < math.log(BETAINC_TRUSTED))
    up = s_start - 1.0 > counts * mu_c  # as in _chernoff_light
    probs = np.broadcast_to(mu_c, s_start.shape)
    capped = _geometric_min(
        _chernoff_up(log_bound), deep, counts, probs, (s_start - 1.0, s_end), up
    )
    return np.asarray(np.where(exact, _trusted(log_mass, capped), log_mass), dtype=np.float64)


def _geometric_min(
    log_chernoff: FloatArray,
    deep: npt.NDArray[np.bool_],
    counts: FloatArray,
    probs: FloatArray,
    edges: tuple[FloatArray, FloatArray],
    up: npt.NDArray[np.bool_],
) -> FloatArray:
    """``log_chernoff`` (a rounded-up Chernoff bound on ``P(X >= edges[0])`` where ``up``, else
    on ``P(X <= edges[1])``, ``X ~ Bin(counts, probs)``) lowered to the tail's geometric bound
    (:func:`~crowdhide.accounting._tail_upper.log_geometric_tail`, also an upper bound) where
    ``deep``: only there, so that every value above :data:`BETAINC_TRUSTED` keeps its floats."""
    out = np.array(log_chernoff, dtype=np.float64)
    for upper, side, edge in ((True, deep & up, edges[0]), (False, deep & ~up, edges[1])):
        if side.any():
            geometric = log_geometric_tail(counts[side], probs[side], edge[side], upper=upper)
            out[side] = np.minimum(out[side], geometric)
    return out


def _deep_log_h(s: FloatArray, g: FloatArray, *, kappa: float, eps: float) -> FloatArray:
    """A Chernoff bound on ``log H`` of
    :func:`~crowdhide.accounting.shuffle._krr_fast.clone_block_h`: with
    ``θ = s/2 + c_g`` and ``A ~ Bin(s, 1/2)``, ``E[(A − θ)_+] <= (s/2) P(A >= ⌊θ⌋)``
    (θ >= s/2; ⌊θ⌋ rather than ⌊θ⌋ + 1 absorbs θ's rounding); −inf where ⌊θ⌋ > s."""
    return _deep_log_h_parts(s, g, kappa=kappa, eps=eps)[0]


def _deep_log_h_parts(
    s: FloatArray, g: FloatArray, *, kappa: float, eps: float
) -> tuple[FloatArray, FloatArray]:
    """:func:`_deep_log_h` and the Chernoff exponent of ``P(A >= ⌊θ⌋)`` before its rounding
    allowance (−inf where ⌊θ⌋ > s): the exponent that
    :func:`~crowdhide.accounting.shuffle._far_half.far_mask` computes for the same blocks
    (:func:`_block_h` takes it from here, issue 32).

    The tail bounds are computed only where ``⌊θ⌋ <= s`` (issue 32: at large ε0 and small n
    up to 92 % of the heavy blocks of a query have no excess at all, and their Chernoff
    exponent and geometric bound were each −inf, at a cost); every element keeps its floats
    (elementwise steps on a subset)."""
    big = math.exp(eps)
    s_b, g_b = np.broadcast_arrays(np.asarray(s, dtype=np.float64), np.asarray(g, dtype=np.float64))
    # θ as clone_block_h computes it (the same operations in the same order)
    theta = s_b / 2.0 + g_b * math.expm1(eps) / (2.0 * kappa * (1.0 + big))
    with np.errstate(invalid="ignore", divide="ignore"):
        edge = np.floor(theta)
        # ⌊θ⌋ > s: the tail P(A >= ⌊θ⌋) is empty, its Chernoff exponent and geometric bound −inf
        some = ~(edge > s_b)
        tail = np.full(edge.shape, -np.inf)
        exponent = np.full(edge.shape, -np.inf)
        s_in, edge_in = s_b[some], edge[some]
        exponent[some] = _log_tail_vec(s_in, 0.5, edge_in, upper=True)
        part = _chernoff_up(exponent[some])
        # deep tails: their geometric bound where smaller (only there: the rest keep their floats)
        deep = part < math.log(BETAINC_TRUSTED)
        half = np.full(part.shape, 0.5)
        tail[some] = _geometric_min(part, deep, s_in, half, (edge_in, edge_in), deep)
        log_h = np.asarray(tail + np.log(s * kappa * (1.0 + big) / g) + 1e-9, dtype=np.float64)
        return log_h, exponent


def _block_h(
    s: FloatArray, g: FloatArray, exponent: FloatArray, *, kappa: float, eps: float
) -> FloatArray:
    """:func:`~crowdhide.accounting.shuffle._krr_fast.clone_block_h` of 1-D ``s``, ``g`` with
    the Chernoff exponent of its far rule given (:func:`_deep_log_h_parts`): its steps, the
    same floats (tests/accounting/test_split_clone_skip.py), without computing the exponent
    a second time."""
    # the level _krr_fast's own steps read (a test may set it there)
    if not far_rule_holds(float(vars(_krr_fast)["BETAINC_TRUSTED"])):
        return clone_block_h(s, g, kappa=kappa, eps=eps)
    theta = s / 2.0 + _clone_shift(g, kappa, eps)
    far = far_exponent(exponent)
    if not far.any():
        value = _half_excess_core(s, theta, upper=True)
    else:  # _krr_fast._half_excess_terms with its far mask
        value = np.empty(s.shape)
        value[far] = far_excess(s[far], theta[far], _THETA_RTOL)
        near = ~far
        if near.any():
            value[near] = _half_excess_core(s[near], theta[near], upper=True)
    excess = np.where(s >= 1.0, np.maximum(value, 0.0), 0.0)  # as excess_half
    return np.asarray(excess * (2.0 * kappa * (1.0 + math.exp(eps)) / g))


def _deep_h(h: FloatArray, s: FloatArray, g: FloatArray, *, kappa: float, eps: float) -> FloatArray:
    """``h`` capped by :func:`_deep_log_h`. The incomplete betas' absolute allowance floors
    ``h`` near ``(s + 1)·1e-300`` otherwise (:func:`_deep_cap`). The cap is kept at least
    1e-306 (a float, not 0: the sum of the blocks' masses times it is at most about 1e-306);
    a block with ``⌊θ⌋ > s`` has no excess (its bound is −inf)."""
    log_cap = _deep_log_h(s, g, kappa=kappa, eps=eps)
    cap = np.maximum(np.exp(np.minimum(log_cap, 0.0)), 1e-306)
    # −inf: ⌊θ⌋ > s, no excess at all; NaN (never expected) keeps h
    return np.asarray(np.where(np.isnan(log_cap), h, np.minimum(h, cap)), dtype=np.float64)


#: Heavy blocks whose joint log mass plus their Chernoff cap (:func:`_deep_log_h`) is at most
#: ``log_tail − DEEP_MARGIN`` keep the cap as their bound, their incomplete betas not evaluated
#: (:func:`deep_skipped_h`). 60 rather than the light blocks' 10 (:data:`LIGHT_MARGIN`): with
#: up to ~10^6 such blocks they add at most ``e^{log_tail − 46}``, far below an ulp of any
#: value the searches compare (at 10 some ε moved in their last 1e-15 to 1e-11; at δ = 1e-300
#: 60 still skips 86-89 % of the heavy blocks, 10 skipped 90-93 %).
DEEP_MARGIN = 60.0


def deep_skipped_h(
    s: FloatArray,
    g: FloatArray,
    log_weight: FloatArray,
    *,
    kappa: float,
    eps: float,
    log_tail: float,
) -> FloatArray:
    """:func:`_deep_h` of :func:`~crowdhide.accounting.shuffle._krr_fast.clone_block_h` for heavy
    blocks (joint log mass ``log_weight``), except that a block whose mass times its cap is
    at most ``e^{log_tail − DEEP_MARGIN}`` takes the cap alone (issue 32: at δ = 1e-300 86-89 %
    of the heavy blocks, the bulk of a piecewise query's incomplete betas).

    The cap bounds the block's H from above (:func:`_deep_log_h`), so the value stays an upper
    bound, at least :func:`_deep_h`'s ``min(h, cap)`` block by block: the sum only rises, by
    at most ``e^{log_tail − DEEP_MARGIN}`` per such block, less than a light block already
    adds (docs/proofs/mechanism-certificates.md, section 1d). The other blocks get
    :func:`_deep_h`'s floats (both are elementwise).

    A block with no excess at all (``⌊θ⌋ > s``: its cap's log is −inf, the cap 1e-306) whose
    log mass is at most ``log_tail − DEEP_MARGIN +`` :data:`EMPTY_ROOM` takes 1e-306 without
    the cap's steps (issue 32: up to 92 % of a query's heavy blocks at large ε0); that is the
    value the steps give it, whatever the ulps of ``log(1e-306)`` (about −704.6)."""
    s, g, log_weight = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (s, g, log_weight))
    )
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        theta = s / 2.0 + g * math.expm1(eps) / (2.0 * kappa * (1.0 + math.exp(eps)))
        scale = s * kappa * (1.0 + math.exp(eps)) / g  # positive and finite: its log is too
        empty = (np.floor(theta) > s) & (scale > 0.0) & (scale < math.inf)
    empty &= log_weight <= log_tail - DEEP_MARGIN + EMPTY_ROOM
    out = np.full(s.shape, 1e-306)
    rest = ~empty
    if bool(np.any(rest)):
        out[rest] = _capped_h(s[rest], g[rest], log_weight[rest], kappa, (eps, log_tail))
    return out


#: Below ``log(1e-306) ≈ −704.59`` by a margin no rounding reaches: a block without excess
#: (its cap 1e-306) whose log mass is at most ``log_tail − DEEP_MARGIN`` plus this is one that
#: :func:`deep_skipped_h`'s cap rule skips.
EMPTY_ROOM = 700.0


def _capped_h(
    s: FloatArray, g: FloatArray, log_weight: FloatArray, kappa: float, at: tuple[float, float]
) -> FloatArray:
    """:func:`deep_skipped_h`'s value of each block from its cap (``at = (ε, log_tail)``):
    the cap where the block's mass times it is below the margin, else ``min(h, cap)``."""
    eps, log_tail = at
    log_cap, exponent = _deep_log_h_parts(s, g, kappa=kappa, eps=eps)
    if log_tail < DEEP_EXCESS_TAIL:  # the excess's own geometric bound (variation-ratio.md §11)
        log_cap = np.fmin(log_cap, deep_log_h(s, g, kappa=kappa, eps=eps))
    cap = np.maximum(np.exp(np.minimum(log_cap, 0.0)), 1e-306)
    # NaN (never expected) compares False: the block is evaluated as before
    deep = log_weight + np.log(cap) <= log_tail - DEEP_MARGIN
    out = np.array(cap, dtype=np.float64)
    rest = ~deep
    if bool(np.any(rest)):
        h = _block_h(s[rest], g[rest], exponent[rest], kappa=kappa, eps=eps)
        out[rest] = np.where(np.isnan(log_cap[rest]), h, np.minimum(h, cap[rest]))
    return out


def _chernoff_light(
    counts: FloatArray,
    p: float | FloatArray,
    s_start: FloatArray,
    s_end: FloatArray,
    log_w: FloatArray,
    log_tail: float,
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """``(light, log_bound)``: blocks of ``s = T + I`` (T in {0, 1}, ``I ~ Bin(count, p)``)
    whose joint log mass with their row is at most ``log_tail − LIGHT_MARGIN`` by a
    Chernoff bound, and that bound on the block's log mass. A block ``[a, b]`` above the
    mean has mass at most ``P(I >= a − 1)`` (both shifts), below it at most ``P(I <= b)``;
    the bound is raised by :data:`CHERNOFF_RTOL`. :func:`clone_blocks_log_delta` then takes
    them as light blocks (2 per unit of mass) without their exact masses: an upper bound,
    and below ``e^{log_tail}`` in all, as the light blocks were before."""
    counts = np.broadcast_to(counts, s_start.shape)
    probs = np.broadcast_to(p, s_start.shape)  # one per row where systems are stacked
    up = s_start - 1.0 > counts * p  # else the upper tail's bound is 1: only the lower one
    live = s_start <= s_end  # empty blocks (and stacked systems' padding) keep 0
    down, up = live & ~up, live & up
    log_bound = np.zeros(s_start.shape)
    with np.errstate(invalid="ignore"):
        log_bound[up] = _log_tail_vec(counts[up], probs[up], s_start[up] - 1.0, upper=True)
        log_bound[down] = _log_tail_vec(counts[down], probs[down], s_end[down], upper=False)
    log_bound = np.minimum(log_bound * (1.0 - CHERNOFF_RTOL), 0.0)
    light = log_w[:, None] + log_bound <= log_tail - LIGHT_MARGIN
    return np.asarray(light), np.asarray(log_bound, dtype=np.float64)


_Layout = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, float]
#: The ε-independent inputs of a layout's sum (:func:`_heavy_parts`): the heavy blocks' mask,
#: their largest s, smallest g, joint log mass and log mass, and every block's log term with
#: the light blocks' bound 2.
_Heavy = tuple[npt.NDArray[np.bool_], FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]
_Blocks = tuple[FloatArray, FloatArray, FloatArray]
#: A layout's arguments after ``n`` and ``log_tail``: ``(μ, c_inf, c_zero, c_points,
#: s_points, eta)`` (μ raised as :func:`split_clone_log_deltas` raises it).
_LayoutKey = tuple[float, float, float, int, int, float]


class _LayoutCache:
    """:func:`_build_layouts` per ``(n, log_tail, system)``, least recently used dropped
    beyond ``maxsize``: a cache of a deterministic function, filled a round of cells at a
    time. Called as the former ``_layout(n, mu, c_inf, c_zero, log_tail, c_points,
    s_points, eta)`` for one layout."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.held: OrderedDict[tuple[int, float, _LayoutKey], tuple[_Layout, _Heavy]] = (
            OrderedDict()
        )
        self.lock = threading.Lock()

    def cache_clear(self) -> None:
        with self.lock:
            self.held.clear()

    def __call__(
        self,
        n: int,
        mu: float,
        c_inf: float,
        c_zero: float,
        log_tail: float,
        c_points: int,
        s_points: int,
        eta: float = _ETA,
    ) -> _Layout:
        return self.many(n, [(mu, c_inf, c_zero, c_points, s_points, eta)], log_tail)[0][0]

    def many(
        self, n: int, systems: Sequence[_LayoutKey], log_tail: float
    ) -> list[tuple[_Layout, _Heavy]]:
        """The layouts of ``systems`` with their :func:`_heavy_parts`, the missing ones built
        in one :func:`_build_layouts`."""
        keys = [(n, log_tail, system) for system in systems]
        with self.lock:
            missing = list(dict.fromkeys(key for key in keys if key not in self.held))
        built = _build_layouts(n, [key[2] for key in missing], log_tail) if missing else []
        parts = [(layout, _heavy_parts(layout, log_tail)) for layout in built]
        with self.lock:
            self.held.update(zip(missing, parts, strict=True))
            out = []
            for key in keys:
                self.held.move_to_end(key)
                out.append(self.held[key])
            while len(self.held) > self.maxsize:
                self.held.popitem(last=False)
        return out


# One variation-ratio evaluation uses up to ~60 cell evaluations at three resolutions, and an ε
# search three evaluations at one tail level: 64 entries thrashed (4.1 s -> 1.7 s for
# ε0 = 16.4, n = 1e9, δ = 1e-9 at 128). A full layout is ~0.3 MB.
_layout = _LayoutCache(256)


def _clone_windows(
    n: int, totals: Sequence[float], widths: Sequence[Callable[[int, int], int]], log_tail: float
) -> list[tuple[FloatArray, FloatArray, float]]:
    """:func:`~crowdhide.accounting.binomial_tails.window_blocks` of Bin(n − 1, total) per
    system, the block masses of all systems in one vectorized call (the same floats)."""
    out: list[tuple[FloatArray, FloatArray, float]] = []
    wide: list[tuple[int, FloatArray, FloatArray, float]] = []
    for i, (total, width_of) in enumerate(zip(totals, widths, strict=True)):
        if n - 1 == 0 or not 0.0 < total < 1.0:
            out.append(window_blocks(n - 1, total, log_tail, width_of))
            continue
        lo, hi, outside = window_edges(n - 1, total, log_tail)
        width = width_of(lo, hi - lo + 1)
        if width <= 1:  # every count with its log-pmf (window_blocks' own path)
            out.append(window_blocks(n - 1, total, log_tail, width_of))
            continue
        starts = np.arange(lo, hi + 1, width, dtype=np.float64)
        wide.append((i, starts, np.minimum(starts + float(width - 1), float(hi)), outside))
        out.append((starts, starts, outside))  # the masses follow
    if wide:
        lo_all = np.concatenate([w[1] for w in wide])
        hi_all = np.concatenate([w[2] for w in wide])
        p_all = np.concatenate([np.full(w[1].size, totals[w[0]]) for w in wide])
        n_all = np.full(lo_all.shape, float(n - 1))
        use_sf = lo_all > n_all * p_all
        first = on_blocks(use_sf, 0.0, binom_sf, lo_all, n_all, p_all)
        first = first + on_blocks(~use_sf, 0.0, binom_cdf, hi_all, n_all, p_all)
        second = on_blocks(use_sf, 0.0, binom_sf, hi_all + 1.0, n_all, p_all)
        second = second + on_blocks(~use_sf, 0.0, binom_cdf, lo_all - 1.0, n_all, p_all)
        mass = masses_from_tails_rows(first, second, n_all, p_all, lo_all, hi_all, ~use_sf)
        with np.errstate(divide="ignore"):
            log_all = _deep_cap(np.log(mass), n_all, p_all, lo_all, hi_all)
        at = 0
        for i, starts, _, outside in wide:
            out[i] = (starts, log_all[at : at + starts.size], outside)
            at += starts.size
    return out


def _exact_log_masses(
    counts: FloatArray,
    rates: tuple[FloatArray, FloatArray],
    s_range: tuple[FloatArray, FloatArray],
    blocks: tuple[FloatArray, FloatArray],
    exact: npt.NDArray[np.bool_],
) -> FloatArray:
    """Upper bounds on the log masses of the ``exact`` blocks of ``s = T + I`` (−inf
    elsewhere), ``rates = (μ, μ')`` per row: rows whose range of I is short enough
    (:func:`~crowdhide.accounting.shuffle._cumulative_masses.cumulative_rows`) by
    cumulative log-ratio steps with their error bound added (docs/proofs/variation-ratio.md,
    §7.1), the others by incomplete betas at the blocks' shared edges."""
    mu, mu_c = rates
    first, last = s_range
    blocks_per_row = np.count_nonzero(exact, axis=1)
    short = cumulative_rows(last - first + 2.0, blocks_per_row)
    log_mass = np.full(exact.shape, -np.inf)
    rows = short & (blocks_per_row > 0)
    if rows.any():
        log_mass[rows] = cumulative_log_masses(
            counts[rows, 0],
            mu_c[rows, 0],
            mu[rows],
            (first[rows], last[rows]),
            (blocks[0][rows], blocks[1][rows]),
            exact[rows],
        )
    # only the rows with such blocks (issue 32: elementwise steps, the same floats; edge_tails'
    # contiguity check looks at live blocks only, so rows without any do not change it)
    beta_rows = np.flatnonzero(~short & (blocks_per_row > 0))
    if beta_rows.size:
        s_start, s_end = blocks[0][beta_rows], blocks[1][beta_rows]
        betas, c, m, t = exact[beta_rows], counts[beta_rows], mu_c[beta_rows], mu[beta_rows]
        # s = T + I: I's blocks shifted by one (T = 1) and in place (T = 0)
        mass = t * _edge_masses(c, m, s_start, s_end, betas, 1.0)
        mass = mass + (1.0 - t) * _edge_masses(c, m, s_start, s_end, betas, 0.0)
        with np.errstate(divide="ignore"):
            log_mass[beta_rows] = np.where(
                betas, np.log(np.minimum(mass, 1.0)), log_mass[beta_rows]
            )
    return log_mass


def _build_layouts(n: int, systems: Sequence[_LayoutKey], log_tail: float) -> list[_Layout]:
    """ε-independent part of each system's sum: per C block its log weight, per s block its
    largest s, smallest g and log mass (rounded up), the log mass outside each s window, the
    C tail. The systems' rows are stacked (their rates per row, their s blocks padded with
    empty ones to the widest) so each step is one vectorized call for all of them; every
    step is elementwise or within a row, so each layout has the floats it has alone."""
    big_l = -log_tail
    rates = [effective_rates(c_inf, c_zero) for _, c_inf, c_zero, _, _, _ in systems]
    widths = [
        functools.partial(_clone_width, c_points=c_points, eta=eta, big_l=big_l)
        for _, _, _, c_points, _, eta in systems
    ]
    # fewer clones of either kind is always a valid system
    windows = _clone_windows(n, [total for total, _ in rates], widths, log_tail)
    sizes = [counts.size for counts, _, _ in windows]

    def per_row(values: Sequence[float]) -> FloatArray:
        return np.repeat(np.asarray(values, dtype=np.float64), sizes)[:, None]

    counts = np.concatenate([w[0] for w in windows])
    log_w = np.concatenate([w[1] for w in windows])
    mu = per_row([system[0] for system in systems])
    mu_c = per_row([m for _, m in rates])
    rho = (1.0 - mu) * mu_c / (mu * (1.0 - mu_c))
    lo, hi = _window_edges(counts[:, None], mu_c, big_l)  # window of I ~ Bin(C, μ')
    first, last = np.maximum(lo, 1.0), hi + 1.0
    g_min = np.minimum((1.0 - rho) * first, (1.0 - rho) * last) + rho * (counts[:, None] + 1.0)
    spread = (last - first + 1.0) * np.maximum(np.abs(1.0 - rho), 1.0) * big_l
    eta = per_row([system[5] for system in systems])
    ratio = np.ceil(spread / np.maximum(eta * np.minimum(g_min, first), 1e-300))[:, 0]
    ends = np.cumsum(sizes)
    points = [
        min(system[4], max(int(ratio[end - size : end].max()), 1))
        for system, size, end in zip(systems, sizes, ends, strict=True)
    ]
    used = _used_columns(points, last[:, 0] - first[:, 0] + 1.0, ends - sizes, ends)  # rest: pad
    row_used = per_row(used)[:, 0]
    stack = (counts, log_w, mu[:, 0], mu_c[:, 0], rho[:, 0], first[:, 0], last[:, 0], row_used)
    parts: dict[int, tuple[FloatArray, ...]] = {}
    for group in column_groups(used, sizes):  # systems padded alike in one stacked call each
        rows = np.concatenate([np.arange(ends[i] - sizes[i], ends[i]) for i in group])
        block = _block_stage([x[rows] for x in stack], max(used[i] for i in group), log_tail)
        for i, at in zip(group, np.cumsum([0] + [sizes[i] for i in group]), strict=False):
            parts[i] = tuple(x[at : at + sizes[i]] for x in block)
    log_out = np.logaddexp(
        _log_tail_vec(counts, mu_c[:, 0], lo[:, 0] - 1.0, upper=False),
        _log_tail_vec(counts, mu_c[:, 0], hi[:, 0] + 1.0, upper=True),
    )
    out = []
    for i, window in enumerate(windows):
        rows_i, width = slice(ends[i] - sizes[i], ends[i]), points[i]
        s_end, g_low, log_mass = parts[i]
        # past the used columns: an empty block's values (its end the row's last s, g 1, mass 0)
        ends_s, g_s = padded(s_end, width, last[rows_i]), padded(g_low, width, 1.0)
        mass_s = padded(log_mass, width, -np.inf)
        out.append((log_w[rows_i].copy(), ends_s, g_s, mass_s, log_out[rows_i].copy(), window[2]))
    return out


def _block_stage(stack: Sequence[FloatArray], columns: int, log_tail: float) -> _Blocks:
    """Per s block of stacked rows (:func:`_build_layouts`): largest s, smallest g, log mass."""
    counts, log_w, mu, mu_c, rho, first, last, used = stack
    mu, mu_c, rho = mu[:, None], mu_c[:, None], rho[:, None]
    s_start, s_end = split_rows(first, last, used, columns)
    cc = np.broadcast_to(counts[:, None], s_start.shape)
    live = s_start <= s_end  # the padding past a system's own blocks is empty
    # Blocks certainly light (:func:`_chernoff_light`) keep a Chernoff bound on their mass
    # instead of the incomplete betas: a third to two thirds of them.
    light, log_bound = _chernoff_light(cc, mu_c, s_start, s_end, log_w, log_tail)
    light &= live
    exact = live & ~light
    log_mass = _exact_log_masses(cc, (mu, mu_c), (first, last), (s_start, s_end), exact)
    log_mass = _cap_exact(log_mass, log_bound, exact, cc, mu_c, (s_start, s_end))
    log_mass = np.where(light, log_bound, log_mass)
    g_low = np.minimum(g_lower(s_start, cc, rho), g_lower(s_end, cc, rho))
    return s_end, np.where(live, g_low, 1.0), log_mass


#: One split system of :func:`split_clone_log_deltas`: ``(μ, c_inf, c_zero, c_points,
#: s_points, eta)``, as :func:`split_clone_log_delta` takes them.
SplitSystem = tuple[float, float, float, int, int, float]


def split_clone_log_delta(
    n: int,
    kappa: float,
    mu: float,
    c_inf: float,
    c_zero: float,
    eps: float,
    log_tail: float,
    *,
    c_points: int = SPLIT_C_POINTS,
    s_points: int = SPLIT_S_POINTS,
    eta: float = _ETA,
) -> float:
    """Upper bound on ``log δ(ε)`` of the split clone system (module docstring), blocked:
    O(c_points · s_points) incomplete-beta calls whatever n; ``eta`` is the relative change
    of a count (times the tail level) a block may span: a smaller one is tighter where the
    windows are wide (a block is bounded at its worst corner whatever its width). Needs
    ``0 < μ < 1`` and ``c_inf > 0`` (the one-rate system covers the other cases); μ and the
    rates may each be up to :data:`PARAMETER_ULPS` ulps off the values their formulas stand
    for.

    Examples
    --------
    >>> import math
    >>> e = math.exp(1.0)   # Hadamard response / OUE at ε0 = 1 (d >= 4), n = 1000
    >>> log_d = split_clone_log_delta(1000, math.tanh(0.5), 0.5, 1 / (e + 1), 1 / (2 * e), 0.1, -60)
    >>> 1e-7 < math.exp(log_d) < 1e-5
    True
    """
    system = (mu, c_inf, c_zero, c_points, s_points, eta)
    return split_clone_log_deltas(n, kappa, [system], eps, log_tail)[0]


def split_clone_log_deltas(
    n: int, kappa: float, systems: Sequence[SplitSystem], eps: float, log_tail: float
) -> list[float]:
    """:func:`split_clone_log_delta` of each of ``systems`` at one ``(ε, log_tail)``, the same
    floats: the incomplete betas of every system's heavy blocks in one vectorized call (issue
    32: one sum's fixed cost, ~1.4 ms, was most of a ``variation_ratio`` cell's).

    Examples
    --------
    >>> import math
    >>> systems = [(0.5, 0.2, 0.1, 64, 192, 0.05), (0.9, 0.3, 0.01, 16, 48, 0.05)]
    >>> both = split_clone_log_deltas(1000, math.tanh(0.5), systems, 0.1, -60)
    >>> both == [split_clone_log_deltas(1000, math.tanh(0.5), [s], 0.1, -60)[0] for s in systems]
    True
    """
    out = [math.nan] * len(systems)
    keys: list[_LayoutKey] = []
    where: list[int] = []
    for i, (mu, c_inf, c_zero, c_points, s_points, eta) in enumerate(systems):
        _check_system(mu, c_inf, c_zero)
        if kappa < 1.0 and eps >= 2.0 * math.atanh(kappa):  # κ = 1: a fully revealing target
            out[i] = -math.inf
            continue
        mu = rate_up(mu, ulps=PARAMETER_ULPS)  # module docstring: δ is non-decreasing in μ
        if mu >= 1.0 or c_inf / (c_inf + c_zero) >= 1.0:
            # μ or μ' within rounding of 1 (no room for ρ): the target always informative and
            # the informative clones alone, a valid and slightly looser system
            c_inf = rate_down(c_inf, ulps=2 * PARAMETER_ULPS)
            out[i] = clone_noise_log_delta(n, kappa, 1.0, c_inf, eps, log_tail)
            continue
        keys.append((mu, c_inf, c_zero, c_points, s_points, eta))
        where.append(i)
    layouts = _layout.many(n, keys, log_tail)  # with their heavy parts
    for i, value in zip(where, _blocks_log_deltas(layouts, kappa, eps, log_tail), strict=True):
        out[i] = value
    return out


def _check_system(mu: float, c_inf: float, c_zero: float) -> None:
    if not (0.0 < mu < 1.0 and c_inf > 0.0 and c_zero >= 0.0 and c_inf + c_zero <= 1.0):
        raise InvalidParameterError(
            "split clone system needs 0 < mu < 1, c_inf > 0, c_zero >= 0 and "
            f"c_inf + c_zero <= 1, got mu={mu!r}, c_inf={c_inf!r}, c_zero={c_zero!r}",
            parameter="mu" if not 0.0 < mu < 1.0 else "c_inf, c_zero",
            value=mu if not 0.0 < mu < 1.0 else (c_inf, c_zero),
        )


def _heavy_parts(layout: _Layout, log_tail: float) -> _Heavy:
    """The ε-independent inputs of :func:`_blocks_log_deltas` for one layout (:data:`_Heavy`),
    computed once when it is built (issue 32: they were recomputed at every ε, a few passes
    over every block), the same floats."""
    log_w, s_end, g_low, log_mass = layout[:4]
    weight = log_w[:, None] + log_mass
    mask = heavy_blocks(weight, log_tail)
    with np.errstate(divide="ignore"):
        light = log_mass + np.log(np.full(mask.shape, 2.0))  # light blocks: 2 per unit of mass
    return mask, s_end[mask], g_low[mask], weight[mask], log_mass[mask], light


def _blocks_log_deltas(
    layouts: Sequence[tuple[_Layout, _Heavy]], kappa: float, eps: float, log_tail: float
) -> list[float]:
    """:func:`~crowdhide.accounting.shuffle._krr_fast.clone_blocks_log_delta` of each layout
    (as :func:`_layout` gives it, with its :func:`_heavy_parts`): the bounds of every layout's
    heavy blocks in one call of the same elementwise function, then each layout's own
    reductions on its own array (:func:`~crowdhide.accounting.shuffle._krr_fast.blocks_total`'s
    steps, the light blocks' terms precomputed: the same floats)."""
    if not layouts:
        return []
    s = np.concatenate([heavy[1] for _, heavy in layouts])
    g = np.concatenate([heavy[2] for _, heavy in layouts])
    weight = np.concatenate([heavy[3] for _, heavy in layouts])
    h_all = deep_skipped_h(s, g, weight, kappa=kappa, eps=eps, log_tail=log_tail) if s.size else s
    with np.errstate(divide="ignore"):
        log_h = np.log(h_all)
    out, at = [], 0
    for (log_w, _, _, _, log_out, c_tail), (mask, *_, mass, light) in layouts:
        terms = light.copy()
        terms[mask] = mass + log_h[at : at + mass.size]
        at += mass.size
        out.append(terms_total(log_w, terms, log_out, c_tail))
    return out
