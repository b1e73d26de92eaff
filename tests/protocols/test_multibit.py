"""Histograms and selection from repeated shuffled bit sums (Cheu et al. Sec. 2.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.protocols.bitsum import bitsum_variance, calibrate_bit_sum
from crowdhide.protocols.multibit import (
    advanced_composition_epsilon,
    per_run_budget,
    run_bitsum_histogram,
    run_bitsum_selection,
)


@pytest.mark.parametrize("runs", [1, 2, 10, 100, 1000])
@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-6), (0.3, 1e-9), (4.0, 1e-3)])
def test_per_run_budget_composes_within_the_target(runs: int, eps: float, delta: float) -> None:
    e, d, rule = per_run_budget(epsilon=eps, delta=delta, runs=runs)
    if rule == "advanced composition":  # Dwork-Rothblum-Vadhan, recomputed here
        total = e * math.sqrt(2 * runs * math.log(2 / delta)) + runs * e * math.expm1(e)
        assert total <= eps
        assert runs * d + delta / 2 <= delta * (1 + 1e-12)
    else:
        assert runs * e <= eps * (1 + 1e-12)
        assert runs * d <= delta * (1 + 1e-12)
    assert e >= eps / runs * (1 - 1e-12)  # never worse than basic composition


def test_advanced_composition_formula() -> None:
    got = advanced_composition_epsilon(epsilon=0.05, runs=400, slack=1e-5)
    assert got == pytest.approx(
        0.05 * math.sqrt(800 * math.log(1e5)) + 400 * 0.05 * math.expm1(0.05)
    )


def test_histogram_is_unbiased_with_the_bit_sum_variance() -> None:
    x = np.random.default_rng(0).integers(0, 5, size=2000)
    runs = [run_bitsum_histogram(x, domain=5, epsilon=1.0, delta=1e-6, rng=s) for s in range(200)]
    lam, _ = calibrate_bit_sum(n=2000, epsilon=0.5, delta=5e-7)  # two affected runs
    assert runs[0].lam == pytest.approx(lam)
    assert runs[0].messages == 2000 * 5
    errors = np.array([r.estimates - r.exact for r in runs])
    sd = math.sqrt(bitsum_variance(n=2000, lam=lam))
    assert np.abs(errors.mean(axis=0)).max() < 5 * sd / math.sqrt(200)
    assert errors.std(axis=0).mean() == pytest.approx(sd, rel=0.15)
    assert np.mean([r.max_error > r.error_bound for r in runs]) <= 0.05 + 0.03
    with pytest.raises(ValueError, match="values must be"):
        run_bitsum_histogram([0, 7], domain=5, epsilon=1.0, delta=1e-6)


def test_selection_finds_the_planted_coordinate() -> None:
    rng = np.random.default_rng(1)
    x = (rng.random((4000, 8)) < 0.3).astype(np.uint8)
    x[:, 5] = rng.random(4000) < 0.7
    chosen, run = run_bitsum_selection(x, epsilon=1.0, delta=1e-6, rng=2)
    assert chosen == 5
    assert run.rule in ("basic composition", "advanced composition")
    assert run.messages == 4000 * 8
