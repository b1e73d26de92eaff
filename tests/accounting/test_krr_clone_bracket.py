"""krr_clone above δ = 1e-250 up to n = KRR_CLONE_BRACKET_MAX_N (issue 32): the plain search's
root finder and tolerance (Chandrupatla to 1e-10 ε0) inside a bracket found by secant steps
from the third-value floor's ε, instead of on [0, ε0]. Each answer passes by its own
evaluation, lies within the plain search's tolerance of the plain answer, is tight (1 % lower
does not pass) and takes fewer evaluations; the secant steps' own estimate of the root is not
used (it is 1.8 % high at a kink); beyond the n limit the floats are the plain search's."""

from __future__ import annotations

import pytest

from crowdhide.accounting.shuffle._bound_curves import (
    KRR_CLONE_BRACKET_MAX_N,
    ShuffleParams,
    TinyTargetBracketedCurve,
    _krr_clone_curve,
)
from crowdhide.accounting.shuffle.curves import BracketedCurve, _AdaptiveCurve
from tests.accounting._krr_clone_counting import _counted, _passes

GRID = [
    (k, eps0, n, delta)
    for k in (3, 10, 100)
    for eps0 in (0.5, 2.0, 4.0, 8.0)
    for n in (10**3, 10**4, 10**6)
    for delta in (1e-6, 1e-10)
] + [(k, 1.0, 10**4, 1e-200) for k in (3, 10, 100)]


@pytest.mark.parametrize(("k", "eps0", "n", "delta"), GRID)
def test_answer_passes_and_is_the_plain_search_to_its_tolerance(
    k: int, eps0: float, n: int, delta: float
) -> None:
    curve, _ = _counted(k, eps0, n)
    got = curve.epsilon(delta)
    plain = _AdaptiveCurve.epsilon(curve, delta)  # main's search of the same evaluator
    xtol = max(1e-13, 1e-10 * eps0)
    assert got == eps0 or _passes(curve, got, delta)
    # both are passing points within the root finder's tolerance (plus 4 ulps) of the root
    assert abs(got - plain) <= 2.0 * (xtol + 4.0 * 2.3e-16 * eps0)
    if got < eps0:  # tight: an answer 1 % lower is not certified
        assert not _passes(curve, 0.99 * got, delta)


@pytest.mark.parametrize(("k", "eps0", "n"), [(10, 4.0, 10**6), (100, 4.0, 10**6), (4, 0.5, 10**4)])
def test_fewer_evaluations_than_the_plain_search(k: int, eps0: float, n: int) -> None:
    curve, calls = _counted(k, eps0, n)
    curve.epsilon(1e-6)
    bracketed = len(calls)
    calls.clear()
    _AdaptiveCurve.epsilon(curve, 1e-6)
    assert bracketed <= 10 < len(calls)


def test_the_secant_estimate_of_the_root_is_not_trusted() -> None:
    # k = 10, ε0 = 4, n = 1e3, δ = 1e-10: log δ has a kink; two failing points' secant
    # puts the root at 3.978 and BracketedCurve stops there (1.8 % above the root 3.9085)
    curve, _ = _counted(10, 4.0, 10**3)
    plain = _AdaptiveCurve.epsilon(curve, 1e-10)
    assert BracketedCurve.epsilon(curve, 1e-10) > 1.01 * plain
    assert curve.epsilon(1e-10) <= plain * (1.0 + 1e-9)


@pytest.mark.parametrize("delta", [1e-6, 1e-10])
def test_beyond_the_n_limit_the_floats_are_the_plain_search(delta: float) -> None:
    n = 10 * KRR_CLONE_BRACKET_MAX_N
    built = _krr_clone_curve(ShuffleParams(eps0=1.0, n=n, k=4))
    assert isinstance(built, TinyTargetBracketedCurve)
    assert not built._bracketed
    assert built.epsilon(delta) == _AdaptiveCurve.epsilon(built, delta)
    inside = _krr_clone_curve(ShuffleParams(eps0=1.0, n=KRR_CLONE_BRACKET_MAX_N, k=4))
    assert isinstance(inside, TinyTargetBracketedCurve)
    assert inside._bracketed
