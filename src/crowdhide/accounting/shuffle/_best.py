"""Which shuffle bounds ``best`` needs to solve (internal): a bound that is nearly always
looser than another is asked last, and skipped when one evaluation of its curve shows that
its ε is above an answer already found (issue 32: krr_clone's ε search took 0.04 s of a
k = 4, n = 1e3 query that krr_blanket wins).

Skipping changes no answer: a skipped bound's ε is certainly *above* a certificate's (not
equal), so it could neither win ``best`` nor tie with the winner.

An ε query that carries its lower bound also asks the lower bound first and stops once a
certificate is within :data:`SETTLED_RTOL` of it (:func:`settled`): every certificate is at
least the lower bound, so no answer goes down and none up by more than that (issue 32:
δ = 1e-300 at n = 1e3-1e4, where a closed form and the lower bound both sit at ε0 and
krr_blanket took 50-130 ms to answer ε0 too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from crowdhide.accounting.curves import PrivacyCurve, RoundedCurve
from crowdhide.accounting.registry import Bound
from crowdhide.accounting.shuffle._bound_curves import (
    KRR_CLONE_BRACKET_MAX_N,
    ShuffleParams,
    TinyTargetBracketedCurve,
)
from crowdhide.accounting.shuffle.curves import TINY_LOG_DELTA, _AdaptiveCurve
from crowdhide.accounting.statement import PrivacyStatement

__all__ = [
    "SETTLED_RTOL",
    "SKIPPED_BELOW",
    "SKIPPED_BELOW_TINY",
    "best_rows",
    "epsilon_above",
    "settled",
]

P = TypeVar("P")

#: Bounds asked last, each with the bounds whose answer can make it skipped: krr_blanket is
#: the tighter k-RR certificate below ``KRR_BLANKET_BEST_MAX_N``, variation_ratio certifies
#: within 1 % of FMT23's pair (tighter than FMT21's), exact is the truth. So the check
#: seldom costs an evaluation for nothing.
SKIPPED_BELOW: dict[str, frozenset[str]] = {
    "krr_clone": frozenset({"krr_blanket"}),
    "feldman2021": frozenset({"variation_ratio"}),
    "feldman2023": frozenset({"exact", "binary_rr_blocks"}),
}

#: More bounds whose answer can make krr_clone skipped, asked only at ``n >``
#: :data:`~crowdhide.accounting.shuffle._bound_curves.KRR_CLONE_BRACKET_MAX_N` and
#: ``δ < e^TINY_LOG_DELTA`` (:func:`_skippers`): there Balle et al.'s closed forms beat it
#: (issue 32: every k >= 3 and ε0 <= 4 of the table at n = 1e9, δ = 1e-300, where its search
#: took 32-122 ms) and one evaluation costs 2-5 ms; elsewhere it mostly wins, and at
#: n = 1e6 the check would cost 2-6 ms for nothing.
SKIPPED_BELOW_TINY: dict[str, frozenset[str]] = {
    "krr_clone": frozenset({"balle2019_bennett", "balle2019_hoeffding"}),
}

#: A certificate this close (relative) to the lower bound ends ``best``'s search
#: (:func:`settled`): at small n and tiny δ both sit at ε0 (k = 4, ε0 = 2, n = 1e3,
#: δ = 1e-300: krr_blanket spent 126 ms to answer ε0 after balle2019_hoeffding had).
SETTLED_RTOL = 1e-9


def epsilon_above(curve: PrivacyCurve, delta: float, epsilon: float) -> bool:
    """Whether ``curve.epsilon(delta)`` is certainly above ``epsilon``, told by one
    evaluation of its inner curve (False: not known).

    Only for a certificate's :class:`~crowdhide.accounting.curves.RoundedCurve` around a
    plain :class:`~crowdhide.accounting.shuffle.curves._AdaptiveCurve` (or krr_clone's
    :class:`~crowdhide.accounting.shuffle._bound_curves.TinyTargetBracketedCurve`): those
    solvers answer ε0 or a point where its log δ (windows set for the target) meets the
    target, and log δ is non-increasing, so log δ above the target at ``x`` puts the inner
    answer above ``x`` and the reported one (``+ η``, then capped) at or above ``x⁺ + η``,
    ``x⁺`` the next float; ``x`` is chosen so that this is above ``epsilon``.
    """
    if not isinstance(curve, RoundedCurve) or curve._lower or not 0.0 < delta < 1.0:
        return False
    inner = curve.inner
    solved = type(inner) in (_AdaptiveCurve, TinyTargetBracketedCurve)
    if not (solved and isinstance(inner, _AdaptiveCurve)) or not epsilon < curve._cap:
        return False  # a capped answer is never above the cap
    loss = -curve._shift
    x = epsilon - loss
    for _ in range(8):  # rounding moves x by a few ulps at most
        if math.nextafter(x, math.inf) + loss > epsilon:
            break
        x = math.nextafter(x, math.inf)
    else:
        return False
    if x <= 0.0:
        return False
    # RoundedCurve.epsilon's target for a certificate
    target = math.log(min(delta * (1.0 - curve._relative), 1.0 - 1e-16))
    inner.solving_for(target)
    try:
        return inner.log_delta(x) > target
    finally:
        inner.solving_for(None)


def best_rows(
    names: Sequence[str],
    evaluate: Callable[[str], PrivacyStatement],
    bounds: Mapping[str, Bound[P]],
    params: P,
    delta: float | None,
    *,
    lower: str | None = None,
) -> dict[str, PrivacyStatement]:
    """The statements ``best`` compares, by name: ``evaluate(name)`` for every bound in
    ``names``, those of :data:`SKIPPED_BELOW` last, except that with an ε query (``delta``
    given) one whose ε is certainly above that of a certificate already found among its
    skippers (:func:`_skippers`) is left out
    (``bounds[name].curve(params)`` is the curve as reported, asked where it applies).

    With ``lower`` (the lower bound the answer carries) an ε query evaluates it first and
    stores it under its name; once a certificate is within :data:`SETTLED_RTOL` of it, the
    remaining bounds are left out (:func:`settled`)."""
    rows: dict[str, PrivacyStatement] = {}
    floor = math.nan
    if delta is not None and lower is not None:
        rows[lower] = evaluate(lower)
        if rows[lower].conditions_met and rows[lower].kind == "lower":
            floor = rows[lower].epsilon
    for name in sorted(names, key=lambda name: name in SKIPPED_BELOW):
        if settled(rows.values(), floor):
            break
        found = [rows[w] for w in _skippers(name, params, delta) if w in rows]
        best = min((s.epsilon for s in found if s.is_certificate), default=math.inf)
        if delta is not None and math.isfinite(best):
            bound = bounds[name]
            if bound.applies(params) is None and epsilon_above(bound.curve(params), delta, best):
                continue
        rows[name] = evaluate(name)
    return rows


def _skippers(name: str, params: object, delta: float | None) -> frozenset[str]:
    """The bounds whose answer can make ``name`` skipped (:data:`SKIPPED_BELOW`, and
    :data:`SKIPPED_BELOW_TINY` at a large n and a tiny δ)."""
    out = SKIPPED_BELOW.get(name, frozenset())
    large = isinstance(params, ShuffleParams) and params.n > KRR_CLONE_BRACKET_MAX_N
    if large and delta is not None and delta > 0.0 and math.log(delta) < TINY_LOG_DELTA:
        out = out | SKIPPED_BELOW_TINY.get(name, frozenset())
    return out


def settled(rows: Iterable[PrivacyStatement], floor: float) -> bool:
    """Whether a certificate among ``rows`` has an ε within :data:`SETTLED_RTOL` of ``floor``,
    the ε of a lower bound at the same δ (nan: none). Every certificate's ε is at least the
    truth's, hence at least ``floor``: no bound left out could answer more than that below
    the one found, so leaving them out never lowers an answer and raises it by at most
    ``SETTLED_RTOL`` relative (the lower bounds answer a failing ε within 1e-10 ε0 of their
    root, e.g. ``ε0 (1 − 1e-10)`` where the certificates answer ε0)."""
    if not math.isfinite(floor) or floor <= 0.0:
        return False
    best = min((s.epsilon for s in rows if s.is_certificate), default=math.inf)
    return best <= floor * (1.0 + SETTLED_RTOL)
