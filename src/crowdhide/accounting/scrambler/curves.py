"""Privacy curves of the scrambler's bounds: one object answers both ε(δ) and δ(ε).

Each bound of the scrambler accountant (:mod:`crowdhide.accounting.scrambler.accountant`) hands the
bound registry a :class:`~crowdhide.accounting.curves.PrivacyCurve`; the curves here turn
the evaluators of :mod:`crowdhide.accounting.scrambler.bounds` into such curves.

* :class:`BoundCurve` wraps a δ(ε) evaluator. A certified bound is also capped at the local
  ε0 of sampling: the scrambler only post-processes the sampled messages, so
  (ε0, 0)-DP always holds and δ(ε) = 0 from ε0 on. Concentration bounds (Hoeffding,
  Bennett) are not monotone in ε; their curve is the monotone envelope
  ``δ(ε) = min_{ε' <= ε} bound(ε')`` ((ε', δ)-DP implies (ε, δ)-DP for ε >= ε'), and ε(δ) is
  the first ε at which the bound passes.
* :class:`WorstPairCurve` is the maximum of exact pair curves (the exhaustive evaluator).
* :class:`PureCurve` is a pure-ε statement: δ(ε) = 0 from ε on, 1 below.

Examples
--------
>>> c = PureCurve(1.5)
>>> c.epsilon(1e-9), c.delta(1.0), c.delta(2.0)
(1.5, 1.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.curves import DiscretePairCurve, PrivacyCurve
from crowdhide.accounting.roots import calibrate, safe_root
from crowdhide.errors import InvalidParameterError

__all__ = [
    "BoundCurve",
    "DeltaEvaluator",
    "PointDelta",
    "PureCurve",
    "VectorDelta",
    "WorstPairCurve",
    "first_passing",
    "log_tail_for",
    "monotone_epsilon",
    "per_tail",
]

FloatArray = npt.NDArray[np.float64]
#: δ(ε) of one evaluator at ε for a truncation level ``log_tail`` (scalar form).
PointDelta = Callable[[float, float], float]
#: The same, vectorised over ε (concentration bounds).
VectorDelta = Callable[[FloatArray, float], FloatArray]

#: Search ceiling for ε when σ = 0 (no finite local ε0).
EPS_CEILING = 60.0
#: Truncation used for δ(ε) queries (no target δ to scale it by).
_DEFAULT_LOG_TAIL = -60.0


def log_tail_for(delta: float) -> float:
    """Truncation level of binomial windows: far below the target δ, never below e^-690."""
    return max(math.log(delta) - 25.0, -690.0)


class DeltaEvaluator(Protocol):
    """An evaluator of :mod:`~crowdhide.accounting.scrambler.bounds` (scalar δ(ε))."""

    def delta(self, epsilon: float) -> float: ...


def per_tail(factory: Callable[[float], DeltaEvaluator]) -> PointDelta:
    """Point evaluator building one evaluator per truncation level and reusing it (the
    evaluators build their lookup tables once, then every δ(ε) is cheap).

    The accountant's exact bounds hand this to :class:`BoundCurve`; a benchmark can build
    the same uncapped, unrounded curve from it.

    Parameters
    ----------
    factory
        Builds the evaluator for one truncation level ``log_tail``.

    Returns
    -------
    PointDelta
        ``(ε, log_tail) -> δ`` of the evaluator built (once) for ``log_tail``.
    """
    built: dict[float, DeltaEvaluator] = {}

    def point(eps: float, log_tail: float) -> float:
        if log_tail not in built:
            built[log_tail] = factory(log_tail)
        return float(built[log_tail].delta(eps))

    return point


def _log(value: float) -> float:
    return math.log(value) if value > 0.0 else -math.inf


class BoundCurve(PrivacyCurve):
    """δ(ε) of one scrambler evaluator, capped at the local ε0 when it is a certificate.

    Parameters
    ----------
    eps0
        Local ε0 of sampling (``inf`` when σ = 0): the search ceiling.
    point
        Scalar evaluator ``(ε, log_tail) -> δ`` of a monotone bound.
    vector
        Vectorised evaluator of a non-monotone bound (used instead of ``point``).
    cap
        Cap ε at ``eps0`` (δ = 0 from ε0 on: for a certificate ``eps0`` must be at least the
        exact value, e.g. :attr:`ScramblerParams.eps0_cap
        <crowdhide.accounting.scrambler.accountant.ScramblerParams.eps0_cap>` for a computed one).
    lower_side
        The bound is a lower bound: roots are taken from the failing side.
    """

    def __init__(
        self,
        *,
        eps0: float,
        point: PointDelta | None = None,
        vector: VectorDelta | None = None,
        cap: bool = True,
        lower_side: bool = False,
    ) -> None:
        if (point is None) == (vector is None):
            raise InvalidParameterError("give exactly one of point and vector, got both or neither")
        self.eps0 = eps0
        self._point = point
        self._vector = vector
        self._cap = cap
        self._lower_side = lower_side

    def epsilon_upper_hint(self) -> float:
        return max(self.eps0, 1e-6) if math.isfinite(self.eps0) else EPS_CEILING

    def _vector_safe(self, eps: FloatArray, log_tail: float) -> FloatArray:
        assert self._vector is not None
        with np.errstate(divide="ignore", invalid="ignore"):
            values = self._vector(eps, log_tail)
        return np.where(np.isnan(values), 1.0, values)

    def _raw_delta(self, epsilon: float) -> float:
        if self._vector is not None:
            # Monotone envelope of a non-monotone bound: the best ε' <= ε on a grid.
            grid = np.append(np.geomspace(1e-6, max(epsilon, 1e-6), 200), epsilon)
            if epsilon <= 0.0:
                grid = np.array([0.0])
            return float(np.min(self._vector_safe(grid, _DEFAULT_LOG_TAIL)))
        assert self._point is not None
        value = self._point(epsilon, _DEFAULT_LOG_TAIL)
        if 0.0 < value < 1e-20:  # far below the default truncation: refine it
            value = self._point(epsilon, log_tail_for(value))
        return value

    def log_delta(self, epsilon: float) -> float:
        if self._cap and epsilon >= self.eps0:
            return -math.inf
        return _log(min(max(self._raw_delta(epsilon), 0.0), 1.0))

    def epsilon(self, delta: float) -> float:
        tail = log_tail_for(delta)
        hi = self.epsilon_upper_hint()
        if self._vector is not None:
            eps = first_passing(lambda e: self._vector_safe(e, tail), delta, hi)
        else:
            assert self._point is not None
            point = self._point
            eps = monotone_epsilon(lambda e: _log(point(e, tail)), math.log(delta), hi,
                                   lower_side=self._lower_side)  # fmt: skip
        return min(eps, self.eps0) if self._cap else eps


def monotone_epsilon(
    log_delta: Callable[[float], float], log_target: float, hi: float, *, lower_side: bool = False
) -> float:
    """Smallest ε in [0, hi] with ``log_delta(ε) <= log_target`` for a non-increasing
    evaluator (safe side, :func:`~crowdhide.accounting.roots.safe_root`); ``inf`` if even
    ``hi`` fails. With ``lower_side`` the failing end is returned (for lower bounds)."""
    if log_delta(0.0) <= log_target:
        return 0.0
    if log_delta(hi) > log_target:
        return math.inf
    return safe_root(log_delta, log_target, 0.0, hi, xtol=1e-12, lower_side=lower_side)


def first_passing(
    delta_fn: Callable[[FloatArray], FloatArray], target: float, hi: float, points: int = 240
) -> float:
    """Smallest passing ε on a geometric grid in (0, hi], refined between the last failing
    and the first passing grid point.

    The bounds searched here (Hoeffding, Bennett) are NOT monotone in ε, so a root finder on
    the whole range could land on a later crossing; the vectorised grid scan (one array
    evaluation for all points) finds the first passing region, then
    :func:`~crowdhide.accounting.roots.calibrate` refines it. Every ε returned satisfies
    ``bound(ε) <= target``.
    """
    grid = np.geomspace(1e-6, hi, points)
    passing = np.nonzero(delta_fn(grid) <= target)[0]
    if passing.size == 0:
        return math.inf
    i = int(passing[0])
    if i == 0:
        return float(grid[0])

    def passes(eps: float) -> bool:
        return bool(delta_fn(np.array([eps]))[0] <= target)

    return float(
        calibrate(passes, low=float(grid[i - 1]), high=float(grid[i]), increasing=True, rtol=1e-10)
    )


class WorstPairCurve(PrivacyCurve):
    """The maximum of exact pair curves (every neighbouring input, exhaustively): exact.

    Examples
    --------
    >>> a = DiscretePairCurve.from_probabilities([0.75, 0.25], [0.25, 0.75])
    >>> b = DiscretePairCurve.from_probabilities([0.6, 0.4], [0.4, 0.6])
    >>> round(WorstPairCurve([a, b]).epsilon(1e-9), 6) == round(math.log(3), 6)
    True
    """

    def __init__(self, curves: Sequence[DiscretePairCurve]) -> None:
        self.curves = tuple(curves)

    def log_delta(self, epsilon: float) -> float:
        return max(c.log_delta(epsilon) for c in self.curves)

    def epsilon(self, delta: float) -> float:
        return max(c.epsilon(delta) for c in self.curves)

    @property
    def max_loss(self) -> float:
        """Pure ε: the largest privacy loss over every pair and outcome."""
        return max(c.max_loss for c in self.curves)


class PureCurve(PrivacyCurve):
    """A pure-ε statement: δ(ε') = 0 for ε' >= ε and 1 below (nothing is known there)."""

    def __init__(self, epsilon: float) -> None:
        self.pure_epsilon = epsilon

    def log_delta(self, epsilon: float) -> float:
        return -math.inf if epsilon >= self.pure_epsilon else 0.0

    def epsilon(self, delta: float) -> float:
        return self.pure_epsilon
