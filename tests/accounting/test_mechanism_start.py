"""The certificate's search from an explicit start (issue 32, s25-start): started at the
lower bound's ε it moves only within the safe-side root finder's tolerance of the search
from 0 and stays a passing point; a start 1 % above the answer is caught by that check; a
start where the certificate fails is never returned."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.logmath import loss_allowance
from crowdhide.accounting.shuffle._lazy_least import StartedCertificate
from crowdhide.accounting.shuffle._member_curve import MemberCurve, _solve_tail
from crowdhide.accounting.shuffle.curves import BRACKET_RTOL
from crowdhide.accounting.shuffle.mechanisms import (
    MECHANISM_REGISTRY,
    MechanismBound,
    MechanismParams,
    _lower_curve,
)
from crowdhide.accounting.shuffle.randomizers import MECHANISMS

#: OUE, RAPPOR, k-subset (k = 4), OLH (g = 8), Hadamard: the domain sizes of the table.
DOMAIN = {"oue": 16, "rappor": 16, "subset": 16, "olh": 8, "hadamard": 16}
CELLS = [(1.0, 1000, 1e-6), (4.0, 10**6, 1e-10), (2.0, 10**9, 1e-300)]


def _params(name: str, eps0: float, n: int) -> MechanismParams:
    k = 4 if MECHANISMS[name].needs_k else None
    return MechanismParams(eps0=eps0, n=n, d=DOMAIN[name], k=k)


def _certificate(name: str, params: MechanismParams, start: float | None) -> StartedCertificate:
    bound = MECHANISM_REGISTRY[f"mechanism:{name}"]
    assert isinstance(bound, MechanismBound)
    return bound.certificate(params, None if start is None else (lambda delta: start))


def _member_log_delta(curve: MemberCurve, eps: float, tail: float) -> float:
    """``log δ`` of a certificate member curve at ε as its search judged it: the largest
    member, each by the smaller of its own value and its screen's (both bound its pairs)."""
    values = []
    for fn, screen in zip(curve._members, curve._screens, strict=True):
        value = fn(eps, tail)
        if screen is not None:
            value = min(value, screen(eps, tail))
        values.append(value)
    return min(max(values), 0.0)


def _passes(curve: StartedCertificate, eps: float, delta: float) -> bool:
    """δ(ε) <= δ evaluated as reported (the inner δ at ε minus the loss allowance, times
    1 + margin: :class:`~crowdhide.accounting.curves.RoundedCurve`), each member with the
    windows' tail its search used; the least of the certificates passes if one does."""
    at = curve._shifted(eps)
    if at is None:  # at or beyond ε0: δ is 0
        return True
    tail = _solve_tail(math.log(delta * (1.0 - curve._relative)))
    values = [
        _member_log_delta(m, at, tail) if isinstance(m, MemberCurve) else m.log_delta(at)
        for m in curve._least._members
    ]
    return min(values) + math.log1p(curve._relative) <= math.log(delta)


def _close(started: float, plain: float, eps0: float) -> bool:
    """Within the searches' tolerance: each answer within ``BRACKET_RTOL`` (plus the probe's
    4) of the root, and the loss allowance on either side."""
    return abs(started - plain) <= 10.0 * BRACKET_RTOL * plain + 2.0 * loss_allowance(eps0)


@pytest.mark.parametrize("name", list(DOMAIN))
@pytest.mark.parametrize(("eps0", "n", "delta"), CELLS)
def test_started_certificate_is_close_and_passes(
    name: str, eps0: float, n: int, delta: float
) -> None:
    params = _params(name, eps0, n)
    lower = _lower_curve(name, params).epsilon(delta)
    plain = _certificate(name, params, None).epsilon(delta)
    started_curve = _certificate(name, params, lower)
    started = started_curve.epsilon(delta)
    assert 0.0 < lower <= started
    assert _close(started, plain, eps0), (started, plain)
    assert _passes(started_curve, started, delta)
    assert not _passes(started_curve, started * (1.0 - 1e-4), delta)  # the check can fail
    # the curve the registry builds is the one started at the lower bound: the same float
    assert MECHANISM_REGISTRY[f"mechanism:{name}"].curve(params).epsilon(delta) == started
    # a start 1 % above the answer: still a passing point (the start itself), but the
    # closeness check catches it
    high_curve = _certificate(name, params, 1.01 * plain)
    high = high_curve.epsilon(delta)
    assert high >= 1.01 * plain  # the start (plus the loss allowance): no search below it
    assert _passes(high_curve, high, delta)
    assert not _close(high, plain, eps0)


def test_lower_curve_is_shared_and_unchanged() -> None:
    """The lower bound's curve is one object per parameters; its answers are a fresh one's."""
    params = _params("oue", 4.0, 10**4)
    shared = MECHANISM_REGISTRY["mechanism_lower:oue"].curve(params)
    assert shared is _lower_curve("oue", params)
    fresh = _lower_curve.__wrapped__("oue", params)
    for delta in (1e-6, 1e-300, 1e-6):
        assert shared.epsilon(delta) == fresh.epsilon(delta)


def _member(fails: Callable[[float], bool]) -> Callable[[float, float], float]:
    """log δ = log(0.5) − 10 ε (root at δ = 1e-3: ln(500)/10), failing where ``fails``."""

    def fn(eps: float, tail: float) -> float:
        return 0.0 if fails(eps) else math.log(0.5) - 10.0 * eps

    return fn


ROOT = math.log(500.0) / 10.0


@pytest.mark.parametrize("start", [0.0, 0.3, 0.9 * ROOT])
def test_member_search_from_a_start_below_the_root(start: float) -> None:
    curve = MemberCurve([_member(lambda eps: False)], 4.0, lower=False)
    eps = curve.epsilon_until(1e-3, math.inf, start)
    assert eps == pytest.approx(ROOT, rel=5.0 * BRACKET_RTOL)
    assert math.log(0.5) - 10.0 * eps <= math.log(1e-3)
    assert curve.finished(1e-3, start)
    assert not curve.finished(1e-3, start + 0.01)


def test_a_start_where_the_member_fails_is_not_returned() -> None:
    """A member that fails around the start (not monotone there): the search goes on to a
    passing point above it instead of returning the start."""
    start = 1.01 * ROOT  # above the root of the smooth part, inside the failing window
    curve = MemberCurve([_member(lambda eps: ROOT < eps < 1.1 * ROOT)], 4.0, lower=False)
    eps = curve.epsilon_until(1e-3, math.inf, start)
    assert eps >= 1.1 * ROOT
    assert _member(lambda e: ROOT < e < 1.1 * ROOT)(eps, 0.0) <= math.log(1e-3)
    # the same member without the window returns the start: a passing point
    plain = MemberCurve([_member(lambda eps: False)], 4.0, lower=False)
    assert plain.epsilon_until(1e-3, math.inf, start) == start


def test_start_outside_the_range_is_no_start() -> None:
    params = _params("oue", 1.0, 1000)
    for value in (-1.0, 0.0, 1.0, 2.0, math.nan):
        assert _certificate("oue", params, value).start_at(1e-6) == 0.0
    assert _certificate("oue", params, 0.05).start_at(1e-6) == 0.05
