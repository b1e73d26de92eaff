"""Shuffle certificate for *every* ε0-LDP randomizer: split clones, maximised over the variation.

The bound ``variation_ratio`` of :mod:`crowdhide.accounting.shuffle.generic`. It reaches the value
Wang et al. (VLDB 2024, "variation ratio") give for a generic ε0-LDP randomizer — the clone
pair of Feldman, McMillan, Talwar (SODA 2023), clone probability ``2/(e^{ε0}+1)`` — to
within the blocking error, through a derivation that needs no condition beyond ε0-LDP.

**Derivation.** Write ``e = e^{ε0}``, ``κ = tanh(ε0/2)`` and, for the target's pair (P0, P1)
of report laws, ``β = TV(P0, P1)`` and ``μ = β/κ <= 1``. The three-point reduction of
:mod:`crowdhide.accounting.shuffle.mechanisms` maps the three-point pair Q(μ) on {+, 0, −}
onto (P0, P1) with the kernel ``A = K(+) = (P0 − P1)_+/β``, ``B = K(−)``,
``M = K(0) = π (1 − |D|/κ)/(1 − μ)``. Each other user's law R(v) dominates
``γ_+ (A + B) + γ_0 M`` pointwise with

    γ_+ = β/(e − 1),  γ_0 = (1 − μ)/e,

for *every* ε0-LDP randomizer: at a report y put ``c = min(P0, P1)(y)`` and
``a = |P0 − P1|(y)``, so ``0 <= a <= (e − 1) c`` (ε0-LDP), ``π(1 − |D|/κ) = c − a/(e − 1)``,
and the right-hand side is ``a/(e − 1) + (c − a/(e − 1))/e = (c + a)/e``, which is the least
R(v)(y) that ε0-LDP allows (``R(v) >= max(P0, P1)/e``). So every other user is an informative
clone with probability ``c_inf = 2γ_+ = 2μ/(e + 1)`` and an uninformative one with
probability ``c_zero = (1 − μ)/e``: the split clone system of
:mod:`crowdhide.accounting.shuffle._split_clone`, which bounds δ(ε) of the pair. (With ``μ = 1`` it
is the FMT23 pair. A smaller μ is *not* a post-processing of ``μ = 1``: garbling ± into 0
would make ``2(1 − μ)/(e + 1) > (1 − μ)/e`` uninformative clones. That is why the
supremum over μ is taken explicitly.)

**Supremum over μ, in cells.** Every pair has some μ in (0, 1]; the certificate is the
largest over a partition of (0, 1] into cells, each bounded by one evaluation:

* fewer clones of either kind can only raise δ (the adversary can turn residual users into
  clones), so a cell [μ_lo, μ_hi] may use ``c_inf(μ_lo)`` and ``c_zero(μ_hi)``;
* at fixed rates, the pair at μ is the mixture ``(μ/μ_hi) Q(μ_hi) + (1 − μ/μ_hi) (target
  reports 0)`` of the pair at μ_hi with a component that does not depend on the target's
  value; joint convexity of the hockey-stick divergence gives δ(μ) <= δ(μ_hi);
* the top cell [μ_lo, 1] is the one-rate system with an always-informative target
  (:func:`crowdhide.accounting.shuffle._krr_fast.clone_noise_log_delta`);
* a cell is also bounded by one report's total variation ``μ_hi κ`` (the shuffled output is
  a post-processing of the target's report and reports independent of it);
* the bottom region [0, μ_b] is bounded at once by the one-rate system of the three-point
  reduction with ``mu2 = μ_b`` and clone probability ``e^{−ε0}`` (every ε0-LDP randomizer
  has it; a larger mu2 is a garbling of every report alike, so it covers all smaller μ).
  Its weaker clone rate does not matter there, where δ(μ) is far below its value at μ = 1;
  μ_b is lowered until that holds.
* every cell is also bounded by ``μ_hi δ_top(c_inf(μ_lo))``: at fixed rates the pair at μ
  is μ times the pair at μ = 1 plus a component free of the target's value (joint
  convexity), and at μ = 1 the uninformative clones can be dropped (fewer clones). Near
  μ = 1 it is the tighter one.

**Restricted variation.** A randomizer whose pairs all have ``μ <= mu_max`` needs the
supremum over ``(0, mu_max]`` only (every step above holds pair by pair); the piecewise
mechanism, whose pairs have different μ up to ``(t² + 1)/(t(t + 1))``, ``t = e^{ε0/2}``,
gets its certificate this way (:mod:`crowdhide.accounting.shuffle.mechanisms`).

**Refinement** (issue 32). The cells are refined best first: the cell with the largest bound
is split (into equal parts in log μ, as many as its estimated width cost asks for) until
every cell is at most the level, the value of the pair at ``μ = mu_max`` with its own rates
plus the fall of log δ over a relative step :data:`EPS_RTOL` in ε (so the cells cost at most
about that fraction of ε), and each cell's split system is evaluated at finer blocks
(:data:`SPLIT_TIERS`) while it lands just above the level, or when its excess over the
level is more than its width explains (:func:`_next_requests`: it is evaluated at the next
resolution instead of split). :data:`MAX_EVALUATIONS` only
bounds a pathological case. Refinement only changes which valid bounds are combined, never
whether the result is one, and the result is a function of the arguments alone (no state
carried between calls). The cells of a round (the initial cells, a split's children, the
cells asking for a finer tier) are evaluated together (:func:`_cells_log_delta`: their
layouts and their blocked sums each in one vectorized call, issue 32), with the floats and
the decisions of one cell at a time. Cells a refinement is likely to ask for next (the
children of the next cells to split, the requests of a refinement at a nearby ε) are evaluated
along in the same calls (:mod:`crowdhide.accounting.shuffle._cell_memo`: the same floats, only
the work done ahead changes). :func:`start_tier` and :func:`finer_tier` are the
policy :mod:`crowdhide.accounting.shuffle._profile_batch` shares.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections.abc import Callable, Sequence

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle import _cell_memo, _coarse_children
from crowdhide.accounting.shuffle._coarse_children import CoarseChildren
from crowdhide.accounting.shuffle._deep_excess import DEEP_EXCESS_TAIL
from crowdhide.accounting.shuffle._krr_fast import CLONE_EXACT, clone_noise_log_delta
from crowdhide.accounting.shuffle._split_clone import (
    SplitSystem,
    split_clone_log_delta,
    split_clone_log_deltas,
    uninformative_share,
)
from crowdhide.errors import InvalidParameterError

__all__ = [
    "VariationRatio",
    "clone_rates",
    "one_report_log_delta",
    "variation_ratio_log_delta",
]

#: Initial cells (largest μ first). δ(μ) falls fast below μ = 0.9, so the top needs the
#: finest start. These are the leaves most queries used to refine to from the coarser
#: (1, 0.999, 0.995, 0.985, 0.96, 0.9, ...) (ε0 in {0.5 ... 8}, n in {1e3 ... 1e9}):
#: starting from them saves the evaluations of their parents, a third of the total.
TOP_EDGES = (
    1.0, 0.9995, 0.999, 0.99766, 0.99633, 0.995, 0.99166, 0.98832, 0.985, 0.9766, 0.96826,
    0.96, 0.92952, 0.9, 0.82, 0.7, 0.5, 0.3, 0.15, 0.05,
)  # fmt: skip
#: Below the tail level ``_deep_excess.DEEP_EXCESS_TAIL`` (δ below 1e-280) the split cells
#: deep blocks take their excesses' own geometric bound and sit several units of log δ below
#: the reference (the one-rate top system keeps its looser deep bound), so the supremum is the
#: top cell's mixture bound, ``μ_hi δ_top(c_inf(μ_lo))``: these edges make it narrow (about
#: 700 · 1e-5 above the reference at δ = 1e-300) whatever the level, which varied with the
#: top system's staircase in ε and made the ε search take 13 suprema
#: (docs/proofs/variation-ratio.md, §11).
DEEP_TOP_EDGES = (0.99999, 0.9999)
#: Below that tail level no cell is evaluated at the coarsest resolution (``SPLIT_TIERS[0]``):
#: there its blocks sit 30-60 above the next resolution's in log δ (ε0 = 2, n = 1e4,
#: δ = 1e-300, μ near 0.77: −690.7 against −730.2), and cells refined at it until they were
#: just below the level set the supremum, a staircase in ε on which the ε search took 11
#: suprema (§11).
DEEP_LOWEST_TIER = 1
#: Cells starting at or above this μ start at the finest resolution (the cells near μ = 1
#: needed it in every query measured: starting coarser costs an evaluation each).
FINE_ABOVE = 0.985
#: The bottom region [0, μ_b] starts at the last edge and is lowered by this factor, at most
#: this many times, while its bound is above the refinement level.
BOTTOM_FACTOR = 0.25
BOTTOM_STEPS = 12
#: The refinement level sits above the reference value (the pair at μ = mu_max) by what
#: log δ falls over a relative step :data:`EPS_RTOL` in ε (measured on the one-rate top
#: system): the cells then cost at most about that fraction of ε, whatever the slope of
#: log δ (0.01 in log δ is 0.03 % of ε at δ = 1e-10 but 0.4 % at n = 1e9, δ = 1e-6) ...
EPS_RTOL = 4e-4
#: ... clipped to this range (in log δ): not finer than the blocked sums resolve; its upper
#: end is the widest slack where the fall is not finite (beyond the top system's reach) ...
SLACK_RANGE = (2e-4, 0.03)
#: ... and, where the fall is finite, not above this. It was SLACK_RANGE's 0.03 (the former
#: fixed slack) until s34-tiny (issue 32): the fall grows with |log δ| (ε0 = 2, n = 1e4: 0.006
#: at δ = 1e-6, 0.16 at 1e-100, 0.38 at 1e-300), and so does the width cost of a cell (the top
#: system's slope in log μ: 8, 223, 708), so with the level held at 0.03 a tiny δ asked for
#: ever more cells, about 1/|log δ| of EPS_RTOL in ε (2e-5 at 1e-300), and spent the budget;
#: at the fall itself the cells cost about EPS_RTOL of ε whatever δ (docs/proofs/variation-ratio.md,
#: §10). 1.0 is above every fall measured (0.55 at most) and only guards the estimate. Only
#: at tail levels below :data:`DEEP_TAIL` (δ below 1e-20): above it the fall can exceed 0.03
#: too near ε0 (ε0 = 4, n = 1e3, δ = 1e-10), and those answers and times are left as they were.
SLACK_CAP = 1.0
DEEP_TAIL = math.log(1e-20) - 40.0
#: ... and exceeds ``log_tail`` by more than this: cells far below the δ being solved for
#: (the tail level is the target's e^-40 there) need no refinement.
REFINE_FLOOR = 14.0
#: Resolutions of a cell's split-system evaluation, coarse to fine: blocks of clone counts,
#: blocks of informative counts, and the relative count change η a block may span. A cell
#: above the level is evaluated again at the next one when it is at most
#: :data:`TIER_MARGIN` above the level (farther above, the cell is too wide rather than
#: the blocks too coarse: it is split). The clone-count blocking is the one that matters
#: (ε0 = 4, n = 1e4, δ = 1e-6, μ = 0.9961, in log δ above the FMT23 pair: +0.031 at
#: 64 x 192 blocks and η = 0.05, -0.010 at 128 x 64 and η = 0.025, -0.036 at 512 x 64 and
#: η = 0.0125; 64 x 768 changes nothing).
SPLIT_TIERS: tuple[tuple[int, int, float], ...] = (
    (16, 48, 0.05),
    (128, 64, 0.025),
    (512, 64, 0.0125),
)
TIER_MARGIN = (0.5, 0.06)
#: Cells below this μ start at the coarsest resolution (nearer μ = 1 it is too loose to be
#: worth it: they start at the second).
COARSE_BELOW = 0.9
#: Clone-count blocks of the one-rate bound with an always-informative target (the top cell
#: and the mixture bound of every cell): it has a single s column, so it is cheap at this
#: resolution, and at 128 blocks it sat up to 0.08 above the FMT23 pair in log δ.
TOP_POINTS = 1024
#: Cells reaching above this μ are also bounded by the mixture bound (below it is loose:
#: +0.86 above the FMT23 pair in log δ for μ in [0.90, 0.93] at ε0 = 4, n = 1e4). From the
#: initial cells of :data:`TOP_EDGES` on, it was never the least member of a cell below
#: μ = 1 (six queries, ε0 in {0.5 ... 8}, n in {1e3 ... 1e9}: 260 cells with μ_hi in
#: [0.98, 0.9999]), and each costs a top system of its own: only the top cells take it.
MIXTURE_ABOVE = 0.9995
#: An initial cell tried one tier coarser first is kept there if its bound is at most the
#: reference plus this (in log δ). 0: no cell kept coarse is above the reference, which the
#: supremum is about (the top cell alone is at least it), so the result is that of the finer
#: tiers (tests/accounting/test_variation_ratio_refinement.py; 1 % more changes it).
COARSE_MARGIN = 0.0
#: ... and only where the mean clone count is at most this: beyond, the informative counts'
#: windows are narrow against the counts, every tier takes a few blocks of them and costs
#: about the same (n = 1e9, ε0 <= 4: 0.5-0.8x with the coarser first try; the restricted
#: search goes on where the tiers' blocks differ: :func:`_coarse_first`).
COARSE_MAX_CLONES = 1e6
#: The initial cells of a start tier stop being tried one tier coarser first
#: (:func:`_initial_heap`) once fewer than this share of those tried were kept there.
COARSE_KEPT = 0.5
#: Cells narrower than this ratio are not split further.
MIN_CELL_RATIO = 1.0 + 1e-7
#: A cell above the level is split into as many equal parts (in log μ) as its estimated
#: width cost asks for (:func:`_children`), between 2 and this many: going there in halvings
#: evaluates every intermediate cell too (ε0 = 6, n = 1e4, δ = 1e-10: 127 evaluations in
#: halvings), only to discard it.
MAX_CHILDREN = 8
#: The width cost is measured on the top system between μ_max and μ_max times this.
COST_STEP = 0.99
#: Split-system evaluations per δ after which the refinement goes on only while the largest
#: cell costs more than :data:`EPS_RTOL` of ε (its excess over the reference above the
#: unclipped fall of log δ over that step: :data:`SLACK_RANGE` can hold the level finer than
#: that, and ε0 = 4, n = 1e3, δ = 1e-10 then spent 160 evaluations for 0.03 % of ε) ...
SOFT_EVALUATIONS = 96
#: ... and the bound on them whatever the cells (each one is a blocked, O(1)-in-n sum). At
#: 96 ε0 = 6, n = 1e4, δ = 1e-10 stopped at 1.0027x the FMT23 pair's ε (1.0004x at 160).
MAX_EVALUATIONS = 160


def clone_rates(mu: float, eps0: float) -> tuple[float, float]:
    """Probabilities ``(c_inf, c_zero)`` that another user is an informative / an
    uninformative clone, for a target pair with ``μ = TV/tanh(ε0/2)`` (module docstring).

    Examples
    --------
    >>> import math
    >>> c_inf, c_zero = clone_rates(1.0, math.log(3.0))   # μ = 1: the FMT23 clone rate
    >>> round(c_inf, 12), c_zero
    (0.5, 0.0)
    """
    e = math.exp(eps0)  # 1 − μ from μ raised: near μ = 1 it magnifies μ's rounding
    return 2.0 * mu / (e + 1.0), uninformative_share(mu) / e


def one_report_log_delta(eps: float, eps0: float) -> float:
    """``log δ(ε)`` of one ε0-LDP report, ``ε < ε0``: at worst binary RR,
    ``(e^{ε0} − e^ε)/(e^{ε0} + 1)``. Shuffling only post-processes it, so it bounds every
    shuffle certificate; used where the others' terms underflow (ε0 beyond ~38, or below
    ~1e-150 for the blanket bounds).

    Examples
    --------
    >>> import math
    >>> round(math.exp(one_report_log_delta(0.0, math.log(3.0))), 12)   # (3 − 1)/(3 + 1)
    0.5
    """
    return math.log(-math.expm1(eps - eps0)) - math.log1p(math.exp(-eps0))


@functools.lru_cache(maxsize=256)  # a pure function: each cell's tiers ask it again
def _top_log_delta(n: int, eps0: float, log_lo: float, eps: float, log_tail: float) -> float:
    """The one-rate system with an always-informative target and ``c_inf(e^log_lo)``
    informative clones only: at μ = 1 no uninformative clone hides anything, and fewer
    clones of either kind only raise δ."""
    c_inf = clone_rates(math.exp(log_lo), eps0)[0]
    return clone_noise_log_delta(n, kappa_up(eps0), 1.0, c_inf, eps, log_tail, c_points=TOP_POINTS)


def _mixture_log_delta(
    n: int, eps0: float, log_lo: float, log_hi: float, eps: float, log_tail: float
) -> float:
    """``log(μ_hi δ_top(c_inf(μ_lo)))``, a bound for every pair with μ in ``[e^log_lo,
    e^log_hi]``: drop the uninformative clones and lower the informative rate to the cell's
    least (fewer clones only raise δ); then the target's law at μ is ``μ`` times its law at
    μ = 1 plus ``1 − μ`` times a report 0 free of its value, and joint convexity of the
    hockey-stick divergence gives ``μ δ_top`` (docs/proofs/variation-ratio.md, §6.1)."""
    return _top_log_delta(n, eps0, log_lo, eps, log_tail) + min(log_hi, 0.0)


def _cell_log_delta(
    n: int,
    eps0: float,
    log_lo: float,
    log_hi: float,
    eps: float,
    log_tail: float,
    *,
    tier: int = 1,
) -> float:
    """Upper bound on ``log δ(ε)`` for every pair with μ in ``[e^log_lo, e^log_hi]``
    (``tier``: the resolution, :data:`SPLIT_TIERS`): :func:`_cells_log_delta` of one cell."""
    return _cells_log_delta(n, eps0, [((log_lo, log_hi), tier)], eps, log_tail)[0]


_Request = tuple[tuple[float, float], int]


def _cells_log_delta(
    n: int, eps0: float, requests: Sequence[_Request], eps: float, log_tail: float
) -> list[float]:
    """Per ``(cell, tier)`` of ``requests`` an upper bound on ``log δ(ε)`` for every pair with
    μ in ``[e^log_lo, e^log_hi]`` at the resolution ``tier`` (:data:`SPLIT_TIERS`), the least
    of three: the split system at the cell's corner rates, one report's variation, and the
    mixture bound (:func:`_mixture_log_delta`). Proved in docs/proofs/variation-ratio.md,
    §6.1. The split systems of all cells are summed in one vectorized call
    (:func:`~crowdhide.accounting.shuffle._split_clone.split_clone_log_deltas`): the same
    floats as one cell at a time, without each sum's fixed cost."""
    kappa = kappa_up(eps0)
    out: list[float] = []
    systems: list[SplitSystem] = []
    where: list[int] = []
    for (log_lo, log_hi), tier in requests:
        tv_bound = log_hi + math.log(kappa)
        c_inf = clone_rates(math.exp(log_lo), eps0)[0]
        if c_inf < 1e-300:  # no informative clones to speak of: one report's variation
            out.append(tv_bound)
            continue
        if log_hi < math.log(MIXTURE_ABOVE):  # far from μ = 1 the mixture bound is loose
            mixture = math.inf
        else:
            mixture = _mixture_log_delta(n, eps0, log_lo, log_hi, eps, log_tail)
        out.append(min(mixture, tv_bound))
        if log_hi < 0.0:
            mu_hi = math.exp(log_hi)
            systems.append((mu_hi, c_inf, clone_rates(mu_hi, eps0)[1], *SPLIT_TIERS[tier]))
            where.append(len(out) - 1)
    split = split_clone_log_deltas(n, kappa, systems, eps, log_tail)
    for i, value in zip(where, split, strict=True):
        out[i] = min(value, out[i])
    return out


def _initial_cells(mu_max: float, log_tail: float = 0.0) -> list[tuple[float, float]]:
    """Cells as ``(log_lo, log_hi)`` from ``mu_max`` down to the bottom edge, largest μ
    first; below :data:`DEEP_EXCESS_TAIL` with the :data:`DEEP_TOP_EDGES` as well."""
    deep = DEEP_TOP_EDGES if log_tail < DEEP_EXCESS_TAIL else ()
    edges = [math.log(mu_max * mu) for mu in TOP_EDGES[:1] + deep + TOP_EDGES[1:]]
    return list(zip(edges[1:], edges[:-1], strict=True))


def _reference(n: int, eps0: float, mu_max: float, eps: float, log_tail: float) -> float:
    """The value of the pair at ``μ = mu_max`` exactly, with its own clone rates: not a
    bound for any cell, but the level worth refining to (the supremum is about there)."""
    if mu_max >= 1.0:
        return _top_log_delta(n, eps0, 0.0, eps, log_tail)
    c_inf, c_zero = clone_rates(mu_max, eps0)
    return split_clone_log_delta(n, kappa_up(eps0), mu_max, c_inf, c_zero, eps, log_tail)


def _slack(n: int, eps0: float, mu_max: float, eps: float, log_tail: float) -> tuple[float, float]:
    """How far above the reference the cells may stay (:data:`EPS_RTOL`): the fall of the
    top system's log δ over a relative step EPS_RTOL in ε, at least ``SLACK_RANGE[0]`` and
    at most :data:`SLACK_CAP` (``SLACK_RANGE[1]`` above :data:`DEEP_TAIL`), and unclipped
    (both ``SLACK_RANGE[1]`` where the fall is not finite)."""
    log_top = math.log(mu_max)
    here = _top_log_delta(n, eps0, log_top, eps, log_tail)
    further = _top_log_delta(n, eps0, log_top, eps * (1.0 + EPS_RTOL), log_tail)
    drop = here - further
    if not math.isfinite(drop):  # -inf beyond the top system's reach: the widest slack
        return SLACK_RANGE[1], SLACK_RANGE[1]
    cap = SLACK_CAP if log_tail < DEEP_TAIL else SLACK_RANGE[1]
    return min(max(drop, SLACK_RANGE[0]), cap), drop


def _bottom_log_delta(n: int, eps0: float, mu_b: float, eps: float, log_tail: float) -> float:
    """Bound for every pair with ``μ <= mu_b``: the one-rate system with ``mu2 = mu_b`` and
    clone probability ``e^{-ε0}`` (valid for every ε0-LDP randomizer, and non-decreasing in
    mu2 because garbling every report alike is a post-processing), or one report's
    variation."""
    kappa = kappa_up(eps0)
    value = clone_noise_log_delta(n, kappa, mu_b, math.exp(-eps0), eps, log_tail)
    return min(value, math.log(mu_b * kappa))


def variation_ratio_log_delta(
    n: int, eps0: float, eps: float, log_tail: float, *, mu_max: float = 1.0
) -> float:
    """Upper bound on ``log δ(ε)`` of n shuffled reports of any ε0-LDP randomizer
    (module docstring), at most MAX_EVALUATIONS blocked evaluations whatever n.

    ``mu_max`` (in (0, 1]) restricts the randomizer to pairs with ``μ <= mu_max``: the
    supremum is then taken over ``(0, mu_max]`` only, with every cell scaled by it. A
    mechanism whose largest total variation is ``mu_max · tanh(ε0/2)`` (the piecewise
    mechanism) gets its own, tighter certificate this way; the derivation is unchanged.

    Examples
    --------
    >>> import math
    >>> from crowdhide.accounting.shuffle import _pairs as pairs
    >>> n, eps0 = 10_000, 1.0
    >>> fmt23 = pairs.clone_pair_log_delta(n, eps0, 2 / (math.e + 1), 0.05, -60)
    >>> here = variation_ratio_log_delta(n, eps0, 0.05, -60)
    >>> 0.0 <= here - fmt23 < 0.1        # the FMT23 value, up to the blocking error
    True
    """
    return VariationRatio(n, eps0, mu_max=mu_max)(eps, log_tail)


class VariationRatio:
    """:func:`variation_ratio_log_delta` for fixed ``(n, ε0, mu_max)``, called as
    ``(eps, log_tail)``.

    The value is a function of its arguments alone (issue 32: it used to start from the
    cells of the previous call, so a curve's δ depended on the order of the queries). The
    refinement is cached per argument tuple (:func:`_supremum`), and the blocked layouts it
    uses are cached per their own arguments, so a repeated or nearby query is faster, never
    different. :attr:`last_partition` is the partition the last call ended with (the cells
    above the bottom edge ``e^{mu_b}``), for the tests.

    Examples
    --------
    >>> bound = VariationRatio(10_000, 1.0)
    >>> first = bound(0.05, -60.0)
    >>> _ = bound(0.2, -60.0)
    >>> bound(0.05, -60.0) == first == VariationRatio(10_000, 1.0)(0.05, -60.0)
    True
    """

    def __init__(self, n: int, eps0: float, *, mu_max: float = 1.0) -> None:
        if not 0.0 < mu_max <= 1.0:
            raise InvalidParameterError(
                f"mu_max must be in (0, 1]; got {mu_max!r}", parameter="mu_max", value=mu_max
            )
        self.n, self.eps0, self.mu_max = n, eps0, mu_max
        self.last_partition: tuple[tuple[float, float], ...] = ()
        self.last_mu_b = mu_max * TOP_EDGES[-1]

    def __call__(self, eps: float, log_tail: float) -> float:
        n, eps0, mu_max = self.n, self.eps0, self.mu_max
        if eps >= eps0:
            return -math.inf
        if kappa_up(eps0) >= 1.0:  # ε0 >= ~38: no clones to speak of; δ scales with μ
            return one_report_log_delta(eps, eps0) + math.log(mu_max)
        value, self.last_partition, self.last_mu_b = _supremum(n, eps0, mu_max, eps, log_tail)
        return value

    def reference(self, eps: float, log_tail: float) -> float:
        """``log δ`` of the pair at ``μ = mu_max`` with its own clone rates, blocked: not a
        bound for every pair, but about the certificate's value and (up to the blocking) below
        it, so a floor for its ε search; one single-column system where ``mu_max = 1``.

        Examples
        --------
        >>> bound = VariationRatio(10_000, 1.0)
        >>> bound.reference(0.05, -60.0) <= bound(0.05, -60.0)
        True
        """
        if eps >= self.eps0:
            return -math.inf
        if kappa_up(self.eps0) >= 1.0:
            return one_report_log_delta(eps, self.eps0) + math.log(self.mu_max)
        return _reference(self.n, self.eps0, self.mu_max, eps, log_tail)


#: Arguments of the last few refinements (an ε search evaluates one (n, ε0, δ) a few times
#: at a few ε; a repeated query finds its values here). Each entry is a few hundred floats.
_SUPREMUM_CACHE = 1024


def _clear_caches() -> None:
    """Empty this module's caches (tests that patch its functions or constants call it: the
    cached values were computed with the unpatched ones)."""
    _supremum.cache_clear()
    _top_log_delta.cache_clear()
    _cell_memo.LOGS.clear()


@functools.lru_cache(maxsize=_SUPREMUM_CACHE)
def _supremum(
    n: int, eps0: float, mu_max: float, eps: float, log_tail: float
) -> tuple[float, tuple[tuple[float, float], ...], float]:
    """``(bound, leaves, μ_b)``: the largest bound over a partition of ``(0, mu_max]`` into the
    bottom region ``[0, μ_b]`` and cells, refined best first (always the cell with the
    largest bound, split into :func:`_children` equal parts in log μ: :func:`_refine`)
    until every cell is at most the level (reference plus :func:`_slack`), or a cell is
    narrower than :data:`MIN_CELL_RATIO`, or :data:`MAX_EVALUATIONS` split evaluations
    are spent, or (past :data:`SOFT_EVALUATIONS`) the cells cost at most EPS_RTOL of ε.
    Any partition gives a valid bound; the refinement only chooses which. A pure
    function of its arguments."""
    base = max(_reference(n, eps0, mu_max, eps, log_tail), log_tail + REFINE_FLOOR)
    slack, drop = _slack(n, eps0, mu_max, eps, log_tail)
    level, enough = base + slack, base + max(slack, drop)
    cells = _initial_cells(mu_max, log_tail)
    # The bottom region [0, μ_b]: lowered (and the released range handed to the cells)
    # while its one-rate bound is above the level.
    mu_b = mu_max * TOP_EDGES[-1]
    bottom = _bottom_log_delta(n, eps0, mu_b, eps, log_tail)
    for _ in range(BOTTOM_STEPS):
        if bottom <= level:
            break
        cells.append((math.log(mu_b * BOTTOM_FACTOR), math.log(mu_b)))
        mu_b *= BOTTOM_FACTOR
        bottom = _bottom_log_delta(n, eps0, mu_b, eps, log_tail)
    log_top = math.log(mu_max)
    # the cells a refinement at a nearby ε asked for, evaluated ahead in batches (the same
    # floats: _cell_memo's docstring)
    logged = (n, eps0, mu_max, log_tail)
    raw = _cell_memo.CellMemo(
        functools.partial(_evaluate_cells, n, eps0, eps=eps, log_tail=log_tail),
        _cell_memo.LOGS.nearest(logged, eps),
    )
    at = functools.partial(_refined_cells, raw, level=level)
    restricted = mu_max < 1.0  # the capped search of a mechanism (§1q)
    coarse = functools.partial(_coarse_first, n, eps0, log_tail=log_tail, restricted=restricted)
    lowest = lowest_tier(log_tail)
    heap, evaluations = _initial_heap(
        cells, log_top, (at, raw), coarse, base + COARSE_MARGIN, lowest=lowest
    )
    rate = _width_rate(n, eps0, mu_max, eps, log_tail)
    # a split's children tried one tier coarser first (the restricted search only: §1q)
    first = CoarseChildren(raw, base + COARSE_MARGIN, coarse, lowest) if restricted else None
    entries = _refine(heap, at, evaluations, (level, enough), rate, raw.hint, first)
    if first is not None:  # a kept child above every other leaf: at its own tier after all
        entries = first.settle(entries, bottom)
    _cell_memo.LOGS.remember(logged, eps, raw.asked)
    best = max(bottom, max(-entry[0] for entry in entries))
    return best, tuple(sorted(entry[1] for entry in entries)), mu_b


_Entry = tuple[float, tuple[float, float], int]
#: A cell to refine (:func:`_refined_cells`): the cell, the resolution it is evaluated at
#: next, the least bound it has so far and the evaluations that took.
_Start = tuple[tuple[float, float], int, float, int]
_Refined = Callable[[Sequence[_Start]], list[tuple[float, int, int]]]


def start_tier(cell: tuple[float, float], log_top: float) -> int:
    """The resolution (:data:`SPLIT_TIERS`) an initial cell starts at, ``log_top`` the log of
    ``mu_max``: :data:`COARSE_BELOW` / :data:`FINE_ABOVE` (the refinement policy, shared with
    :mod:`crowdhide.accounting.shuffle._profile_batch`)."""
    if cell[0] - log_top >= math.log(FINE_ABOVE):
        return len(SPLIT_TIERS) - 1
    return 0 if cell[1] - log_top <= math.log(COARSE_BELOW) else 1


def lowest_tier(log_tail: float) -> int:
    """The coarsest resolution a cell is evaluated at: below ``DEEP_EXCESS_TAIL`` the
    second (:data:`DEEP_LOWEST_TIER`), else the first. A choice of bounds, never of validity."""
    return DEEP_LOWEST_TIER if log_tail < DEEP_EXCESS_TAIL else 0


def finer_tier(value: float, level: float, tier: int) -> bool:
    """Whether a cell evaluated at ``tier`` to ``value`` is evaluated again at the next
    resolution: it lands above ``level`` by at most :data:`TIER_MARGIN` (farther above, the
    cell is too wide rather than the blocks too coarse: it is split). The refinement policy,
    shared with :mod:`crowdhide.accounting.shuffle._profile_batch`."""
    return tier + 1 < len(SPLIT_TIERS) and level < value <= level + TIER_MARGIN[tier]


def _initial_heap(
    cells: list[tuple[float, float]],
    log_top: float,
    evaluate: tuple[_Refined, Callable[[Sequence[_Request]], list[float]]],
    coarse: Callable[[tuple[float, float]], bool],
    base: float,
    *,
    lowest: int = 0,
) -> tuple[list[_Entry], int]:
    """The initial cells evaluated (a heap of ``(-bound, cell, tier)``) and the evaluations
    spent. A cell starts at :func:`start_tier`, or (where ``coarse(cell)``) one tier coarser
    first, kept there if at most ``base`` (the reference). Per start tier that first try is
    given up once it was kept in fewer than :data:`COARSE_KEPT` of the cells tried (it costs
    an evaluation where it is not kept: at ε0 = 8 the coarser tiers sit 0.02-0.2 above the
    finer ones in log δ). The cells go from the bottom up (the lower ones are kept more
    often); the heap does not depend on the order.

    ``evaluate`` is ``(refined, raw)``: :func:`_refined_cells` and :func:`_cells_log_delta`
    bound to the query; the coarser tries are made in a few batched calls
    (:func:`_coarse_tries`), then the cells not done get their own tiers in one round."""
    refined, raw = evaluate
    order = list(reversed(cells))
    tiers = [max(start_tier(cell, log_top), lowest) for cell in order]
    candidate = [t > lowest and c[1] < 0.0 and coarse(c) for c, t in zip(order, tiers, strict=True)]
    tries = _coarse_tries(
        [(c, t - 1) for c, t in zip(order, tiers, strict=True)], candidate, raw, base
    )
    results: list[tuple[float, int, int] | None] = []
    starts: list[_Start] = []
    for i, (cell, tier) in enumerate(zip(order, tiers, strict=True)):
        first, value = i in tries, tries.get(i, math.inf)
        if first and value <= base:  # at most the reference: done, whatever tier says
            results.append((value, tier - 1, 1))
        else:
            results.append(None)
            starts.append((cell, tier, value, int(first)))
    finished = iter(refined(starts))
    heap: list[_Entry] = []
    evaluations = 0
    for cell, result in zip(order, results, strict=True):
        value, end_tier, used = result if result is not None else next(finished)
        evaluations += used
        heapq.heappush(heap, (-value, cell, end_tier))
    return heap, evaluations


def _coarse_tries(
    coarser: Sequence[_Request],
    candidate: Sequence[bool],
    raw: Callable[[Sequence[_Request]], list[float]],
    base: float,
) -> dict[int, float]:
    """The coarser first tries of :func:`_initial_heap` (cell index -> bound), exactly those
    its rule makes one cell at a time: a candidate of a start tier is tried while fewer than
    two were or at least :data:`COARSE_KEPT` of those tried were kept (at most ``base``).
    Made in waves: per tier the next candidates the rule tries even if none of them is kept,
    all tiers in one call; a tier whose next candidate is not tried tries none after it
    (its counts no longer change)."""
    tiers = [request[1] + 1 for request in coarser]
    queues = {t: [i for i, w in enumerate(candidate) if w and tiers[i] == t] for t in set(tiers)}
    tried = dict.fromkeys(queues, 0)
    kept = dict.fromkeys(queues, 0)
    values: dict[int, float] = {}
    while True:
        wave: list[int] = []
        for tier, queue in queues.items():
            m = 0
            while m < len(queue) and (
                tried[tier] + m < 2 or kept[tier] >= COARSE_KEPT * (tried[tier] + m)
            ):
                m += 1
            wave += queue[:m]
            queue[:] = queue[m:] if m else []
        if not wave:
            return values
        for i, value in zip(wave, raw([coarser[i] for i in wave]), strict=True):
            values[i] = value
            tried[tiers[i]] += 1
            kept[tiers[i]] += value <= base


#: While a cell is split, the children of the next this many cells above the level are
#: evaluated with its own (:func:`_refine`'s ``hint``): the refinement splits them next if
#: the new children do not overtake them, and one batched call costs far less than several.
AHEAD = 3


def _refine(
    heap: list[_Entry],
    at: _Refined,
    evaluations: int,
    levels: tuple[float, float],
    rate: float,
    hint: Callable[[Sequence[_Request]], None] | None = None,
    coarse: CoarseChildren | None = None,
) -> list[_Entry]:
    """The refinement of :func:`_supremum`: the cell with the largest bound (a heap of
    ``(-bound, cell, tier)``) is split into :func:`_children` equal parts in log μ, all
    evaluated by one call ``at(children)`` (:func:`_refined_cells`, from the resolution the
    parent needed), or evaluated itself at the next resolution (:func:`_next_requests`),
    until every cell is at most the level or a budget is spent. Returns the leaves. ``hint``
    (:meth:`~crowdhide.accounting.shuffle._cell_memo.CellMemo.hint`) is told what the next
    :data:`AHEAD` cells above the level would ask for, before each step: it may evaluate
    them along (the same floats), never changes a value. ``coarse`` (the restricted search):
    a split's children are tried one tier coarser first (:mod:`._coarse_children`)."""
    level, enough = levels
    narrow: list[_Entry] = []
    tiers = len(SPLIT_TIERS)
    while heap and -heap[0][0] > level and evaluations + 2 * tiers <= MAX_EVALUATIONS:
        if evaluations + 2 * tiers > SOFT_EVALUATIONS and -heap[0][0] <= enough:
            break  # past the soft budget only while the cells cost more than EPS_RTOL
        entry = heapq.heappop(heap)
        if entry[1][1] - entry[1][0] <= math.log(MIN_CELL_RATIO):
            narrow.append(entry)
            continue
        if hint is not None:
            hint(
                [
                    request
                    for other in heapq.nsmallest(AHEAD, heap)
                    if -other[0] > level and other[1][1] - other[1][0] > math.log(MIN_CELL_RATIO)
                    for request in _first_requests(other, (level, rate), evaluations, coarse)
                ]
            )
        requests = _next_requests(entry, level, rate, evaluations)
        for (cell, _), (value, cell_tier, used) in zip(
            requests, _coarse_children.evaluate_requests(entry, requests, at, coarse), strict=True
        ):
            evaluations += used
            heapq.heappush(heap, (-value, cell, cell_tier))
    return heap + narrow


def _first_requests(
    entry: _Entry, at: tuple[float, float], evaluations: int, coarse: CoarseChildren | None
) -> list[_Request]:
    """What :func:`_refine` evaluates first for ``entry`` (``at = (level, rate)``; its hint for
    the cells ahead): :func:`_next_requests`, the tried children one tier coarser."""
    requests = _next_requests(entry, at[0], at[1], evaluations)
    return requests if coarse is None else coarse.first(entry, requests)


def _next_requests(entry: _Entry, level: float, rate: float, evaluations: int) -> list[_Request]:
    """What :func:`_refine` evaluates for a cell above the level: the cell itself at the next
    resolution where its excess over the level is more than its width explains (the width
    estimate of :func:`_children` says no split reaches the level: the blocks are too
    coarse, and splitting keeps their error; issue 32: at ε0 = 2, n = 1e4, δ = 1e-300 cells
    of width 1e-7 near μ = 0.9 mu_max sat 26-35 above the level at the coarsest resolution,
    32 below it at the next, while the refinement spent its budget splitting them), else its
    :func:`_split` children at its own resolution."""
    (log_lo, log_hi), tier = entry[1], entry[2]
    if tier + 1 < len(SPLIT_TIERS) and level + entry[0] + rate * (log_hi - log_lo) <= 0.0:
        return [(entry[1], tier + 1)]
    return [(child, tier) for child in _split(entry, level, rate, evaluations)]


def _split(entry: _Entry, level: float, rate: float, evaluations: int) -> list[tuple[float, float]]:
    """The children of a cell :func:`_refine` splits after ``evaluations`` evaluations:
    :func:`_children` equal parts in log μ, at most as many as the budget has room for."""
    (log_lo, log_hi), tiers = entry[1], len(SPLIT_TIERS)
    parts = _children(-entry[0], level, log_hi - log_lo, rate)
    parts = max(2, min(parts, (MAX_EVALUATIONS - evaluations) // tiers))
    step = (log_hi - log_lo) / parts
    edges = [log_lo] + [log_lo + j * step for j in range(1, parts)] + [log_hi]
    return list(itertools.pairwise(edges))


def _width_rate(n: int, eps0: float, mu_max: float, eps: float, log_tail: float) -> float:
    """How fast a cell's bound exceeds the supremum inside it per unit of its width in log μ
    (its corner takes the informative clone rate at μ_lo): the rise of the top system's
    log δ as its clone rate falls by the factor :data:`COST_STEP` (0 if not finite)."""
    log_top = math.log(mu_max)
    here = _top_log_delta(n, eps0, log_top, eps, log_tail)
    lower = _top_log_delta(n, eps0, log_top + math.log(COST_STEP), eps, log_tail)
    rate = (lower - here) / -math.log(COST_STEP)
    return rate if math.isfinite(rate) and rate > 0.0 else 0.0


def _children(value: float, level: float, width: float, rate: float) -> int:
    """Into how many equal parts a cell above ``level`` is split: its bound ``value`` is
    taken to exceed the supremum inside it by ``rate · width``, so parts of width
    ``width/k`` come to the level for ``k >= rate·width/(level − value + rate·width)`` (a
    quarter more for the estimate's error), 2 to :data:`MAX_CHILDREN`; halved where the
    estimate says splitting alone does not reach the level (the blocking does: a finer tier).
    Any choice gives a valid partition; this one only saves evaluations.

    Examples
    --------
    >>> _children(-22.9, -23.0, 0.01, 20.0)   # cost 0.2, room 0.1: 1.25 x 2 -> 3 parts
    3
    >>> _children(-22.5, -23.0, 0.01, 20.0)   # the estimate says no split reaches the level
    2
    """
    cost = rate * width
    room = level - value + cost
    if room <= 0.0:
        return 2
    return min(max(math.ceil(1.25 * cost / room), 2), MAX_CHILDREN)


def _coarse_first(
    n: int, eps0: float, cell: tuple[float, float], *, log_tail: float, restricted: bool = False
) -> bool:
    """Whether the cell's clone-count window is wider than :data:`CLONE_EXACT` (a Bernstein
    estimate of its width), so the coarser resolutions block it into fewer counts than the
    finer ones (a tier-2 evaluation then costs 4-6 times a tier-1 one and 10-20 times a
    tier-0 one, at n = 1e4-1e6; below that width all cost about the same), and the mean
    clone count is at most :data:`COARSE_MAX_CLONES`. A ``restricted`` search (``mu_max <
    1``) also tries it beyond that count where the middle resolution is held at its most
    clone blocks (a block spans a relative change η/L of the count:
    ``_split_clone._clone_width``), so the tiers cost about their block counts, 1 : 8 : 32
    (issue 32: n = 1e9 at δ = 1e-300)."""
    c_inf, c_zero = clone_rates(math.exp(cell[0]), eps0)[0], clone_rates(math.exp(cell[1]), eps0)[1]
    p, big_l = min(c_inf + c_zero, 1.0), -log_tail
    half = big_l / 3.0 + math.sqrt(big_l**2 / 9.0 + 2.0 * (n - 1) * p * (1.0 - p) * big_l)
    if not 2.0 * half > CLONE_EXACT:
        return False
    mean, (points, _, eta) = (n - 1) * p, SPLIT_TIERS[1]
    capped = 2.0 * half * big_l >= points * eta * max(mean - half, 1.0)
    return mean <= COARSE_MAX_CLONES or (restricted and capped)


def _evaluate_cells(
    n: int, eps0: float, requests: Sequence[_Request], *, eps: float, log_tail: float
) -> list[float]:
    """:func:`_cells_log_delta`, looked up when called (tests patch it)."""
    return _cells_log_delta(n, eps0, requests, eps, log_tail)


def _refined_cells(
    evaluate: Callable[[Sequence[_Request]], list[float]],
    starts: Sequence[_Start],
    *,
    level: float,
) -> list[tuple[float, int, int]]:
    """Per ``(cell, tier, value, used)`` of ``starts`` (a bound it has so far, ``inf`` if
    none, and the evaluations that took): the cell's bound, the resolution it ended at and
    the evaluations it took, evaluated at ``tier`` and again at the next resolution while
    :func:`finer_tier` says so (every resolution gives a valid bound: the least is kept).
    Each round evaluates all the cells that need it in one ``evaluate`` call
    (:func:`_cells_log_delta` of the query's ``(n, ε0, ε, log_tail)``); each cell ends as it
    would alone."""
    tiers = [start[1] for start in starts]
    values = [start[2] for start in starts]
    used = [start[3] for start in starts]
    active = list(range(len(starts)))
    while active:
        requests = [(starts[i][0], tiers[i]) for i in active]
        evaluated = evaluate(requests)
        again = []
        for i, value in zip(active, evaluated, strict=True):
            values[i] = min(values[i], value)
            used[i] += 1
            if finer_tier(values[i], level, tiers[i]):
                tiers[i] += 1
                again.append(i)
        active = again
    return list(zip(values, tiers, used, strict=True))
