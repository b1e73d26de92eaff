"""Shuffled bit sum (Cheu et al.): paper formulas, exact privacy by enumeration, estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.protocols.bitsum import (
    BitSumRandomizer,
    bitsum_error_bound,
    bitsum_estimate,
    bitsum_variance,
    calibrate_bit_sum,
    corollary47_epsilon,
    eps0_from_lambda,
    lambda_from_eps0,
    lemma48_lambda,
    run_bit_sum,
)
from tests.oracles.protocols import (
    bitsum_pair,
    bitsum_worst_delta,
    shuffled_view_pair,
)


@pytest.mark.parametrize(
    ("n", "eps", "expected"),
    [
        (10_000, 1.0, 972.916),
        (10_000, 0.5, 3830.066),
        (10_000, 0.1, 8766.013),
        (1_000_000, 0.1, 97291.551),
        (1_000, 1.0, 609.78),
    ],
)
def test_lemma48_reference_values(n: int, eps: float, expected: float) -> None:
    # Reference values of Lemma 4.8's λ, computed by hand from the formula.
    assert lemma48_lambda(n=n, epsilon=eps, delta=1e-6) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    ("n", "lam", "expected"),
    [(10_000, 972.916, 0.9195), (10_000, 3830.066, 0.3278), (1_000_000, 97291.551, 0.0904)],
)
def test_corollary47_reference_values(n: int, lam: float, expected: float) -> None:
    assert corollary47_epsilon(n=n, lam=lam, delta=1e-6) == pytest.approx(expected, abs=1e-4)


def test_lemma48_branches_meet_at_the_regime_boundary() -> None:
    n, delta = 10_000, 1e-6
    boundary = math.sqrt(192 * math.log(4 / delta) / n)
    above = lemma48_lambda(n=n, epsilon=boundary, delta=delta)
    below = lemma48_lambda(n=n, epsilon=boundary * (1 - 1e-12), delta=delta)
    assert above == pytest.approx(n / 3, rel=1e-9)
    assert below == pytest.approx(n / 3, rel=1e-6)


def test_golden_count_laws_for_three_users() -> None:
    # Hand-computed example: n = 3, λ/n = 1/2, X = 000 vs X' = 100.
    pair = bitsum_pair(3, 1.5, 0)
    log_p, log_q = pair.support_log_probabilities()
    np.testing.assert_allclose(np.exp(log_p) * 64, [27, 27, 9, 1], atol=1e-12)
    np.testing.assert_allclose(np.exp(log_q) * 64, [9, 33, 19, 3], atol=1e-12)
    assert math.exp(pair.log_delta_forward(math.log(2))) == pytest.approx(9 / 64, abs=1e-15)
    assert pair.delta(math.log(3)) == 0.0


@pytest.mark.parametrize("n", [3, 4, 5])
def test_shuffled_view_has_the_privacy_of_the_count(n: int) -> None:
    # The analyzer's view (all n! permutations enumerated) is exactly as private as Σy.
    lam = 0.4 * n
    data0 = (0,) * (n - 2) + (1, 0)
    data1 = (1, *data0[1:])
    view = shuffled_view_pair(n, lam, data0, data1)
    count = bitsum_pair(n, lam, sum(data0[1:]))
    for eps in (0.0, 0.2, 0.6, 1.2):
        assert view.delta(eps) == pytest.approx(count.delta(eps), abs=1e-13)


@pytest.mark.parametrize(("n", "lam"), [(150, 90.0), (150, 130.0), (300, 100.0), (300, 250.0)])
def test_corollary47_upper_bounds_the_exact_privacy(n: int, lam: float) -> None:
    delta = 0.01
    claimed = corollary47_epsilon(n=n, lam=lam, delta=delta)
    assert bitsum_worst_delta(n, lam, claimed) <= delta


@pytest.mark.slow
def test_the_enumeration_check_can_fail() -> None:
    # Locate the exact ε(δ) by bisection: 10 % below it the exact δ exceeds the target, so a
    # bound that small would be caught by the test above.
    n, lam, delta = 150, 90.0, 0.01
    lo, hi = 0.0, corollary47_epsilon(n=n, lam=lam, delta=delta)
    for _ in range(14):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if bitsum_worst_delta(n, lam, mid) <= delta else (mid, hi)
    assert hi < 0.2 * corollary47_epsilon(n=n, lam=lam, delta=delta)  # Cor. 4.7 is loose
    assert bitsum_worst_delta(n, lam, 0.9 * hi) > delta


def test_randomizer_is_binary_rr_with_its_eps0() -> None:
    r = BitSumRandomizer(n=1000, lam=100.0)
    assert r.eps0 == pytest.approx(math.log(19.0))
    assert r.as_binary_rr().flip_probability == pytest.approx(r.flip_probability)
    assert lambda_from_eps0(n=1000, eps0=r.eps0) == pytest.approx(100.0)
    assert eps0_from_lambda(n=1000, lam=100.0) == pytest.approx(r.eps0)
    out = r.randomize(np.zeros(200_000, dtype=int), rng=1)
    assert out.dtype == np.uint8
    assert abs(out.mean() - 0.05) < 5 * math.sqrt(0.05 * 0.95 / 200_000)


def test_estimator_is_unbiased_with_the_claimed_variance() -> None:
    n, lam, reps = 1_000, 100.0, 600
    rng = np.random.default_rng(3)
    bits = (rng.random(n) < 0.4).astype(int)
    r = BitSumRandomizer(n=n, lam=lam)
    reports = r.randomize(np.tile(bits, (reps, 1)), rng=4)
    estimates = np.array(
        [bitsum_estimate(ones=row.sum(), messages=n, n=n, lam=lam) for row in reports]
    )
    var = bitsum_variance(n=n, lam=lam)
    assert var == pytest.approx(lam * n * (2 * n - lam) / (4 * (n - lam) ** 2))
    assert abs(estimates.mean() - bits.sum()) < 5 * math.sqrt(var / reps)
    assert estimates.var(ddof=1) == pytest.approx(var, rel=0.2)
    bound = bitsum_error_bound(n=n, lam=lam, beta=0.05)
    assert np.mean(np.abs(estimates - bits.sum()) > bound) <= 0.05


def test_estimator_handles_dropouts() -> None:
    # N = 900 messages arrive, randomizer's p = λ/n fixed: E[Σy] = (1−p)Σx + pN/2.
    p = 0.1
    expected_ones = (1 - p) * 300 + p * 900 / 2
    assert bitsum_estimate(ones=expected_ones, messages=900, n=1000, lam=100) == pytest.approx(
        300.0
    )


def test_paper_calibration_runs_end_to_end_and_is_certified() -> None:
    bits = (np.random.default_rng(0).random(20_000) < 0.3).astype(int)
    run = run_bit_sum(bits, epsilon=1.0, delta=1e-6, calibration="paper", rng=5)
    assert run.privacy.meets_target
    assert run.privacy.epsilon <= 1.0
    assert run.messages == 20_000
    assert run.parameters["lambda"] == pytest.approx(
        lemma48_lambda(n=20_000, epsilon=1.0, delta=1e-6)
    )
    assert abs(run.error) < 6 * run.std_error
    record = run.as_record()
    assert {"estimate", "exact", "error", "epsilon", "delta", "bound", "target_met"} <= set(record)


def test_exact_calibration_beats_the_paper_lambda() -> None:
    # At n = 1e4, ε = 1, δ = 1e-6 the exact curve of the worst
    # canonical dataset needs λ >= 67.43 (a lower bound on any valid λ); the paper uses 972.9.
    lam, cert = calibrate_bit_sum(n=10_000, epsilon=1.0, delta=1e-6, calibration="exact")
    assert lam >= 67.43 * (1 - 1e-3)
    assert lam < 972.9 / 3
    assert cert.meets_target
    assert cert.epsilon <= 1.0


@pytest.mark.parametrize("n", [20, 60])
def test_exact_calibration_is_sound_by_enumeration(n: int) -> None:
    lam, cert = calibrate_bit_sum(n=n, epsilon=1.0, delta=1e-3, calibration="exact")
    assert bitsum_worst_delta(n, lam, 1.0) <= 1e-3 * (1 + 1e-9)
    assert cert.meets_target


# ---- invalid inputs -----------------------------------------------------------------------


def test_lemma48_outside_its_range_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"epsilon must be in \(0.89368, 1\]"):
        lemma48_lambda(n=1000, epsilon=0.5, delta=1e-6)


def test_lemma48_above_one_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"epsilon must be in .* got 2.0"):
        lemma48_lambda(n=10_000, epsilon=2.0, delta=1e-6)


def test_corollary47_small_lambda_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"lam must be in \[14 ln\(4/delta\), n\]"):
        corollary47_epsilon(n=10_000, lam=10.0, delta=1e-6)


def test_lambda_equal_to_n_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"lam must be < 100, got 100"):
        BitSumRandomizer(n=100, lam=100)


def test_zero_lambda_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"lam must be > 0.0, got 0"):
        BitSumRandomizer(n=100, lam=0)


def test_non_bits_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"bits must contain categories in 0..1, got 2"):
        run_bit_sum([0, 1, 2], epsilon=1.0, delta=1e-6, calibration="paper")


def test_unknown_calibration_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"calibration must be 'exact' or 'paper', got 'best'"):
        calibrate_bit_sum(n=1000, epsilon=1.0, delta=1e-6, calibration="best")


def test_zero_delta_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"delta must be > 0.0, got 0"):
        calibrate_bit_sum(n=1000, epsilon=1.0, delta=0, calibration="paper")


def test_bad_beta_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"beta must be < 1.0, got 1"):
        bitsum_error_bound(n=100, lam=10, beta=1)
