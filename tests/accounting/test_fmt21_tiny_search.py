"""The FMT21 pair's ε search stops at ``FMT21_TINY_RTOL`` relative below ``TINY_LOG_DELTA``
(issue 32: at δ = 1e-300 its log δ is a staircase just above the target and the search to
1e-10 ε0 took 24-48 evaluations). The answer is still a point that passes by its own
evaluation, never below the tight search's failing end, and at most that fraction above
its answer; above TINY_LOG_DELTA the search and its floats are unchanged."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import _bound_curves
from crowdhide.accounting.shuffle._bound_curves import ShuffleParams, _clone_curve, _fmt21_curve
from tests.accounting._tiny_search import count_pair_evaluations, passes

CELLS = [(1.0, 10**4), (2.0, 10**4), (4.0, 10**6), (0.5, 10**9)]


def _solve(eps0: float, n: int, delta: float, rtol: float) -> float:
    return _clone_curve(eps0, n, math.exp(-eps0), tiny_rtol=rtol).epsilon(delta)


def _passes(eps0: float, n: int, delta: float, eps: float) -> bool:
    return passes(_fmt21_curve, eps0, n, delta, eps)


@pytest.mark.parametrize(("eps0", "n"), CELLS)
def test_tiny_delta_answer_passes_and_is_near_the_tight_one(eps0: float, n: int) -> None:
    delta = 1e-300
    got = _fmt21_curve(ShuffleParams(eps0=eps0, n=n)).epsilon(delta)
    tight = _solve(eps0, n, delta, 0.0)
    assert _passes(eps0, n, delta, got)
    xtol = 1e-10 * eps0
    # a passing point of a non-increasing curve is above every failing one: the tight
    # search's failing end lies within xtol below its answer
    assert got >= tight - 2.0 * xtol
    assert got <= tight * (1.0 + 2.0 * _bound_curves.FMT21_TINY_RTOL) + xtol


def test_tiny_delta_search_takes_fewer_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_pair_evaluations(monkeypatch)
    _solve(1.0, 10**4, 1e-300, 0.0)
    tight = len(calls)
    calls.clear()
    _fmt21_curve(ShuffleParams(eps0=1.0, n=10**4)).epsilon(1e-300)
    assert len(calls) <= tight - 10  # measured: 48 -> 36


def test_the_closeness_check_can_fail() -> None:
    """A coarser stop (1e-4) lands further above the tight answer than the check allows."""
    eps0, n, delta = 2.0, 10**4, 1e-300
    coarse = _solve(eps0, n, delta, 1e-4)
    tight = _solve(eps0, n, delta, 0.0)
    assert _passes(eps0, n, delta, coarse)
    assert coarse > tight * (1.0 + 2.0 * _bound_curves.FMT21_TINY_RTOL) + 1e-10 * eps0


@pytest.mark.parametrize(("eps0", "n", "delta"), [(1.0, 10**4, 1e-6), (2.0, 10**6, 1e-200)])
def test_above_tiny_delta_the_same_floats(eps0: float, n: int, delta: float) -> None:
    got = _fmt21_curve(ShuffleParams(eps0=eps0, n=n)).epsilon(delta)
    assert got == _solve(eps0, n, delta, 0.0)
