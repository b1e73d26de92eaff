"""Issue #28: a "TVD" is a distance between distributions, never above 1."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.mechanisms.estimators import total_variation_distance
from crowdhide.protocols.histogram import run_histogram


@pytest.mark.parametrize("estimator", ["debias", "inversion"])
@pytest.mark.parametrize("epsilon", [0.05, 0.5])
def test_tvds_are_at_most_one_even_with_heavy_noise(estimator: str, epsilon: float) -> None:
    values = np.random.default_rng(0).integers(0, 50, size=200)
    run = run_histogram(values, k=50, epsilon=epsilon, delta=1e-6, estimator=estimator, rng=1)
    record = run.as_record()
    for key in ("tvd", "central_tvd"):
        assert 0.0 <= record[key] <= 1.0, (key, record[key])
    # The raw vectors' half-L1 errors keep their own, unbounded, name.
    assert record["central_half_l1_error"] == pytest.approx(
        total_variation_distance(run.central.raw, run.truth)
    )
    assert record["half_l1_error"] == pytest.approx(
        total_variation_distance(run.estimate, run.truth)
    )
    if epsilon == 0.05:  # the noise dwarfs 1/n: the raw error is far above any TVD
        assert record["central_half_l1_error"] > 1.0
