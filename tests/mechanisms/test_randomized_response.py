"""k-ary and binary randomized response: probabilities, exact ε0, sampling, unbiasedness."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting import DiscretePairCurve
from crowdhide.mechanisms import BinaryRandomizedResponse, KaryRandomizedResponse

EPS_GRID = [0.05, 0.5, 1.0, 3.0, 8.0]
K_GRID = [2, 3, 10, 100]


@pytest.mark.parametrize("k", K_GRID)
@pytest.mark.parametrize("eps0", EPS_GRID)
def test_probabilities_are_consistent(k: int, eps0: float) -> None:
    rr = KaryRandomizedResponse(k=k, eps0=eps0)
    p, q = rr.keep_probability, rr.other_probability
    assert p + (k - 1) * q == pytest.approx(1.0, abs=1e-15)
    assert math.log(p / q) == pytest.approx(eps0, rel=1e-12)
    assert p == pytest.approx(math.exp(eps0) / (math.exp(eps0) + k - 1), rel=1e-13)
    assert rr.blanket_probability == pytest.approx(k / (math.exp(eps0) + k - 1), rel=1e-13)
    # Blanket view: keep = (1 − γ) + γ/k.
    assert 1 - rr.blanket_probability + rr.blanket_probability / k == pytest.approx(p, rel=1e-13)
    chan = rr.channel()
    assert chan.shape == (k, k)
    np.testing.assert_allclose(chan.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(np.exp(rr.log_output_probabilities(k - 1)), chan[k - 1])


@pytest.mark.parametrize("eps0", [1e-12, 700.0, 1e4, 1e300])
def test_extreme_eps0_has_no_nan_or_overflow(eps0: float) -> None:
    rr = KaryRandomizedResponse(k=50, eps0=eps0)
    logs = rr.log_output_probabilities(0)
    assert np.isfinite(logs).all()
    assert logs[1] == pytest.approx(-eps0 - math.log1p(49 * math.exp(-eps0)), rel=1e-15)
    est = rr.estimate_frequencies(np.arange(1, 51))
    assert np.isfinite(est).all()
    # The estimate always sums to 1; for tiny ε0 its entries are huge (~1/ε0), so the
    # rounding of the sum scales with them.
    assert est.sum() == pytest.approx(1.0, abs=1e-12 * max(1.0, float(np.abs(est).max())))


@pytest.mark.parametrize("k", [2, 3, 7, 100])
@pytest.mark.parametrize("eps0", EPS_GRID)
def test_eps0_is_exact_by_discrete_pair_curve(k: int, eps0: float) -> None:
    rr = KaryRandomizedResponse(k=k, eps0=eps0)
    for a, b in [(0, 1), (k - 1, 0)]:
        curve = DiscretePairCurve(rr.log_output_probabilities(a), rr.log_output_probabilities(b))
        assert curve.max_loss == pytest.approx(eps0, rel=1e-12)
        assert curve.epsilon(1e-300) == pytest.approx(eps0, rel=1e-9)
        # δ(ε0) = 0 up to the rounding of ln p − ln q (one ulp of ε0).
        assert curve.delta(eps0) <= 1e-15
        assert curve.delta(eps0 * (1 + 1e-12)) == 0.0
        # Below ε0 the pair is not pure DP: the claimed level is tight, not loose.
        assert curve.delta(0.999 * eps0) > 0.0
        # δ(0) is the total-variation distance p − q.
        assert curve.delta(0.0) == pytest.approx(
            rr.keep_probability - rr.other_probability, rel=1e-12
        )


@pytest.mark.parametrize("eps0", EPS_GRID)
def test_binary_eps0_is_exact(eps0: float) -> None:
    rr = BinaryRandomizedResponse(eps0=eps0)
    curve = DiscretePairCurve(rr.log_output_probabilities(0), rr.log_output_probabilities(1))
    assert curve.epsilon(1e-300) == pytest.approx(eps0, rel=1e-9)
    assert curve.delta(0.999 * eps0) > 0.0
    assert rr.keep_probability + rr.flip_probability == pytest.approx(1.0, abs=1e-15)
    assert rr.other_probability == rr.flip_probability
    assert rr.k == 2
    assert rr.blanket_probability == pytest.approx(2 * rr.flip_probability)
    np.testing.assert_allclose(rr.channel(), KaryRandomizedResponse(k=2, eps0=eps0).channel())


def test_randomize_matches_channel_and_is_reproducible() -> None:
    rr = KaryRandomizedResponse(k=5, eps0=1.2)
    n = 200_000
    values = np.full(n, 3)
    out = rr.randomize(values, rng=7)
    assert out.dtype == np.int64
    assert out.shape == values.shape
    np.testing.assert_array_equal(out, rr.randomize(values, rng=np.random.default_rng(7)))
    freq = np.bincount(out, minlength=5) / n
    expected = rr.channel()[3]
    sd = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) < 5 * sd)


def test_randomize_keeps_shape_and_accepts_floats_and_bools() -> None:
    rr = KaryRandomizedResponse(k=3, eps0=1.0)
    assert rr.randomize(np.zeros((4, 5)), rng=0).shape == (4, 5)
    assert rr.randomize(np.array([True, False]), rng=0).shape == (2,)
    assert rr.randomize([], rng=0).size == 0
    bits = BinaryRandomizedResponse(eps0=1.0).randomize(np.array([True, False, True]), rng=0)
    assert set(np.unique(bits)) <= {0, 1}


def _estimates(rr: KaryRandomizedResponse, values: np.ndarray, reps: int, seed: int) -> np.ndarray:
    reports = rr.randomize(np.tile(values, reps), rng=seed).reshape(reps, values.size)
    offsets = (np.arange(reps) * rr.k)[:, None]
    counts = np.bincount((reports + offsets).ravel(), minlength=reps * rr.k).reshape(reps, rr.k)
    return np.array([rr.estimate_frequencies(c) for c in counts])


@pytest.mark.parametrize(("k", "eps0"), [(2, 0.5), (5, 1.0), (20, 3.0)])
def test_frequency_estimator_is_unbiased_with_the_stated_variance(k: int, eps0: float) -> None:
    rr = KaryRandomizedResponse(k=k, eps0=eps0)
    rng = np.random.default_rng(11)
    n, reps = 1_000, 400
    values = rng.integers(0, max(2, k // 2), size=n)  # leave some categories empty
    truth = np.bincount(values, minlength=k) / n
    est = _estimates(rr, values, reps, seed=12)
    variance = rr.frequency_variance(n=n, frequencies=truth)
    z = (est.mean(axis=0) - truth) / np.sqrt(variance / reps)
    assert np.all(np.abs(z) < 5.0), z
    np.testing.assert_allclose(est.var(axis=0, ddof=1), variance, rtol=0.25)
    np.testing.assert_allclose(est.sum(axis=1), 1.0, atol=1e-9)


def test_estimate_counts_scales_frequencies() -> None:
    rr = KaryRandomizedResponse(k=3, eps0=1.0)
    counts = np.array([10, 30, 60])
    np.testing.assert_allclose(rr.estimate_counts(counts), 100 * rr.estimate_frequencies(counts))


def test_a_biased_estimator_fails_the_unbiasedness_check() -> None:
    # The test above can fail: the naive estimator (report frequencies) is biased.
    rr = KaryRandomizedResponse(k=5, eps0=1.0)
    values = np.zeros(1_000, dtype=np.int64)
    reports = rr.randomize(np.tile(values, 400), rng=3).reshape(400, 1_000)
    naive = (reports == 0).mean(axis=1)
    variance = rr.frequency_variance(n=1_000, frequencies=np.eye(5)[0])[0]
    assert abs(naive.mean() - 1.0) / math.sqrt(variance / 400) > 5.0


def test_binary_sum_estimator_is_unbiased() -> None:
    rr = BinaryRandomizedResponse(eps0=0.7)
    rng = np.random.default_rng(5)
    n, reps = 2_000, 300
    bits = (rng.random(n) < 0.3).astype(np.int64)
    reports = rr.randomize(np.tile(bits, reps), rng=6).reshape(reps, n)
    sums = np.array([rr.estimate_sum(r) for r in reports])
    var = rr.sum_variance(n=n)
    assert abs(sums.mean() - bits.sum()) < 5 * math.sqrt(var / reps)
    assert sums.var(ddof=1) == pytest.approx(var, rel=0.25)
    freq = rr.estimate_frequencies(np.bincount(reports[0], minlength=2))
    assert freq[1] * n == pytest.approx(sums[0])


# ---- invalid inputs: one test each ------------------------------------------------------


def test_k_below_two_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"k must be >= 2, got 1"):
        KaryRandomizedResponse(k=1, eps0=1.0)


def test_non_integer_k_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"k must be an integer, got 2.5"):
        KaryRandomizedResponse(k=2.5, eps0=1.0)


def test_string_k_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"k must be an integer, got '3'"):
        KaryRandomizedResponse(k="3", eps0=1.0)


def test_zero_eps0_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"eps0 must be > 0.0, got 0.0"):
        KaryRandomizedResponse(k=3, eps0=0.0)


def test_negative_eps0_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"eps0 must be > 0.0, got -1.0"):
        BinaryRandomizedResponse(eps0=-1.0)


def test_nan_eps0_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"eps0 must not be NaN"):
        KaryRandomizedResponse(k=3, eps0=float("nan"))


def test_infinite_eps0_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"eps0 must be finite, got inf"):
        KaryRandomizedResponse(k=3, eps0=math.inf)


def test_positional_parameters_are_rejected() -> None:
    with pytest.raises(TypeError):
        KaryRandomizedResponse(3, 1.0)  # type: ignore[misc]


def test_value_out_of_range_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"values must contain categories in 0..2, got 3"):
        KaryRandomizedResponse(k=3, eps0=1.0).randomize([0, 3])


def test_negative_value_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"got -1"):
        KaryRandomizedResponse(k=3, eps0=1.0).randomize([-1, 0])


def test_non_integral_value_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"non-integral values"):
        KaryRandomizedResponse(k=3, eps0=1.0).randomize([0.5])


def test_string_values_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"values must be an array of integer categories"):
        KaryRandomizedResponse(k=3, eps0=1.0).randomize(["a"])


def test_binary_value_two_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"values must contain categories in 0..1, got 2"):
        BinaryRandomizedResponse(eps0=1.0).randomize([2])


def test_bad_rng_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"rng must be"):
        KaryRandomizedResponse(k=3, eps0=1.0).randomize([0], rng="seed")


def test_counts_of_wrong_length_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"counts must have length 3, got length 2"):
        KaryRandomizedResponse(k=3, eps0=1.0).estimate_frequencies([1, 2])


def test_negative_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"counts must be finite and non-negative"):
        KaryRandomizedResponse(k=2, eps0=1.0).estimate_frequencies([-1, 2])


def test_zero_total_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"counts must have a positive total, got total 0.0"):
        KaryRandomizedResponse(k=2, eps0=1.0).estimate_frequencies([0, 0])


def test_two_dimensional_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"counts must be one-dimensional"):
        KaryRandomizedResponse(k=2, eps0=1.0).estimate_frequencies([[1, 2]])


def test_output_probabilities_of_unknown_value_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"value must be <= 2, got 3"):
        KaryRandomizedResponse(k=3, eps0=1.0).log_output_probabilities(3)


def test_frequency_variance_rejects_bad_frequencies() -> None:
    with pytest.raises(ValueError, match=r"frequencies must be 3 values in \[0, 1\]"):
        KaryRandomizedResponse(k=3, eps0=1.0).frequency_variance(n=10, frequencies=[0.5, 0.5])


def test_frequency_variance_rejects_zero_n() -> None:
    with pytest.raises(ValueError, match=r"n must be >= 1, got 0"):
        KaryRandomizedResponse(k=2, eps0=1.0).frequency_variance(n=0, frequencies=[0.5, 0.5])


def test_estimate_sum_of_no_reports_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"reports must not be empty"):
        BinaryRandomizedResponse(eps0=1.0).estimate_sum([])


def test_sum_variance_rejects_bad_n() -> None:
    with pytest.raises(TypeError, match=r"n must be an integer, got 1.5"):
        BinaryRandomizedResponse(eps0=1.0).sum_variance(n=1.5)
