"""Exact worst case of shuffled 3-RR over every dataset, for n up to a few hundred (internal).

For k = 3 the output is the histogram ``(c_x, c_x', c_z)``, ``c_z = n − c_x − c_x'``: a 2-D
array. A dataset class of the other ``N = n − 1`` users is ``(j, l, m)`` (j on x, l on x',
m on the third value z; with k = 3 every dataset is such a class). Its count law is the
coefficient array of ``a^j b^l c^m`` with the linear forms ``a = pX + qY + q``,
``b = qX + pY + q``, ``c = qX + qY + p``; adding one user is a 3-term stencil.

Classes are walked row by row (fixed l, ``l <= j``; ``(l, j, m)`` is the mirror image,
covered by evaluating both directions). A row starts from ``a^l b^l``; its classes
``a^{l+i} b^l c^{t−i}`` are reached by halving the row: from a common ancestor ``t + 1``
stencils reach the ancestors of the two halves, so a row of length t costs about
``t log2 t`` stencils of ``O(n²)`` and the
whole enumeration ``O(n⁴ log n)`` multiply-adds, all of
*positive* terms (no cancellation: every entry carries a relative error of a few roundings
per report, see :func:`rounding_budget`).

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

__all__ = [
    "SMALL_EXACT_BEST_MAX_N",
    "SMALL_EXACT_MAX_N",
    "SmallKrrExact",
    "SmallKrrExactCurve",
    "rounding_budget",
    "underflow_allowance",
]

FloatArray = npt.NDArray[np.float64]
#: ``prune(P, Q)``: whether every class below an ancestor with laws P, Q may be skipped.
Prune = Callable[[FloatArray, FloatArray], bool]
#: Ancestors of fewer classes are not checked (a check costs about three stencils).
_PRUNE_MIN_LEAVES = 3
#: Largest n for the exact k = 3 worst case (about 1-3 s per query there, see
#: benchmarks/bench_krr_small_n.py; work grows like n⁴ log n).
SMALL_EXACT_MAX_N = 150
#: Largest n at which ``best`` evaluates it (about 0.1-0.25 s per query, like krr_blanket;
#: calibrations and certificate curves ask many queries).
SMALL_EXACT_BEST_MAX_N = 60
_TINY = 2.0**-1074  # the smallest subnormal: the absolute error of one rounding below 2^-1022


def rounding_budget(n: int) -> float:
    """Relative error of every entry of the n-report arrays (module docstring)."""
    return 9.0 * (n + 1) * MACHINE_EPSILON


def underflow_allowance(n: int, eps: float) -> float:
    """Absolute bound on what gradual underflow can take from δ(ε): every one of the
    ``(n + 1)²`` cells of P and Q is off by at most ``5(n + 1)·2^-1074`` absolute, and a cell
    enters δ as ``P − e^ε Q``."""
    return (n + 1) ** 2 * (1.0 + math.exp(eps)) * 5.0 * (n + 1) * _TINY


def _step_into(
    src: FloatArray, w: tuple[float, float, float], dst: FloatArray, tmp: FloatArray
) -> None:
    """Add one report with probabilities ``(x, x', z) = w`` to the count array ``[c_x, c_x']``
    stored flat (row-major, rows of ``n + 1``), into ``dst``; ``tmp`` is scratch.

    Flat shifts by ``n + 1`` (one more x) and 1 (one more x') are the 2-D shifts as long as
    the last column of ``src`` is zero, i.e. ``src`` holds fewer than n reports (cell
    ``(c_x, c_x')`` is 0.0 exactly when ``c_x + c_x'`` exceeds the reports): every step here
    adds a report to at most n − 1, so the products and sums are those of the 2-D stencil in
    the same order (bit for bit). Preallocated buffers: at n = 300 the temporaries of the 2-D
    form (725 kB each) cost 8x the arithmetic (page faults of fresh allocations)."""
    width = round(math.isqrt(src.size))
    np.multiply(src, w[2], out=dst)
    np.multiply(src[:-width], w[0], out=tmp[:-width])
    np.add(dst[width:], tmp[:-width], out=dst[width:])
    np.multiply(src[:-1], w[1], out=tmp[:-1])
    np.add(dst[1:], tmp[:-1], out=dst[1:])


class SmallKrrExact:
    """The exact worst-case hockey-stick divergence of n shuffled 3-RR reports.

    ``log_delta(ε)`` is ``log max_classes max(H(P||Q), H(Q||P))`` as computed in floating
    point (see the module docstring for its error), ``epsilon(δ)`` the smallest ε it meets
    δ at, to ``xtol``: ``ε*(δ) = max_class ε_class(δ)``, so each class is first checked at
    the running maximum and solved only when it exceeds it.

    Examples
    --------
    >>> ex = SmallKrrExact(eps0=1.0, n=3)
    >>> round(ex.delta(0.0), 6)
    0.242525
    """

    def __init__(self, *, eps0: float, n: int) -> None:
        self.eps0, self.n = eps0, n
        e = math.exp(eps0)
        p, q = e / (e + 2.0), 1.0 / (e + 2.0)
        self._on_x, self._on_y, self._on_z = (p, q, q), (q, p, q), (q, q, p)
        self._size = (n + 1) * (n + 1)
        self._tmp = np.empty(self._size)
        self._levels: list[tuple[FloatArray, FloatArray]] = []
        self._probe = (np.empty(self._size), np.empty(self._size))
        self.pruned = 0  # classes skipped through an ancestor by the last delta / epsilon

    # -- the enumeration ---------------------------------------------------------------

    def classes(self) -> Iterator[tuple[tuple[int, int, int], FloatArray, FloatArray]]:
        """``((j, l, m), P, Q)`` for every class with ``l <= j``: the laws of the n-report
        histogram (arrays ``[c_x, c_x']``) when the target holds x resp. x' (fresh copies)."""
        shape = (self.n + 1, self.n + 1)
        for cls, p, q in self._walk():
            yield cls, p.reshape(shape).copy(), q.reshape(shape).copy()

    def _walk(
        self, prune: Prune | None = None
    ) -> Iterator[tuple[tuple[int, int, int], FloatArray, FloatArray]]:
        """:meth:`classes` as flat views into reused buffers (valid until the next item).
        Rows of fixed l start from ``a^l b^l`` (two stencils from the previous row's start);
        l = 0 first, which holds the worst class in every case measured (so the running
        maximum is high early). ``prune(P, Q)`` is asked for each ancestor of at least
        ``_PRUNE_MIN_LEAVES`` classes with its own laws (fewer users); if it answers True
        the ancestor's classes are skipped (module docstring: they are post-processings)."""
        big_n = self.n - 1
        starts = [np.zeros(self._size) for _ in range(3)]
        starts[0][0] = 1.0
        for l_count in range(big_n // 2 + 1):
            row_start = starts[0]
            for i, p, q in self._cover(row_start, 0, big_n - 2 * l_count, 0, prune):
                j = l_count + i
                yield (j, l_count, big_n - j - l_count), p, q
            _step_into(row_start, self._on_x, starts[1], self._tmp)
            _step_into(starts[1], self._on_y, starts[2], self._tmp)
            starts = [starts[2], starts[0], starts[1]]

    def _buffers(self, depth: int) -> tuple[FloatArray, FloatArray]:
        while len(self._levels) <= depth:
            self._levels.append((np.empty(self._size), np.empty(self._size)))
        return self._levels[depth]

    def _chain(
        self, arr: FloatArray, w: tuple[float, float, float], steps: int, depth: int
    ) -> FloatArray:
        """``steps`` stencils from ``arr`` in the two buffers of ``depth`` (ping-pong)."""
        one, two = self._buffers(depth)
        for _ in range(steps):
            dst = two if arr is one else one
            _step_into(arr, w, dst, self._tmp)
            arr = dst
        return arr

    def _cover(
        self, arr: FloatArray, i0: int, t: int, depth: int, prune: Prune | None
    ) -> Iterator[tuple[int, FloatArray, FloatArray]]:
        """From ``arr = a^{l+i0} b^l c^m`` reach every ``a^{l+i0+i} b^l c^{m+t−i}``, i <= t:
        halve the segment, ``t + 1`` stencils to the two halves' common ancestors. A level's
        buffers hold its chain while the deeper levels read it."""
        if t == 0:
            p_arr, q_arr = self._buffers(depth)
            _step_into(arr, self._on_x, p_arr, self._tmp)
            _step_into(arr, self._on_y, q_arr, self._tmp)
            yield i0, p_arr, q_arr
            return
        if prune is not None and t + 1 >= _PRUNE_MIN_LEAVES:
            p_arr, q_arr = self._probe
            _step_into(arr, self._on_x, p_arr, self._tmp)
            _step_into(arr, self._on_y, q_arr, self._tmp)
            if prune(p_arr, q_arr):
                self.pruned += t + 1
                return
        half = (t + 1) // 2
        left = self._chain(arr, self._on_z, t - half + 1, depth)
        yield from self._cover(left, i0, half - 1, depth + 1, prune)
        right = self._chain(arr, self._on_x, half, depth)
        yield from self._cover(right, i0 + half, t - half, depth + 1, prune)

    # -- divergences ---------------------------------------------------------------------

    @staticmethod
    def class_delta(p: FloatArray, q: FloatArray, eps: float) -> float:
        """``max(H_{e^ε}(P||Q), H_{e^ε}(Q||P))`` of one class, as computed."""
        big = math.exp(eps)
        forward = float(np.maximum(p - big * q, 0.0).sum())
        backward = float(np.maximum(q - big * p, 0.0).sum())
        return max(forward, backward)

    def _class_delta(self, p: FloatArray, q: FloatArray, big: float) -> float:
        """:meth:`class_delta` at ``e^ε = big`` in the scratch buffer (same roundings: the
        product, the difference, the positive part; the sum of positive terms)."""
        t = self._tmp
        np.multiply(q, big, out=t)
        np.subtract(p, t, out=t)
        np.maximum(t, 0.0, out=t)
        forward = float(t.sum())
        np.multiply(p, big, out=t)
        np.subtract(q, t, out=t)
        np.maximum(t, 0.0, out=t)
        return max(forward, float(t.sum()))

    def delta(self, eps: float) -> float:
        """The worst case over classes at ε (computed; no allowance)."""
        if eps >= self.eps0:
            return 0.0
        big = math.exp(eps)
        worst = 0.0

        def dominated(p: FloatArray, q: FloatArray) -> bool:
            return self._class_delta(p, q, big) <= worst

        self.pruned = 0
        for _, p, q in self._walk(dominated):
            worst = max(worst, self._class_delta(p, q, big))
        return worst

    def epsilon(self, delta: float, xtol: float) -> float:
        """Smallest ε (to ``xtol``, from above) with ``delta(ε) <= delta``: a running
        maximum of the classes' own ε; a class at or below it is skipped after one sum."""
        best = 0.0

        def dominated(p: FloatArray, q: FloatArray) -> bool:
            return self._class_delta(p, q, math.exp(best)) <= delta

        self.pruned = 0
        for _, p, q in self._walk(dominated):
            if self._class_delta(p, q, math.exp(best)) <= delta:
                continue
            lo, hi = best, self.eps0
            while hi - lo > xtol:
                mid = 0.5 * (lo + hi)
                if self._class_delta(p, q, math.exp(mid)) <= delta:
                    hi = mid
                else:
                    lo = mid
            best = hi
        return best


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
        self._exact = SmallKrrExact(eps0=eps0, n=n)
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
