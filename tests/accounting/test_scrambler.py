"""Scrambler accountant against brute-force enumeration and the note's reference values."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest

from crowdhide.accounting import DiscretePairCurve, PrivacyStatement
from crowdhide.accounting.scrambler import bounds
from crowdhide.accounting.scrambler import enumeration as brute
from crowdhide.accounting.scrambler.accountant import (
    CAPPED_METHODS,
    UNCAPPED_METHODS,
    montecarlo_epsilon_interval,
    scrambler_delta,
    scrambler_epsilon,
    scrambler_epsilon_all,
)
from crowdhide.accounting.scrambler.generic import generic_scrambler_epsilon
from crowdhide.accounting.scrambler.local import (
    local_randomizer_delta,
    local_randomizer_epsilon,
    local_randomizer_statement,
    sampling_epsilon,
    sigma_lie_from_uniform,
    theorem3_published_epsilon,
)


def _certified(r: PrivacyStatement) -> bool:
    """The statement claims a guarantee (an exact value or an upper bound whose conditions
    hold), whatever its numbers (δ = 1 is a trivially true certificate)."""
    return r.conditions_met and r.kind in ("exact", "upper")


EPS_GRID = (0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0)

# (T, σ, n, d) small enough for exhaustive enumeration of every neighbouring pair.
SMALL = [
    (3, 0.2, 3, 0),
    (3, 0.2, 3, 2),
    (3, 0.5, 4, 1),
    (4, 0.3, 3, 2),
    (3, 0.3, 5, 2),
    (3, 0.0, 3, 3),
    (2, 0.3, 4, 2),
    (4, 0.2, 4, 3),
]


# ----------------------------------------------------------------- local randomizer


def _local_exact_epsilon(T: int, sigma: float, d: int) -> float:
    """Max log-ratio of the output-set laws for true targets 0 and 1, with exact fractions."""
    s = Fraction(sigma).limit_denominator(10**6)
    worst = Fraction(1)
    for out in combinations(range(T), d + 1):

        def prob(t: int, out: tuple[int, ...] = out) -> Fraction:
            total = Fraction(0)
            for first in out:
                p_first = s / T + (1 - s if first == t else 0)
                total += p_first / math.comb(T - 1, d)
            return total

        p, q = prob(0), prob(1)
        if q == 0 or p == 0:
            return math.inf if p != q else 0.0
        worst = max(worst, p / q, q / p)
    return math.log(worst)


@pytest.mark.parametrize("T", [3, 5, 8])
@pytest.mark.parametrize("sigma", [0.1, 0.3, 0.7])
def test_theorem2_is_exact_for_every_d(T: int, sigma: float) -> None:
    for d in range(T):
        expected = _local_exact_epsilon(T, sigma, d)
        got = local_randomizer_epsilon(targets=T, sigma=sigma, dummies=d)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_local_randomizer_brute_force_distribution_matches_formula() -> None:
    # Output-set law of R_σ^d: (1−σ)1[t∈O]/C(T−1,d) + σ/C(T,d+1) (note §3.1).
    T, sigma, d = 6, 0.35, 2
    law = brute.local_randomizer_output_probabilities(
        targets=T, sigma=sigma, dummies=d, true_target=0
    )
    for out, p in law.items():
        expected = (1 - sigma) * (0 in out) / math.comb(T - 1, d) + sigma / math.comb(T, d + 1)
        assert p == pytest.approx(expected)
    assert sum(law.values()) == pytest.approx(1.0)


def test_theorem2_reference_values() -> None:
    ref = [3.0445, 2.3979, 2.0369, 1.7918, 1.6094]
    for d, value in enumerate(ref):
        assert local_randomizer_epsilon(targets=20, sigma=0.5, dummies=d) == pytest.approx(
            value, abs=1e-4
        )
    assert local_randomizer_epsilon(targets=20, sigma=0.5, dummies=19) == 0.0
    assert local_randomizer_epsilon(targets=20, sigma=0.0, dummies=3) == math.inf
    assert local_randomizer_epsilon(targets=1, sigma=0.0, dummies=0) == 0.0
    assert sampling_epsilon(targets=20, sigma=0.9) == pytest.approx(1.1701, abs=1e-4)


def test_local_delta_is_exact_hockey_stick_of_sampling() -> None:
    T, sigma = 5, 0.3
    p = np.full(T, sigma / T)
    p[0] += 1 - sigma
    q = np.roll(p, 1)
    curve = DiscretePairCurve.from_probabilities(p, q)
    for eps in EPS_GRID:
        assert local_randomizer_delta(targets=T, sigma=sigma, epsilon=eps) == pytest.approx(
            curve.delta(eps), abs=1e-12
        )


# ----------------------------------------------------------------- exact E[ΣL]+


@pytest.mark.parametrize(
    ("N", "T", "sigma", "eps", "expected"),
    [
        (10, 20, 0.2, 1.0, 4.190062),
        (200, 20, 0.0, 0.3, 15.881006),
        (800, 20, 0.5, 0.7, 3.06946e-9),
        (5, 3, 0.3, 0.5, 0.802262),
        (50, 2, 0.2, 0.4, 0.224777),
    ],
)
def test_expected_positive_sum_reference(
    N: int, T: int, sigma: float, eps: float, expected: float
) -> None:
    got = bounds.expected_positive_sum(count=N, targets=T, sigma=sigma, epsilon=eps)
    assert got == pytest.approx(expected, rel=1e-5)


def test_expected_positive_sum_matches_two_dimensional_enumeration() -> None:
    from scipy.stats import multinomial

    N, T, sigma, eps = 12, 4, 0.3, 0.6
    em = math.exp(eps)
    total = 0.0
    for a in range(N + 1):
        for b in range(N + 1 - a):
            pr = multinomial.pmf([a, b, N - a - b], N, [1 / T, 1 / T, 1 - 2 / T])
            total += pr * max(0.0, N * sigma * (1 - em) + (1 - sigma) * T * (a - em * b))
    got = bounds.expected_positive_sum(count=N, targets=T, sigma=sigma, epsilon=eps)
    assert got == pytest.approx(total, rel=1e-10)


# ----------------------------------------------------------------- brute force vs bounds


@pytest.mark.parametrize(("T", "sigma", "n", "d"), SMALL)
def test_exact_method_matches_exhaustive_enumeration(T: int, sigma: float, n: int, d: int) -> None:
    truth, _ = brute.worst_pair_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilons=EPS_GRID)
    for eps, value in zip(EPS_GRID, truth, strict=True):
        r = scrambler_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilon=eps, method="exact")
        assert _certified(r)
        # rounded up by a relative 1e-9 and a loss allowance of ~1e-14 in ε (issue 28)
        assert value <= r.delta == pytest.approx(value, rel=2e-9, abs=1e-12)


@pytest.mark.parametrize(("T", "sigma", "n", "d"), SMALL)
def test_every_certificate_dominates_exact_delta(T: int, sigma: float, n: int, d: int) -> None:
    truth, _ = brute.worst_pair_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilons=EPS_GRID)
    for method in ("lemma2-exact", "bennett", "hoeffding", "local", "best"):
        for eps, value in zip(EPS_GRID, truth, strict=True):
            r = scrambler_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilon=eps, method=method)
            assert _certified(r)
            assert r.delta >= value - 1e-12, (method, eps)


def test_published_bennett_fails_the_brute_force_check() -> None:
    # Fig. 6 setting, skewed input (19 common messages at a third target): the true
    # hockey-stick divergence at ε = 1 is 5.788e-3 (exact enumeration); the printed bound
    # says 3.25e-3.
    T, sigma, n, d = 4, 0.2, 20, 20
    p, q = _third_target_pair(T, sigma, n, d)
    true_delta = DiscretePairCurve(p, q).delta(1.0)
    assert true_delta == pytest.approx(5.788e-3, rel=1e-3)
    printed = scrambler_delta(
        targets=T, sigma=sigma, n=n, dummies=d, epsilon=1.0, method="bennett-published"
    )
    assert not printed.is_certificate
    assert printed.delta < true_delta  # the printed bound claims more privacy than exists
    for method in ("lemma2-exact", "bennett", "hoeffding"):
        cert = scrambler_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilon=1.0, method=method)
        assert cert.delta >= true_delta


def _third_target_pair(T: int, sigma: float, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-probabilities of the count vector (c0, c1, c2, rest) for the pair with n−1 common
    messages at target 2: sequential convolution on a 4-D grid (rest = targets 3..T−1)."""
    K = n + d
    probs_common = [sigma / T, sigma / T, 1 - sigma + sigma / T, sigma * (T - 3) / T]
    probs_dummy = [1 / T, 1 / T, 1 / T, (T - 3) / T]

    def add(arr: np.ndarray, probs: list[float]) -> np.ndarray:
        out = np.zeros_like(arr)
        for axis, pr in enumerate(probs):
            if pr > 0:
                out += pr * brute._shift(arr, axis)
        return out

    base = np.zeros((K + 1,) * 4)
    base[0, 0, 0, 0] = 1.0
    for _ in range(n - 1):
        base = add(base, probs_common)
    for _ in range(d):
        base = add(base, probs_dummy)
    last_p = [1 - sigma + sigma / T, sigma / T, sigma / T, sigma * (T - 3) / T]
    last_q = [sigma / T, 1 - sigma + sigma / T, sigma / T, sigma * (T - 3) / T]
    with np.errstate(divide="ignore"):
        return np.log(add(base, last_p).ravel()), np.log(add(base, last_q).ravel())


@pytest.mark.parametrize(
    ("T", "sigma", "n", "d", "eps", "truth"),
    [
        (3, 0.2, 3, 0, 0.5, 0.65470),
        (3, 0.2, 3, 2, 2.0, 0.06291),
        (3, 0.5, 4, 1, 1.0, 0.03001),
        (4, 0.3, 3, 2, 1.0, 0.19747),
        (3, 0.3, 5, 2, 2.0, 0.00278),
    ],
)
def test_brute_force_reference_values_from_note(
    T: int, sigma: float, n: int, d: int, eps: float, truth: float
) -> None:
    value, _ = brute.worst_pair_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilons=[eps])
    assert value[0] == pytest.approx(truth, abs=1e-5)


# ----------------------------------------------------------------- reference ε values


@pytest.mark.parametrize(
    ("sigma", "n", "d", "expected"),
    [
        (0.2, 10, 50, 2.5178),
        (0.2, 100, 50, 2.3268),
        (0.2, 600, 50, 1.4638),
        (0.2, 100, 0, 3.1784),
        (0.2, 100, 1000, 0.4707),
        (0.05, 500, 50, 3.7730),
        (0.9, 500, 50, 0.0656),
    ],
)
def test_lemma2_exact_fig7_reference(sigma: float, n: int, d: int, expected: float) -> None:
    r = scrambler_epsilon(
        targets=20, sigma=sigma, n=n, dummies=d, delta=1e-4, method="lemma2-exact"
    )
    assert _certified(r)
    assert r.epsilon == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("sigma", "n", "d", "expected"),
    [(0.2, 100, 500, 1.0757), (0.2, 100, 1000, 0.6488), (0.5, 500, 50, 0.8415)],
)
def test_bennett_fig7_reference(sigma: float, n: int, d: int, expected: float) -> None:
    r = scrambler_epsilon(targets=20, sigma=sigma, n=n, dummies=d, delta=1e-4, method="bennett")
    assert r.epsilon == pytest.approx(expected, abs=2e-4)
    # Every returned ε satisfies the bound it comes from.
    value = bounds.bennett_delta(targets=20, sigma=sigma, n=n, dummies=d, epsilon=r.epsilon)
    assert value[0] <= 1e-4


def test_hoeffding_fig7_reference_and_sign() -> None:
    r = scrambler_epsilon(targets=20, sigma=0.8, n=500, dummies=50, delta=1e-4, method="hoeffding")
    assert r.epsilon == pytest.approx(0.8658, abs=2e-4)
    # With the printed sign a = 1 − e^ε the prefactor b²/(4a) would be negative.
    a, b, _, _ = bounds.lemma5_constants(20, 0.8, 0.5)
    assert a > 0
    assert b > 0


def test_nonmonotone_bound_search_returns_a_passing_epsilon() -> None:
    # Hoeffding δ(ε) increases again for large ε (note §4.10); the grid search must still
    # return an ε whose bound is <= δ.
    eps_grid = np.array([5.0, 8.0])
    vals = bounds.hoeffding_delta(targets=20, sigma=0.9, n=500, dummies=50, epsilon=eps_grid)
    assert vals[1] > vals[0]  # not monotone
    r = scrambler_epsilon(targets=20, sigma=0.9, n=500, dummies=50, delta=1e-8, method="hoeffding")
    value = bounds.hoeffding_delta(targets=20, sigma=0.9, n=500, dummies=50, epsilon=r.epsilon)
    assert value[0] <= 1e-8


def test_best_is_smallest_certificate_and_methods_are_labelled() -> None:
    results = scrambler_epsilon_all(targets=20, sigma=0.2, n=100, dummies=200, delta=1e-4)
    assert [r.source for r in results] == list(UNCAPPED_METHODS)
    best = scrambler_epsilon(targets=20, sigma=0.2, n=100, dummies=200, delta=1e-4)
    certs = [r for r in results if _certified(r)]
    assert best.epsilon == pytest.approx(min(r.epsilon for r in certs))
    by_name = {r.source: r for r in results}
    assert not by_name["montecarlo"].is_certificate
    assert by_name["montecarlo"].kind == "estimate"
    assert not by_name["bennett-published"].is_certificate
    low, high = montecarlo_epsilon_interval(targets=20, sigma=0.2, n=100, dummies=200, delta=1e-4)
    assert low <= high
    assert "unavailable" in " ".join(by_name["exact"].notes)


def test_montecarlo_estimate_brackets_exact_lemma2() -> None:
    exact = scrambler_epsilon(
        targets=20, sigma=0.2, n=100, dummies=50, delta=1e-2, method="lemma2-exact"
    )
    low, high = montecarlo_epsilon_interval(
        targets=20, sigma=0.2, n=100, dummies=50, delta=1e-2, rng=3
    )
    assert low - 0.05 <= exact.epsilon <= high + 0.05


def test_sigma_zero_floor_and_impossibility() -> None:
    r = scrambler_epsilon(targets=20, sigma=0.0, n=500, dummies=50, delta=1e-4)
    assert math.isinf(r.epsilon)
    assert "180" in " ".join(r.notes)
    ok = scrambler_epsilon(targets=20, sigma=0.0, n=500, dummies=180, delta=1e-4)
    assert math.isfinite(ok.epsilon)
    # The floor is exact: with σ = 0, δ(ε) of the true algorithm tends to (1−1/T)^d.
    value, _ = brute.worst_pair_delta(targets=3, sigma=0.0, n=3, dummies=3, epsilons=[30.0])
    assert value[0] == pytest.approx((2 / 3) ** 3, rel=1e-9)


def test_trivial_cases() -> None:
    assert scrambler_epsilon(targets=1, sigma=0.0, n=5, dummies=0, delta=1e-5).epsilon == 0.0
    assert scrambler_epsilon(targets=5, sigma=1.0, n=5, dummies=0, delta=1e-5).epsilon == 0.0
    big = scrambler_epsilon(
        targets=20, sigma=0.5, n=10**6, dummies=0, delta=1e-10, method="hoeffding"
    )
    assert math.isfinite(big.epsilon)
    assert big.is_certificate


@pytest.mark.slow
@pytest.mark.parametrize(("n", "delta"), [(10**9, 1e-300), (10**9, 1e-4), (10**6, 1e-10)])
def test_huge_n_and_tiny_delta_stay_finite_and_valid(n: int, delta: float) -> None:
    r = scrambler_epsilon(targets=20, sigma=0.5, n=n, dummies=0, delta=delta)
    assert r.is_certificate
    assert math.isfinite(r.epsilon)
    assert 0.0 <= r.epsilon <= sampling_epsilon(targets=20, sigma=0.5)
    lower = scrambler_epsilon(
        targets=20, sigma=0.5, n=n, dummies=0, delta=delta, method="lower-bound"
    )
    assert lower.kind == "lower"
    assert not lower.is_certificate
    assert not lower.conditions_met or lower.epsilon <= r.epsilon


# ----------------------------------------------------------------- capped scrambler


@pytest.mark.parametrize(
    ("T", "sigma_lie", "n", "d", "exact_value", "published"),
    [
        (3, 0.2, 3, 1, 2.03099, 1.98281),
        (3, 0.2, 3, 2, 1.94046, 1.91743),
        (4, 0.2, 3, 2, 2.37306, 2.36145),
        (3, 0.3, 4, 3, 1.34176, 1.25366),
    ],
)
def test_theorem3_understates_exact_capped_epsilon(
    T: int, sigma_lie: float, n: int, d: int, exact_value: float, published: float
) -> None:
    sigma_u = sigma_lie * T / (T - 1)
    assert sigma_lie_from_uniform(targets=T, sigma=sigma_u) == pytest.approx(sigma_lie)
    exact = brute.capped_exact_pure_epsilon(targets=T, sigma=sigma_u, n=n, dummies=d)
    printed = theorem3_published_epsilon(targets=T, sigma_lie=sigma_lie, n=n, dummies=d)
    assert exact == pytest.approx(exact_value, abs=1e-4)
    assert printed == pytest.approx(published, abs=1e-4)
    assert printed < exact
    r = scrambler_epsilon(
        targets=T,
        sigma=sigma_u,
        n=n,
        dummies=d,
        delta=1e-6,
        capped=True,
        method="theorem3-published",
    )
    assert not r.is_certificate
    assert "UNDERSTATES" in " ".join(r.notes)


def test_theorem3_reference_values_log_space() -> None:
    assert theorem3_published_epsilon(
        targets=20, sigma_lie=0.2, n=600, dummies=599
    ) == pytest.approx(2.33118, abs=1e-5)
    assert theorem3_published_epsilon(targets=20, sigma_lie=0.5, n=100, dummies=0) == pytest.approx(
        2.9444, abs=1e-4
    )


def test_capped_best_and_all() -> None:
    results = scrambler_epsilon_all(targets=3, sigma=0.3, n=3, dummies=1, delta=1e-3, capped=True)
    assert [r.source for r in results] == list(CAPPED_METHODS)
    best = scrambler_epsilon(targets=3, sigma=0.3, n=3, dummies=1, delta=1e-3, capped=True)
    assert best.is_certificate
    assert best.inputs["capped"]
    assert best.epsilon <= min(r.epsilon for r in results if _certified(r)) + 1e-12


# ----------------------------------------------------------------- generic randomizers


def test_generic_kary_rr_reduces_to_sampling() -> None:
    from crowdhide.mechanisms import BinaryRandomizedResponse, KaryRandomizedResponse

    rr = KaryRandomizedResponse(k=20, eps0=3.0)
    r = generic_scrambler_epsilon(randomizer=rr, n=500, dummies=50, delta=1e-4)
    direct = scrambler_epsilon(
        targets=20, sigma=rr.blanket_probability, n=500, dummies=50, delta=1e-4
    )
    assert r.epsilon == pytest.approx(direct.epsilon)
    assert sampling_epsilon(targets=20, sigma=rr.blanket_probability) == pytest.approx(3.0)
    binary = generic_scrambler_epsilon(
        randomizer=BinaryRandomizedResponse(eps0=1.0), n=1000, dummies=10, delta=1e-6
    )
    assert binary.is_certificate
    assert binary.epsilon < 1.0


def test_generic_randomizer_without_blanket_needs_gamma() -> None:
    from crowdhide.mechanisms import LaplaceMechanism

    with pytest.raises(TypeError, match="blanket_probability"):
        generic_scrambler_epsilon(
            randomizer=LaplaceMechanism(eps0=1.0, sensitivity=1.0), n=10, dummies=0, delta=1e-3
        )


def test_generic_bounds_dominate_exact_for_kary_rr() -> None:
    # For k-RR, Lemma 4's constants must give δ >= the exact worst-case δ.
    T, sigma, n, d = 3, 0.5, 4, 1
    eps0 = sampling_epsilon(targets=T, sigma=sigma)
    truth, _ = brute.worst_pair_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilons=EPS_GRID)
    eps = np.array(EPS_GRID)
    for fn in (bounds.generic_hoeffding_delta, bounds.generic_bennett_delta):
        vals = fn(eps0=eps0, gamma=sigma, n=n, dummies=d, epsilon=eps)
        assert np.all(vals >= truth - 1e-12)


# ----------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"targets": 0}, ValueError, "targets"),
        ({"targets": 2.5}, TypeError, "targets"),
        ({"sigma": -0.1}, ValueError, "sigma"),
        ({"sigma": float("nan")}, ValueError, "sigma"),
        ({"n": 0}, ValueError, "n must"),
        ({"dummies": -1}, ValueError, "dummies"),
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"method": "nope"}, ValueError, "method"),
        ({"method": 3}, TypeError, "method"),
        ({"capped": "yes"}, TypeError, "capped"),
    ],
)
def test_scrambler_epsilon_rejects_bad_input(
    kwargs: dict[str, object], exc: type[Exception], match: str
) -> None:
    base: dict[str, object] = {"targets": 20, "sigma": 0.2, "n": 100, "dummies": 50, "delta": 1e-4}
    base.update(kwargs)
    with pytest.raises(exc, match=match):
        scrambler_epsilon(**base)  # type: ignore[arg-type]


def test_other_validation() -> None:
    with pytest.raises(ValueError, match="dummies"):
        local_randomizer_epsilon(targets=5, sigma=0.5, dummies=5)
    with pytest.raises(ValueError, match="epsilon"):
        scrambler_delta(targets=5, sigma=0.5, n=3, dummies=1, epsilon=-1.0)
    with pytest.raises(ValueError, match="dummies"):
        scrambler_epsilon(targets=2, sigma=0.5, n=3, dummies=10, delta=1e-3, capped=True)
    with pytest.raises(ValueError, match="dummies"):
        theorem3_published_epsilon(targets=5, sigma_lie=0.2, n=3, dummies=3)
    with pytest.raises(ValueError, match="too large"):
        brute.capped_exact_pure_epsilon(targets=20, sigma=0.2, n=100, dummies=50)
    with pytest.raises(ValueError, match="gamma"):
        generic_scrambler_epsilon(eps0=1.0, gamma=0.1, n=10, dummies=0, delta=1e-3)
    with pytest.raises(ValueError, match="eps0"):
        generic_scrambler_epsilon(n=10, dummies=0, delta=1e-3)


# ----------------------------------------------------------------- pair lower bound


@pytest.mark.parametrize(
    ("T", "sigma", "n", "d"),
    [
        pytest.param(4, 0.2, 20, 20, marks=pytest.mark.slow),
        (3, 0.3, 5, 2),
        (5, 0.3, 4, 3),
        (4, 0.0, 3, 6),
        (4, 0.4, 8, 5),
    ],
)
def test_third_target_pair_matches_brute_force(T: int, sigma: float, n: int, d: int) -> None:
    pair = bounds.ThirdTargetPair(targets=T, sigma=sigma, n=n, dummies=d)
    assert pair.total_mass == pytest.approx(1.0, abs=1e-12)
    p, q = brute.pair_distributions(targets=T, sigma=sigma, common=[2] * (n - 1), dummies=d)
    curve = DiscretePairCurve.from_probabilities(p, q)
    for eps in (0.0, *EPS_GRID):
        assert pair.delta(eps) == pytest.approx(curve.delta(eps), rel=1e-9, abs=1e-14)


@pytest.mark.parametrize(("T", "sigma", "n", "d"), [c for c in SMALL if c[0] >= 3])
def test_lower_bound_below_exact_below_certificates(T: int, sigma: float, n: int, d: int) -> None:
    for eps in EPS_GRID:
        lower = scrambler_delta(
            targets=T, sigma=sigma, n=n, dummies=d, epsilon=eps, method="lower-bound"
        )
        exact = scrambler_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilon=eps, method="exact")
        lemma2 = scrambler_delta(
            targets=T, sigma=sigma, n=n, dummies=d, epsilon=eps, method="lemma2-exact"
        )
        assert lower.kind == "lower"
        assert lower.delta <= exact.delta + 1e-12 <= lemma2.delta + 2e-12


def test_lower_bound_keeps_the_sigma_zero_floor() -> None:
    # With σ = 0 the pair has δ(ε) >= P[no dummy hits t'] = (1 − 1/T)^d for every ε.
    pair = bounds.ThirdTargetPair(targets=20, sigma=0.0, n=500, dummies=50)
    assert pair.delta(38.0) >= (1 - 1 / 20) ** 50 * (1 - 1e-9)
    r = scrambler_epsilon(
        targets=20, sigma=0.0, n=500, dummies=50, delta=1e-4, method="lower-bound"
    )
    assert math.isinf(r.epsilon)


def test_lower_bound_sandwich_at_large_size() -> None:
    kw = {"targets": 20, "sigma": 0.2, "n": 600, "dummies": 1000, "delta": 1e-4}
    lower = scrambler_epsilon(method="lower-bound", **kw)  # type: ignore[arg-type]
    upper = scrambler_epsilon(method="lemma2-exact", **kw)  # type: ignore[arg-type]
    assert lower.epsilon <= upper.epsilon
    assert upper.epsilon - lower.epsilon < 0.01  # lemma2-exact is nearly tight here


def _naive_output_law(
    T: int, sigma: float, inputs: tuple[int, ...], d: int, cap: int | None
) -> dict[tuple[int, ...], float]:
    """Enumerate every realisation message by message (no symmetry, no array shifts)."""
    law: dict[tuple[int, ...], float] = {(0,) * T: 1.0}
    for t in inputs:
        new: dict[tuple[int, ...], float] = {}
        for counts, pr in law.items():
            for j in range(T):
                pj = sigma / T + (1 - sigma if j == t else 0.0)
                key = tuple(c + (i == j) for i, c in enumerate(counts))
                new[key] = new.get(key, 0.0) + pr * pj
        law = new
    for _ in range(d):
        new = {}
        for counts, pr in law.items():
            open_targets = [j for j in range(T) if cap is None or counts[j] < cap]
            for j in open_targets:
                key = tuple(c + (i == j) for i, c in enumerate(counts))
                new[key] = new.get(key, 0.0) + pr / len(open_targets)
        law = new
    return law


@pytest.mark.parametrize(
    ("T", "sigma", "n", "d", "cap"), [(3, 0.3, 3, 2, False), (3, 0.4, 3, 2, True)]
)
def test_exact_against_naive_enumeration_of_all_ordered_inputs(
    T: int, sigma: float, n: int, d: int, cap: bool
) -> None:
    from itertools import product

    eps_values = (0.2, 0.7, 1.5)
    worst = np.zeros(len(eps_values))
    worst_pure = 0.0
    for common in product(range(T), repeat=n - 1):
        for t, t2 in product(range(T), repeat=2):
            if t == t2:
                continue
            p_law = _naive_output_law(T, sigma, (*common, t), d, n if cap else None)
            q_law = _naive_output_law(T, sigma, (*common, t2), d, n if cap else None)
            keys = sorted(set(p_law) | set(q_law))
            p = np.array([p_law.get(k, 0.0) for k in keys])
            q = np.array([q_law.get(k, 0.0) for k in keys])
            for i, e in enumerate(eps_values):
                worst[i] = max(worst[i], float(np.maximum(p - math.exp(e) * q, 0).sum()))
            worst_pure = max(worst_pure, float(np.max(np.abs(np.log(p) - np.log(q)))))
    for i, e in enumerate(eps_values):
        r = scrambler_delta(
            targets=T, sigma=sigma, n=n, dummies=d, epsilon=e, method="exact", capped=cap
        )
        assert (
            worst[i] <= r.delta == pytest.approx(worst[i], rel=2e-9, abs=1e-12)
        )  # issue 28 margin
    if cap:
        got = brute.capped_exact_pure_epsilon(targets=T, sigma=sigma, n=n, dummies=d)
        assert got == pytest.approx(worst_pure, rel=1e-9)


def test_an_infinite_local_epsilon_says_why() -> None:
    s = local_randomizer_statement(targets=10, sigma=0.0, dummies=2)
    assert math.isinf(s.epsilon)
    assert any("no finite epsilon" in note for note in s.notes)
    finite = local_randomizer_statement(targets=10, sigma=0.0, dummies=9)  # every target
    assert finite.epsilon == 0.0
    assert not any("no finite epsilon" in note for note in finite.notes)
