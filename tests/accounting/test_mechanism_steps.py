"""Four schedules of the mechanism searches (s32-mech; docs/proofs/mechanism-certificates.md,
section 1w).

* ``upper_root``'s ``_up_from``: below ``TINY_LOG_DELTA``, where the secant steps stall on a
  plateau just below a step of ``log δ`` (their failing end within ``STEP_GAP`` of the
  target), relative steps up from it and halvings, not a bracketed search of the whole
  bracket (often up to ε0). Its ε must pass, have a failing point within
  ``4 BRACKET_RTOL`` below it, and take a handful of evaluations.
* ``upper_root``'s ``_NearTop``: where a later secant estimate (not only the first) aims at
  or beyond ``(1 − TOP_GAP) ε0`` and the member fails there, ε0 at once (the former steps
  halved the way to ε0 ten times and answered ε0 too).
* Hadamard's lower bound solves its nu = 1/(e + 1) member first at δ >= 1e-250: the answer
  must fail its curve and lie within the root tolerance of a plain search of the maximum;
  below 1e-250 the former order (the same floats).
* ``krr_blanket``'s bracket below ``TINY_LOG_DELTA`` is finished by regula falsi (Illinois)
  to ``4 BRACKET_RTOL`` (``_kink_finish``): a passing point next to a kinked root in fewer
  evaluations than the bracketed search; above it, the same floats.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _member_curve
from crowdhide.accounting.shuffle._member_curve import MemberCurve, upper_root
from crowdhide.accounting.shuffle.curves import BRACKET_RTOL
from crowdhide.accounting.shuffle.mechanisms import _lower_member, mechanism_curve
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, lower_members

TARGET = math.log(1e-300)


def _plateau(root: float, width: float, seen: list[float]) -> Callable[[float], float]:
    """A member's ``log δ`` as at δ = 1e-300 (OLH, ε0 = 1, n = 1e6): steep away from the
    root, a plateau 0.0004 above the target ``width`` (relative) wide just below the step
    at ``root``, 0.03 below the target past it, falling to a floor 38.7 below (the windows'
    tail level, where interpolation learns nothing)."""
    start = root * (1.0 - width)

    def curve(eps: float) -> float:
        seen.append(eps)
        if eps >= root:
            return TARGET - min(0.03 + 1000.0 * (eps - root) / root, 38.7)
        return TARGET + 0.0004 + 4000.0 * max(start - eps, 0.0) / root

    return curve


@pytest.mark.parametrize("width", [2e-5, 1e-4, 1e-3])
def test_up_from_passes_next_to_a_failing_point(width: float) -> None:
    root = 0.0270254
    left = root * (1.0 - 0.5 * width)  # on the plateau, as the stalled steps leave it
    seen: list[float] = []
    got = _member_curve._up_from(_plateau(root, width, seen), TARGET, left, 1.0)
    assert got >= root  # passing (the curve passes exactly from the root on)
    assert got - root <= 4.0 * BRACKET_RTOL * got  # a 1 % move up fails here
    assert len(seen) <= 2 * math.log2(width / BRACKET_RTOL) + 2
    # the former bracketed search of [left, ε0] to BRACKET_RTOL·ε0: more, and looser
    seen.clear()
    former = safe_root(_plateau(root, width, seen), TARGET, left, 1.0, xtol=BRACKET_RTOL)
    assert former >= root
    assert len(seen) >= 13


def test_upper_root_follows_the_plateau_up_only_below_tiny_delta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole search on the plateau: a passing ε within 4 BRACKET_RTOL of the step, in
    fewer evaluations than with the rule off (STEP_GAP = −1: the former path)."""
    root = 0.0270254
    seen: list[float] = []
    got = upper_root(_plateau(root, 3e-5, seen), TARGET, 0.025, 1.0, 1e-10)
    fast = len(seen)
    assert root <= got <= root * (1.0 + 4.0 * BRACKET_RTOL)
    monkeypatch.setattr(_member_curve, "STEP_GAP", -1.0)
    seen.clear()
    former = upper_root(_plateau(root, 3e-5, seen), TARGET, 0.025, 1.0, 1e-10)
    assert former >= root
    assert len(seen) >= fast + 5


def _slow_floor(top: float, seen: list[float]) -> Callable[[float], float]:
    """A member failing everywhere below ε0 on a floor that flattens (Hadamard, ε0 = 8,
    n = 1e6, δ = 1e-300): the first slope aims below ``(1 − TOP_GAP) ε0``, the next beyond."""

    def curve(eps: float) -> float:
        seen.append(eps)
        if eps >= top:
            return -math.inf
        return TARGET + 378.0 + 141.3 * math.exp(-0.816 * (eps - 1.4))

    return curve


def test_near_top_probe_in_the_steps_answers_eps0(monkeypatch: pytest.MonkeyPatch) -> None:
    top, seen = 8.0, []
    got = upper_root(_slow_floor(top, seen), TARGET, 1.4, top, 1e-10)
    fast = len(seen)
    assert got == top
    assert fast <= 5
    monkeypatch.setattr(_member_curve._NearTop, "__call__", lambda self, root: False)
    seen.clear()
    assert upper_root(_slow_floor(top, seen), TARGET, 1.4, top, 1e-10) == top
    assert len(seen) >= fast + 6


def test_near_top_probe_that_passes_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Passing at (1 − TOP_GAP) ε0 (a sliver 1 % wide), the steps go on as without the
    probe: the same float, one evaluation more."""
    top, sliver = 8.0, 0.01
    seen: list[float] = []

    def curve(eps: float) -> float:
        if eps >= top * (1.0 - sliver):
            seen.append(eps)
            return TARGET - 1.0 if eps < top else -math.inf
        return _slow_floor(top, seen)(eps)

    got = upper_root(curve, TARGET, 1.4, top, 1e-10)
    with_probe = len(seen)
    assert curve(got) <= TARGET
    monkeypatch.setattr(_member_curve._NearTop, "__call__", lambda self, root: False)
    seen.clear()
    assert upper_root(curve, TARGET, 1.4, top, 1e-10) == got
    assert with_probe == len(seen) + 1


def _hadamard_lower(eps0: float, n: int, first: int | None) -> MemberCurve:
    lowers = lower_members(MECHANISMS["hadamard"], eps0, 16, 1)
    members = [functools.partial(_lower_member, fn, n) for fn in lowers]
    return MemberCurve(members, eps0, lower=True, first=first)


@pytest.mark.parametrize(("eps0", "n"), [(0.5, 10**9), (2.0, 10**4), (8.0, 10**6)])
def test_hadamard_lower_first_member_fails_next_to_the_plain_root(eps0: float, n: int) -> None:
    delta = 1e-6
    target = math.log(delta)
    assert MECHANISMS["hadamard"].lower_first == 0
    curve = _hadamard_lower(eps0, n, 0)
    got = curve.epsilon(delta)
    tail = _member_curve._solve_tail(target)

    def top(eps: float) -> float:
        return max(fn(eps, tail) for fn in curve._members) if eps < eps0 else -math.inf

    assert top(got) > target  # a failing point of a lower member: the truth needs more
    plain = safe_root(top, target, 0.0, eps0, xtol=1e-10 * eps0, lower_side=True)
    assert plain * (1.0 - 4e-6) <= got <= plain + 2e-10 * eps0
    # the former order (nu = 0.5 first) lands within the same tolerance
    former = _hadamard_lower(eps0, n, None).epsilon(delta)
    assert abs(got - former) <= 4e-6 * plain


def test_hadamard_lower_keeps_its_order_below_tiny_delta() -> None:
    """At δ = 1e-300 a lower member's log δ is stepped and another path lands on another
    crossing (up to 1e-4 lower, measured): the former order there, the same floats."""
    for eps0, n in [(4.0, 10**6), (0.5, 10**4)]:
        got = _hadamard_lower(eps0, n, 0).epsilon(1e-300)
        assert got == _hadamard_lower(eps0, n, None).epsilon(1e-300)


def _kinked(root: float, seen: list[float]) -> Callable[[float], float]:
    """``krr_blanket``'s ``log δ`` as at δ = 1e-300 (k-RR, d = 16, ε0 = 0.5, n = 1e3): a
    slope of -4,700 far below the root, flattening to -1,800 over its last 1e-4 (relative),
    -4,800 past it down to the windows' floor 40.86 below the target."""
    bend = root * (1.0 - 1e-4)

    def curve(eps: float) -> float:
        seen.append(eps)
        if eps >= root:
            return TARGET - min(4800.0 * (eps - root), 40.86)
        if eps >= bend:
            return TARGET + 1800.0 * (root - eps)
        return TARGET + 1800.0 * (root - bend) + 4700.0 * (bend - eps)

    return curve


def test_failing_side_root_lands_next_to_the_kink() -> None:
    from crowdhide.accounting.shuffle._kink_finish import failing_side_root

    root, lo, hi = 0.2744880, 0.2624394, 0.2963766
    seen: list[float] = []
    got = failing_side_root(_kinked(root, seen), TARGET, lo, hi)
    assert got >= root  # passing (the curve passes exactly from the root on)
    assert got - root <= 4.0 * BRACKET_RTOL * got  # a 1 % move up fails here
    fast = len(seen)
    seen.clear()
    former = safe_root(_kinked(root, seen), TARGET, lo, hi, xtol=BRACKET_RTOL * hi)
    assert root <= former
    assert fast + 5 <= len(seen)


def test_kinked_curve_is_the_bracketed_one_above_tiny_delta() -> None:
    """Above 1e-250 the same search as BracketedCurve (the same floats); at 1e-300 a passing
    point within 4 BRACKET_RTOL of the former answer, by its own value."""
    from crowdhide.accounting.shuffle import _krr_fast
    from crowdhide.accounting.shuffle._bound_curves import _third_value_floor
    from crowdhide.accounting.shuffle._far_half import bound_memo
    from crowdhide.accounting.shuffle._kink_finish import KinkedBracketedCurve
    from crowdhide.accounting.shuffle.curves import BracketedCurve

    eps0, n, k = 0.5, 1000, 16

    def make(cls: type[BracketedCurve]) -> BracketedCurve:
        memo = bound_memo()
        return cls(
            lambda e, t: _krr_fast.krr_blanket_log_delta(n, k, eps0, e, t, memo=memo),
            eps0,
            _third_value_floor(eps0, n, k),
        )

    assert make(KinkedBracketedCurve).epsilon(1e-10) == make(BracketedCurve).epsilon(1e-10)
    curve = make(KinkedBracketedCurve)
    got = curve.epsilon(1e-300)
    former = make(BracketedCurve).epsilon(1e-300)
    curve.solving_for(TARGET)
    assert curve.log_delta(got) <= TARGET
    assert abs(got - former) <= 4.0 * BRACKET_RTOL * former


def test_near_top_probe_is_off_above_tiny_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above ``TINY_LOG_DELTA`` the steps run as before the probe: the piecewise mechanism at
    (8, 1e3, 1e-10) has its root 8e-4 below ε0, inside the probe's sliver, and answers it
    (the probe on every estimate answered ε0 there); forcing the probe on brings ε0 back, so
    the check can fail."""
    curve = mechanism_curve(mechanism="piecewise", eps0=8.0, n=1000)
    got = curve.epsilon(1e-10)
    assert got < 8.0 * (1.0 - 1e-4)
    monkeypatch.setattr(_member_curve, "TINY_LOG_DELTA", 0.0)
    fresh = mechanism_curve(mechanism="piecewise", eps0=8.0, n=1000)
    assert fresh.epsilon(1e-10) == 8.0
