"""The FMT23 pair's ε search stops at ``FMT23_TINY_RTOL`` relative below ``TINY_LOG_DELTA``
(issue 32, s26-tiny: at δ = 1e-300 its log δ is a staircase at the target and the search
to 1e-10 ε0 took 22-57 evaluations). The answer is still a point that passes by its own
evaluation, never below the tight search's failing end, and at most that fraction above
its answer; at and above δ = 1e-250 the search and its floats are unchanged. ``krr_clone``
and ``krr_blanket`` at k = 2 are this curve."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _bound_curves, curves
from crowdhide.accounting.shuffle._bound_curves import ShuffleParams, _clone_curve, _fmt23_curve
from crowdhide.accounting.shuffle.generic import SHUFFLE_REGISTRY
from tests.accounting._tiny_search import count_pair_evaluations, passes

CELLS = [(0.5, 10**4), (2.0, 10**4), (4.0, 10**6), (8.0, 10**9)]
ABOVE = [(1.0, 10**3, 1e-6), (0.5, 10**6, 1e-10), (2.0, 10**6, 1e-200), (8.0, 10**9, 1e-249)]


def _beta(eps0: float) -> float:
    return 2.0 / (math.exp(eps0) + 1.0)


def _solve(eps0: float, n: int, delta: float, rtol: float) -> float:
    return _clone_curve(eps0, n, _beta(eps0), tiny_rtol=rtol).epsilon(delta)


def _passes(eps0: float, n: int, delta: float, eps: float) -> bool:
    return passes(_fmt23_curve, eps0, n, delta, eps)


def _close(got: float, tight: float, eps0: float) -> bool:
    """Within the stop's width above the tight answer, never below its failing end (a
    passing point of a non-increasing curve is above every failing one; the tight search's
    failing end lies within 1e-10 ε0 below its answer)."""
    xtol = 1e-10 * eps0
    rtol = _bound_curves.FMT23_TINY_RTOL
    return tight - 2.0 * xtol <= got <= tight * (1.0 + 2.0 * rtol) + xtol


@pytest.mark.parametrize(("eps0", "n"), CELLS)
def test_tiny_delta_answer_passes_and_is_near_the_tight_one(eps0: float, n: int) -> None:
    delta = 1e-300
    got = _fmt23_curve(ShuffleParams(eps0=eps0, n=n)).epsilon(delta)
    assert _passes(eps0, n, delta, got)
    assert _close(got, _solve(eps0, n, delta, 0.0), eps0)


@pytest.mark.parametrize("name", ["feldman2023", "krr_clone", "krr_blanket"])
def test_the_k2_bounds_are_this_curve(name: str) -> None:
    params = ShuffleParams(eps0=8.0, n=10**9, k=2)
    got = SHUFFLE_REGISTRY[name].curve(params).epsilon(1e-300)
    assert got == SHUFFLE_REGISTRY["feldman2023"].curve(params).epsilon(1e-300)


def test_the_passing_check_can_fail() -> None:
    """The search's failing end, as close to the root as the answer, is caught by the
    passing check alone (the closeness check lets it through)."""
    eps0, n, delta = 8.0, 10**9, 1e-300
    curve = _fmt23_curve(ShuffleParams(eps0=eps0, n=n))
    curve.solving_for(math.log(delta))  # type: ignore[attr-defined]
    tight = _solve(eps0, n, delta, 0.0)
    failing = safe_root(
        curve.log_delta, math.log(delta), 0.0, tight, xtol=1e-10 * eps0, lower_side=True
    )
    assert _close(failing, tight, eps0)
    assert not _passes(eps0, n, delta, failing)


def test_tiny_delta_search_takes_fewer_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_pair_evaluations(monkeypatch)
    _solve(8.0, 10**9, 1e-300, 0.0)
    tight = len(calls)
    calls.clear()
    _fmt23_curve(ShuffleParams(eps0=8.0, n=10**9)).epsilon(1e-300)
    assert len(calls) <= tight - 20  # measured: 57 -> 15


def test_the_closeness_check_can_fail() -> None:
    """A coarser stop (1e-4) lands further above the tight answer than the check allows."""
    eps0, n, delta = 2.0, 10**4, 1e-300
    coarse = _solve(eps0, n, delta, 1e-4)
    assert _passes(eps0, n, delta, coarse)
    assert not _close(coarse, _solve(eps0, n, delta, 0.0), eps0)


@pytest.mark.parametrize(("eps0", "n", "delta"), ABOVE)
def test_above_tiny_delta_the_same_floats(eps0: float, n: int, delta: float) -> None:
    got = _fmt23_curve(ShuffleParams(eps0=eps0, n=n)).epsilon(delta)
    assert got == _solve(eps0, n, delta, 0.0)


@pytest.mark.parametrize(("eps0", "n", "delta"), ABOVE)
def test_the_same_floats_check_can_fail(
    monkeypatch: pytest.MonkeyPatch, eps0: float, n: int, delta: float
) -> None:
    """With the stop applied at every δ (the threshold moved to log δ = 0) each cell of the
    check above gets another float: the check sees a rule leaking above 1e-250."""
    tight = _solve(eps0, n, delta, 0.0)
    monkeypatch.setattr(curves, "TINY_LOG_DELTA", 0.0)
    assert _fmt23_curve(ShuffleParams(eps0=eps0, n=n)).epsilon(delta) != tight
