"""The closed-form composition theorems: basic (Dwork et al. 2006), advanced (homogeneous,
Dwork, Rothblum, Vadhan 2010 [DRV10]) and heterogeneous advanced (Kairouz, Oh, Viswanath 2015,
Thm 3.5 [KOV15]), each evaluated so that its result is never below the exact value of its formula
at the float inputs (exact sums and products rounded up; a stated relative allowance elsewhere).
:mod:`crowdhide.accounting.composition` re-exports them beside the numerical (PLD) composition.

References
----------
.. [DRV10] C. Dwork, G. Rothblum, S. Vadhan. Boosting and differential privacy. FOCS 2010.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath. The composition theorem for differential
   privacy. ICML 2015.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.logmath import product_up, relative_up, sum_up
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError

__all__ = [
    "advanced_composition",
    "advanced_epsilon",
    "basic_composition",
    "heterogeneous_advanced_composition",
]


def _composed(
    parts: Sequence[PrivacyStatement], *, epsilon: float, delta: float, source: str, **inputs: Any
) -> PrivacyStatement:
    """The composed statement: a certificate only when every part is one (composing lower
    bounds or estimates gives no promise, so the result is then an ``"estimate"``)."""
    kind: Kind = "upper" if all(p.kind in ("upper", "exact") for p in parts) else "estimate"
    return PrivacyStatement(
        epsilon=epsilon,
        delta=delta,
        kind=kind,
        source=source,
        conditions_met=all(p.conditions_met for p in parts),
        inputs={"parts": len(parts), **inputs},
    )


def basic_composition(statements: Iterable[PrivacyStatement]) -> PrivacyStatement:
    """Sum the ε's and δ's of adaptively composed mechanisms.

    Parameters
    ----------
    statements
        The (ε_i, δ_i) certificates of the mechanisms.

    Returns
    -------
    PrivacyStatement
        (Σ ε_i, Σ δ_i).

    See Also
    --------
    advanced_composition : Better for many mechanisms with small ε.
    crowdhide.compose : The smallest of PLD, advanced and basic composition.

    Examples
    --------
    >>> s = basic_composition([PrivacyStatement(epsilon=1.0, delta=1e-6)] * 3)
    >>> s.epsilon, s.delta, s.source
    (3.0, 3e-06, 'basic_composition')
    """
    parts = list(statements)
    eps = sum_up(g.epsilon for g in parts)  # rounded up: a float sum can be an ulp low
    delta = sum_up(g.delta for g in parts)
    return _composed(parts, epsilon=eps, delta=min(delta, 1.0), source="basic_composition")


#: Relative rounding allowance, in units of 2^-52, of the advanced-composition formulas below.
#: Error model: each IEEE operation (+, ×, /, sqrt) is within half a unit, each libm call
#: (log, log1p, expm1, tanh) within one; a sum of non-negative terms carries the largest
#: relative error of its terms plus half a unit; sqrt halves its argument's. Worst path, the
#: √(2 Σε² ln(e + √(Σε²)/δ̃)) term of [KOV15]: the log's argument is within 2 units (float e
#: is itself within half a unit of e), so ln, at least 1 there, within 2 + 1; the product
#: within 4.5, its root 2.75, plus the drift 3.25 units. 8 covers every path with room.
_ADVANCED_ULPS = 8


def advanced_epsilon(epsilon: float, count: float, slack: float) -> float:
    """``min(k ε, √(2k ln(1/δ')) ε + k ε (e^ε − 1))`` for a real count ``k`` (no validation;
    finite for every finite input: from ε = ln 2 on, the drift term alone is ``k ε``).

    >>> round(advanced_epsilon(0.1, 100, 1e-6), 4), advanced_epsilon(800.0, 3, 1e-6)
    (6.3082, 2400.0)
    """
    basic = product_up(count, epsilon)  # both candidates rounded up: each is a certificate
    if epsilon >= math.log(2.0):  # e^ε − 1 >= 1 (and e^ε overflows beyond ε ≈ 709)
        return basic
    advanced = math.sqrt(2.0 * count * -math.log(slack)) * epsilon
    drift = count * epsilon * math.expm1(epsilon)
    return min(relative_up(advanced + drift, ulps=_ADVANCED_ULPS), basic)


def advanced_composition(
    *, epsilon: float, delta: float, count: int, delta_slack: float
) -> PrivacyStatement:
    """Advanced composition of ``count`` (ε, δ)-DP mechanisms [DRV10].

    ``ε' = sqrt(2 k ln(1/δ')) ε + k ε (e^ε − 1)``, ``δ_total = k δ + δ'``; the result is
    never worse than basic composition (the minimum of the two ε is returned).

    Parameters
    ----------
    epsilon, delta
        The guarantee of each mechanism.
    count
        The number of mechanisms k, adaptively composed.
    delta_slack
        δ' of the theorem, ``0 < delta_slack < 1``.

    Returns
    -------
    PrivacyStatement
        (ε', k δ + δ'), the smaller ε of advanced and basic composition.

    See Also
    --------
    basic_composition : Sums the ε and δ.
    heterogeneous_advanced_composition : Mechanisms with different (ε_i, δ_i).
    compose_curves : Tighter, by composing whole curves.

    Examples
    --------
    >>> g = advanced_composition(epsilon=0.1, delta=0.0, count=100, delta_slack=1e-6)
    >>> round(g.epsilon, 4), g.delta
    (6.3082, 1e-06)
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    d = check_probability("delta", delta)
    k = check_int("count", count, low=1)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    return PrivacyStatement(
        epsilon=advanced_epsilon(eps, k, slack),
        delta=min(1.0, sum_up([product_up(k, d), slack])),
        source="advanced_composition",
        inputs={"epsilon": eps, "delta": d, "count": k, "delta_slack": slack},
    )


def heterogeneous_advanced_composition(
    guarantees: Sequence[PrivacyStatement], *, delta_slack: float
) -> PrivacyStatement:
    """Composition of heterogeneous (ε_i, δ_i) mechanisms, Theorem 3.5 of [KOV15].

    ``ε = min(Σ ε_i, Σ ε_i (e^{ε_i} − 1)/(e^{ε_i} + 1) + sqrt(2 Σ ε_i² ln(e + sqrt(Σ ε_i²)/δ̃)),
    Σ ε_i (e^{ε_i} − 1)/(e^{ε_i} + 1) + sqrt(2 Σ ε_i² ln(1/δ̃)))`` and
    ``δ = 1 − (1 − δ̃) Π (1 − δ_i)``.

    Parameters
    ----------
    guarantees
        The (ε_i, δ_i) certificates of the mechanisms.
    delta_slack
        δ̃ of the theorem, ``0 < delta_slack < 1``.

    Returns
    -------
    PrivacyStatement
        (ε, δ) of the theorem.

    See Also
    --------
    advanced_composition : The homogeneous case.
    basic_composition : Sums the ε and δ.

    Examples
    --------
    >>> one = PrivacyStatement(epsilon=0.1, delta=0.0)
    >>> g = heterogeneous_advanced_composition([one] * 100, delta_slack=1e-6)
    >>> round(g.epsilon, 4)
    5.7561
    """
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    if not guarantees:
        raise InvalidParameterError("guarantees must not be empty, got []")
    eps = np.array([g.epsilon for g in guarantees], dtype=float)
    deltas = np.array([g.delta for g in guarantees], dtype=float)
    name = "heterogeneous_advanced_composition"
    if np.isinf(eps).any():
        return _composed(guarantees, epsilon=math.inf, delta=1.0, source=name, delta_slack=slack)
    # fsum: correctly rounded sums, so the error model of _ADVANCED_ULPS holds for any count;
    # math's tanh and log1p (libm, within an ulp) rather than numpy's SIMD loops (a few ulps)
    drift = math.fsum(e * math.tanh(e / 2.0) for e in eps.tolist())  # ε (e^ε − 1)/(e^ε + 1)
    sq = math.fsum(eps * eps)
    candidates = [
        sum_up(eps.tolist()),
        relative_up(
            drift + math.sqrt(2.0 * sq * math.log(math.e + math.sqrt(sq) / slack)),
            ulps=_ADVANCED_ULPS,
        ),
        relative_up(drift + math.sqrt(2.0 * sq * -math.log(slack)), ulps=_ADVANCED_ULPS),
    ]
    return _composed(
        guarantees,
        epsilon=min(candidates),
        delta=_failure_union(slack, deltas.tolist()),
        source=name,
        delta_slack=slack,
    )


def _failure_union(slack: float, deltas: list[float]) -> float:
    """``1 − (1 − δ̃) Π (1 − δ_i)`` rounded up: −expm1(x) for x <= 0 passes on at most x's
    relative error, which the log1p's (an ulp each) and the fsum of same-signed terms keep
    within 1.5 units."""
    if max(deltas, default=0.0) >= 1.0:
        return 1.0
    log_keep = math.fsum(math.log1p(-d) for d in [slack, *deltas])
    return min(1.0, relative_up(-math.expm1(log_keep), ulps=_ADVANCED_ULPS))
