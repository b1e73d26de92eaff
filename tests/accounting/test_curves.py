"""The exact discrete curve against independent computations (float sums, mpmath)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdhide.accounting import DiscretePairCurve


def naive_delta(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    a = math.exp(eps)
    return max(float(np.maximum(p - a * q, 0).sum()), float(np.maximum(q - a * p, 0).sum()))


@st.composite
def pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    m = draw(st.integers(min_value=2, max_value=12))
    raw_p = draw(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m))
    raw_q = draw(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m))
    p, q = np.array(raw_p) + 1e-3, np.array(raw_q) + 1e-3
    return p / p.sum(), q / q.sum()


@settings(max_examples=200, deadline=None)
@given(pairs(), st.floats(0.0, 5.0))
def test_delta_matches_naive_sum(pair: tuple[np.ndarray, np.ndarray], eps: float) -> None:
    p, q = pair
    curve = DiscretePairCurve.from_probabilities(p, q)
    assert curve.delta(eps) == pytest.approx(naive_delta(p, q, eps), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(pairs(), st.floats(1e-6, 0.5))
def test_epsilon_is_safe_and_tight(pair: tuple[np.ndarray, np.ndarray], delta: float) -> None:
    p, q = pair
    curve = DiscretePairCurve.from_probabilities(p, q)
    eps = curve.epsilon(delta)
    assert naive_delta(p, q, eps) <= delta * (1 + 1e-9) + 1e-15
    if eps > 1e-9:
        assert naive_delta(p, q, max(eps - 1e-7, 0.0)) > delta - 1e-12


def test_tiny_delta_in_log_space() -> None:
    # P = (1 - t, t), Q = (1 - s, s) with t/s = e^3 and t = 1e-250: δ(ε) for ε slightly
    # below 3 is t (1 − e^{ε−3}) ≈ 1e-250 × ..., far below double-precision cancellation.
    t, s = mpmath.mpf("1e-250"), mpmath.mpf("1e-250") / mpmath.e**3
    log_p = np.array([float(mpmath.log(1 - t)), float(mpmath.log(t))])
    log_q = np.array([float(mpmath.log(1 - s)), float(mpmath.log(s))])
    curve = DiscretePairCurve(log_p, log_q, symmetric=False)
    eps = 2.5
    exact = t * (1 - mpmath.e ** (eps - 3))
    assert curve.delta(eps) == pytest.approx(float(exact), rel=1e-10)
    assert curve.epsilon(1e-252) == pytest.approx(3.0 + math.log(0.99), rel=1e-9)
    assert curve.epsilon(1e-300) == pytest.approx(3.0, rel=1e-12)


def test_infinite_loss_gives_infinite_epsilon() -> None:
    curve = DiscretePairCurve.from_probabilities([0.5, 0.5, 0.0], [0.5, 0.4, 0.1])
    assert curve.delta(50.0) == pytest.approx(0.1)
    assert math.isinf(curve.epsilon(0.05))
    assert curve.epsilon(0.2) < math.inf


def test_randomized_response_is_pure() -> None:
    curve = DiscretePairCurve.from_probabilities([0.75, 0.25], [0.25, 0.75])
    assert curve.epsilon(1e-300) == pytest.approx(math.log(3), rel=1e-9)
    g = curve.guarantee(1e-6)
    assert (g.epsilon, g.delta, g.kind) == (curve.epsilon(1e-6), 1e-6, "upper")


@pytest.mark.parametrize(
    ("log_p", "log_q", "message"),
    [
        ([0.0], [0.0, -1.0], "same length"),
        ([], [], "must not be empty"),
        ([-0.1, -0.1], [np.log(0.5), np.log(0.5)], "distribution"),
        ([np.nan, 0.0], [0.0, -np.inf], "NaN"),
        ([1.0, -np.inf], [0.0, -np.inf], "<= 0"),
    ],
)
def test_invalid_pairs_are_rejected(log_p: list[float], log_q: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DiscretePairCurve(log_p, log_q)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-3, float("nan")])
def test_epsilon_rejects_invalid_delta(delta: float) -> None:
    curve = DiscretePairCurve.from_probabilities([0.75, 0.25], [0.25, 0.75])
    with pytest.raises(ValueError, match="delta"):
        curve.epsilon(delta)
