"""The search core shared by the exact small-n k-RR worst cases (internal; issue 32).

:mod:`~crowdhide.accounting.shuffle._krr_small` (k = 3, classes ``(j, l, m)`` on triangles)
and :mod:`~crowdhide.accounting.shuffle._krr4_small` (k = 4, classes ``(j, l, m, o)`` on
k-d boxes) differ in how they lay out a law and split the class simplex, not in how they
search it: both visit the classes that no region check rules out (``_search``), keep a
running maximum, skip a region when its ancestor's δ (post-processing) or its blanket bound
(truthful-or-uniform reports; the proofs are in those modules' docstrings) is at or below
it, and solve a class's ε by bisection. That part lives here, once:

* :class:`PrunedSearch` — the ``delta`` / ``epsilon`` drivers, the region checks and the
  blanket bound, over the subclass's law types ``A`` (the others') and ``T``
  (a target's) (hooks: ``_search``, ``_class_delta``,
  ``_uniform_targets``, ``_uniform_share``).
* :func:`hockey_both` — ``max(H(P||Q), H(Q||P))`` of two flat arrays in a scratch buffer.

Trimming (k = 3 only; ``trim = 0`` elsewhere) is part of the drivers: the subclass's laws
record what was dropped and ``_class_delta`` raises ``_max_lost``; with nothing trimmed
every allowance is 0 and the answers are the untrimmed ones bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["BLANKET_GRID", "PrunedSearch", "below", "hockey_both"]

FloatArray = npt.NDArray[np.float64]
A = TypeVar("A")  # the law of a region's ancestor (the others' reports)
T = TypeVar("T")  # a target's law (P or Q), as the search measures it
#: Grid of the blanket bound, in standard deviations of R from its mean.
BLANKET_GRID = (-3.0, -1.0, 0.0)
#: Safety factor on the computed ``F(r)`` (its rounding is ~1e-13 relative; see below).
_F_SAFETY = 1.0 + 1e-9
#: Below this trimming allowance nothing is trimmed (see ``_krr_small``, "Trimming").
_MIN_BUDGET = 1e-280


def below(e: int, pi: float, r: int) -> float:
    """An upper bound on ``F(r) = Pr(Bin(e, π) < r)`` (``π`` as computed, 1 <= r <= e).
    Each term ``C(e, i) π^i (1 − π)^(e−i)`` is ``exp`` of a sum of logs (|exponent| < 2000
    for e <= 600: about 1e-12 relative after exp); ``_F_SAFETY`` covers that and the few
    ulps of π, and ``1e-300`` per term the underflow of a term."""
    log_pi, log_rest = math.log(pi), math.log1p(-pi)
    total = sum(
        math.exp(math.log(math.comb(e, i)) + i * log_pi + (e - i) * log_rest) + 1e-300
        for i in range(r)
    )
    return min(1.0, total * _F_SAFETY)


def hockey_both(p: FloatArray, q: FloatArray, big: float, tmp: FloatArray) -> float:
    """``max(H_big(P||Q), H_big(Q||P))`` of two flat arrays of one length, in ``tmp``: the
    product, the difference, the positive part, then a sum of positive terms."""
    t = tmp[: p.size]
    np.multiply(q, big, out=t)
    np.subtract(p, t, out=t)
    np.maximum(t, 0.0, out=t)
    forward = float(t.sum())
    np.multiply(p, big, out=t)
    np.subtract(q, t, out=t)
    np.maximum(t, 0.0, out=t)
    return max(forward, float(t.sum()))


class PrunedSearch(Generic[A, T]):
    """Running-maximum search over dataset classes (module docstring). A subclass sets
    ``eps0``, ``n``, ``trim`` and implements the hooks; ``pruned`` / ``evaluated`` count the
    classes of skipped regions (where the subclass counts them) and those measured."""

    #: A class's δ is at most ``_ancestor_factor`` times any ancestor's (the post-processing
    #: lemma: exactly 1; the tests perturb it).
    _ancestor_factor = 1.0
    #: Scale of the uniform-report probability in the blanket bound (exactly 1; the tests
    #: perturb it).
    _uniform_scale = 1.0
    eps0: float
    n: int
    trim: float

    def _init_search(self) -> None:
        self._budget = 0.0  # the trimming allowance D of the running query (0: no trimming)
        self._max_lost = 0.0  # the largest trimmed mass of a law measured in the query
        self.pruned = 0  # classes in regions skipped by the last delta / epsilon
        self.evaluated = 0  # classes measured by the last delta / epsilon
        self.blanket_skips = 0  # regions skipped by the blanket bound (since creation)
        # Set by delta / epsilon while they search: the class δ at the running ε and the
        # running maximum it is compared with; None: no blanket pruning (_search alone).
        self._blanket: tuple[Callable[[T, T], float], Callable[[], float]] | None = None
        self._last = math.inf  # the divergence the last prune check measured (its ancestor's)

    # -- hooks ---------------------------------------------------------------------------

    def _search(self, prune: Callable[[T, T], bool]) -> Iterator[tuple[object, T, T]]:
        """``(class, P, Q)`` of the classes no region check rules out (seeds first)."""
        raise NotImplementedError

    def _class_delta(self, p: T, q: T, big: float) -> float:
        """``max(H_big(P||Q), H_big(Q||P))`` as computed (raising ``_max_lost``)."""
        raise NotImplementedError

    def _uniform_share(self) -> float:
        """Pr(a user's report is uniform) = ``k q`` (before ``_uniform_scale``)."""
        raise NotImplementedError

    def _uniform_targets(self, law: A, steps: int, depth: int) -> tuple[A, T, T]:
        """``steps`` more uniform reports on ``law`` (buffers of ``depth + 1``): the new law
        and its targets' pair ``(law, P, Q)``."""
        raise NotImplementedError

    def _clear(self) -> None:
        """Drop the per-query buffers."""

    # -- region checks -------------------------------------------------------------------

    def _blanket_prunes(self, arr: A, extra: int, depth: int) -> bool:
        """Whether a blanket bound of the region whose ancestor law is ``arr`` and whose
        classes have ``extra`` more users is at or below the running maximum;
        ``self._last`` is the ancestor's δ (the failed ancestor check)."""
        if self._blanket is None:
            return False
        measure, limit = self._blanket
        bounds = self._blanket_bounds_of(arr, extra, depth, self._last, measure)
        if any(self._ancestor_factor * bound <= limit() for bound in bounds):
            self.blanket_skips += 1
            return True
        return False

    def _blanket_bounds_of(
        self, arr: A, extra: int, depth: int, d0: float, measure: Callable[[T, T], float]
    ) -> Iterator[float]:
        """Upper bounds on every class δ of a region (ancestor law ``arr``, its δ ``d0``,
        ``extra`` more users), one per grid point of :data:`BLANKET_GRID`, lazily (each
        needs more uniform stencils, in the buffers of ``depth + 1``)."""
        pi = self._uniform_scale * self._uniform_share()
        mean, sd = extra * pi, math.sqrt(extra * pi * max(1.0 - pi, 0.0))
        grid = sorted({r for r in (int(mean + k * sd) for k in BLANKET_GRID) if r > 0})
        deltas, steps, law = [d0], [0], arr
        for r in grid:
            law, p_arr, q_arr = self._uniform_targets(law, r - steps[-1], depth)
            deltas.append(min(measure(p_arr, q_arr), deltas[-1]))
            steps.append(r)
            yield deltas[-1] + sum(
                below(extra, pi, steps[i + 1]) * (deltas[i] - deltas[i + 1])
                for i in range(len(steps) - 1)
            )

    # -- drivers -------------------------------------------------------------------------

    def _usable(self, allowance: float) -> float:
        """``allowance`` as the trimming budget D, or 0 (no trimming) below ``_MIN_BUDGET``."""
        return allowance if allowance >= _MIN_BUDGET else 0.0

    def delta(self, eps: float) -> float:
        """The worst case over classes at ε (computed), plus the largest mass trimmed from a
        law it measured: at most D = ``trim`` times the larger seed's δ (the two seeds are
        searched untrimmed); 0 when nothing was trimmed."""
        if eps >= self.eps0:
            return 0.0
        big = math.exp(eps)
        worst = 0.0

        def measure(p: T, q: T) -> float:
            return self._class_delta(p, q, big)

        def dominated(p: T, q: T) -> bool:
            self._last = measure(p, q)
            return self._ancestor_factor * self._last <= worst

        self.pruned, self.evaluated, seeds, self._max_lost = 0, 0, 2, 0.0
        self._blanket = (measure, lambda: worst)
        try:
            for _, p, q in self._search(dominated):
                self.evaluated += 1
                worst = max(worst, self._class_delta(p, q, big))
                seeds -= 1
                if seeds == 0:  # the generator is lazy: the regions below are trimmed
                    self._budget = self._usable(self.trim * worst)
            allowance = self._max_lost
        finally:
            self._blanket, self._budget = None, 0.0
            self._clear()
        return worst + allowance

    def epsilon(self, delta: float, xtol: float) -> float:
        """Smallest ε (to ``xtol``, from above) with ``delta(ε) <= delta``: a running
        maximum of the classes' own ε; a class at or below it is skipped after one sum.
        Trimmed: every computed class δ is held at ``delta − D``, ``D = trim·delta``."""
        best = 0.0
        allowance = self._usable(self.trim * delta)
        room = delta - allowance

        def measure(p: T, q: T) -> float:
            return self._class_delta(p, q, math.exp(best))

        def dominated(p: T, q: T) -> bool:
            self._last = measure(p, q)
            return self._ancestor_factor * self._last <= room

        self.pruned, self.evaluated = 0, 0
        self._blanket, self._budget = (measure, lambda: room), allowance
        try:
            for _, p, q in self._search(dominated):
                self.evaluated += 1
                if measure(p, q) <= room:
                    continue
                best = self._class_epsilon(p, q, room, best, xtol)
        finally:
            self._blanket, self._budget = None, 0.0
            self._clear()
        return best

    def _class_epsilon(self, p: T, q: T, room: float, lo: float, xtol: float) -> float:
        """The class's ε at δ = ``room`` by bisection on ``[lo, ε0]`` (to ``xtol``, from
        above; its δ at ``lo`` exceeds ``room``)."""
        hi = self.eps0
        while hi - lo > xtol:
            mid = 0.5 * (lo + hi)
            if self._class_delta(p, q, math.exp(mid)) <= room:
                hi = mid
            else:
                lo = mid
        return hi
