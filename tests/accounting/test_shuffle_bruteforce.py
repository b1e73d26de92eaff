"""Shuffle bounds against brute-force enumeration of every output histogram (n <= 8)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle.curves import KrrShuffleCurve
from crowdhide.accounting.shuffle.generic import (
    EXHAUSTIVE_MAX_N,
    krr_shuffle_curve,
    shuffle_bound_curve,
    shuffle_delta,
)
from tests.oracles.shuffle import all_datasets, pair_curve, worst_case_delta

EPS0S = (0.3, 1.0, 2.5)
EPSILONS = (0.0, 0.05, 0.2, 0.5, 1.0, 2.0)


@functools.cache
def _exact(n: int, k: int, eps0: float) -> KrrShuffleCurve:
    return krr_shuffle_curve(eps0=eps0, n=n, k=k)


def _grid(max_n: int) -> list[tuple[int, int, float]]:
    return [
        (n, k, e0)
        for k in (2, 3, 4)
        for n in range(2, max_n + 1)
        for e0 in EPS0S
        if not (k == 4 and n > 7)
    ]


# --------------------------------------------------------------------------------------
# Canonical dataset pairs (large-n formulas) = brute force


@pytest.mark.parametrize(("n", "k", "eps0"), [(5, 4, 1.0), (6, 3, 0.7), (7, 5, 2.0), (8, 4, 0.3)])
def test_third_value_pair_matches_bruteforce(n: int, k: int, eps0: float) -> None:
    truth = pair_curve([2] * (n - 1), k, eps0)
    for eps in (0.0, 0.05, 0.2, 0.5, 1.5):
        got = math.exp(pairs.krr_third_log_delta(n, k, eps0, eps, -60.0)) if eps < eps0 else 0.0
        assert got == pytest.approx(truth.delta(eps), abs=1e-12)


@pytest.mark.parametrize(("n", "k", "eps0"), [(5, 4, 1.0), (6, 2, 1.0), (7, 3, 2.0), (8, 2, 0.3)])
def test_same_value_pair_matches_bruteforce(n: int, k: int, eps0: float) -> None:
    truth = pair_curve([1] * (n - 1), k, eps0)
    for eps in (0.0, 0.05, 0.2, 0.5, 1.5):
        got = math.exp(pairs.krr_same_log_delta(n, k, eps0, eps, -60.0)) if eps < eps0 else 0.0
        assert got == pytest.approx(truth.delta(eps), abs=1e-12)


# --------------------------------------------------------------------------------------
# `exact`: worst case over every dataset = brute force over every dataset


def _check_exact(n: int, k: int, eps0: float) -> None:
    curve = krr_shuffle_curve(eps0=eps0, n=n, k=k)
    assert curve.is_certificate
    truths = [pair_curve(o, k, eps0) for o in all_datasets(n, k)]
    for eps in EPSILONS:
        worst = max(t.delta(eps) for t in truths)
        assert curve.delta(eps) == pytest.approx(worst, abs=1e-12)


@pytest.mark.parametrize(("n", "k", "eps0"), _grid(4))
def test_exact_is_worst_case_over_all_datasets(n: int, k: int, eps0: float) -> None:
    _check_exact(n, k, eps0)


@pytest.mark.slow
@pytest.mark.parametrize(("n", "k", "eps0"), [g for g in _grid(8) if g[0] > 4])
def test_exact_is_worst_case_over_all_datasets_up_to_8(n: int, k: int, eps0: float) -> None:
    _check_exact(n, k, eps0)


def test_merging_third_values_never_lowers_delta() -> None:
    # The enumeration puts all third values on one z; brute force (k = 5) shows that
    # spreading them over several third values never gives a larger delta.
    checked = 0
    for others in all_datasets(5, 5):
        merged = tuple(v if v < 2 else 2 for v in others)
        spread, single = pair_curve(others, 5, 1.0), pair_curve(merged, 5, 1.0)
        for eps in (0.0, 0.1, 0.5):
            assert spread.delta(eps) <= single.delta(eps) + 1e-13
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(("n", "k", "eps0"), [(4, 5, 1.0), (5, 5, 0.3), (4, 6, 2.5)])
def test_exact_is_worst_case_for_larger_alphabets(n: int, k: int, eps0: float) -> None:
    _check_exact(n, k, eps0)


def test_worst_dataset_depends_on_epsilon() -> None:
    """What the exhaustive search shows: no single worst neighbouring pair."""
    _, arg_small = worst_case_delta(5, 4, 2.5, 0.2)
    assert arg_small == (2, 2, 2, 2)  # all others on one third value
    _, arg_large = worst_case_delta(5, 4, 2.5, 2.0)
    assert arg_large in ((0, 0, 0, 0), (1, 1, 1, 1))  # all others on x (or x')
    value, arg_mixed = worst_case_delta(4, 4, 0.3, 0.2)
    assert sorted(arg_mixed).count(2) == 1  # a mixed dataset wins here
    third = pair_curve((2, 2, 2), 4, 0.3).delta(0.2)
    same = pair_curve((1, 1, 1), 4, 0.3).delta(0.2)
    assert value > max(third, same) * 1.01
    # ...so the canonical-pair curve is a strict lower bound there, and `exact` is not.
    lower = shuffle_bound_curve(bound="krr_lower", eps0=0.3, n=4, k=4).delta(0.2)
    assert lower <= max(third, same)
    assert lower == pytest.approx(max(third, same), rel=2e-5)
    assert krr_shuffle_curve(eps0=0.3, n=4, k=4).delta(0.2) == pytest.approx(value, abs=1e-12)


# --------------------------------------------------------------------------------------
# Every upper bound dominates the exact worst case


UPPER = (
    "balle2019_hoeffding",
    "balle2019_bennett",
    "feldman2021",
    "feldman2023",
    "krr_clone",
    "krr_blanket",
)


def _violations(
    upper: Callable[[int, int, float, float], float], grid: list[tuple[int, int, float]]
) -> list[tuple[int, int, float, float, float, float]]:
    bad = []
    for n, k, e0 in grid:
        exact = _exact(n, k, e0)
        for eps in EPSILONS:
            truth = exact.delta(eps)
            bound = upper(n, k, e0, eps)
            if bound < truth - 1e-12:
                bad.append((n, k, e0, eps, bound, truth))
    return bad


def _named(name: str, generic: bool) -> Callable[[int, int, float, float], float]:
    def upper(n: int, k: int, e0: float, eps: float) -> float:
        kk = None if generic else k
        if name in ("feldman2023", "krr_clone", "krr_blanket") and generic:
            kk = k  # k-RR-only certificates: tested with k
        return shuffle_bound_curve(bound=name, eps0=e0, n=n, k=kk).delta(eps)

    return upper


@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("name", UPPER)
def test_upper_bounds_dominate_exact(name: str, generic: bool) -> None:
    assert _violations(_named(name, generic), _grid(4)) == []


@pytest.mark.slow
@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("name", UPPER)
def test_upper_bounds_dominate_exact_up_to_exhaustive_limit(name: str, generic: bool) -> None:
    grid = [(n, k, e0) for n, k, e0 in _grid(8) if n > 4] + [
        (n, 2, e0) for n in range(9, EXHAUSTIVE_MAX_N + 1) for e0 in EPS0S
    ]
    assert _violations(_named(name, generic), grid) == []


def test_best_dominates_exact() -> None:
    for n, k, e0 in _grid(4):
        exact = _exact(n, k, e0)
        for eps in EPSILONS:
            best = shuffle_delta(eps0=e0, n=n, epsilon=eps, k=k)
            assert best.delta >= exact.delta(eps) - 1e-12


def test_a_shrunk_bound_fails_the_check() -> None:
    """The dominance check can bite: a too-small bound is caught."""

    def halved(n: int, k: int, e0: float, eps: float) -> float:
        return 0.5 * _named("feldman2023", False)(n, k, e0, eps)

    def too_many_clones(n: int, k: int, e0: float, eps: float) -> float:
        beta = min(1.0, 3.0 / (math.exp(e0) + 1.0))  # 1.5x the FMT23 clone probability
        if eps >= e0:
            return 0.0
        return math.exp(pairs.clone_pair_log_delta(n, e0, beta, eps, -60.0))

    assert _violations(halved, _grid(4))
    assert _violations(too_many_clones, _grid(4))


def test_lower_bound_is_below_exact() -> None:
    for n, k, e0 in _grid(4):
        exact = _exact(n, k, e0)
        lower = shuffle_bound_curve(bound="krr_lower", eps0=e0, n=n, k=k)
        for eps in EPSILONS:
            assert lower.delta(eps) <= exact.delta(eps) + 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("eps0", [0.3, 3.0])
def test_upper_bounds_dominate_lower_bound_at_large_n(k: int, eps0: float) -> None:
    """At n = 2000 (beyond brute force) every certificate must stay above krr_lower, the
    exact curve of actual datasets (closed forms included where valid)."""
    n = 2000
    lower = shuffle_bound_curve(bound="krr_lower", eps0=eps0, n=n, k=k)
    names = (*UPPER, "feldman2021_closed")
    for eps in (0.01, 0.05, 0.1, 0.2, 0.5):
        if eps >= eps0:
            continue
        truth = lower.delta(eps)
        for name in names:
            kk = None if name in ("balle2019_hoeffding", "balle2019_bennett") else k
            for kk_try in {kk, k}:
                bound = shuffle_delta(eps0=eps0, n=n, epsilon=eps, k=kk_try, bound=name)
                if bound.conditions_met:
                    assert bound.delta >= truth - 1e-15, (name, kk_try, eps, bound.delta, truth)


@pytest.mark.parametrize(("k", "eps0"), [(2, 0.7), (4, 1.0), (7, 2.5)])
def test_bruteforce_matches_simulated_mechanism_channel(k: int, eps0: float) -> None:
    """The brute-force law uses the same k-RR channel as crowdhide.mechanisms, and the
    canonical pair matches an empirical histogram of simulated shuffled reports."""
    import numpy as np

    from crowdhide.mechanisms import KaryRandomizedResponse

    mech = KaryRandomizedResponse(k=k, eps0=eps0)
    e = math.exp(eps0)
    channel = mech.channel()
    assert channel[0, 0] == pytest.approx(e / (e + k - 1), rel=1e-14)
    assert channel[0, 1] == pytest.approx(1 / (e + k - 1), rel=1e-14)
    # Monte-Carlo sanity check (an estimate, not a certificate): the probability that the
    # count of x equals its mode under D(x) with n = 3 users.
    rng = np.random.default_rng(7)
    values = np.array([0, 1, 1])  # target on x, the others on x'
    reports = mech.randomize(np.tile(values, 20_000), rng=rng).reshape(20_000, 3)
    freq = float(np.mean((reports == 0).sum(axis=1) == 1))
    from tests.oracles.shuffle import histogram_law

    law = histogram_law([0, 1, 1], k, eps0).reshape((4,) * k)
    exact = float(law.sum(axis=tuple(range(1, k)))[1])
    assert abs(freq - exact) < 5 * math.sqrt(exact * (1 - exact) / 20_000)


def test_public_dataset_curves_match_bruteforce() -> None:
    from crowdhide.accounting.shuffle.generic import krr_dataset_curve

    for others, values in (("third", [2] * 5), ("same", [1] * 5)):
        truth = pair_curve(values, 4, 1.2)
        curve = krr_dataset_curve(eps0=1.2, n=6, k=4, others=others)
        for eps in (0.0, 0.1, 0.6):
            assert curve.delta(eps) == pytest.approx(truth.delta(eps), abs=1e-12)
    with pytest.raises(ValueError, match="others"):
        krr_dataset_curve(eps0=1.0, n=5, k=4, others="mixed")
    with pytest.raises(ValueError, match="k >= 3"):
        krr_dataset_curve(eps0=1.0, n=5, k=2, others="third")
