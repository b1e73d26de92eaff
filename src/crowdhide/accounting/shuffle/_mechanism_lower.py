"""Conditional-mean lower bound of "all others on a third value z" (issue 32, item 2).

For k-subset selection and local hashing the likelihood ratio of a report to z's law is
``g_x = e^{ε0 (a − c)}`` and ``g_x' = e^{ε0 (b − c)}`` in the report's marks
``(a, b, c)`` = (looks like x, like x', like z): S holds the value, or the reported bucket
is its hash value. With every other user on z the target is one of n exchangeable reports,
so (``Y_i`` i.i.d. from z's law)

    δ(ε) = (1/n) E[(W)_+],   W = Σ_i g_x(Y_i) − e^ε Σ_i g_x'(Y_i).

The region-count member (``_krr_fast.third_marginal_lower_log_delta``) sees only the counts
of ``+`` = (1, 0, 0) and ``−`` = (0, 1, 0); it merges the target's other reports with the
bulk and, measured at ε0 = 8, n = 1e4, stays 1.19–1.23× below this dataset's full
likelihood (``benchmarks/bench_mech_side.py``). Here instead: for any statistic F of the
output, ``(·)_+`` is convex, so by Jensen ``E[(W)_+] >= E[(E[W | F])_+]``. Take F = the
counts ``N+, N−, N±`` of the classes (1, 0, 0), (0, 1, 0) and (1, 1, 0) (weights e; the
last one's count matters as much as the first two: with F = (N+, N−) alone this equals the
region-count member to 5 digits, measured); given F the other R reports are i.i.d. from
z's law restricted to the remaining classes, so ``E[W | F] = N+ w+ + N− w− + N± w± +
R μ(ε)`` with ``μ`` the conditional mean of w over those classes. The multinomial law of
``(N+, N−, N±, R)`` is summed over a window of the counts (dropping terms only lowers the
sum: still a lower bound), in log space, and the result is lowered a relative 1e-9 for the
rounding of the sum. Measured, it is within 0.5 % of the Monte Carlo full likelihood of the
same dataset at ε0 = 8, n = 1e4, δ = 1e-3 (the bulk's fluctuation is small next to e).

The sum costs the product of the three windows; above :data:`MAX_CELLS` it is not run (a
member answering −inf is a valid lower bound): that is where ε0 is small against log n,
and where the region counts are within a few per cent of it anyway.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = [
    "MAX_CELLS",
    "ThirdMean",
    "cliff_below",
    "edge_above",
    "olh_third_mean",
    "subset_third_mean",
    "third_mean_log_delta",
]

#: Largest number of (N+, N−, N±) cells summed per query (each a few flops per ε).
MAX_CELLS = 400_000

#: Half-width of each count's window in standard deviations (Poisson tail e^{-72}).
WINDOW_SDS = 12.0

#: Relative amount by which the computed δ is lowered (rounding of logs and sums).
ROUND_RTOL = 1e-9

#: ``(n, ε) -> log δ`` (as ``randomizers.LowerMember``, which imports this module).
LowerMember = Callable[[int, float], float]

#: A class: (probability under z's law, a − c, b − c).
Classes = tuple[tuple[float, int, int], ...]


def subset_classes(eps0: float, d: int, k: int) -> Classes:
    """The marks (x ∈ S, x' ∈ S, z ∈ S) of z's k-subset and their probabilities."""
    e = math.exp(eps0)
    z = math.comb(d - 1, k - 1) * e + math.comb(d - 1, k)
    out = []
    for a in (0, 1):
        for b in (0, 1):
            for c in (0, 1):
                sets = math.comb(d - 3, k - a - b - c) if k - a - b - c >= 0 else 0
                if sets:
                    out.append((sets * (e if c else 1.0) / z, a - c, b - c))
    return tuple(out)


def olh_classes(eps0: float, g: int) -> Classes:
    """The marks (y = h(x), y = h(x'), y = h(z)) of z's report (hash values of distinct
    inputs independent and uniform on g buckets; y = h(z) w.p. e/(e + g − 1))."""
    e = math.exp(eps0)
    own = e / (e + g - 1.0)
    out = []
    for a in (0, 1):
        for b in (0, 1):
            for c in (0, 1):
                pc = own if c else 1.0 - own
                pa = 1.0 / g if a else 1.0 - 1.0 / g
                pb = 1.0 / g if b else 1.0 - 1.0 / g
                out.append((pc * pa * pb, a - c, b - c))
    return tuple(out)


#: The classes kept in F: the reports with a mark of x or x' and none of z (weight e).
KEPT = ((1, 0), (0, 1), (1, 1))


def _axes(n: int, classes: Classes) -> tuple[list[np.ndarray], list[float], float] | None:
    """The kept counts' windows, the kept classes' probabilities and the rest's."""
    kept = [math.fsum(p for p, u, v in classes if (u, v) == key) for key in KEPT]
    rest_p = math.fsum(p for p, u, v in classes if (u, v) not in KEPT)
    if min(kept[:2]) <= 0.0 or rest_p <= 0.0:
        return None
    axes = []
    for p in kept:
        lam = n * p
        half = WINDOW_SDS * math.sqrt(lam + 1.0) + 30.0
        axes.append(np.arange(max(0, int(lam - half)), min(n, int(lam + half)) + 1))
    if math.prod(ax.size for ax in axes) > MAX_CELLS:
        return None
    return axes, kept, rest_p


@functools.lru_cache(maxsize=8)  # each up to ~13 MB (4e5 cells x 4 rows)
def _layout(n: int, classes: Classes) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """log pmf of the kept counts and the rest on their window, the counts (one row per
    kept class) and the rest's class table ``(p / P(rest), u, v)``."""
    found = _axes(n, classes)
    if found is None:
        return None
    axes, kept, rest_p = found
    rest = [(p, u, v) for p, u, v in classes if (u, v) not in KEPT]
    # on the box of the three windows, broadcast (issue 32: per-cell gammaln and the
    # stacked copies took 85 ms of 4e5 cells at OLH ε0 = 4, n = 1e3): gammaln of each
    # distinct count once, added in the former order, so every float is the former one
    # (the counts are integers, exact in any order; cells with r < 0 are dropped last)
    grids = np.meshgrid(*(ax.astype(np.float64) for ax in axes), indexing="ij", sparse=True)
    r = n - ((grids[0] + grids[1]) + grids[2])
    low = max(float(r.min()), 0.0)
    gr = gammaln(np.arange(low, max(float(r.max()), low) + 1.0) + 1.0)
    at = np.clip(r - low, 0.0, None).astype(np.intp)  # (r < 0: any entry, dropped below)
    logp = gammaln(n + 1.0) - gr[at] + r * math.log(rest_p)
    for grid, p in zip(grids, kept, strict=True):
        if p > 0.0:
            logp = logp + (grid * math.log(p) - gammaln(grid + 1.0))
        else:  # an absent class (k-subset with k = 1): only its zero count has mass
            logp = np.where(grid == 0, logp, -np.inf)
    keep = (r >= 0).ravel()
    counts = np.empty((4, r.size))
    for row, grid in zip(counts, [*grids, r], strict=True):
        row[:] = np.broadcast_to(grid, r.shape).ravel()
    logp = logp.ravel()
    if not keep.all():
        counts, logp = counts[:, keep], logp[keep]
    table = np.array([(p / rest_p, u, v) for p, u, v in rest])
    return logp, counts, table


def _rest_means(classes: Classes, eps0: float) -> tuple[float, float]:
    """The rest's conditional means ``(a, b)`` of ``e^{ε0 u}`` and ``e^{ε0 v}``: its mean of
    w is ``a − e^ε b``, so a cell's ``E[W | F]`` is ``A − e^ε B`` (:func:`_ratios`)."""
    rest = [(p, u, v) for p, u, v in classes if (u, v) not in KEPT]
    rest_p = math.fsum(p for p, _, _ in rest)
    a = math.fsum(p * math.exp(eps0 * u) for p, u, _ in rest) / rest_p
    b = math.fsum(p * math.exp(eps0 * v) for p, _, v in rest) / rest_p
    return a, b


def _ratios(counts: np.ndarray, eps0: float, means: tuple[float, float]) -> np.ndarray:
    """Each cell's ``A / B``: ``E[W | F] = A − e^ε B`` is positive exactly below
    ``e^ε = A / B`` (rows of ``counts``: N+, N−, N±, R)."""
    e = math.exp(eps0)
    a_part = np.array([e, 1.0, e, means[0]]) @ counts
    b_part = np.array([1.0, e, e, means[1]]) @ counts
    return np.asarray(a_part / b_part)


#: Absolute margin in ε above :func:`edge_above`'s exact crossing (far above the rounding
#: of the member's w, which is below 1e-11 relative: docs/proofs, section 1o).
EDGE_MARGIN = 1e-6


@functools.lru_cache(maxsize=64)
def edge_above(n: int, classes: Classes, eps0: float) -> float:
    """An ε above which every cell's ``E[W | F]`` is negative, so the member is −inf
    (issue 32: its root search bisected that jump in ~30 evaluations of 2-10 ms and every
    probe above it built the layout, 85 ms at k-subset ε0 = 4, n = 1e3). ``A / B`` is
    linear-fractional in the counts, so its largest value over the windows' box cut by
    ``N+ + N− + N± <= n`` is at a vertex of that polytope (its corners and the plane's
    crossings of its edges): above every cell's ratio, without the layout. −inf where the
    member has no layout (it is −inf everywhere)."""
    found = _axes(n, classes)
    if found is None:
        return -math.inf
    box = [(float(ax[0]), float(ax[-1])) for ax in found[0]]
    points = [c for c in itertools.product(*box) if sum(c) <= n]
    for free in range(3):  # the plane sum = n on each edge (the other two at an end)
        for ends in itertools.product(*(box[i] for i in range(3) if i != free)):
            x = n - sum(ends)
            if box[free][0] <= x <= box[free][1]:
                points.append((*ends[:free], x, *ends[free:]))
    counts = np.array([[*c, n - sum(c)] for c in points], dtype=np.float64).T
    top = float(np.max(_ratios(counts, eps0, _rest_means(classes, eps0))))
    return math.log(top) + EDGE_MARGIN


@functools.lru_cache(maxsize=64)
def cliff_below(n: int, classes: Classes, eps0: float) -> float:
    """A point just below the largest ε where some cell's w, as the member computes it, is
    positive: the largest cell ratio ``A / B`` (cells of positive mass) lowered by four times
    the member's allowances for that cell (w's and μ's rounding, relative to ``B e^ε``).
    Where the member fails there at all, that is its crossing (−inf above), so a lower
    bound's search may answer it after one evaluation (``MemberCurve``). Only a hint: the
    member's own value there decides (−inf where it has no layout)."""
    layout = _layout(n, classes)
    if layout is None:
        return -math.inf
    logp, counts, _ = layout
    means = _rest_means(classes, eps0)
    ratios = np.where(np.isfinite(logp), _ratios(counts, eps0, means), -np.inf)
    i = int(np.argmax(ratios))
    top, e, rest = float(ratios[i]), math.exp(eps0), float(counts[3, i])
    b_cell = float(np.array([1.0, e, e, means[1]]) @ counts[:, i])
    mu = abs(means[0] - top * means[1])
    allowance = (e + top * e) * n * 1e-15 + rest * (mu * 1e-12 + 1e-300)
    slack = 4.0 * allowance / (b_cell * top) + 1e-15
    return math.log(top) + math.log1p(-slack)


def _logsumexp(terms: np.ndarray) -> float:
    """``scipy.special.logsumexp`` of a 1-D array, by its own steps (scipy >= 1.15: the
    largest terms taken out of the sum, ``log1p`` of the rest's shifted sum over their
    count, plus the log of that count and the largest), without its generic-axis passes
    (issue 32: 13.4 against 6.9 ms for 3.9e5 terms, measured). Same floats as scipy's
    where the largest term is finite (``test_mechanism_cliff``); elsewhere scipy's own."""
    top = terms.max(keepdims=True)
    if not math.isfinite(float(top[0])):
        return float(logsumexp(terms))
    mask = terms == top
    count = np.array([np.count_nonzero(mask)], dtype=np.float64)
    shifted = np.where(mask, -np.inf, terms)
    shifted -= top
    total = np.sum(np.exp(shifted, out=shifted), keepdims=True)
    total = np.where(total == 0, total, total / count)
    return float((np.log1p(total) + np.log(count) + top)[0])


def third_mean_log_delta(n: int, classes: Classes, eps0: float, eps: float) -> float:
    """Lower bound on log δ(ε) of "all others on z" (module docstring); −inf where the
    window is too large or no term is positive (above :func:`edge_above` without the
    layout)."""
    if eps >= eps0 or eps > edge_above(n, classes, eps0):
        return -math.inf
    layout = _layout(n, classes)
    if layout is None:
        return -math.inf
    logp, counts, table = layout
    e, big_e = math.exp(eps0), math.exp(eps)
    # the rest's conditional mean of w = e^{ε0 u} − e^ε e^{ε0 v}, rounded down
    gains = np.exp(eps0 * table[:, 1]) - big_e * np.exp(eps0 * table[:, 2])
    mu = float(np.sum(table[:, 0] * gains))
    mu -= abs(mu) * 1e-12 + 1e-300
    per = np.array([e - big_e, 1.0 - big_e * e, e * (1.0 - big_e), mu])  # KEPT, then rest
    w = per @ counts
    # safe side of each w's rounding: w − |w| 1e-12 − (e + e^ε e) n 1e-15, in place (the
    # same floats; each fresh 3 MB temporary can cost its page faults: issue 32)
    slack = np.abs(w)
    slack *= 1e-12
    w -= slack
    w -= (e + big_e * e) * n * 1e-15
    pos = w > 0.0
    if not pos.any():
        return -math.inf
    terms = logp[pos]
    terms += np.log(w[pos])
    total = _logsumexp(terms)
    return total - math.log(n) + math.log1p(-ROUND_RTOL)


class ThirdMean:
    """The member of one mechanism's classes: ``(n, ε) -> log δ``, and :meth:`cliff` (a
    point just below where it jumps to −inf) for the lower bound's search."""

    def __init__(self, classes: Classes, eps0: float) -> None:
        self.classes, self.eps0 = classes, eps0

    def __call__(self, n: int, eps: float) -> float:
        return third_mean_log_delta(n, self.classes, self.eps0, eps)

    def cliff(self, n: int) -> float:
        """:func:`cliff_below` of these classes."""
        return cliff_below(n, self.classes, self.eps0)


def subset_third_mean(eps0: float, d: int, k: int) -> ThirdMean:
    """The conditional-mean member of k-subset selection (needs a third value, d >= 3)."""
    return ThirdMean(subset_classes(eps0, d, k), eps0)


def olh_third_mean(eps0: float, g: int) -> ThirdMean:
    """The conditional-mean member of local hashing with g buckets."""
    return ThirdMean(olh_classes(eps0, g), eps0)
