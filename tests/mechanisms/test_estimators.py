"""Simplex projection, matrix-inversion estimator and total-variation distance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdhide.mechanisms import (
    KaryRandomizedResponse,
    inversion_histogram_estimate,
    project_to_simplex,
    total_variation_distance,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-50.0, 50.0), min_size=1, max_size=30))
def test_projection_satisfies_the_variational_inequality(raw: list[float]) -> None:
    v = np.array(raw)
    x = project_to_simplex(v)
    assert (x >= 0).all()
    assert x.sum() == pytest.approx(1.0, abs=1e-12)
    # x is the projection iff (v − x)·(y − x) <= 0 for every y of the simplex; the left side
    # is linear in y, so checking the vertices e_i suffices.
    residual = v - x
    assert np.all(residual - residual @ x <= 1e-9 * (1 + np.abs(v).max()))


def test_projection_is_identity_on_the_simplex_and_respects_total() -> None:
    p = np.array([0.1, 0.2, 0.7])
    np.testing.assert_allclose(project_to_simplex(p), p, atol=1e-15)
    np.testing.assert_allclose(project_to_simplex([5.0, 5.0], total=4.0), [2.0, 2.0])


def test_projection_is_not_clip_and_renormalize() -> None:
    # The test above can fail: clipping then renormalizing is not the Euclidean projection.
    v = np.array([0.8, 0.4, 0.1, -0.2])
    wrong = np.clip(v, 0, None) / np.clip(v, 0, None).sum()
    residual = v - wrong
    assert np.any(residual - residual @ wrong > 1e-6)
    np.testing.assert_allclose(project_to_simplex(v), [0.7, 0.3, 0.0, 0.0], atol=1e-15)


@pytest.mark.parametrize(("k", "eps0"), [(2, 0.3), (5, 1.0), (100, 2.0)])
def test_inversion_equals_debiasing_for_krr(k: int, eps0: float) -> None:
    rr = KaryRandomizedResponse(k=k, eps0=eps0)
    counts = np.random.default_rng(k).integers(0, 1000, size=k)
    raw = inversion_histogram_estimate(counts, rr.channel(), project=False)
    np.testing.assert_allclose(raw, rr.estimate_frequencies(counts), atol=1e-10)
    projected = inversion_histogram_estimate(counts, rr.channel())
    assert (projected >= 0).all()
    assert projected.sum() == pytest.approx(1.0, abs=1e-12)


def test_inversion_recovers_truth_from_expected_counts_of_a_general_channel() -> None:
    rng = np.random.default_rng(4)
    k = 6
    channel = np.eye(k) * 3 + rng.random((k, k))
    channel /= channel.sum(axis=1, keepdims=True)
    truth = rng.dirichlet(np.ones(k))
    expected_counts = 10_000 * truth @ channel  # E[counts] under the channel
    np.testing.assert_allclose(
        inversion_histogram_estimate(expected_counts, channel, project=False), truth, atol=1e-12
    )
    np.testing.assert_allclose(inversion_histogram_estimate(expected_counts, channel), truth)


def test_total_variation_distance() -> None:
    p, q = np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.3, 0.2])
    assert total_variation_distance(p, q) == pytest.approx(0.3)
    assert total_variation_distance(q, p) == total_variation_distance(p, q)
    assert total_variation_distance(p, p) == 0.0


# ---- invalid inputs: one test each ------------------------------------------------------


def test_projection_rejects_empty() -> None:
    with pytest.raises(ValueError, match=r"v must not be empty"):
        project_to_simplex([])


def test_projection_rejects_nan() -> None:
    with pytest.raises(ValueError, match=r"v must be finite"):
        project_to_simplex([0.5, np.nan])


def test_projection_rejects_matrix() -> None:
    with pytest.raises(ValueError, match=r"v must be one-dimensional, got shape \(1, 2\)"):
        project_to_simplex([[0.5, 0.5]])


def test_projection_rejects_zero_total() -> None:
    with pytest.raises(ValueError, match=r"total must be > 0.0, got 0.0"):
        project_to_simplex([1.0], total=0.0)


def test_inversion_rejects_non_square_channel() -> None:
    with pytest.raises(ValueError, match=r"channel must be a square matrix, got shape \(2, 3\)"):
        inversion_histogram_estimate([1, 1], np.full((2, 3), 1 / 3))


def test_inversion_rejects_non_stochastic_channel() -> None:
    with pytest.raises(ValueError, match=r"channel rows must sum to 1, got a row summing to 1.5"):
        inversion_histogram_estimate([1, 1], [[1.0, 0.5], [0.0, 1.0]])


def test_inversion_rejects_negative_channel() -> None:
    with pytest.raises(ValueError, match=r"channel must contain finite non-negative"):
        inversion_histogram_estimate([1, 1], [[1.5, -0.5], [0.0, 1.0]])


def test_inversion_rejects_singular_channel() -> None:
    with pytest.raises(ValueError, match=r"channel must be invertible"):
        inversion_histogram_estimate([1, 1], np.full((2, 2), 0.5))


def test_inversion_rejects_counts_of_wrong_length() -> None:
    with pytest.raises(ValueError, match=r"counts must have length 2, got length 3"):
        inversion_histogram_estimate([1, 1, 1], np.eye(2))


def test_inversion_rejects_non_bool_project() -> None:
    with pytest.raises(TypeError, match=r"project must be a bool, got 1"):
        inversion_histogram_estimate([1, 1], np.eye(2), project=1)


def test_inversion_rejects_string_channel() -> None:
    with pytest.raises(TypeError, match=r"channel must be a numeric matrix"):
        inversion_histogram_estimate([1, 1], [["a", "b"], ["c", "d"]])


def test_tv_rejects_length_mismatch() -> None:
    with pytest.raises(ValueError, match=r"p and q must have the same length, got 2 and 3"):
        total_variation_distance([0.5, 0.5], [0.2, 0.3, 0.5])


def test_tv_rejects_strings() -> None:
    with pytest.raises(TypeError, match=r"q must be a numeric vector"):
        total_variation_distance([1.0], ["a"])
