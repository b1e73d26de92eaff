"""The lower bound's fast member schedule (issue 32, s26-lapw): the largest member solved
second, the members that pass at the first one's answer left out, each root found by
secant steps and a short bracketed search (``_member_curve.lower_root``).

Checked against an independent reference, the former schedule (every member in list order,
each by a bracketed search of ``[running answer, ε0]``): on a grid of piecewise and Laplace
cells the two answers agree to the root tolerance where the members are smooth, and the
fast answer is always a point where some member's ``log δ`` is above the target (so a
proven lower bound on the truth's ε). Every check is shown to fail on a wrong answer."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle._member_curve import MemberCurve, _solve_tail, lower_root
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, lower_members

Member = Callable[[float, float], float]

#: (ε0, n, δ) of the grid: both rows' slow cells of the issue's table.
CELLS = [
    (eps0, n, delta)
    for eps0 in (0.5, 2.0, 8.0)
    for n in (10**3, 10**6, 10**9)
    for delta in (1e-6, 1e-10)
]


def _members(name: str, eps0: float, n: int) -> list[Member]:
    return [
        (lambda eps, tail, fn=fn: fn(n, eps)) for fn in lower_members(MECHANISMS[name], eps0, 0, 1)
    ]


def _xtol(eps0: float) -> float:
    return max(1e-13, 1e-10 * eps0)  # as MemberCurve._solve_member


def _reference(members: list[Member], eps0: float, delta: float) -> float:
    """The former schedule: every member in reversed list order from the running answer,
    each by a bracketed search of ``[answer, ε0]`` from the failing side."""
    target = math.log(delta)
    tail = _solve_tail(target)
    best = 0.0
    for fn in reversed(members):

        def curve(eps: float, fn: Member = fn) -> float:
            return -math.inf if eps >= eps0 else min(fn(eps, tail), 0.0)

        best = safe_root(curve, target, best, eps0, xtol=_xtol(eps0), lower_side=True)
    return best


def _some_member_fails(members: list[Member], eps0: float, delta: float, eps: float) -> bool:
    """Whether some member's ``log δ`` at ε is above the target (ε is then below the ε of
    that member's dataset, so below the truth's)."""
    target = math.log(delta)
    if eps <= 0.0:
        return True  # 0 is a lower bound on any ε
    return eps < eps0 and any(min(fn(eps, _solve_tail(target)), 0.0) > target for fn in members)


@pytest.mark.parametrize("name", ["piecewise", "laplace"])
@pytest.mark.parametrize(("eps0", "n", "delta"), CELLS)
def test_fast_schedule_matches_the_former_one(name: str, eps0: float, n: int, delta: float) -> None:
    members = _members(name, eps0, n)
    fast = MemberCurve(members, eps0, lower=True).epsilon(delta)
    former = _reference(members, eps0, delta)
    # both are the failing end of a bracket of width <= xtol (+4 ulp) around the same root
    tol = 2.0 * _xtol(eps0) + 1e-14 * former
    assert abs(fast - former) <= tol, (fast, former)
    assert _some_member_fails(members, eps0, delta, fast)
    # the checks can fail: a point 1e-6 relative above the root passes every member there
    # (the grid's members are smooth), and is outside the tolerance
    above = former * (1.0 + 1e-6) + 10.0 * _xtol(eps0)
    assert not _some_member_fails(members, eps0, delta, above)
    assert abs(above - former) > tol


@pytest.mark.slow
@pytest.mark.parametrize("name", ["piecewise", "laplace"])
@pytest.mark.parametrize(("eps0", "n"), [(e, n) for e in (0.5, 2.0, 8.0) for n in (10**3, 10**9)])
def test_deep_delta_answer_is_a_failing_point(name: str, eps0: float, n: int) -> None:
    """At δ = 1e-300 the members' rounded tails are not monotone in ε (Laplace's two-count
    member jumps by ±1 in log δ between neighbouring ε), so the two schedules may stop at
    different crossings; the fast answer is still a failing point of a member."""
    members = _members(name, eps0, n)
    fast = MemberCurve(members, eps0, lower=True).epsilon(1e-300)
    assert _some_member_fails(members, eps0, 1e-300, fast)


def _quadratic(eps: float) -> float:
    return -40.0 * eps - 300.0 * eps * eps  # log δ, decreasing, log 1e-6 at ε ≈ 0.158044


@pytest.mark.parametrize("lo", [0.0, 0.1, 0.158])
def test_lower_root_is_the_failing_end_within_xtol(lo: float) -> None:
    target, xtol = math.log(1e-6), 1e-12
    root = (-40.0 + math.sqrt(1600.0 - 1200.0 * target)) / 600.0
    value = lower_root(_quadratic, target, lo, 4.0, xtol)
    assert _quadratic(value) > target  # failing: a lower bound on the root
    assert root - 2.0 * xtol <= value <= root
    assert not root - 2.0 * xtol <= root * (1.0 - 1e-9) <= root  # the window can fail
    # passing at the start: the start itself, one evaluation
    calls: list[float] = []

    def counted(eps: float) -> float:
        calls.append(eps)
        return _quadratic(eps)

    assert lower_root(counted, target, 0.3, 4.0, xtol) == 0.3
    assert calls == [0.3]
