"""BracketedCurve at a tiny δ when nothing passes below ε0 (issue 32): it stops at a floor
(answers ε0, always valid) in a few evaluations, and still finds a root that a steep drop
close to ε0 puts there (every answer passes by its own value)."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import curves

EPS0 = 1.0
TARGET = 1e-300


def _solve(log_delta: object) -> tuple[float, int]:
    """ε at TARGET of a BracketedCurve over ``log_delta(ε)`` (its floor, below every curve
    here, passes the target at ε = 0.195), and the number of evaluations."""
    calls = []

    def fn(eps: float, _tail: float) -> float:
        calls.append(eps)
        return log_delta(eps)  # type: ignore[operator,no-any-return]

    floor = curves._FunctionCurve(lambda e: -300.0 - 2000.0 * e, EPS0)
    got = curves.BracketedCurve(fn, EPS0, floor).epsilon(TARGET)
    return got, len(calls)


def _floored(eps: float) -> float:
    return max(-100.0 - 2000.0 * eps, -600.0)  # a floor above the target (log 1e-300 = -690.8)


def _slow_floor(eps: float) -> float:
    return -200.0 - 30.0 * eps - 0.01 * math.log1p(1e6 * eps)  # still falling, by far too little


def _late_drop(eps: float) -> float:
    # steepening towards ε0 (as a true δ does): reaches the target only at 0.99898, past
    # the secant steps and bracket growth (0.9938): the creep's bisection steps must go on
    return -100.0 - 5.0 * eps - 0.6 / (1.0 - eps)


@pytest.mark.parametrize("curve", [_floored, _slow_floor])
def test_a_floor_above_the_target_answers_eps0_in_a_few_evaluations(curve: object) -> None:
    got, calls = _solve(curve)
    assert got == EPS0
    assert calls <= 12  # the bracketed search closed in on ε0 in 20 or more


def test_a_steep_drop_before_eps0_is_still_found() -> None:
    got, _ = _solve(_late_drop)
    root = 1.0 - 0.6 / (690.7755278982137 - 105.0)  # about (5 ε = 5 near the root)
    assert _late_drop(got) <= math.log(TARGET)  # passes by its own value
    assert got == pytest.approx(root, rel=1e-5)
    # the flatness test is what separates it from a floor: a constant of 1 gives up (ε0)
    mp = pytest.MonkeyPatch()
    mp.setattr(curves, "CREEP_FLATNESS", 1.0)
    try:
        assert _solve(_late_drop)[0] == EPS0
    finally:
        mp.undo()
