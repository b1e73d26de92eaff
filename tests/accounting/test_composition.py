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


def _hockey_stick(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """max(H(P‖Q), H(Q‖P)) at e^ε, by direct summation (no PLD)."""
    big = math.exp(epsilon)
    return float(max(np.maximum(p - big * q, 0).sum(), np.maximum(q - big * p, 0).sum()))


def test_log_error_makes_the_pld_dominate_every_nearby_pair() -> None:
    """``to_pld(..., log_error=e)`` dominates every pair whose log-probabilities are within e
    of the given ones, alone and composed; without the allowance the extreme nearby pair
    (P raised, Q lowered by e) exceeds the PLD."""
    from crowdhide.accounting.composition import to_pld

    rng = np.random.default_rng(3)
    err, rounds = 2e-3, 3
    grid = np.linspace(0.0, 2.0, 21)
    caught = False
    for _ in range(5):
        p_hat, q_hat = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        curve = DiscretePairCurve(np.log(p_hat), np.log(q_hat))
        safe = to_pld(curve, log_error=err).self_compose(rounds)
        bare = to_pld(curve).self_compose(rounds)
        nearby = [
            (p_hat * np.exp(err), q_hat * np.exp(-err)),
            (p_hat * np.exp(rng.uniform(-err, err, 4)), q_hat * np.exp(rng.uniform(-err, err, 4))),
        ]
        for p, q in nearby:
            p_all, q_all = p, q
            for _ in range(rounds - 1):  # the exact product pair of ``rounds`` rounds
                p_all, q_all = np.outer(p_all, p).ravel(), np.outer(q_all, q).ravel()
            for eps in grid:
                exact = _hockey_stick(p_all, q_all, float(eps))
                assert safe.delta(float(eps)) >= exact * (1 - 1e-12)
                caught |= bare.delta(float(eps)) < exact * (1 - 1e-6)
    assert caught


def test_loss_error_per_outcome_is_validated() -> None:
    from crowdhide.accounting.composition import to_pld

    curve = DiscretePairCurve(np.log([0.5, 0.5]), np.log([0.25, 0.75]))
    with pytest.raises(ValueError, match="one value per outcome"):
        to_pld(curve, log_error=1e-9, loss_error=np.zeros(3))
    with pytest.raises(ValueError, match="loss_error must be >= 0"):
        to_pld(curve, log_error=1e-9, loss_error=np.array([0.0, -1.0]))
    # a zero loss error keeps an outcome on its grid point; a positive one moves it up
    exact = to_pld(curve, log_error=1e-9, loss_error=np.zeros(2)).delta(0.0)
    moved = to_pld(curve, log_error=1e-9).delta(0.0)
    assert exact <= moved
