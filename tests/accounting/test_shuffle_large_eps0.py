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

import pytest

from crowdhide.accounting.shuffle import shuffle_delta_all, shuffle_epsilon_all


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
