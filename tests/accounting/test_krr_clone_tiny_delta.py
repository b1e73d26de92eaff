"""krr_clone below δ = 1e-250 (issue 32): searched from the third-value floor instead of a
bisection of [0, ε0]. Each answer passes by its own evaluation of the clone evaluator, is
never below the plain search's answer (and within 5e-6 of it), is at least the exact
third-value lower bound, and takes fewer evaluations; a curve failing just below ε0 still
answers ε0; above 1e-250 with ``bracketed=False`` (n > KRR_CLONE_BRACKET_MAX_N) the floats
are the plain search's (the bracketed search there: tests/accounting/test_krr_clone_bracket.py)."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle.curves import _AdaptiveCurve
from tests.accounting._krr_clone_counting import _counted, _passes

TINY = 1e-300


@pytest.mark.parametrize(("k", "eps0", "n"), [(4, 0.5, 10**6), (100, 1.0, 10**6)])
def test_tiny_delta_answer_is_certified_and_close_to_the_plain_search(
    k: int, eps0: float, n: int
) -> None:
    curve, calls = _counted(k, eps0, n)
    got = curve.epsilon(TINY)
    searched = len(calls)
    calls.clear()
    plain = _AdaptiveCurve.epsilon(curve, TINY)  # main's search of the same evaluator
    # fewer evaluations than the plain search (since the deep tails' Chernoff bounds,
    # s23b-underflow, 12 of its 15-plus at k = 100, ε0 = 1; it was <= 10 before)
    assert len(calls) >= 15
    assert searched < len(calls)
    assert _passes(curve, got, TINY)
    # the search stops within BRACKET_RTOL (1e-6) of its *estimated* root, and the estimate
    # is off by about as much again (2.1e-6 at k = 4, ε0 = 0.5, n = 1e6)
    assert plain <= got <= plain * (1.0 + 5e-6)
    # an answer 1 % lower would not be certified: the search is not slack by that much
    assert not _passes(curve, 0.99 * got, TINY)
    # the exact third-value dataset's lower bound on the truth is below it
    lower = _krr_fast.krr_third_marginal_lower_log_delta(n, k, eps0, got)
    assert lower <= math.log(TINY)


def test_a_curve_failing_just_below_eps0_still_answers_eps0() -> None:
    # k = 10, ε0 = 4, n = 1e4: the clone evaluator fails just below ε0 at 1e-300 (the
    # plain search answers ε0 after one evaluation); the bracketed search must not look
    # lower down. (k = 10, ε0 = 1, n = 1e6 failed there too while deep block masses were
    # floored at 2e-300; with their Chernoff bounds it answers 0.0264.)
    curve, calls = _counted(10, 4.0, 10**4)
    assert curve.epsilon(TINY) == 4.0
    assert len(calls) == 1


@pytest.mark.parametrize("delta", [1e-6, 1e-200])
def test_unbracketed_above_the_tiny_level_the_floats_are_the_plain_search(delta: float) -> None:
    curve, _ = _counted(4, 1.0, 10**4, bracketed=False)
    assert curve.epsilon(delta) == _AdaptiveCurve.epsilon(curve, delta)
