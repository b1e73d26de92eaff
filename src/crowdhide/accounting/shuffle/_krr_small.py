"""Exact worst case of shuffled 3-RR over every dataset, for n up to a few hundred (internal).

For k = 3 the output is the histogram ``(c_x, c_x', c_z)``, ``c_z = n − c_x − c_x'``: a 2-D
array. A dataset class of the other ``N = n − 1`` users is ``(j, l, m)`` (j on x, l on x',
m on the third value z; with k = 3 every dataset is such a class). Its count law is the
coefficient array of ``a^j b^l c^m`` with the linear forms ``a = pX + qY + q``,
``b = qX + pY + q``, ``c = qX + qY + p``; adding one user is a 3-term stencil.

Pruning (what makes n of a few hundred fast). A class's pair is a post-processing of the
pair of any *ancestor* ``a^{j'} b^{l'} c^{m'}`` with ``j' <= j, l' <= l, m' <= m`` (fewer
other users): adding the missing users' independent reports to the histogram is one
Markov kernel applied to both laws, so the hockey-stick divergence of the class is at most
the ancestor's, in both directions and at every ε. :meth:`SmallKrrExact.delta` and
:meth:`SmallKrrExact.epsilon` therefore search regions of the class triangle
``j + l + m = N`` (triangles of either orientation, each checked at its common ancestor,
split into four when the check fails; ``_split``), skipping a region whose ancestor is
already at or below the running worst case: the answer is the maximum over every class,
as before. Measured (``benchmarks/bench_krr_small_n.py``): a few hundred of the
``~N²/4`` classes are evaluated and ~1–3 % of the full enumeration's stencils are done.
:meth:`SmallKrrExact.classes` still walks every class, row by row (fixed l, ``l <= j``;
``(l, j, m)`` is the mirror image, covered by evaluating both directions): a row's
classes ``a^{l+i} b^l c^{t−i}`` are reached by halving the row, ``O(n⁴ log n)`` in all.

Blanket pruning (issue 32, s19). A region's classes are its ancestor plus ``e`` extra users
(``e = s`` for ``T(A, s)``, ``2s`` for ``I(B, s)``) of varying values. 3-RR reports the true
value with probability ``λ = p − q`` and a uniform value otherwise (``3q = 1 − λ``), so reveal
to the adversary which extra users were truthful: their reports are then known shifts of the
histogram and can be subtracted, leaving the ancestor's histogram plus ``R`` uniform reports,
``R ~ Bin(e, 3q)``, with R observed. The class's pair is a post-processing of that view,
whatever the extra users' values, so every class of the region has
``δ <= Σ_r Pr(R = r) δ_r``, ``δ_r`` the divergence of the ancestor plus r uniform reports
(``U_r``: stencils with weights ``(1/3, 1/3, 1/3)``). ``δ_r`` is non-increasing in r (one
more independent report is a post-processing), so with a few grid points
``0 = r_0 < r_1 < … < r_m`` and ``F(r) = Pr(R < r)``::

    δ <= Σ_i Pr(r_i <= R < r_{i+1}) δ_{r_i} = δ_{r_m} + Σ_{i<m} F(r_{i+1}) (δ_{r_i} − δ_{r_{i+1}})

(terms non-negative after a running minimum of the δ_{r_i}; over-estimating F is the safe
side). :meth:`SmallKrrExact._blanket_prunes` skips a region when this is at or below the
running maximum (grid: mean − 3, − 1 and 0 standard deviations of R). It halves the
stencils of an ε query at ε0 <= 2 (n = 300, ε0 = 1: 8524 -> 4357).

Trimming (issue 32, s20). With an allowance D (``trim`` times δ; :class:`SmallKrrExactCurve`
uses ``TRIM_RELATIVE = 1e-9``) a law keeps only a band of rows (values of ``c_x``): after every
4th report the first or last row is dropped while the law's recorded loss, its parent's plus
the dropped rows' sums (times ``_TRIM_SAFETY``), stays ``<= D·t/n`` (t its reports; no law
counts more than n, so every loss is ``<= D``). Stencils are linear and positive and keep
mass, so a trimmed law P̃ is below the untrimmed P cell by cell and lacks exactly the mass
trimmed along its chain: ``Σ(P − P̃) <= lost``. Then, since ``Q̃ <= Q`` and
``max(a + b, 0) <= max(a, 0) + b`` for b >= 0, ``H(P||Q) <= H(P̃||Q̃) + lost(P)`` and likewise
backwards: every inequality of the search (a class, an ancestor check, each δ_r of the
blanket bound, whose weights sum to 1) holds for the true laws with ``+ lost`` on the side
of the computed ones. So :meth:`SmallKrrExact.delta` adds the largest loss of a measured
law (at most D, 0 when nothing was trimmed; D is ``trim`` times the untrimmed seeds' δ, so
at most ``trim`` times the answer) and :meth:`SmallKrrExact.epsilon` holds every computed
class δ at ``δ − D``. On the other side a trimmed Q can raise ``P − e^ε Q`` by ``e^ε·lost``:
the answer is within ``(1 + e^ε)·D`` of the exact one. Why rows: the band cuts the cells
stenciled ~2x at ε0 <= 2 and 4-6x at ε0 >= 4 (n = 300); a 2-D box (columns too) was
slower, numpy's per-row overhead on strided views costs 3-4x per cell. Below
``_MIN_BUDGET = 1e-280`` nothing is trimmed.

All terms are *positive* (no cancellation: every entry carries a relative error of a few
roundings per report, see :func:`rounding_budget`, whatever the order of the stencils), and
an ancestor's arrays (fewer reports) are within the same budget, so the caller's
allowances cover a pruned class through its ancestor: true class δ <= true ancestor δ <=
the ancestor's computed δ with allowances <= the reported maximum with allowances.

Rounding budget: each stencil step computes ``w_x u + w_y v + w_z w`` (3 products, 2 sums:
5 roundings) with weights ``p, q`` that carry up to 4 roundings each (``e^{ε0}``, a sum,
a quotient): every entry of the n-report arrays is within ``r = 9(n + 1)·2^-52`` relative
of the exact value, plus an absolute ``5(n + 1)·2^-1074`` per entry from gradual underflow
(the stencil weights sum to 1, so absolute errors do not grow). The caller shifts ε by
:func:`~crowdhide.accounting.logmath.probability_loss_allowance` of ``r`` and applies its
relative margin; the underflow part is added to δ here (:func:`underflow_allowance`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_probability
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.shuffle._small_search import PrunedSearch, hockey_both

__all__ = [
    "SMALL_EXACT_BEST_MAX_N",
    "SMALL_EXACT_MAX_N",
    "TRIM_RELATIVE",
    "SmallKrrExact",
    "SmallKrrExactCurve",
    "rounding_budget",
    "underflow_allowance",
]

FloatArray = npt.NDArray[np.float64]
#: ``prune(P, Q)``: whether every class below an ancestor with laws P, Q may be skipped.
Prune = Callable[["_Law", "_Law"], bool]
#: ``measure(P, Q)``: a class's δ at the running ε, as the search compares it.
Measure = Callable[["_Law", "_Law"], float]
#: Largest n for the exact k = 3 worst case (as its curve runs it, trimmed: an ε query
#: 0.05-0.53 s CPU there, a δ query at ε0/2 0.15-1.7 s, see benchmarks/bench_krr_small_ab.py;
#: the pruned search grows like n^2.7).
SMALL_EXACT_MAX_N = 300
#: Largest n at which ``best`` evaluates it: a whole ``best`` query 0.12-0.31 s CPU at
#: ε0 = 0.5-8 (as at n = 150 before the trimming; n = 300: 0.16-0.64 s); calibrations and
#: certificate curves ask many queries. Was 60 before pruning, 100 before the blanket, 150
#: before the trimming.
SMALL_EXACT_BEST_MAX_N = 200
#: Relative trimming allowance of :class:`SmallKrrExactCurve`: tails of total mass at most
#: ``TRIM_RELATIVE`` times δ are dropped from the laws and that much is added to δ (module
#: docstring, "Trimming").
TRIM_RELATIVE = 1e-9
#: Scale on a dropped edge's computed sum: its cells are within ``rounding_budget(n)`` (< 1e-12
#: at n <= 300) of the exact trimmed law's and the sum adds < 1e-13 relative.
_TRIM_SAFETY = 1.0 + 1e-6
#: Trim after every ``_TRIM_EVERY``-th report only: each check is two row sums and Python
#: work, ~30 % of a stencil at n = 100 when done every step.
_TRIM_EVERY = 4
_SUM = np.add.reduce  # ndarray.sum without its Python wrapper (~1 µs a call)
_TINY = 2.0**-1074  # the smallest subnormal: the absolute error of one rounding below 2^-1022


def rounding_budget(n: int) -> float:
    """Relative error of every entry of the n-report arrays (module docstring)."""
    return 9.0 * (n + 1) * MACHINE_EPSILON


def underflow_allowance(n: int, eps: float) -> float:
    """Absolute bound on what gradual underflow can take from δ(ε): every one of the
    ``(n + 1)²`` cells of P and Q is off by at most ``5(n + 1)·2^-1074`` absolute, and a cell
    enters δ as ``P − e^ε Q``."""
    return (n + 1) ** 2 * (1.0 + math.exp(eps)) * 5.0 * (n + 1) * _TINY


class _Law:
    """A (sub-)probability law of the histogram ``[c_x, c_x']`` in a flat buffer of rows of
    ``n + 1`` (row-major): only rows ``r0..r1`` (``rows``, inclusive) are meaningful, every
    cell of another row is 0 whatever the buffer holds there. ``reports`` is the number of
    reports it counts, ``lost`` an upper bound on the mass trimmed from it and its
    ancestors (module docstring, "Trimming")."""

    __slots__ = ("buf", "lost", "reports", "rows")

    def __init__(self, buf: FloatArray, rows: tuple[int, int], reports: int, lost: float) -> None:
        self.buf, self.rows, self.reports, self.lost = buf, rows, reports, lost

    def view(self) -> FloatArray:
        """The meaningful rows, flat (contiguous)."""
        width = _width(self.buf)
        return self.buf[self.rows[0] * width : (self.rows[1] + 1) * width]

    def dense(self) -> FloatArray:
        """A fresh ``(n + 1, n + 1)`` array, zero outside the rows."""
        width = _width(self.buf)
        out = np.zeros(self.buf.size)
        out[self.rows[0] * width : (self.rows[1] + 1) * width] = self.view()
        return out.reshape(width, width)

    def copy(self) -> _Law:
        return _Law(self.buf.copy(), self.rows, self.reports, self.lost)


def _width(buf: FloatArray) -> int:
    return math.isqrt(buf.size)


def _stencil(src: _Law, w: tuple[float, float, float], dst: FloatArray, tmp: FloatArray) -> _Law:
    """Add one report with probabilities ``(x, x', z) = w`` to ``src``, into the flat buffer
    ``dst`` (``tmp``: scratch), one more row. Flat shifts by ``n + 1`` (one more x) and 1
    (one more x') are the 2-D shifts because the last column of ``src`` is zero (a law of t
    reports is 0 where ``c_x + c_x' > t``, and no law here counts n reports before a step),
    and its new row ``r1 + 1 <= t + 1 <= n`` is inside the grid: per cell the products and
    sums are those of the 2-D stencil in the same order (bit for bit), 5 roundings.
    Contiguous slices: numpy on 2-D views of a box was 3-4x slower per cell (per-row
    overhead). Preallocated buffers: fresh temporaries cost 8x the arithmetic at n = 300."""
    width = _width(dst)
    r0, r1 = src.rows
    s = src.view()
    size = s.size
    d = dst[r0 * width : (r1 + 2) * width]
    np.multiply(s, w[2], out=d[:size])
    d[size:] = 0.0
    t = tmp[:size]
    np.multiply(s, w[0], out=t)
    np.add(d[width:], t, out=d[width:])
    np.multiply(s, w[1], out=t)
    np.add(d[1 : size + 1], t, out=d[1 : size + 1])
    return _Law(dst, (r0, r1 + 1), src.reports + 1, src.lost)


def _trim(law: _Law, allow: float) -> _Law:
    """Drop the first and last rows (values of ``c_x``) while the law's total trimmed mass
    stays ``<= allow`` (each dropped row's computed sum scaled by ``_TRIM_SAFETY``). Rows
    only: the flat stencil needs whole rows (see :func:`_stencil`)."""
    width = _width(law.buf)
    (r0, r1), lost, buf = law.rows, law.lost, law.buf
    while r0 < r1:
        low = float(_SUM(buf[r0 * width : (r0 + 1) * width])) * _TRIM_SAFETY
        high = float(_SUM(buf[r1 * width : (r1 + 1) * width])) * _TRIM_SAFETY
        mass, first = (low, True) if low <= high else (high, False)
        if lost + mass > allow:
            break
        lost += mass
        r0, r1 = (r0 + 1, r1) if first else (r0, r1 - 1)
    return _Law(buf, (r0, r1), law.reports, lost)


def _shift(point: tuple[int, int, int], by: int) -> tuple[int, int, int]:
    return (point[0] + by, point[1] + by, point[2] + by)


def _split(
    upright: bool, corner: tuple[int, int, int], side: int
) -> list[tuple[bool, tuple[int, int, int], int]]:
    """Regions covering the region's classes (``side >= 1``). ``T(A, s)``: a point
    ``A + o`` with some ``o_i >= s − k`` (k = s // 2) lies in the corner ``T(A + (s−k)e_i, k)``;
    otherwise every ``o_i <= r = s − k − 1`` and it lies in ``I(A + (r, r, r), 3r − s)``
    (empty when ``3r < s``). ``I(B, s)`` likewise, with the corners ``I(B − (s−k)e_i, k)``
    and the middle ``T(B − (r, r, r), 3r − s)``. Corners in the order c, a, b."""
    k = side // 2
    r = side - k - 1
    sign = 1 if upright else -1
    out = []
    for axis in (2, 0, 1):
        moved = list(corner)
        moved[axis] += sign * (side - k)
        out.append((upright, (moved[0], moved[1], moved[2]), k))
    if 3 * r - side >= 0:
        out.append((not upright, _shift(corner, sign * r), 3 * r - side))
    return out


class SmallKrrExact(PrunedSearch["_Law", "_Law"]):
    """The exact worst-case hockey-stick divergence of n shuffled 3-RR reports.

    ``log_delta(ε)`` is ``log max_classes max(H(P||Q), H(Q||P))`` as computed in floating
    point (see the module docstring for its error), ``epsilon(δ)`` the smallest ε it meets
    δ at, to ``xtol``: ``ε*(δ) = max_class ε_class(δ)``, so each class is first checked at
    the running maximum and solved only when it exceeds it. Both skip every region of
    classes whose common ancestor is already at or below the running maximum (``pruned``
    counts the classes of skipped regions, overlaps included).

    Examples
    --------
    >>> ex = SmallKrrExact(eps0=1.0, n=3)
    >>> round(ex.delta(0.0), 6)
    0.242525
    """

    def __init__(self, *, eps0: float, n: int, trim: float = 0.0) -> None:
        self.eps0, self.n, self.trim = eps0, n, trim
        e = math.exp(eps0)
        p, q = e / (e + 2.0), 1.0 / (e + 2.0)
        self._on_x, self._on_y, self._on_z = (p, q, q), (q, p, q), (q, q, p)
        self._shape = ((n + 1) * (n + 1),)
        self._tmp = np.empty(self._shape)
        self._levels: list[tuple[FloatArray, FloatArray]] = []
        self._probe = (np.empty(self._shape), np.empty(self._shape))
        self.trims = 0  # edges trimmed (since creation)
        self._init_search()

    # -- the enumeration ---------------------------------------------------------------

    def classes(self) -> Iterator[tuple[tuple[int, int, int], FloatArray, FloatArray]]:
        """``((j, l, m), P, Q)`` for every class with ``l <= j``: the laws of the n-report
        histogram (arrays ``[c_x, c_x']``) when the target holds x resp. x' (fresh copies)."""
        for cls, p, q in self._walk():
            yield cls, p.dense(), q.dense()

    def _walk(self) -> Iterator[tuple[tuple[int, int, int], _Law, _Law]]:
        """:meth:`classes` as flat views into reused buffers (valid until the next item).
        Rows of fixed l start from ``a^l b^l`` (two stencils from the previous row's start)."""
        big_n = self.n - 1
        bufs = [np.zeros(self._shape) for _ in range(3)]
        row_start = self._root(bufs[0])
        for l_count in range(big_n // 2 + 1):
            for i, p, q in self._cover(row_start, 0, big_n - 2 * l_count, 0):
                j = l_count + i
                yield (j, l_count, big_n - j - l_count), p, q
            if 2 * l_count + 2 > big_n:  # no next row (its start would count > n reports)
                break
            one_more = self._step(row_start, self._on_x, bufs[1])
            row_start = self._step(one_more, self._on_y, bufs[2])
            bufs = [bufs[2], bufs[0], bufs[1]]

    @staticmethod
    def _root(buf: FloatArray) -> _Law:
        """The law of no report (all mass on the empty histogram), in ``buf``."""
        buf[0] = 1.0
        return _Law(buf, (0, 0), 0, 0.0)

    def _step(self, law: _Law, w: tuple[float, float, float], dst: FloatArray) -> _Law:
        """One more report (:func:`_stencil`), then (every ``_TRIM_EVERY``-th report) trimmed
        to the running query's share of its allowance: a law of t reports may have lost
        ``D·t/n`` (no law counts more than n reports, so every law has lost at most D)."""
        out = _stencil(law, w, dst, self._tmp)
        if self._budget <= 0.0 or out.reports % _TRIM_EVERY:
            return out
        trimmed = _trim(out, self._budget * out.reports / self.n)
        self.trims += trimmed.rows != out.rows
        return trimmed

    def _targets(self, law: _Law, bufs: tuple[FloatArray, FloatArray]) -> tuple[_Law, _Law]:
        """The laws P, Q of the histogram with the target on x resp. x' (untrimmed: the same
        box, as :meth:`_class_delta` reads them)."""
        p_law = _stencil(law, self._on_x, bufs[0], self._tmp)
        return p_law, _stencil(law, self._on_y, bufs[1], self._tmp)

    def _buffers(self, depth: int) -> tuple[FloatArray, FloatArray]:
        while len(self._levels) <= depth:
            self._levels.append((np.empty(self._shape), np.empty(self._shape)))
        return self._levels[depth]

    def _chain(self, arr: _Law, w: tuple[float, float, float], steps: int, depth: int) -> _Law:
        """``steps`` stencils from ``arr`` in the two buffers of ``depth`` (ping-pong)."""
        one, two = self._buffers(depth)
        for _ in range(steps):
            arr = self._step(arr, w, two if arr.buf is one else one)
        return arr

    def _cover(self, arr: _Law, i0: int, t: int, depth: int) -> Iterator[tuple[int, _Law, _Law]]:
        """From ``arr = a^{l+i0} b^l c^m`` reach every ``a^{l+i0+i} b^l c^{m+t−i}``, i <= t:
        halve the segment, ``t + 1`` stencils to the two halves' common ancestors. A level's
        buffers hold its chain while the deeper levels read it."""
        if t == 0:
            yield i0, *self._targets(arr, self._buffers(depth))
            return
        half = (t + 1) // 2
        left = self._chain(arr, self._on_z, t - half + 1, depth)
        yield from self._cover(left, i0, half - 1, depth + 1)
        right = self._chain(arr, self._on_x, half, depth)
        yield from self._cover(right, i0 + half, t - half, depth + 1)

    # -- the pruned search ----------------------------------------------------------------

    def _search(self, prune: Prune) -> Iterator[tuple[tuple[int, int, int], _Law, _Law]]:
        """The classes with ``l <= j`` that no checked ancestor rules out, as flat views
        (valid until the next item). Regions of the class triangle ``j + l + m = N`` are
        upright ``T(A, s) = {A + o : o >= 0, |o| = s}`` or inverted ``I(B, s) = {B − o}``;
        each is checked at its common ancestor (the coordinate-wise minimum, ``N − s``
        resp. ``N − 2s`` users): if ``prune`` holds there, none of its classes can exceed
        it (module docstring), else it is split into 3 corners of side ``s // 2`` and the
        middle region of the other orientation. The c corner comes first, then the a
        corner: the worst class was (0, 0, N) or (N, 0, 0) in most cells measured."""
        root = self._root(np.zeros(self._shape))
        big_n = self.n - 1
        # Seeds, visited again below: a high running maximum early prunes more, and an ε
        # query bisects fewer classes (ε0 = 4, n = 300: 6.3 s -> see the benchmark).
        for w, cls in ((self._on_x, (big_n, 0, 0)), (self._on_z, (0, 0, big_n))):
            yield cls, *self._targets(self._chain(root, w, big_n, 0), self._probe)
        yield from self._region(root, (0, 0, 0), True, (0, 0, 0), big_n, 0, prune)

    def _region(
        self,
        arr: _Law,
        anc: tuple[int, int, int],
        upright: bool,
        corner: tuple[int, int, int],
        side: int,
        depth: int,
        prune: Prune,
    ) -> Iterator[tuple[tuple[int, int, int], _Law, _Law]]:
        """``arr`` holds the law of the ancestor ``anc`` (a^j b^l c^m) of the region."""
        # the largest j − l in the region (either orientation); below 0 all are mirror images
        if corner[0] - corner[1] + side < 0:
            return
        p_arr, q_arr = self._targets(arr, self._probe)
        if side == 0:
            yield anc, p_arr, q_arr
            return
        if prune(p_arr, q_arr) or self._blanket_prunes(arr, side * (1 if upright else 2), depth):
            self.pruned += (side + 1) * (side + 2) // 2
            return
        for child_upright, child_corner, child_side in _split(upright, corner, side):
            child_anc = child_corner if child_upright else _shift(child_corner, -child_side)
            child = self._reach(arr, anc, child_anc, depth + 1)
            yield from self._region(
                child, child_anc, child_upright, child_corner, child_side, depth + 1, prune
            )

    def _reach(
        self, arr: _Law, anc: tuple[int, int, int], target: tuple[int, int, int], depth: int
    ) -> _Law:
        """The law of ``target`` from that of its ancestor ``anc`` in ``depth``'s buffers."""
        for axis, w in enumerate((self._on_x, self._on_y, self._on_z)):
            arr = self._chain(arr, w, target[axis] - anc[axis], depth)
        return arr

    def _blanket_bounds(
        self, arr: _Law, extra: int, depth: int, d0: float, measure: Measure
    ) -> Iterator[float]:
        """Upper bounds on every class δ of the region (ancestor law ``arr``, its δ ``d0``,
        ``extra`` more users), one per grid point, lazily (the shared core's, module
        docstring)."""
        return self._blanket_bounds_of(arr, extra, depth, d0, measure)

    def _uniform_share(self) -> float:
        return 3.0 / (math.exp(self.eps0) + 2.0)  # Pr(uniform) = 1 − λ = 3q

    def _uniform_targets(self, law: _Law, steps: int, depth: int) -> tuple[_Law, _Law, _Law]:
        law = self._chain(law, (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0), steps, depth + 1)
        return law, *self._targets(law, self._probe)

    def _clear(self) -> None:
        self._levels.clear()  # ~18 MB of level buffers at n = 300: not kept by a curve

    # -- divergences ---------------------------------------------------------------------

    @staticmethod
    def class_delta(p: FloatArray, q: FloatArray, eps: float) -> float:
        """``max(H_{e^ε}(P||Q), H_{e^ε}(Q||P))`` of one class, as computed."""
        big = math.exp(eps)
        forward = float(np.maximum(p - big * q, 0.0).sum())
        backward = float(np.maximum(q - big * p, 0.0).sum())
        return max(forward, backward)

    def _class_delta(self, p_law: _Law, q_law: _Law, big: float) -> float:
        """:meth:`class_delta` at ``e^ε = big`` of two laws with the same rows (outside them
        both are 0 and add nothing), in the scratch buffer (same roundings: the product, the
        difference, the positive part; the sum of positive terms)."""
        self._max_lost = max(self._max_lost, p_law.lost, q_law.lost)
        return hockey_both(p_law.view(), q_law.view(), big, self._tmp)


class SmallKrrExactCurve(PrivacyCurve):
    """:class:`SmallKrrExact` as a curve: δ(ε) plus :func:`underflow_allowance` (the
    relative and loss-shift allowances are the caller's, ``SafeSideCurve``); ε(δ) to
    ``max(1e-13, 1e-10 ε0)``, from above.

    Examples
    --------
    >>> c = SmallKrrExactCurve(eps0=1.0, n=3)
    >>> round(c.delta(0.0), 6), c.epsilon(0.5)
    (0.242525, 0.0)
    """

    def __init__(self, *, eps0: float, n: int) -> None:
        self._exact = SmallKrrExact(eps0=eps0, n=n, trim=TRIM_RELATIVE)
        self._eps0, self._n = eps0, n

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._eps0:
            return -math.inf
        value = self._exact.delta(epsilon) + underflow_allowance(self._n, epsilon)
        return math.log(value)

    def epsilon(self, delta: float) -> float:
        d = check_probability("delta", delta, allow_zero=False, allow_one=False)
        room = d - underflow_allowance(self._n, self._eps0)
        if room <= 0.0:  # below the underflow allowance only ε0 is certain
            return self._eps0
        return self._exact.epsilon(room, max(1e-13, 1e-10 * self._eps0))

    def epsilon_upper_hint(self) -> float:
        return self._eps0
