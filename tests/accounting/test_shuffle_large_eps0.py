"""Shuffle bounds at large ε0 against the closed-form truth of one user.

With n = 1 the shuffled output is the target's report: its worst-case δ(ε) is that of
k-ary randomized response (binary RR for a generic ε0-LDP randomizer),
``(e^{ε0} − e^{ε})/(e^{ε0} + k − 1)``, computed here in log space without cancellation.
Every certificate must stay at or above it and every lower bound at or below, also where
``1 − tanh(ε0/2)`` and ``1 − e^{ε0}/(e^{ε0} + 1)`` are below the floating-point resolution
(ε0 beyond ~18 and ~37): the regime that once put ``feldman2021`` at ε = 35.98 for
ε0 = 49 (the truth is 48.99999900).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle.generic import shuffle_delta_all, shuffle_epsilon_all


def log_truth(eps0: float, eps: float, k: int) -> float:
    """``log δ(ε)`` of one k-RR report (``-inf`` at ε >= ε0)."""
    if eps >= eps0:
        return -math.inf
    return math.log(math.expm1(eps0 - eps)) + eps - eps0 - math.log1p((k - 1) * math.exp(-eps0))


@pytest.mark.parametrize("eps0", [8.0, 12.0, 18.0, 25.0, 30.0, 36.0, 45.0])
@pytest.mark.parametrize("k", [None, 2, 4])
def test_one_user_brackets_the_truth(eps0: float, k: int | None) -> None:
    kk = k or 2
    for frac in (0.0, 0.3, 0.9, 0.99, 0.999):
        eps = frac * eps0
        truth = log_truth(eps0, eps, kk)
        for r in shuffle_delta_all(eps0=eps0, n=1, epsilon=eps, k=k):
            if not r.conditions_met or math.isnan(r.delta):
                continue
            if r.kind == "lower":
                assert r.delta == 0.0 or math.log(r.delta) <= truth + 1e-12, (r.source, eps)
            else:
                assert math.log(r.delta) >= truth - 1e-12, (r.source, eps)
    for delta in (1e-6, 1e-12):
        # the ε with δ(ε) = delta: e^ε = e^{ε0} − delta (e^{ε0} + k − 1)
        truth_eps = eps0 + math.log1p(-delta * (1.0 + (kk - 1) * math.exp(-eps0)))
        for r in shuffle_epsilon_all(eps0=eps0, n=1, delta=delta, k=k):
            if not r.conditions_met or math.isnan(r.epsilon):
                continue
            if r.kind == "lower":
                assert r.epsilon <= truth_eps * (1 + 1e-12), (r.source, delta)
            else:
                assert r.epsilon >= truth_eps * (1 - 1e-12), (r.source, delta)


def _exact_half_excess(units: int, theta: Fraction) -> Fraction:
    """``E[(A − θ)_+]`` for ``A ~ Bin(units, 1/2)`` in exact rational arithmetic."""
    total = sum(
        (math.comb(units, a) * (a - theta) for a in range(units + 1) if a > theta), Fraction(0)
    )
    return total / 2**units


def _excess_below_exact(units: int, points: list[float], tol: float) -> int:
    """How many thresholds θ have ``excess_half(θ, upper=True)`` below the exact excess at
    θ lowered by the relative rounding ``tol`` (lowering θ raises the excess)."""
    count = 0
    for theta in points:
        exact = _exact_half_excess(units, Fraction(theta) * (1 - Fraction(tol)))
        upper = fast.excess_half(np.array([float(units)]), np.array([theta]), upper=True)[0]
        count += Fraction(float(upper)) < exact
    return count


def _thresholds(units: int) -> list[float]:
    """Thresholds where the excess is a small difference: just below the top of A's range,
    and just above the integer below it (lowering θ crosses it and adds a whole term)."""
    top = [units - gap for gap in (0.5, 1e-3, 1e-10, 3e-14)]
    above = float(units - 1)
    for _ in range(3):
        above = math.nextafter(above, math.inf)
    return [*top, above, units / 2 + 0.25]


@pytest.mark.parametrize("units", [1, 5, 40, 200])
def test_excess_covers_a_threshold_rounded_by_the_allowance(units: int) -> None:
    """A threshold handed to an excess may carry ``_THETA_RTOL`` relative rounding: the
    upper excess at θ covers the exact excess (rational arithmetic) at θ(1 − _THETA_RTOL)."""
    assert _excess_below_exact(units, _thresholds(units), fast._THETA_RTOL) == 0


def test_without_the_allowance_a_rounded_threshold_is_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check above can fail: with the allowance removed, the threshold just above an
    integer (200 units) is below the exact excess at its lowered value. (The incomplete
    beta's own error allowance, which can be larger, is set to what it assumes for exact
    tails, 0, so that only the threshold's allowance is tested.)"""
    tol = fast._THETA_RTOL
    monkeypatch.setattr(fast, "_THETA_RTOL", 0.0)
    monkeypatch.setattr(fast, "betainc_error", lambda tail, size: 0.0 * np.asarray(tail))
    assert _excess_below_exact(200, _thresholds(200), tol) >= 1
