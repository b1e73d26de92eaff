"""The audit has power: a threshold tuned on one half, Clopper–Pearson on the other."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.audit import audit_scores


def _geometric(eps: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided geometric noise: the discrete Laplace mechanism, exactly eps-DP for shift 1."""
    q = 1.0 - np.exp(-eps)
    return (rng.geometric(q, n) - rng.geometric(q, n)).astype(float)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_audit_of_the_discrete_laplace_mechanism_is_near_its_epsilon(eps: float) -> None:
    rng = np.random.default_rng(7)
    x = _geometric(eps, 60_000, rng) + 1.0
    y = _geometric(eps, 60_000, rng)
    result = audit_scores(x, y, delta=1e-5)
    # The former tail-chasing threshold returned 0 here; the bound is now close to eps.
    assert 0.8 * eps <= result.privacy.epsilon <= eps


def test_the_side_of_the_test_is_chosen_from_the_data() -> None:
    rng = np.random.default_rng(8)
    x = _geometric(1.0, 40_000, rng)
    y = _geometric(1.0, 40_000, rng) + 1.0  # "from x" means a *low* score
    result = audit_scores(x, y, delta=1e-5)
    assert result.side == "below"
    assert 0.8 <= result.privacy.epsilon <= 1.0


def test_the_bound_rarely_exceeds_the_true_epsilon() -> None:
    rng = np.random.default_rng(9)
    above = 0
    for _ in range(20):
        x = _geometric(1.0, 2_000, rng) + 1.0
        y = _geometric(1.0, 2_000, rng)
        above += audit_scores(x, y, delta=0.0, confidence=0.95).privacy.epsilon > 1.0
    assert above <= 3  # each run exceeds with probability <= 5 %
