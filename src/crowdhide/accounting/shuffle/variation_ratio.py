"""Shuffle certificate for *every* ε0-LDP randomizer: split clones, maximised over the variation.

The bound ``variation_ratio`` of :mod:`crowdhide.accounting.shuffle`. It reaches the value
Wang et al. (VLDB 2024, "variation ratio") give for a generic ε0-LDP randomizer — the clone
pair of Feldman, McMillan, Talwar (SODA 2023), clone probability ``2/(e^{ε0}+1)`` — to
within the blocking error, through a derivation that needs no condition beyond ε0-LDP.

**Derivation.** Write ``e = e^{ε0}``, ``κ = tanh(ε0/2)`` and, for the target's pair (P0, P1)
of report laws, ``β = TV(P0, P1)`` and ``μ = β/κ <= 1``. The three-point reduction of
:mod:`crowdhide.accounting.shuffle_mechanisms` maps the three-point pair Q(μ) on {+, 0, −}
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
:mod:`crowdhide.accounting._split_clone`, which bounds δ(ε) of the pair. (With ``μ = 1`` it
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
  (:func:`crowdhide.accounting._krr_fast.clone_noise_log_delta`);
* a cell is also bounded by one report's total variation ``μ_hi κ`` (the shuffled output is
  a post-processing of the target's report and reports independent of it);
* the bottom region [0, μ_b] is bounded at once by the one-rate system of the three-point
  reduction with ``mu2 = μ_b`` and clone probability ``e^{−ε0}`` (every ε0-LDP randomizer
  has it; a larger mu2 is a garbling of every report alike, so it covers all smaller μ).
  Its weaker clone rate does not matter there, where δ(μ) is far below its value at μ = 1;
  μ_b is lowered until that holds.

**Restricted variation.** A randomizer whose pairs all have ``μ <= mu_max`` needs the
supremum over ``(0, mu_max]`` only (every step above holds pair by pair); the piecewise
mechanism, whose pairs have different μ up to ``(t² + 1)/(t(t + 1))``, ``t = e^{ε0/2}``,
gets its certificate this way (:mod:`crowdhide.accounting.shuffle_mechanisms`).

Cells whose bound exceeds the largest bound so far (or the value at μ = 1) by more than
:data:`REFINE_SLACK` are split in two (geometric midpoint), at most :data:`MAX_EVALUATIONS`
evaluations per δ. Refinement only changes which valid bounds are combined, never whether
the result is one.
"""

from __future__ import annotations

import math

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle._krr_fast import clone_noise_log_delta
from crowdhide.accounting.shuffle._split_clone import (
    SPLIT_C_POINTS,
    SPLIT_S_POINTS,
    split_clone_log_delta,
    uninformative_share,
)

__all__ = [
    "VariationRatio",
    "clone_rates",
    "one_report_log_delta",
    "variation_ratio_log_delta",
]

#: Initial cells (largest μ first). δ(μ) falls fast below μ = 0.9, so the top needs the
#: finest start.
TOP_EDGES = (1.0, 0.999, 0.995, 0.985, 0.96, 0.9, 0.82, 0.7, 0.5, 0.3, 0.15, 0.05)
#: The bottom region [0, μ_b] starts at the last edge and is lowered by this factor, at most
#: this many times, while its bound is above the refinement level.
BOTTOM_FACTOR = 0.25
BOTTOM_STEPS = 12
#: A cell is refined when its bound exceeds the reference by more than this (in log δ):
#: 3 % in δ moves ε by about 0.1 % at δ = 1e-6.
REFINE_SLACK = 0.03
#: ... and exceeds ``log_tail`` by more than this: cells far below the δ being solved for
#: (the tail level is the target's e^-40 there) need no refinement.
REFINE_FLOOR = 14.0
#: Blocks of the first, coarse evaluation of a cell (the split system's clone counts and
#: informative counts); a cell above the refinement level is evaluated again at the full
#: resolution before it is split.
COARSE_POINTS = (16, 48)
#: Cells below this μ get the coarse pass (nearer μ = 1 it is too loose to be worth it) ...
COARSE_BELOW = 0.9
#: ... and the full one only when the coarse bound is at most this far above the level.
COARSE_MARGIN = 0.5
#: Cells narrower than this ratio are not split further.
MIN_CELL_RATIO = 1.0005
#: Bound on the evaluations per δ (each one is a blocked, O(1)-in-n sum).
MAX_EVALUATIONS = 96


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


def _cell_log_delta(
    n: int,
    eps0: float,
    log_lo: float,
    log_hi: float,
    eps: float,
    log_tail: float,
    *,
    coarse: bool = False,
) -> float:
    """Upper bound on ``log δ(ε)`` for every pair with μ in ``[e^log_lo, e^log_hi]``
    (``coarse``: fewer blocks, a looser bound, about 5-10x cheaper)."""
    kappa = kappa_up(eps0)
    tv_bound = log_hi + math.log(kappa)
    c_inf = clone_rates(math.exp(log_lo), eps0)[0]
    if c_inf < 1e-300:  # no informative clones to speak of: one report's variation
        return tv_bound
    if log_hi >= 0.0:
        value = clone_noise_log_delta(n, kappa, 1.0, c_inf, eps, log_tail)
    else:
        mu_hi = math.exp(log_hi)
        c_zero = clone_rates(mu_hi, eps0)[1]
        c_points, s_points = COARSE_POINTS if coarse else (SPLIT_C_POINTS, SPLIT_S_POINTS)
        value = split_clone_log_delta(
            n, kappa, mu_hi, c_inf, c_zero, eps, log_tail, c_points=c_points, s_points=s_points
        )
    return min(value, tv_bound)


def _initial_cells(mu_max: float) -> list[tuple[float, float]]:
    """Cells as ``(log_lo, log_hi)`` from ``mu_max`` down to the bottom edge, largest μ
    last (popped first)."""
    edges = [math.log(mu_max * mu) for mu in TOP_EDGES]
    return list(zip(edges[1:], edges[:-1], strict=True))[::-1]


def _reference(n: int, eps0: float, mu_max: float, eps: float, log_tail: float) -> float:
    """The value of the pair at ``μ = mu_max`` exactly, with its own clone rates: not a
    bound for any cell, but the level worth refining to (the supremum is about there)."""
    kappa = kappa_up(eps0)
    c_inf, c_zero = clone_rates(mu_max, eps0)
    if mu_max >= 1.0:
        return clone_noise_log_delta(n, kappa, 1.0, c_inf, eps, log_tail)
    return split_clone_log_delta(n, kappa, mu_max, c_inf, c_zero, eps, log_tail)


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
    (module docstring), O(MAX_EVALUATIONS) blocked evaluations whatever n.

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
    ``(eps, log_tail)``, that starts each evaluation from the cells the previous one ended
    with.

    Successive evaluations of an ε search need nearly the same refinement; starting from the
    last leaves skips re-evaluating their parents (about a third of the evaluations). Any
    partition of ``(0, mu_max]`` gives a valid bound, so the history changes the bound only
    within the refinement slack, never its validity; a fresh object gives the same answer
    as :func:`variation_ratio_log_delta`.

    Examples
    --------
    >>> bound = VariationRatio(10_000, 1.0)
    >>> first = bound(0.05, -60.0)
    >>> abs(bound(0.05, -60.0) - first) < 0.03   # from the refined cells: within the slack
    True
    """

    def __init__(self, n: int, eps0: float, *, mu_max: float = 1.0) -> None:
        if not 0.0 < mu_max <= 1.0:
            raise ValueError(f"mu_max must be in (0, 1]; got {mu_max!r}")
        self.n, self.eps0, self.mu_max = n, eps0, mu_max
        # The leaves of the last evaluation (largest μ last) and its bottom edge μ_b: with
        # the bottom region [0, μ_b] they cover (0, mu_max] exactly.
        self._leaves: list[tuple[float, float]] | None = None
        self._mu_b = mu_max * TOP_EDGES[-1]

    def __call__(self, eps: float, log_tail: float) -> float:
        n, eps0, mu_max = self.n, self.eps0, self.mu_max
        if eps >= eps0:
            return -math.inf
        kappa = kappa_up(eps0)
        if kappa >= 1.0:  # ε0 >= ~38: no clones to speak of; one report's δ scales with μ
            return one_report_log_delta(eps, eps0) + math.log(mu_max)
        level = max(_reference(n, eps0, mu_max, eps, log_tail), log_tail + REFINE_FLOOR)
        level += REFINE_SLACK
        if self._leaves is None or len(self._leaves) > MAX_EVALUATIONS // 2:
            self._leaves, self._mu_b = _initial_cells(mu_max), mu_max * TOP_EDGES[-1]
        stack = list(self._leaves)
        # The bottom region [0, μ_b]: lowered (and the released range handed to the cells)
        # while its one-rate bound is above the level.
        mu_b = self._mu_b
        best = _bottom_log_delta(n, eps0, mu_b, eps, log_tail)
        for _ in range(BOTTOM_STEPS):
            if best <= level:
                break
            stack.insert(0, (math.log(mu_b * BOTTOM_FACTOR), math.log(mu_b)))
            mu_b *= BOTTOM_FACTOR
            best = _bottom_log_delta(n, eps0, mu_b, eps, log_tail)
        evaluations = 0
        leaves: list[tuple[float, float]] = []
        while stack:
            log_lo, log_hi = stack.pop()
            value, evaluations = _refined_cell(
                n, eps0, (log_lo, log_hi), eps, log_tail, level, evaluations, math.log(mu_max)
            )
            splittable = log_hi - log_lo > math.log(MIN_CELL_RATIO)
            budget = evaluations + 2 * len(stack) + 4 <= MAX_EVALUATIONS
            if value > level and splittable and budget:
                mid = 0.5 * (log_lo + log_hi)
                stack += [(log_lo, mid), (mid, log_hi)]
                continue
            leaves.append((log_lo, log_hi))
            best = max(best, value)
        self._leaves, self._mu_b = sorted(leaves), mu_b
        return best


def _refined_cell(
    n: int,
    eps0: float,
    cell: tuple[float, float],
    eps: float,
    log_tail: float,
    level: float,
    evaluations: int,
    log_top: float,
) -> tuple[float, int]:
    """A cell's bound and the evaluation count: below :data:`COARSE_BELOW` times the top
    ``e^log_top`` a coarse pass first, repeated at full resolution only when it lands just
    above ``level`` (far above, the cell is too wide rather than the blocks too coarse: it
    will be split)."""
    log_lo, log_hi = cell
    if log_hi - log_top > math.log(COARSE_BELOW):
        return _cell_log_delta(n, eps0, log_lo, log_hi, eps, log_tail), evaluations + 1
    value = _cell_log_delta(n, eps0, log_lo, log_hi, eps, log_tail, coarse=True)
    if level < value <= level + COARSE_MARGIN:
        fine = _cell_log_delta(n, eps0, log_lo, log_hi, eps, log_tail)
        return min(value, fine), evaluations + 2
    return value, evaluations + 1
