"""Exact worst case of shuffled 4-RR over every dataset, for small n (internal; issue 32 item 4).

For k = 4 the output is the histogram ``(c_x, c_x', c_z, c_w)``, ``c_w = n − c_x − c_x' − c_z``:
a 3-D array ``[c_x, c_x', c_z]`` (flat, strides ``(n+1)²``, ``n+1``, 1). A dataset class of
the other ``N = n − 1`` users is ``(j, l, m, o)`` (j on x, l on x', m on z, o on w); every
dataset is such a class. Adding one user with report probabilities ``(w_x, w_x', w_z, w_w)``
is a 4-term stencil. The two laws of a class are P (target on x) and Q (target on x').

Symmetry (exact, not a bound): relabelling z <-> w maps class ``(j, l, m, o)`` to
``(j, l, o, m)`` and the output bijectively, so both have the same pair; relabelling
x <-> x' maps ``(j, l, m, o)`` to ``(l, j, m, o)`` with P and Q exchanged, and the δ of a
class is taken in both directions. So the classes with ``l <= j`` and ``o <= m`` suffice.
(The older n <= 14 enumeration, ``_pairs.krr_config_curves``, also puts every third value
on one z, a reduction checked numerically but not proven; this module does not use it.)

Pruning, the k = 3 arguments of :mod:`crowdhide.accounting.shuffle._krr_small` with 4 values:

* Ancestor. A class's pair is a post-processing of the pair of any *ancestor*
  ``(j', l', m', o') <= (j, l, m, o)`` coordinate-wise: the missing users' independent
  reports, added to the histogram, are one Markov kernel applied to both laws. So every
  class ``A + d`` (``d >= 0``, ``|d| = s``) has δ (both directions, every ε) at most the δ
  of A.
* Blanket (truthful or uniform). 4-RR reports the true value with probability
  ``λ = p − q`` and a uniform one of the 4 values otherwise (``4q = 1 − λ``). Reveal which
  of a class's ``s`` users beyond A were truthful: their reports are known shifts of the
  histogram, subtracted, leaving A's histogram plus ``R`` uniform reports,
  ``R ~ Bin(s, 4q)``, R observed. The class's pair is a post-processing of that view,
  whatever the extra users' values, so ``δ <= Σ_r Pr(R = r) δ_r``, ``δ_r`` the divergence of
  A plus r uniform reports (stencil weights ``1/4`` each). ``δ_r`` is non-increasing in r
  (one more independent report is post-processing), so on a grid ``0 = r_0 < … < r_m``,
  ``F(r) = Pr(R < r)``::

      δ <= δ_{r_m} + Σ_{i<m} F(r_{i+1}) (δ_{r_i} − δ_{r_{i+1}})

  (after a running minimum of the δ_{r_i}; over-estimating F is the safe side). Nothing in
  it depends on k but ``π = k q`` and the uniform weights.

Both bounds hold for *any* set of classes with a common ancestor and the same number of
extra users, so a region may be skipped when either is at or below the running maximum.
Regions (disjoint, a k-d split of the class simplex): ``(A, s, u)`` holds the classes
``A + d``, ``d >= 0``, ``|d| = s``, ``d <= u``; it is kept *tight* (A is the coordinate-wise
minimum of its classes: ``d_i >= s − Σ_{j≠i} u_j`` is moved into A), so A is their common
ancestor with s extra users and both bounds above apply. A region is split on its widest
axis into ``d_i <= u_i // 2`` and ``d_i > u_i // 2``; a region with ``A_0 + u_0 < A_1`` or
``A_2 + u_2 < A_3`` holds only mirror images and is skipped. A class is evaluated only when
its singleton region is reached, so the answer is the maximum over every class.

Rounding budget: each stencil step computes ``w_x u + w_x' v + w_z t + w_w s`` (4 products,
3 sums: 7 roundings) with weights that carry up to 4 roundings each (``e^{ε0}``, a sum, a
quotient): every entry of the n-report arrays is within ``r = 11(n + 1)·2^-52`` relative of
the exact value (all terms positive, so no cancellation, in any order of stencils), plus an
absolute ``7(n + 1)·2^-1074`` per entry from gradual underflow (the weights sum to 1, so
absolute errors do not grow). The caller shifts ε by
:func:`~crowdhide.accounting.logmath.probability_loss_allowance` of ``r``; the underflow part
is added to δ (:func:`underflow_allowance`). An ancestor's arrays (fewer reports) are within
the same budget, so a pruned class is covered through its ancestor as in ``_krr_small``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from crowdhide._validation import check_probability
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.shuffle import _krr_small
from crowdhide.accounting.shuffle._krr_small import FloatArray
from crowdhide.accounting.shuffle._small_search import PrunedSearch, hockey_both

__all__ = [
    "SMALL4_EXACT_BEST_MAX_N",
    "SMALL4_EXACT_MAX_N",
    "SMALL_EXACT_LIMITS",
    "SmallKrr4Exact",
    "SmallKrr4ExactCurve",
    "rounding_budget",
    "underflow_allowance",
]

Class4 = tuple[int, int, int, int]
#: ``measure(P, Q)``: a class's δ at the running ε, as the search compares it (flat laws).
Measure = Callable[[FloatArray, FloatArray], float]
#: The others' law of a region's ancestor: the flat array and its number of reports.
Others = tuple[FloatArray, int]
#: Largest n for the exact k = 4 worst case (``bound="exact"``): an ε query at δ = 1e-6 takes
#: 0.2-5.0 s CPU at n = 50 (ε0 = 8 ... 0.5; benchmarks/bench_krr4_small_n.py).
SMALL4_EXACT_MAX_N = 50
#: Largest n at which ``best`` evaluates it: an exact ε query 0.02-0.51 s CPU at n = 25
#: (ε0 = 8 ... 0.5); n = 30: 0.05-1.08 s.
SMALL4_EXACT_BEST_MAX_N = 25
#: ``k: (largest n of bound="exact", largest n in best)`` of the pruned exact searches.
SMALL_EXACT_LIMITS = {
    3: (_krr_small.SMALL_EXACT_MAX_N, _krr_small.SMALL_EXACT_BEST_MAX_N),
    4: (SMALL4_EXACT_MAX_N, SMALL4_EXACT_BEST_MAX_N),
}
_TINY = 2.0**-1074
_UNIFORM = (0.25, 0.25, 0.25, 0.25)
#: A region ``(A, s, u)``: the classes ``A + d``, ``d >= 0``, ``|d| = s``, ``d <= u``.
Region = tuple[Class4, int, Class4]


def rounding_budget(n: int) -> float:
    """Relative error of every entry of the n-report arrays (module docstring)."""
    return 11.0 * (n + 1) * MACHINE_EPSILON


def underflow_allowance(n: int, eps: float) -> float:
    """Absolute bound on what gradual underflow can take from δ(ε): each of the
    ``(n + 1)³`` cells of P and Q is off by at most ``7(n + 1)·2^-1074``, and a cell enters
    δ as ``P − e^ε Q``."""
    return (n + 1) ** 3 * (1.0 + math.exp(eps)) * 7.0 * (n + 1) * _TINY


def _tighten(corner: Class4, side: int, upper: Class4) -> Region:
    """The region with the same classes whose corner is their coordinate-wise minimum:
    ``d_i >= s − Σ_{j≠i} u_j``, and ``d_i <= s`` (repeated until nothing moves)."""
    a, u = list(corner), [min(x, side) for x in upper]
    while True:
        low = [max(0, side - (sum(u) - u[i])) for i in range(4)]
        if not any(low):
            return (a[0], a[1], a[2], a[3]), side, (u[0], u[1], u[2], u[3])
        side -= sum(low)
        a = [a[i] + low[i] for i in range(4)]
        u = [min(u[i] - low[i], side) for i in range(4)]


def _split(corner: Class4, side: int, upper: Class4) -> list[Region]:
    """Two disjoint regions covering a tightened region of ``side >= 1`` (it then holds at
    least two classes, so its widest axis has ``u_i >= 1``): ``d_i <= u_i // 2`` and
    ``d_i > u_i // 2``. The upper half first (towards the seeds' corners)."""
    axis = max(range(4), key=lambda i: (upper[i], i == 2))
    mid = upper[axis] // 2
    low = list(upper)
    low[axis] = mid
    high_corner, high = list(corner), list(upper)
    high_corner[axis] += mid + 1
    high[axis] -= mid + 1
    return [
        _tighten(
            (high_corner[0], high_corner[1], high_corner[2], high_corner[3]),
            side - mid - 1,
            (high[0], high[1], high[2], high[3]),
        ),
        _tighten(corner, side, (low[0], low[1], low[2], low[3])),
    ]


class SmallKrr4Exact(PrunedSearch[Others, FloatArray]):
    """The exact worst case of shuffled 4-RR at ε (or ε at δ) over every dataset of the
    other ``n − 1`` users, by a pruned search over dataset classes (module docstring).

    Examples
    --------
    >>> ex = SmallKrr4Exact(eps0=1.0, n=3)
    >>> round(ex.delta(0.0), 6)
    0.213771
    """

    def __init__(self, *, eps0: float, n: int) -> None:
        self.eps0, self.n, self.trim = eps0, n, 0.0
        e = math.exp(eps0)
        p, q = e / (e + 3.0), 1.0 / (e + 3.0)
        self._weights = ((p, q, q, q), (q, p, q, q), (q, q, p, q), (q, q, q, p))
        self._q = q
        self._size = (n + 1) ** 3
        self._strides = ((n + 1) ** 2, n + 1, 1)
        self._tmp = np.empty(self._size)
        self._levels: list[tuple[FloatArray, FloatArray]] = []
        self._probe = (np.empty(self._size), np.empty(self._size))
        self.stencils = 0  # stencils done (since creation)
        self._init_search()

    # -- laws --------------------------------------------------------------------------

    def _stencil(
        self, src: FloatArray, reports: int, w: tuple[float, ...], dst: FloatArray
    ) -> FloatArray:
        """Add one report with probabilities ``w`` (x, x', z, w) to the law ``src`` of
        ``reports < n`` reports, into ``dst``; returns ``dst``'s meaningful prefix. A law of t
        reports is 0 wherever ``c_x + c_x' + c_z > t``: only its first ``(t + 1)(n + 1)²``
        cells are read (the rest of a reused buffer is stale), every cell with an index n
        is 0, so a flat shift never carries mass across a row and is the 3-D shift. Per
        cell: 4 products, 3 sums."""
        self.stencils += 1
        length = (reports + 1) * self._strides[0]
        out = length + self._strides[0]
        tmp, head = self._tmp, src[:length]
        np.multiply(head, w[3], out=dst[:length])
        dst[length:out] = 0.0
        for stride, weight in zip(self._strides, w[:3], strict=True):
            np.multiply(head, weight, out=tmp[:length])
            np.add(dst[stride : stride + length], tmp[:length], out=dst[stride : stride + length])
        return dst[:out]

    def _root(self) -> FloatArray:
        root = np.zeros(self._size)
        root[0] = 1.0
        return root

    def _buffers(self, depth: int) -> tuple[FloatArray, FloatArray]:
        while len(self._levels) <= depth:
            self._levels.append((np.empty(self._size), np.empty(self._size)))
        return self._levels[depth]

    def _chain(
        self, arr: FloatArray, reports: int, w: tuple[float, ...], steps: int, depth: int
    ) -> FloatArray:
        """``steps`` stencils from ``arr`` (``reports`` reports) in the two buffers of
        ``depth`` (ping-pong)."""
        one, two = self._buffers(depth)
        for i in range(steps):
            dst = two if arr.base is one or arr is one else one
            arr = self._stencil(arr, reports + i, w, dst)
        return arr

    def _targets(self, arr: FloatArray, reports: int) -> tuple[FloatArray, FloatArray]:
        """P and Q (the target on x resp. x') from the others' law ``arr``."""
        p_arr = self._stencil(arr, reports, self._weights[0], self._probe[0])
        return p_arr, self._stencil(arr, reports, self._weights[1], self._probe[1])

    # -- the search --------------------------------------------------------------------

    def classes(self) -> Iterator[tuple[Class4, FloatArray, FloatArray]]:
        """``(class, P, Q)`` for every class with ``l <= j`` and ``o <= m`` (no pruning;
        fresh 3-D copies ``[c_x, c_x', c_z]``)."""
        shape = (self.n + 1,) * 3
        for cls, p, q in self._search(lambda p, q: False, seeds=False):
            yield cls, p.reshape(shape).copy(), q.reshape(shape).copy()
        self._levels.clear()

    def _search(
        self, prune: Callable[[FloatArray, FloatArray], bool], *, seeds: bool = True
    ) -> Iterator[tuple[Class4, FloatArray, FloatArray]]:
        """The classes that no checked region rules out (flat views, valid until the next
        item). Seeds first (a high running maximum early prunes more; visited again by the
        regions): all others on z, all on x."""
        big_n = self.n - 1
        root = self._root()
        for axis in (2, 0) if seeds else ():
            cls = tuple(big_n if i == axis else 0 for i in range(4))
            law = self._chain(root, 0, self._weights[axis], big_n, 0)
            yield (cls[0], cls[1], cls[2], cls[3]), *self._targets(law, big_n)
        start = _tighten((0, 0, 0, 0), big_n, (big_n,) * 4)
        yield from self._region(root, start, 0, prune)

    def _region(
        self,
        arr: FloatArray,
        region: Region,
        depth: int,
        prune: Callable[[FloatArray, FloatArray], bool],
    ) -> Iterator[tuple[Class4, FloatArray, FloatArray]]:
        """``arr`` holds the others' law of the region's ancestor (its corner A)."""
        corner, side, upper = region
        if corner[0] + upper[0] < corner[1] or corner[2] + upper[2] < corner[3]:
            return  # every class has l > j or o > m: mirror images
        reports = sum(corner)
        p_arr, q_arr = self._targets(arr, reports)
        if side == 0:
            yield corner, p_arr, q_arr
            return
        if prune(p_arr, q_arr) or self._blanket_prunes((arr, reports), side, depth):
            return
        for child in _split(corner, side, upper):
            law = arr
            for axis in range(4):
                law = self._chain(
                    law, reports, self._weights[axis], child[0][axis] - corner[axis], depth + 1
                )
                reports += child[0][axis] - corner[axis]
            reports = sum(corner)
            yield from self._region(law, child, depth + 1, prune)

    def _blanket_bounds(
        self, arr: FloatArray, reports: int, extra: int, depth: int, d0: float, measure: Measure
    ) -> Iterator[float]:
        """Upper bounds on every class δ of a region (ancestor law ``arr`` of ``reports``
        reports, its δ ``d0``, ``extra`` more users), one per grid point (lazily), module
        docstring; the shared core's."""
        return self._blanket_bounds_of((arr, reports), extra, depth, d0, measure)

    def _uniform_share(self) -> float:
        return 4.0 * self._q  # Pr(uniform) = 1 − λ = 4q

    def _uniform_targets(
        self, law: Others, steps: int, depth: int
    ) -> tuple[Others, FloatArray, FloatArray]:
        arr, reports = law
        arr = self._chain(arr, reports, _UNIFORM, steps, depth + 1)
        return (arr, reports + steps), *self._targets(arr, reports + steps)

    def _clear(self) -> None:
        self._levels.clear()

    # -- divergences -------------------------------------------------------------------

    def _class_delta(self, p: FloatArray, q: FloatArray, big: float) -> float:
        """``max(H_big(P||Q), H_big(Q||P))`` as computed (sums of positive terms)."""
        return hockey_both(p, q, big, self._tmp)

    def class_delta(self, p: FloatArray, q: FloatArray, eps: float) -> float:
        """:meth:`_class_delta` at ε of two arrays from :meth:`classes`."""
        return self._class_delta(p.ravel(), q.ravel(), math.exp(eps))


class SmallKrr4ExactCurve(PrivacyCurve):
    """:class:`SmallKrr4Exact` as a curve: δ(ε) plus :func:`underflow_allowance` (the
    relative and loss-shift allowances are the caller's); ε(δ) to ``max(1e-13, 1e-10 ε0)``,
    from above.

    Examples
    --------
    >>> c = SmallKrr4ExactCurve(eps0=1.0, n=3)
    >>> round(c.delta(0.0), 6), c.epsilon(0.5)
    (0.213771, 0.0)
    """

    def __init__(self, *, eps0: float, n: int) -> None:
        self._exact = SmallKrr4Exact(eps0=eps0, n=n)
        self._eps0, self._n = eps0, n

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._eps0:
            return -math.inf
        return math.log(self._exact.delta(epsilon) + underflow_allowance(self._n, epsilon))

    def epsilon(self, delta: float) -> float:
        d = check_probability("delta", delta, allow_zero=False, allow_one=False)
        room = d - underflow_allowance(self._n, self._eps0)
        if room <= 0.0:  # below the underflow allowance only ε0 is certain
            return self._eps0
        return self._exact.epsilon(room, max(1e-13, 1e-10 * self._eps0))

    def epsilon_upper_hint(self) -> float:
        return self._eps0
