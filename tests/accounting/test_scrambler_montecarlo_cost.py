"""Issue #28: the Monte-Carlo estimate keeps its draws compressed and bounds its work."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.scrambler.bounds import (
    MAX_MONTECARLO_DRAWS,
    MonteCarloLemma2,
    _lemma2_weights,
    max_montecarlo_samples,
)
from crowdhide.errors import InvalidParameterError, ResourceLimitError


def _dense(
    T: int, sigma: float, n: int, d: int, R: int, seed: int, eps: float
) -> tuple[float, float]:
    """Algorithm 2 written out over every draw (the former implementation's arithmetic)."""
    weights = _lemma2_weights(n, sigma, math.log(1e-12))
    N = weights.m + d + 1
    pvals = [1 / T, 1 / T, max(0.0, 1 - 2 / T)] if T > 2 else [0.5, 0.5, 0.0]
    draws = np.random.default_rng(seed).multinomial(N[:, None], pvals, size=(N.size, R))
    A, B = draws[..., 0].astype(float), draws[..., 1].astype(float)
    em = math.exp(eps)
    total = N[:, None] * sigma * (1 - em) + (1 - sigma) * T * (A - em * B)
    pos = np.maximum(total, 0.0) / N[:, None]
    w = np.exp(weights.log_w)
    est = float(np.sum(w * pos.mean(axis=1)))
    se = float(math.sqrt(np.sum(w**2 * pos.var(axis=1, ddof=1) / R)))
    return est, se


@pytest.mark.parametrize(
    ("T", "sigma", "n", "d"), [(20, 0.2, 100, 50), (2, 0.5, 30, 3), (5, 0.0, 10, 4)]
)
@pytest.mark.parametrize("eps", [0.0, 0.7, 2.5])
def test_compressed_draws_give_the_estimate_of_every_draw(
    T: int, sigma: float, n: int, d: int, eps: float
) -> None:
    mc = MonteCarloLemma2(
        targets=T, sigma=sigma, n=n, dummies=d, samples=3000, rng=np.random.default_rng(9)
    )
    est, se = mc.delta(eps)
    ref_est, ref_se = _dense(T, sigma, n, d, 3000, 9, eps)
    assert est == pytest.approx(ref_est, rel=1e-9, abs=1e-15)
    assert se == pytest.approx(ref_se, rel=1e-6, abs=1e-12)


def test_samples_beyond_the_cost_model_are_refused_before_any_draw() -> None:
    components = MonteCarloLemma2(
        targets=20, sigma=0.2, n=100, dummies=50, samples=2, rng=np.random.default_rng(0)
    )._N.size
    largest = max_montecarlo_samples(components)
    assert largest * components <= MAX_MONTECARLO_DRAWS < (largest + 1) * components
    with pytest.raises(ResourceLimitError, match=rf"samples must be <= {largest} here"):
        MonteCarloLemma2(
            targets=20, sigma=0.2, n=100, dummies=50, samples=10**6, rng=np.random.default_rng(0)
        )


@pytest.mark.parametrize("samples", [1, 0, True])
def test_fewer_than_two_samples_are_refused(samples: int) -> None:
    # the standard error divides by samples − 1: one sample was a ZeroDivisionError
    with pytest.raises(InvalidParameterError, match="samples must be an integer >= 2"):
        MonteCarloLemma2(
            targets=3, sigma=0.3, n=10, dummies=1, samples=samples, rng=np.random.default_rng(0)
        )
