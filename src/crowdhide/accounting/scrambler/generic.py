"""A scrambler around a generic ε0-LDP randomizer (Theorem 5 / Remark 2 of Ladjel, Anciaux,
Bellet, Scerri): dummies drawn from the randomizer's blanket distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import (
    check_int,
    check_probability,
    check_real,
)
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.registry import Registry
from crowdhide.accounting.scrambler import bounds
from crowdhide.accounting.scrambler.accountant import _CITATION, scrambler_epsilon
from crowdhide.accounting.scrambler.curves import (
    BoundCurve,
    PureCurve,
)
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = ["GENERIC_BOUNDS", "GenericScramblerParams", "generic_scrambler_epsilon"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GenericScramblerParams:
    """A scrambler around a generic ε0-LDP randomizer with blanket probability γ
    (Theorem 5 / Remark 2): dummies drawn from the randomizer's blanket distribution."""

    eps0: float
    gamma: float
    n: int
    dummies: int

    def __post_init__(self) -> None:
        e0 = check_real("eps0", self.eps0, low=0.0)
        g = check_probability("gamma", self.gamma, allow_zero=False)
        if g < math.exp(-e0) - 1e-12:
            raise InvalidParameterError(
                f"gamma must be >= exp(-eps0) for an eps0-LDP randomizer (Balle et al.), got {g!r}"
            )
        object.__setattr__(self, "eps0", e0)
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "n", check_int("n", self.n, low=1))
        object.__setattr__(self, "dummies", check_int("dummies", self.dummies, low=0))


@dataclass(frozen=True)
class _GenericBound:
    name: str
    kind: Kind
    citation: str

    def applies(self, params: GenericScramblerParams) -> str | None:
        return None

    def curve(self, params: GenericScramblerParams) -> PrivacyCurve:
        if self.name == "local":
            return PureCurve(params.eps0)
        fn = {
            "hoeffding": bounds.generic_hoeffding_delta,
            "bennett": bounds.generic_bennett_delta,
        }[self.name]
        e0, g, n, d = params.eps0, params.gamma, params.n, params.dummies

        def vector(eps: npt.NDArray[np.float64], tail: float) -> npt.NDArray[np.float64]:
            return fn(eps0=e0, gamma=g, n=n, dummies=d, epsilon=eps, log_tail=tail)

        return BoundCurve(eps0=e0, vector=vector)


#: Bounds for a scrambler around a generic ε0-LDP randomizer (Theorem 5, Lemma 4).
GENERIC_BOUNDS: Registry[GenericScramblerParams] = Registry(
    [
        _GenericBound("bennett", "upper", _CITATION + ", Lemma 2 + Bennett with Lemma 4"),
        _GenericBound("hoeffding", "upper", _CITATION + ", Theorem 5 (sign fixed)"),
        _GenericBound("local", "upper", "post-processing of the ε0-LDP randomizer"),
    ],
    what="method",
)


def generic_scrambler_epsilon(
    *,
    n: int,
    dummies: int,
    delta: float,
    randomizer: Any = None,
    eps0: float | None = None,
    gamma: float | None = None,
    method: str = "best",
) -> PrivacyStatement:
    """ε(δ) of ``S_{R,d} ∘ R^n`` for any ε0-LDP local randomizer R (Theorem 5, Remark 2).

    The scrambler must draw its ``d`` dummies i.i.d. from R's *blanket distribution*
    ω_R (Remark 2), otherwise nothing here applies. Either pass ``randomizer`` (any object
    with ``eps0`` and ``blanket_probability``, e.g. from :mod:`crowdhide.mechanisms`) or
    ``eps0`` and ``gamma`` (the total-variation similarity; it must be R's own γ — a smaller
    γ does not make the Lemma 4 constants valid).

    k-ary randomized response (an object with ``k`` and ``eps0`` whose blanket is uniform) is
    exactly the sampling randomizer with ``T = k`` and ``σ = γ``, so it gets the full T-ary
    analysis (:func:`scrambler_epsilon`). Otherwise the methods are ``hoeffding``
    (Theorem 5 with a = e^ε − 1), ``bennett`` (Lemma 2 + Bennett with Lemma 4's constants)
    and ``local`` (ε0); ``best`` is the smallest.

    Examples
    --------
    >>> r = generic_scrambler_epsilon(eps0=1.0, gamma=0.5, n=1000, dummies=100, delta=1e-6)
    >>> r.source in ("hoeffding", "bennett"), r.is_certificate, r.epsilon < 1.0
    (True, True, True)
    """
    nn = check_int("n", n, low=1)
    d = check_int("dummies", dummies, low=0)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if randomizer is not None:
        if not hasattr(randomizer, "eps0") or not hasattr(randomizer, "blanket_probability"):
            raise ParameterTypeError(
                "randomizer must expose eps0 and blanket_probability (else pass eps0 and "
                f"gamma), got {type(randomizer).__name__}"
            )
        eps0, gamma = randomizer.eps0, randomizer.blanket_probability
        if _is_kary_rr(randomizer):
            # k-RR is the sampling randomizer with T = k and σ = γ: full T-ary analysis.
            g = check_probability("gamma", gamma, allow_zero=False)
            return scrambler_epsilon(
                targets=int(randomizer.k), sigma=g, n=nn, dummies=d, delta=dl, method=method
            )
    elif eps0 is None or gamma is None:
        raise InvalidParameterError("eps0 and gamma must be given when randomizer is None")
    params = GenericScramblerParams(eps0=eps0, gamma=gamma, n=nn, dummies=d)
    if method == "best":
        statement = GENERIC_BOUNDS.best(params, delta=dl)
    else:
        if method not in GENERIC_BOUNDS:
            raise InvalidParameterError(
                f"method must be hoeffding, bennett, local or best, got {method!r}"
            )
        statement = GENERIC_BOUNDS.statement(method, params, delta=dl)
    if method != "local" and statement.epsilon == params.eps0 and statement.source != "local":
        statement = statement.with_notes("bound gives no ε below ε0; capped at ε0")
    return statement


def _is_kary_rr(randomizer: Any) -> bool:
    """Whether ``randomizer`` behaves as k-ary randomized response (duck-typed)."""
    k = getattr(randomizer, "k", None)
    keep = getattr(randomizer, "keep_probability", None)
    other = getattr(randomizer, "other_probability", None)
    if not isinstance(k, int) or keep is None or other is None:
        return False
    return bool(
        math.isclose(keep + (k - 1) * other, 1.0, rel_tol=1e-9)
        and math.isclose(math.log(keep) - math.log(other), randomizer.eps0, rel_tol=1e-9)
    )
