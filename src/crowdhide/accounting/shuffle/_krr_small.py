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
from collections.abc import Iterator

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


def _step(arr: FloatArray, w: tuple[float, float, float]) -> FloatArray:
    """Add one report with probabilities ``(x, x', z) = w`` to the count array ``[c_x, c_x']``
    (fixed shape ``(n + 1, n + 1)``: growing arrays measured slower, cache-bound)."""
    out = arr * w[2]
    out[1:, :] += arr[:-1, :] * w[0]
    out[:, 1:] += arr[:, :-1] * w[1]
    return out


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

    # -- the enumeration ---------------------------------------------------------------

    def classes(self) -> Iterator[tuple[tuple[int, int, int], FloatArray, FloatArray]]:
        """``((j, l, m), P, Q)`` for every class with ``l <= j``: the laws of the n-report
        histogram when the target holds x resp. x'. Rows of fixed l start from ``a^l b^l``
        (two stencils from the previous row's start)."""
        big_n = self.n - 1
        row_start = np.zeros((self.n + 1, self.n + 1))
        row_start[0, 0] = 1.0
        for l_count in range(big_n // 2 + 1):
            for i, arr in self._cover(row_start, 0, big_n - 2 * l_count):
                j = l_count + i
                yield (j, l_count, big_n - j - l_count), *self._target(arr)
            row_start = _step(_step(row_start, self._on_x), self._on_y)

    def _cover(self, arr: FloatArray, i0: int, t: int) -> Iterator[tuple[int, FloatArray]]:
        """From ``arr = a^{l+i0} b^l c^m`` reach every ``a^{l+i0+i} b^l c^{m+t−i}``, i <= t:
        halve the segment, ``t + 1`` stencils to the two halves' common ancestors."""
        if t == 0:
            yield i0, arr
            return
        half = (t + 1) // 2
        left = arr
        for _ in range(t - half + 1):
            left = _step(left, self._on_z)
        yield from self._cover(left, i0, half - 1)
        right = arr
        for _ in range(half):
            right = _step(right, self._on_x)
        yield from self._cover(right, i0 + half, t - half)

    def _target(self, arr: FloatArray) -> tuple[FloatArray, FloatArray]:
        return _step(arr, self._on_x), _step(arr, self._on_y)

    # -- divergences ---------------------------------------------------------------------

    @staticmethod
    def class_delta(p: FloatArray, q: FloatArray, eps: float) -> float:
        """``max(H_{e^ε}(P||Q), H_{e^ε}(Q||P))`` of one class, as computed."""
        big = math.exp(eps)
        forward = float(np.maximum(p - big * q, 0.0).sum())
        backward = float(np.maximum(q - big * p, 0.0).sum())
        return max(forward, backward)

    def delta(self, eps: float) -> float:
        """The worst case over classes at ε (computed; no allowance)."""
        if eps >= self.eps0:
            return 0.0
        return max(self.class_delta(p, q, eps) for _, p, q in self.classes())

    def epsilon(self, delta: float, xtol: float) -> float:
        """Smallest ε (to ``xtol``, from above) with ``delta(ε) <= delta``: a running
        maximum of the classes' own ε; a class at or below it is skipped after one sum."""
        best = 0.0
        for _, p, q in self.classes():
            if self.class_delta(p, q, best) <= delta:
                continue
            lo, hi = best, self.eps0
            while hi - lo > xtol:
                mid = 0.5 * (lo + hi)
                if self.class_delta(p, q, mid) <= delta:
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
