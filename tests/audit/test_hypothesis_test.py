"""The audit's lower bound: never above the truth, and close to it for an optimal attack."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.audit import (
    audit_scores,
    bayes_success_bound,
    clopper_pearson,
    epsilon_from_error_rates,
)
from crowdhide.mechanisms import KaryRandomizedResponse


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0])
def test_audit_of_randomized_response_is_below_and_near_eps0(eps0: float) -> None:
    rr = KaryRandomizedResponse(k=2, eps0=eps0)
    rng = np.random.default_rng(11)
    out_x = rr.randomize(np.zeros(100_000, dtype=int), rng=rng)
    out_y = rr.randomize(np.ones(100_000, dtype=int), rng=rng)
    result = audit_scores((out_x == 0).astype(float), (out_y == 0).astype(float), delta=0.0)
    assert result.privacy.epsilon <= eps0
    assert result.privacy.epsilon >= 0.9 * eps0
    assert result.privacy.kind == "lower"
    assert not result.privacy.is_certificate
    assert result.privacy.inputs["confidence"] == result.confidence == 0.95
    assert result.privacy.delta == 0.0


def test_audit_cannot_find_leakage_in_identical_distributions() -> None:
    rng = np.random.default_rng(3)
    result = audit_scores(rng.normal(size=5000), rng.normal(size=5000), delta=0.0)
    assert result.privacy.epsilon == 0.0


def test_error_rate_bound_matches_hand_computation() -> None:
    assert epsilon_from_error_rates(
        false_positive_rate=0.1, false_negative_rate=0.2, delta=0.05
    ) == pytest.approx(max(math.log(0.85 / 0.2), math.log(0.75 / 0.1)))
    assert math.isinf(
        epsilon_from_error_rates(false_positive_rate=0.0, false_negative_rate=0.5, delta=0.0)
    )


def test_clopper_pearson_covers_known_values() -> None:
    low, high = clopper_pearson(successes=5, trials=10, confidence=0.95)
    assert low == pytest.approx(0.187086, abs=1e-6)
    assert high == pytest.approx(0.812914, abs=1e-6)


def test_bayes_success_bound() -> None:
    assert bayes_success_bound(epsilon=math.log(3), delta=0.0, choices=2) == pytest.approx(0.75)
    assert bayes_success_bound(epsilon=50.0, delta=0.5, choices=10) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"successes": 3, "trials": 2, "confidence": 0.9}, ValueError, "successes"),
        ({"successes": 1, "trials": 0, "confidence": 0.9}, ValueError, "trials"),
        ({"successes": 1, "trials": 2, "confidence": 1.0}, ValueError, "confidence"),
        ({"successes": 1.5, "trials": 2, "confidence": 0.9}, TypeError, "successes"),
    ],
)
def test_clopper_pearson_rejects_invalid_input(
    kwargs: dict[str, float], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        clopper_pearson(**kwargs)  # type: ignore[arg-type]


def test_audit_rejects_too_few_or_non_finite_scores() -> None:
    with pytest.raises(ValueError, match="scores_x must hold at least 20"):
        audit_scores([1.0] * 5, [0.0] * 50, delta=0.0)
    with pytest.raises(ValueError, match="scores_x_prime must be finite"):
        audit_scores([1.0] * 50, [float("nan")] * 50, delta=0.0)
