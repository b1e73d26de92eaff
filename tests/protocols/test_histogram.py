"""Shuffled k-RR histograms: estimators, central baseline, certificates by enumeration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.mechanisms import (
    KaryRandomizedResponse,
    analytic_gaussian_sigma,
    inversion_histogram_estimate,
)
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.histogram import (
    central_gaussian_histogram,
    krr_histogram_estimate,
    run_histogram,
    simulate_histogram,
)
from tests.oracles.protocols import krr_histogram_worst_delta


@pytest.mark.parametrize(("k", "eps0"), [(3, 0.5), (15, 2.0), (100, 4.0)])
def test_closed_form_inversion_equals_generic_inversion(k: int, eps0: float) -> None:
    krr = KaryRandomizedResponse(k=k, eps0=eps0)
    counts = np.random.default_rng(k).integers(0, 500, size=k)
    generic = inversion_histogram_estimate(counts, krr.channel())
    fast = krr_histogram_estimate(counts, krr, estimator="inversion")
    np.testing.assert_allclose(fast, generic, atol=1e-10)


def test_inversion_estimate_is_a_distribution_and_debias_is_unbiased() -> None:
    krr = KaryRandomizedResponse(k=10, eps0=1.0)
    rng = np.random.default_rng(1)
    values = rng.integers(0, 4, size=2_000)  # 6 empty categories
    truth = np.bincount(values, minlength=10) / values.size
    reps = 200
    debiased = []
    for _ in range(reps):
        est = simulate_histogram(values, k=10, eps0=1.0, epsilon=1.0, delta=1e-6, rng=rng)
        assert (est.shuffle_inversion >= 0).all()
        assert est.shuffle_inversion.sum() == pytest.approx(1.0, abs=1e-12)
        assert (est.central_projected >= 0).all()
        debiased.append(est.shuffle_debiased)
    var = krr.frequency_variance(n=values.size, frequencies=truth)
    z = (np.mean(debiased, axis=0) - truth) / np.sqrt(var / reps)
    assert np.all(np.abs(z) < 5)


def test_inversion_beats_the_raw_shuffled_histogram() -> None:
    rng = np.random.default_rng(2)
    values = rng.integers(0, 3, size=20_000)
    est = simulate_histogram(values, k=15, eps0=2.0, epsilon=1.0, delta=1e-6, rng=rng)
    tvd = est.tvds()
    assert tvd["shuffle_inversion"] < tvd["shuffle_raw"]


def test_central_gaussian_uses_analytic_sigma_with_sqrt2_sensitivity() -> None:
    counts = np.array([50, 30, 20])
    central = central_gaussian_histogram(counts, epsilon=1.0, delta=1e-6, rng=3)
    assert central.sigma == pytest.approx(
        analytic_gaussian_sigma(epsilon=1.0, delta=1e-6, sensitivity=math.sqrt(2))
    )
    assert central.projected.sum() == pytest.approx(1.0)
    assert central.raw.shape == (3,)


@pytest.mark.parametrize(("n", "k", "eps0"), [(3, 3, 1.0), (4, 3, 2.0), (4, 2, 1.5)])
def test_accountant_certificate_bounds_the_enumerated_histogram(
    n: int, k: int, eps0: float
) -> None:
    curve = krr_accounting.krr_lower_curve(eps0=eps0, n=n, k=k)  # exhaustive for n <= 14
    for eps in (0.0, 0.2, 0.5, 1.0):
        exact = krr_histogram_worst_delta(n, k, eps0, eps)
        certificate, _ = krr_accounting.krr_delta_certificate(eps0=eps0, n=n, k=k, epsilon=eps)
        assert certificate >= exact - 1e-12
        assert curve.delta(eps) == pytest.approx(exact, abs=1e-9)


def test_run_histogram_is_certified() -> None:
    values = np.random.default_rng(4).integers(0, 20, size=50_000)
    run = run_histogram(values, k=20, epsilon=1.0, delta=1e-6, rng=5)
    assert run.privacy.meets_target
    assert run.privacy.epsilon == pytest.approx(1.0, rel=1e-3)
    assert run.estimate.sum() == pytest.approx(1.0)
    record = run.as_record()
    assert record["tvd"] == pytest.approx(run.tvd)
    assert record["messages"] == 50_000


# ---- invalid inputs -----------------------------------------------------------------------


def test_unknown_estimator_is_rejected() -> None:
    krr = KaryRandomizedResponse(k=3, eps0=1.0)
    with pytest.raises(ValueError, match=r"estimator must be one of debias, inversion, got 'ibu'"):
        krr_histogram_estimate([1, 2, 3], krr, estimator="ibu")


def test_run_rejects_out_of_domain_categories() -> None:
    with pytest.raises(ValueError, match=r"categories must contain categories in 0..2, got 5"):
        run_histogram([0, 1, 5], k=3, epsilon=1.0, delta=1e-6, eps0=1.0)


def test_run_rejects_bad_estimator_before_work() -> None:
    with pytest.raises(ValueError, match=r"estimator must be one of"):
        run_histogram([0, 1, 2], k=3, epsilon=1.0, delta=1e-6, estimator="x")


def test_run_rejects_single_user() -> None:
    with pytest.raises(ValueError, match=r"number of users must be >= 2, got 1"):
        run_histogram([0], k=3, epsilon=1.0, delta=1e-6)
