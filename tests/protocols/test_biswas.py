"""Biswas, Jung, Palamidessi's δ̂(ε): published values reproduced, corrected formula checked
by enumeration, and the published bound shown to fall below the exact worst case."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.protocols.biswas import (
    biswas_community_delta,
    biswas_delta_published,
    biswas_log_delta,
    biswas_x0_count_delta,
)
from tests.oracles.protocols import krr_histogram_worst_delta, x0_count_pair

TABLE2_EPS = (0.01, 0.1, 0.2, 0.3, 0.4)
#: Table II of Biswas et al., "Our δ" column, n = 100 (reproduced with k = 10, n_x0 = 80).
TABLE2_N100 = (1.18e-14, 1.26e-28, 2.69e-43, 1.39e-57, 9.46e-73)


@pytest.mark.parametrize(("eps", "published"), list(zip(TABLE2_EPS, TABLE2_N100, strict=True)))
def test_published_formula_reproduces_table2(eps: float, published: float) -> None:
    value = biswas_delta_published(epsilon=eps, eps0=0.49, k=10, n=100, n_x0=80)
    assert value == pytest.approx(published, rel=0.015)


#: Table IV (published), ε ∈ {0.1, 0.5, 1.0, 1.5}: (eps0, n, k, n_x0) -> values.
TABLE4 = {
    (1.0, 100, 10, 80): (2.08e-20, 3.42e-43, 0.0, 0.0),
    (2.0, 100, 10, 80): (2.49e-15, 3.25e-22, 2.20e-30, 1.57e-40),
    (3.0, 100, 10, 80): (8.79e-11, 5.73e-13, 3.52e-16, 4.49e-20),
    (2.0, 150, 10, 120): (6.58e-22, 7.83e-32, 2.75e-44, 6.99e-59),
    (2.0, 100, 5, 80): (1.96e-10, 2.51e-14, 1.08e-19, 2.02e-27),
}


@pytest.mark.parametrize("key", list(TABLE4))
def test_published_formula_reproduces_table4(key: tuple[float, int, int, int]) -> None:
    eps0, n, k, n_x0 = key
    for eps, published in zip((0.1, 0.5, 1.0, 1.5), TABLE4[key], strict=True):
        value = biswas_delta_published(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=n_x0)
        if published == 0.0:
            assert value == 0.0
        else:
            assert value == pytest.approx(published, rel=0.015)


@pytest.mark.parametrize(
    ("eps", "expected"),
    [(0.1, 6.15e-3), (0.5, 2.61e-8), (1.0, 2.70e-18), (1.5, 9.67e-32), (2.0, 0.0)],
)
def test_corrected_formula_reference_values(eps: float, expected: float) -> None:
    value = biswas_x0_count_delta(epsilon=eps, eps0=2.0, k=10, n=100, n_x0=80)
    assert value == pytest.approx(expected, rel=2e-3)


CASES = [
    (2, 5, 1.0, (0, 0, 1, 1)),
    (2, 6, 0.5, (0, 1, 1, 1, 1)),
    (3, 4, 1.0, (0, 2, 2)),
    (3, 5, 2.0, (2, 2, 2, 2)),
    (3, 5, 2.0, (0, 0, 0, 0)),
    (4, 4, 2.0, (0, 0, 0)),
]


@pytest.mark.parametrize(("k", "n", "eps0", "others"), CASES)
def test_corrected_formula_equals_enumerated_x0_count(
    k: int, n: int, eps0: float, others: tuple[int, ...]
) -> None:
    pair = x0_count_pair(n, k, eps0, others)
    n_x0 = sum(1 for o in others if o == 0)
    for eps in (0.0, 0.05, 0.2, 0.5):
        exact = math.exp(pair.log_delta_forward(eps))
        value = biswas_x0_count_delta(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=n_x0)
        assert value == pytest.approx(exact, abs=1e-13)
        printed = biswas_delta_published(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=n_x0)
        assert printed <= value + 1e-15


def test_published_formula_fails_the_enumeration_check() -> None:
    # k = 2, n = 5, ε0 = 1, ε = 0.2, others (0, 0, 1, 1): 0.0519 printed vs 0.1180 exact.
    pair = x0_count_pair(5, 2, 1.0, (0, 0, 1, 1))
    exact = math.exp(pair.log_delta_forward(0.2))
    printed = biswas_delta_published(epsilon=0.2, eps0=1.0, k=2, n=5, n_x0=2)
    assert printed == pytest.approx(0.0519254, rel=1e-5)
    assert exact == pytest.approx(0.117957, rel=1e-5)
    assert printed < 0.5 * exact


@pytest.mark.parametrize(("k", "n", "eps0", "eps"), [(3, 4, 1.0, 0.1), (3, 4, 2.0, 0.5)])
def test_published_and_corrected_values_fall_below_the_exact_worst_case(
    k: int, n: int, eps0: float, eps: float
) -> None:
    worst = krr_histogram_worst_delta(n, k, eps0, eps)
    best_corrected = max(
        biswas_x0_count_delta(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=j) for j in range(n)
    )
    best_published = max(
        biswas_delta_published(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=j) for j in range(n)
    )
    # Even maximized over n_x0 the x0-count formula misses the full-histogram leakage (k = 3).
    assert best_published <= best_corrected < worst


def test_k2_max_over_nx0_is_the_exact_worst_case() -> None:
    n, eps0, eps = 5, 2.0, 0.5
    worst = krr_histogram_worst_delta(n, 2, eps0, eps)
    best = max(biswas_x0_count_delta(epsilon=eps, eps0=eps0, k=2, n=n, n_x0=j) for j in range(n))
    assert best == pytest.approx(worst, abs=1e-12)
    assert best == pytest.approx(0.411839, rel=1e-5)


def test_deep_underflow_is_kept_in_log_space() -> None:
    log_delta = biswas_log_delta(epsilon=0.3, eps0=0.49, k=10, n=1000, n_x0=800, published=False)
    assert log_delta / math.log(10) == pytest.approx(-351.75, abs=0.01)
    assert biswas_x0_count_delta(epsilon=0.3, eps0=0.49, k=10, n=1000, n_x0=800) == 0.0


def test_delta_is_zero_from_eps0_on_and_monotone() -> None:
    values = [
        biswas_x0_count_delta(epsilon=e, eps0=1.0, k=3, n=50, n_x0=10)
        for e in np.linspace(0, 1.0, 11)
    ]
    assert values[-1] == 0.0
    assert all(a >= b for a, b in itertools.pairwise(values))


def test_n_equal_one_matches_krr_itself() -> None:
    # δ = c (e^{ε0} − e^{ε}) for a single user, c = 1/(e^{ε0} + k − 1).
    for k in (2, 3, 7):
        c = 1 / (math.e + k - 1)
        value = biswas_x0_count_delta(epsilon=0.3, eps0=1.0, k=k, n=1, n_x0=0)
        assert value == pytest.approx(c * (math.e - math.exp(0.3)), rel=1e-12)


def test_community_delta_takes_the_max_over_present_values() -> None:
    counts = np.array([5, 0, 3, 2])
    log_d, arg = biswas_community_delta(epsilon=0.1, eps0=1.0, counts=counts, published=False)
    per = [
        biswas_log_delta(epsilon=0.1, eps0=1.0, k=4, n=10, n_x0=c - 1, published=False)
        for c in (5, 3, 2)
    ]
    assert log_d == pytest.approx(max(per))
    assert arg in (0, 2, 3)


def test_nx0_must_count_other_users() -> None:
    with pytest.raises(ValueError, match=r"n_x0 must be <= 99, got 100"):
        biswas_delta_published(epsilon=0.1, eps0=1.0, k=10, n=100, n_x0=100)


def test_k_one_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"k must be >= 2, got 1"):
        biswas_x0_count_delta(epsilon=0.1, eps0=1.0, k=1, n=10, n_x0=0)


def test_huge_n_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"n must be <= 20000, got 100000"):
        biswas_x0_count_delta(epsilon=0.1, eps0=1.0, k=3, n=100_000, n_x0=0)


def test_bad_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"counts must be a vector of >= 2 non-negative"):
        biswas_community_delta(epsilon=0.1, eps0=1.0, counts=[3.5, 1], published=True)
