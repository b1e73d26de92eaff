"""Immutable (ε, δ) guarantees."""

from __future__ import annotations

import math
from dataclasses import dataclass

from crowdhide._validation import check_probability, check_real

__all__ = ["DpGuarantee"]


@dataclass(frozen=True, slots=True)
class DpGuarantee:
    """An (ε, δ)-differential-privacy guarantee.

    A mechanism M is (ε, δ)-DP for a neighbouring relation when, for every neighbouring pair of
    inputs (x, x') and every event S, ``P[M(x) ∈ S] <= e^ε P[M(x') ∈ S] + δ``. Equivalently the
    hockey-stick divergence ``H_{e^ε}(M(x) || M(x'))`` is at most δ in both directions.

    Parameters
    ----------
    epsilon
        Privacy-loss bound, ``0 <= epsilon <= inf`` (``inf`` means "no finite ε at this δ").
    delta
        Failure probability, ``0 <= delta <= 1``.

    Examples
    --------
    >>> g = DpGuarantee(epsilon=1.0, delta=1e-6)
    >>> g.is_pure
    False
    >>> DpGuarantee(epsilon=0.5, delta=0.0).is_pure
    True
    >>> DpGuarantee(epsilon=-1.0, delta=0.0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: epsilon must be >= 0.0, got -1.0
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", check_real("epsilon", self.epsilon, low=0.0, allow_inf=True)
        )
        object.__setattr__(self, "delta", check_probability("delta", self.delta))

    @property
    def is_pure(self) -> bool:
        """Whether δ = 0."""
        return self.delta == 0.0

    @property
    def is_trivial(self) -> bool:
        """Whether the guarantee promises nothing (ε = inf or δ = 1)."""
        return math.isinf(self.epsilon) or self.delta >= 1.0

    def to_dict(self) -> dict[str, float]:
        """Plain-dict form, for JSON output."""
        return {"epsilon": self.epsilon, "delta": self.delta}
