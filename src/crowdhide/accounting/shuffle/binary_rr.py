"""Shuffled binary randomized response: a worst-case certificate over all datasets beyond the
exhaustive range, by blocks of datasets.

Setting. n users, binary RR with keep probability ``p = e^{ε0}/(e^{ε0} + 1)``, ``q = 1 − p``;
the shuffler releases the count of 1-reports. The target holds x (= 1) or x' (= 0); a dataset
is the number ``m`` of the other n − 1 users holding 1, and the others' count is
``A_m = Bin(m, p) + Bin(n − 1 − m, q)``. The worst case ``max_m δ_m(ε)`` is computed exactly
(every m) up to ``BINARY_EXACT_MAX_N`` (:func:`crowdhide.accounting.shuffle._krr_fast.
binary_rr_worst_log_delta`); beyond, the FMT23 clone pair is 1.12–1.48× above the lower bound
in ε because it reveals the number of clones.

Block certificate (this module). Fix a block of ``w`` consecutive datasets
``m ∈ [a, a + w − 1]`` and ``w − 1`` of the other users ("block users"). For every m in the
block, exactly ``a`` of the remaining ``n − w`` others hold 1: hold them fixed and let ``j =
m − a`` of the block users hold 1. Then

    A_m = A_core + W_m,   A_core = Bin(a, p) + Bin(n − w − a, q),   W_m independent of the rest.

The pair of dataset m, ``(A_m + Bern(p), A_m + Bern(q))``, is therefore the core pair
``(A_core + Bern(p), A_core + Bern(q))`` post-processed by adding the independent count
``W_m`` — the same map on both sides — so its hockey-stick divergence is at most the core's,
in both directions: ``δ_m(ε) <= δ_core(ε)``. The core is itself a dataset of ``n − w + 1``
users, evaluated exactly (log-concave convolution, suffix sums, every rounding and window
error added). The backward direction of core ``(a, b)`` is the forward direction of its
mirror ``(b, a)`` (swap x and x'), and dataset m's two directions are dataset
``n − 1 − m``'s swapped, so blocks covering ``m <= (n − 1)/2`` and both directions of each
core cover every dataset. Hence

    max_m δ_m(ε) <= max over blocks of δ_core(ε),

an upper bound for every n, exact for ``w = 1``. The price is the ``w − 1`` dropped users of
each core: about ``(w − 1)/(2n)`` relative in ε (ε scales like n^{-1/2}); with ``blocks``
blocks over half the datasets, ``w ≈ n/(2·blocks)``, i.e. ≈ ``1/(4·blocks)``.

Two evaluations of the same cores. :func:`binary_rr_worst_curve` convolves two binomial
windows of width O(√(n·L)) per core (direct, on positive arrays, so relative errors stay
tiny): O(blocks · n · L) set-up, cached per (n, ε0, window), then O(blocks · √(n L)) per ε;
offered up to ``BINARY_BLOCKS_MAX_N`` (beyond, the set-up exceeds a second). It is the
reference for :func:`binary_rr_tilted_curve`, which reads each core's δ off tilted contour
integrals of its generating function with every aliasing, truncation and rounding error
bounded (:mod:`crowdhide.accounting.shuffle.binary_rr_contour`): about a hundred nodes per core at
any n, tens of milliseconds per ε query up to n = 1e9 — the ``binary_rr_blocks`` bound of
the shuffle accountant.

Every δ is rounded up by a relative ``ROUNDING_MARGIN`` (1e-9) on top of the error bounds.

Examples
--------
>>> c = binary_rr_worst_curve(eps0=1.0, n=20_000)   # FMT23: 0.0297; lower bound: 0.02443
>>> round(c.epsilon(1e-6), 4)
0.0245
"""

from __future__ import annotations

import math

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle.binary_rr_contour import tilted_worst_log_delta
from crowdhide.errors import InvalidParameterError

__all__ = [
    "BINARY_BLOCKS",
    "BINARY_BLOCKS_MAX_N",
    "ROUNDING_MARGIN",
    "BinaryRrTiltedCurve",
    "BinaryRrWorstCurve",
    "binary_rr_tilted_curve",
    "binary_rr_worst_curve",
    "block_width",
]

#: Default number of dataset blocks over half the datasets (ε loss ≈ 1/(4·blocks)).
BINARY_BLOCKS = 64
#: Largest n for :func:`binary_rr_worst_curve` (set-up grows like n).
BINARY_BLOCKS_MAX_N = 200_000
#: Relative margin by which every δ is rounded up (on top of the rigorous error bounds).
ROUNDING_MARGIN = 1e-9
#: Windows are widened until their tail bound is below e^{-14} relative to δ (see
#: :meth:`BinaryRrWorstCurve.log_delta`); never beyond this ``L``.
_MAX_L = 2000.0
#: ... nor beyond the ``L`` at which the set-up (rows x window² multiply-adds) exceeds this
#: (about a second); narrower windows only add their (rigorous) tail bound to δ.
_SETUP_BUDGET = 2e9


def _setup_cost(n: int, eps0: float, rows: int, big_l: float) -> float:
    """Multiply-adds of the set-up: rows x (window width)²."""
    pq = 0.25 / math.cosh(eps0 / 2.0) ** 2  # p q of binary RR
    half = big_l / 3.0 + math.sqrt(big_l**2 / 9.0 + 2.0 * n * pq * big_l) + 1.0
    return rows * (2.0 * half + 1.0) ** 2


def _window_cap(n: int, eps0: float, rows: int) -> float:
    """Largest ``L`` (window tails e^{-L}) whose set-up fits :data:`_SETUP_BUDGET`."""
    big_l = _MAX_L
    while big_l > 40.0 and _setup_cost(n, eps0, rows, big_l) > _SETUP_BUDGET:
        big_l = max(40.0, big_l / 1.25)
    return big_l


def block_width(n: int, blocks: int) -> int:
    """Datasets per block: 1 (every dataset exactly) while ``(n + 1)/2 <= blocks``.

    Examples
    --------
    >>> block_width(2500, 2000), block_width(20_001, 64)
    (1, 157)
    """
    return max(1, -(-((n - 1) // 2 + 1) // blocks))


class BinaryRrWorstCurve(PrivacyCurve):
    """Upper bound on the worst-case privacy curve of n shuffled binary-RR reports over every
    dataset (module docstring); exact (up to rounding bounds) when ``width == 1``."""

    def __init__(self, *, eps0: float, n: int, blocks: int) -> None:
        self.eps0, self.n = eps0, n
        self.width = block_width(n, blocks)
        rows = len(_krr_fast.binary_core_rows(n, self.width))
        if _setup_cost(n, eps0, rows, 40.0) > 5.0 * _SETUP_BUDGET:
            raise InvalidParameterError(
                f"blocks must be smaller for n={n!r} (set-up over ~5 s), got blocks={blocks!r}"
            )
        self._cap = _window_cap(n, eps0, rows)
        self._l_floor, self._l_max = 40.0, self._cap

    def _at(self, epsilon: float, big_l: float) -> float:
        return _krr_fast.binary_rr_worst_log_delta(
            self.n, self.eps0, epsilon, -big_l, width=self.width
        )

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self.eps0:
            return -math.inf
        # Window tails are bounded and added; widen until they are negligible next to δ.
        big_l = self._l_floor
        value = self._at(epsilon, big_l)
        while value > -math.inf and value <= -big_l + 14.0 and big_l < self._l_max:
            big_l = min(max(-value + 30.0, 2.0 * big_l), self._l_max)
            value = self._at(epsilon, big_l)
        return min(value + math.log1p(ROUNDING_MARGIN), 0.0)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        if self.log_delta(0.0) <= target:
            return 0.0
        # While solving, windows with tails below δ e^{-40} suffice (a value computed with them
        # that is below the target is a valid answer): one fixed window, one cached set-up.
        self._l_floor = self._l_max = max(min(self._cap, -target + 40.0), 40.0)
        try:
            xtol = max(1e-13, 1e-10 * self.eps0)
            return safe_root(self.log_delta, target, 0.0, self.eps0, xtol=xtol)
        finally:
            self._l_floor, self._l_max = 40.0, self._cap

    def epsilon_upper_hint(self) -> float:
        return self.eps0


def binary_rr_worst_curve(
    *, eps0: float, n: int, blocks: int = BINARY_BLOCKS
) -> BinaryRrWorstCurve:
    """Certificate for n shuffled binary-RR reports: worst case over every dataset, by blocks.

    Parameters
    ----------
    eps0
        Local ε0 of binary randomized response, ``0 < eps0 <= 50``.
    n
        Number of users, ``1 <= n <= BINARY_BLOCKS_MAX_N``.
    blocks
        Blocks over half the datasets; ``(n + 1)/2 <= blocks`` gives the exact worst case.

    Examples
    --------
    >>> c = binary_rr_worst_curve(eps0=0.45, n=2500, blocks=2000)   # exact: every dataset
    >>> c.width, f"{c.delta(0.05):.3g}"
    (1, '4.81e-11')
    """
    e0 = check_real("eps0", eps0, low=0.0, low_open=True, high=50.0)
    nn = check_int("n", n, low=1, high=BINARY_BLOCKS_MAX_N)
    bb = check_int("blocks", blocks, low=1, high=10**6)
    return BinaryRrWorstCurve(eps0=e0, n=nn, blocks=bb)


def _lower_epsilon(n: int, eps0: float, target: float) -> float:
    """ε of the exact "all others on x'" dataset at ``log δ = target`` (a lower bound on the
    answer of every certificate; from below)."""
    return safe_root(
        lambda e: -math.inf if e >= eps0 else _krr_fast.binary_same_lower_log_delta(n, eps0, e),
        target,
        0.0,
        eps0,
        xtol=max(1e-15, 1e-9 * eps0),
        lower_side=True,
    )


class BinaryRrTiltedCurve(PrivacyCurve):
    """The block certificate of :class:`BinaryRrWorstCurve` (same cores, same guarantee)
    with every core evaluated by tilted contour integrals
    (:mod:`crowdhide.accounting.shuffle.binary_rr_contour`): no windows, every tail and rounding
    error bounded and added, milliseconds per δ(ε) at any n up to 1e9."""

    def __init__(self, *, eps0: float, n: int, blocks: int) -> None:
        self.eps0, self.n = eps0, n
        self.width = block_width(n, blocks)
        self._memo: dict[float, float] = {}

    def log_delta(self, epsilon: float) -> float:
        value = tilted_worst_log_delta(self.n, self.eps0, epsilon, self.width)
        return min(value + math.log1p(ROUNDING_MARGIN), 0.0)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        # The answer is above the lower bound's ε and, at n in the thousands and beyond,
        # within a few per mille of it: bracket narrowly first (fewer evaluations).
        low = _lower_epsilon(self.n, self.eps0, target)
        if low <= 0.0 and self.log_delta(0.0) <= target:
            return 0.0
        # Aim a hair (1e-7 relative in δ) below the target: the bound moves in tiny steps
        # (integer thresholds), and a root off those steps keeps the search short.
        aim = target - 1e-7
        lo, hi = self._bracket(aim, low)
        return safe_root(self._memo_log_delta, aim, lo, hi, xtol=max(1e-13, 6e-6 * hi))

    def _memo_log_delta(self, epsilon: float) -> float:
        """:meth:`log_delta` remembered for the current ε query (root search revisits)."""
        if epsilon not in self._memo:
            self._memo[epsilon] = self.log_delta(epsilon)
        return self._memo[epsilon]

    def _secant_guess(self, aim: float, low: float) -> float:
        """Where ``log δ = aim`` by secant steps from ``1.0045 low``, the first with the
        lower bound's slope (the two curves are nearly parallel); nan if it goes astray."""
        x0 = min(1.0045 * low, self.eps0)
        f0 = self._memo_log_delta(x0)
        lower = _krr_fast.binary_same_lower_log_delta
        h = 1e-3 * low
        if not low < low + h < self.eps0:  # ε too small to step on (ε0 near underflow)
            return math.nan
        slope = (lower(self.n, self.eps0, low + h) - lower(self.n, self.eps0, low)) / h
        for _ in range(3):
            if not (slope < 0.0 and math.isfinite(f0)):
                return math.nan
            x1 = x0 + (aim - f0) / slope
            if not low <= x1 <= self.eps0:
                return math.nan
            if abs(x1 - x0) <= 1e-6 * x1:
                return x1
            f1 = self._memo_log_delta(x1)
            slope, x0, f0 = (f1 - f0) / (x1 - x0), x1, f1
        return x0

    def _bracket(self, aim: float, low: float) -> tuple[float, float]:
        """``[lo, hi]`` with ``log δ(lo) > aim >= log δ(hi)``: ``± 2.5e-6`` (relative) around
        the secant guess, else widening steps above ``low``."""
        self._memo = {}
        guess = self._secant_guess(aim, low)
        if math.isfinite(guess):
            lo, hi = guess * (1.0 - 2.5e-6), min(guess * (1.0 + 2.5e-6), self.eps0)
            if low <= lo and self._memo_log_delta(hi) <= aim < self._memo_log_delta(lo):
                return lo, hi
        lo = low
        for factor in (1.006, 1.03, 1.2):
            hi = min(low * factor, self.eps0)
            if low > 0.0 and self._memo_log_delta(hi) <= aim:
                return lo, hi
            lo = max(lo, hi)
        return lo, self.eps0  # log δ(ε0) = -inf

    def epsilon_upper_hint(self) -> float:
        return self.eps0


def binary_rr_tilted_curve(
    *, eps0: float, n: int, blocks: int = BINARY_BLOCKS
) -> BinaryRrTiltedCurve:
    """Certificate for n shuffled binary-RR reports at any n: worst case over every dataset
    by blocks (module docstring), each core evaluated by contour integrals.

    Parameters
    ----------
    eps0
        Local ε0 of binary randomized response, ``0 < eps0 <= 50``.
    n
        Number of users, ``1 <= n <= 10**9``.
    blocks
        Blocks over half the datasets (ε loss ≈ ``1/(4·blocks)``; ``(n + 1)/2 <= blocks``
        gives the exact worst case).

    Examples
    --------
    >>> c = binary_rr_tilted_curve(eps0=1.0, n=10**9)   # lower bound: 4.8933e-05
    >>> round(c.epsilon(1e-6) / 4.8933e-05, 2)
    1.0
    """
    e0 = check_real("eps0", eps0, low=0.0, low_open=True, high=50.0)
    nn = check_int("n", n, low=1, high=10**9)
    bb = check_int("blocks", blocks, low=1, high=10**6)
    if min(bb, (nn - 1) // 2 + 1) > 10_000:  # the work grows with the number of cores
        raise InvalidParameterError(
            f"blocks must be at most 10000 for n={n!r}, got blocks={blocks!r}"
        )
    return BinaryRrTiltedCurve(eps0=e0, n=nn, blocks=bb)
