"""Two search starts of issue 32 (s31-vr; docs/proofs/mechanism-certificates.md, section 1t).

* ``ldp_lower`` starts from the root of its cheap member (binary RR's "all others on x'"),
  not from ε = 0, where the 3-RR member's incomplete betas sit at the centre of
  Bin(s, 1/2) (about 15 times their cost in the tail at n = 1e9). Its ε must fail its own
  curve (a lower bound) and sit within a few 1e-7 below the root a plain bracketed search
  finds to 1e-10 ε0.
* ``upper_root``'s ``_down_from``: a passing point whose secant estimate said "done" but
  whose probe 4 ``BRACKET_RTOL`` below passed too is followed down in doubling steps and
  halvings, not by a bracketed search from the far failing end (which crept along a
  stepped ``log δ`` by half its tolerance per evaluation). Its ε must pass, have a failing
  point within 4 ``BRACKET_RTOL`` below it, and take a handful of evaluations.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _krr_fast, _member_curve, curves
from crowdhide.accounting.shuffle.curves import BRACKET_RTOL, FLOOR_START_RTOL

CELLS = [(0.5, 10**9, 1e-6), (2.0, 10**9, 1e-6), (1.0, 1000, 1e-6), (4.0, 10**6, 1e-10)]


@pytest.mark.parametrize(("eps0", "n", "delta"), CELLS)
def test_ldp_lower_fails_its_curve_next_to_the_plain_root(
    eps0: float, n: int, delta: float
) -> None:
    curve = curves._ldp_lower_curve(eps0, n)
    target = math.log(delta)
    got = curve.epsilon(delta)
    xtol = 1e-10 * eps0
    plain = safe_root(curve.log_delta, target, 0.0, eps0, xtol=xtol, lower_side=True)
    assert curve.log_delta(got) > target  # the truth needs at least this ε
    # within a few FLOOR_START_RTOL below the root (a 1 % move either way fails here)
    assert plain * (1.0 - 8.0 * FLOOR_START_RTOL) <= got <= plain + 2.0 * xtol


def test_ldp_lower_keeps_the_3rr_member_away_from_the_centre(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At n = 1e9 the 3-RR member is asked only near the answer (it was asked at ε = 0 and
    1e-6 ε0 first: 60-100 ms of a generic query); binary RR's member is its floor."""
    asked: list[float] = []
    real = _krr_fast.krr_third_marginal_lower_log_delta.__wrapped__

    def third(n: int, k: int, eps0: float, eps: float, *, points: int = 256) -> float:
        asked.append(eps)
        return real(n, k, eps0, eps, points=points)

    monkeypatch.setattr(_krr_fast, "krr_third_marginal_lower_log_delta", third)
    got = curves._ldp_lower_curve(0.5, 10**9).epsilon(1e-6)
    assert asked
    assert min(asked) >= 0.5 * got


def _stepped(root: float, target: float, seen: list[float]) -> Callable[[float], float]:
    """A member's ``log δ`` as at δ = 1e-300 (Hadamard, ε0 = 0.5, n = 1e6): steep away from
    the root, a step of +0.04 / −0.0005 around it within 1e-5 relative."""

    def curve(eps: float) -> float:
        seen.append(eps)
        if abs(eps - root) > 1e-5 * root:
            return target + 1000.0 * (root - eps) / root
        return target + (0.04 if eps < root else -0.0005)

    return curve


@pytest.mark.parametrize("above", [1e-6, 9e-6, 3e-5])
def test_down_from_passes_next_to_a_failing_point(above: float) -> None:
    root, target = 0.0147594, math.log(1e-300)
    left, right = root * (1.0 - 1.2e-2), root * (1.0 + above)
    seen: list[float] = []
    got = _member_curve._down_from(_stepped(root, target, seen), target, left, right)
    assert got >= root  # passing (the curve passes exactly from the root on)
    assert got - root <= 4.0 * BRACKET_RTOL * got  # a 1 % move up fails here
    assert len(seen) <= 8
    # the former bracketed search of [left, right] to BRACKET_RTOL crept: many more
    seen.clear()
    former = safe_root(_stepped(root, target, seen), target, left, right, xtol=BRACKET_RTOL * right)
    assert former >= root
    if 4.0 * BRACKET_RTOL < above <= 1e-5:  # right on the step's flat passing side
        assert len(seen) >= 12


def test_upper_root_answers_next_to_the_step() -> None:
    """The whole search on the stepped curve: a passing ε within 4 BRACKET_RTOL of the step."""
    root, target = 0.0147594, math.log(1e-300)
    seen: list[float] = []
    got = _member_curve.upper_root(_stepped(root, target, seen), target, 0.0145, 1.0, 1e-10)
    assert root <= got <= root * (1.0 + 4.0 * BRACKET_RTOL)
