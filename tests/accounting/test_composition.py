"""Composition against exact product distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting import (
    DiscretePairCurve,
    PrivacyStatement,
    advanced_composition,
    basic_composition,
    compose_curves,
    heterogeneous_advanced_composition,
)


def product_pair(parts: list[tuple[np.ndarray, np.ndarray]]) -> DiscretePairCurve:
    p, q = np.array([1.0]), np.array([1.0])
    for pi, qi in parts:
        p, q = np.outer(p, pi).ravel(), np.outer(q, qi).ravel()
    return DiscretePairCurve.from_probabilities(p, q)


def _distinct(parts: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    for x in parts:
        if not any(x is y for y in seen):
            seen.append(x)
    return seen


RR3 = (np.array([0.75, 0.25]), np.array([0.25, 0.75]))
SKEW = (np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5]))


@pytest.mark.parametrize("parts", [[RR3, RR3], [RR3, RR3, RR3], [SKEW, RR3], [SKEW, SKEW, RR3]])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.0])
def test_pld_composition_upper_bounds_and_is_close(
    parts: list[tuple[np.ndarray, np.ndarray]], eps: float
) -> None:
    exact = product_pair(parts).delta(eps)
    grouped = [
        (DiscretePairCurve.from_probabilities(*group[0]), len(group))
        for group in ([x for x in parts if x is kind] for kind in _distinct(parts))
    ]
    composed = compose_curves(grouped).delta(eps)
    assert composed >= exact - 1e-12
    assert composed <= exact + 5e-3


def test_composition_with_guarantee_dominates() -> None:
    composed = compose_curves([(PrivacyStatement(epsilon=1.0, delta=0.0), 3)])
    assert composed.epsilon(1e-9) <= 3.0 + 1e-3


def test_basic_and_advanced() -> None:
    total = basic_composition([PrivacyStatement(epsilon=0.5, delta=1e-7)] * 4)
    assert (total.epsilon, total.delta, total.kind) == (2.0, 4e-7, "upper")
    g = advanced_composition(epsilon=0.01, delta=1e-9, count=10_000, delta_slack=1e-6)
    expected = math.sqrt(2 * 10_000 * math.log(1e6)) * 0.01 + 10_000 * 0.01 * math.expm1(0.01)
    assert g.epsilon == pytest.approx(expected)
    assert g.delta == pytest.approx(1e-5 + 1e-6)


def test_heterogeneous_reduces_to_basic_for_few_large_epsilons() -> None:
    gs = [PrivacyStatement(epsilon=2.0, delta=0.0), PrivacyStatement(epsilon=3.0, delta=0.0)]
    assert heterogeneous_advanced_composition(gs, delta_slack=1e-6).epsilon == 5.0


def test_composed_pld_is_valid_against_exact_curve_epsilon() -> None:
    exact = product_pair([SKEW] * 4)
    composed = compose_curves([(DiscretePairCurve.from_probabilities(*SKEW), 4)])
    for delta in (1e-2, 1e-4, 1e-6):
        assert composed.epsilon(delta) >= exact.epsilon(delta) - 1e-9
