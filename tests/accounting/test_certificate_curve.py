"""``crowdhide.shuffle_curve``: the best certificate as a curve is a certificate (checked
against a brute-force enumeration of shuffled binary randomized response), equals the
dispatcher's best answer point by point, and exports to dp_accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

import crowdhide
from crowdhide.accounting.shuffle.certificate import ShuffleCertificate


def _brute_binary_delta(eps0: float, n: int, epsilon: float) -> float:
    """Exact δ(ε) of n shuffled binary-RR reports: the count of ones, worst case over the
    other n − 1 users' bits and both directions (numpy convolutions of binomials)."""
    p = math.exp(eps0) / (1.0 + math.exp(eps0))
    worst = 0.0
    for ones in range(n):
        others = np.convolve(
            binom.pmf(np.arange(ones + 1), ones, p),
            binom.pmf(np.arange(n - ones), n - 1 - ones, 1 - p),
        )
        with_one = np.convolve(others, [1 - p, p])  # target's bit 1 reported as 1 w.p. p
        with_zero = np.convolve(others, [p, 1 - p])
        for a, b in ((with_one, with_zero), (with_zero, with_one)):
            worst = max(worst, float(np.maximum(a - math.exp(epsilon) * b, 0.0).sum()))
    return worst


GRID = [(eps0, n) for eps0 in (0.5, 1.0, 2.0, 4.0) for n in (3, 8, 40)]


@pytest.mark.parametrize(("eps0", "n"), GRID)
def test_binary_curve_is_a_certificate_against_brute_force(eps0: float, n: int) -> None:
    curve = crowdhide.shuffle_curve(eps0=eps0, n=n, k=2)
    for epsilon in np.linspace(0.0, eps0, 9):
        exact = _brute_binary_delta(eps0, n, float(epsilon))
        assert curve.delta(float(epsilon)) >= exact * (1 - 1e-12) - 1e-15
    for delta in (1e-2, 1e-4, 1e-6):
        eps = curve.epsilon(delta)
        assert _brute_binary_delta(eps0, n, eps) <= delta * (1 + 1e-9)


def test_the_brute_force_check_can_fail() -> None:
    """The curve is tight where the exact bound wins: 2 % less ε breaks the promise."""
    curve = crowdhide.shuffle_curve(eps0=2.0, n=8, k=2)
    eps = curve.epsilon(1e-2)
    assert _brute_binary_delta(2.0, 8, 0.98 * eps) > 1e-2


@pytest.mark.parametrize(
    ("eps0", "n", "k"), [(1.0, 10_000, 2), (2.0, 1000, 4), (0.4, 5000, None), (3.0, 200, 3)]
)
def test_single_round_equals_the_best_answer(eps0: float, n: int, k: int | None) -> None:
    curve = crowdhide.shuffle_curve(eps0=eps0, n=n, k=k)
    for delta in (1e-3, 1e-6, 1e-9):
        best = crowdhide.shuffle_epsilon(eps0=eps0, n=n, k=k, delta=delta)
        assert curve.epsilon(delta) == best.epsilon
        assert curve.statement(delta).source == f"best:{best.source}"
    at = 0.5 * curve.epsilon(1e-6)
    # A fresh curve: a member's δ(ε) can depend on the ε(δ) it solved before (variation_ratio
    # refines its windows; both values are certificates), and shuffle_delta starts fresh.
    curve = crowdhide.shuffle_curve(eps0=eps0, n=n, k=k)
    assert curve.delta(at) == crowdhide.shuffle_delta(eps0=eps0, n=n, k=k, epsilon=at).delta
    assert curve.privacy_profile()(at) == curve.delta(at)
    assert curve.is_certificate


def test_pld_export_dominates_the_curve_and_composes() -> None:
    curve = crowdhide.shuffle_curve(eps0=4.0, n=10_000, k=2)
    pld = curve.to_pld()
    assert type(pld).__module__.startswith("dp_accounting")
    for epsilon in (0.05, 0.1, 0.3):
        assert pld.get_delta_for_epsilon(epsilon) >= curve.delta(epsilon) * (1 - 1e-6)
    # FMT23's pair at n = 1e4, ε0 = 4 (module docstring of shuffle_composition): 0.009209
    assert pld.get_delta_for_epsilon(0.1) == pytest.approx(0.009209, rel=1e-3)
    twice = pld.self_compose(2).get_delta_for_epsilon(0.1)
    assert twice == pytest.approx(0.02177, rel=2e-3)


def test_composed_rounds_are_the_composed_pair() -> None:
    curve = crowdhide.shuffle_curve(eps0=1.0, n=10_000, rounds=4, sample_rate=0.5)
    assert curve.members == ("clone_pair_pld",)
    asked = crowdhide.shuffle_epsilon(eps0=1.0, n=10_000, rounds=4, sample_rate=0.5, delta=1e-6)
    assert curve.epsilon(1e-6) == pytest.approx(asked.epsilon, rel=0.02)
    one = crowdhide.shuffle_curve(eps0=1.0, n=10_000)
    assert curve.epsilon(1e-6) > one.epsilon(1e-6) * 0.5 * math.sqrt(4) * 0.5


def test_composed_export_keeps_the_composition_allowance() -> None:
    """A composed PLD's δ(ε) is an upper bound only with the FFT compositions' rounding
    allowance added; the export must carry it (it did not: 1.0e-12 exported against a
    certified 7.3e-12 at ε = 1 for 10 rounds at ε0 = 1, n = 1000)."""
    curve = crowdhide.shuffle_curve(eps0=1.0, n=10_000, rounds=4, sample_rate=0.5)
    pld = curve.to_pld()
    checked = 0
    for epsilon in (0.5, 1.0, 1.5, 2.0, 3.0):
        certified = curve.delta(epsilon)
        if 0.0 < certified < 1e-6:  # where the allowance is a visible part of δ
            checked += 1
            assert pld.get_delta_for_epsilon(epsilon) >= certified * (1 - 1e-9)
    assert checked >= 2


def test_mechanism_curve_and_refusals() -> None:
    curve = crowdhide.shuffle_curve(eps0=1.0, n=1000, mechanism="oue", d=8)
    best = crowdhide.shuffle_epsilon(eps0=1.0, n=1000, mechanism="oue", d=8, delta=1e-6)
    assert curve.epsilon(1e-6) == best.epsilon
    with pytest.raises(crowdhide.InvalidParameterError, match="mechanism"):
        curve.to_pld()
    with pytest.raises(crowdhide.InvalidParameterError, match="one round only"):
        crowdhide.shuffle_curve(eps0=1.0, n=1000, mechanism="oue", d=8, rounds=2)
    with pytest.raises(crowdhide.InvalidParameterError, match="d applies only with mechanism"):
        crowdhide.shuffle_curve(eps0=1.0, n=1000, d=8)
    with pytest.raises(crowdhide.InvalidParameterError, match="relation"):
        crowdhide.shuffle_curve(eps0=1.0, n=1000, relation="swap")


def test_repr_is_one_line() -> None:
    curve = crowdhide.shuffle_curve(eps0=1.0, n=10_000, k=2)
    assert isinstance(curve, ShuffleCertificate)
    assert repr(curve).startswith("<ShuffleCertificate(eps0=1.0, n=10000, k=2, rounds=1")
    assert "\n" not in repr(curve)
