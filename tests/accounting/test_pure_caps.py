"""A certificate's pure-ε cap is at least the exact pure ε (review of issue 28).

Curves report δ = 0 from their cap on. The caps are computed (``R·ε0``, ``log1p`` of a
rounded ratio), so a cap rounded to nearest can sit one ulp below the exact value, and
then δ = 0 is certified where the true δ is positive. Each case compares against 50-digit
mpmath values; on the code before the fix the end-to-end cases answered δ = 0.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import pytest

from crowdhide.accounting.logmath import product_up, pure_cap_up
from crowdhide.accounting.scrambler.accountant import scrambler_delta
from crowdhide.accounting.scrambler.local import local_randomizer_epsilon
from crowdhide.accounting.shuffle.query import shuffle_delta

mpmath.mp.dps = 50


def _below(value: mpmath.mpf) -> float:
    """The largest float strictly below an exact value."""
    x = float(value)
    return x if mpmath.mpf(x) < value else math.nextafter(x, -math.inf)


def _exact_local_eps0(targets: int, sigma: float, dummies: int) -> mpmath.mpf:
    if dummies == targets - 1:  # every target receives a message: nothing to tell apart
        return mpmath.mpf(0)
    s = mpmath.mpf(sigma)
    return mpmath.log1p((1 - s) * targets / (s * (dummies + 1)))


@pytest.mark.parametrize(
    ("targets", "sigma", "dummies"),
    list(itertools.product([2, 3, 7, 50, 1000], [1e-9, 0.05, 0.3, 0.77, 0.999], [0, 1])),
)
def test_scrambler_cap_is_at_least_the_exact_local_eps0(
    targets: int, sigma: float, dummies: int
) -> None:
    computed = local_randomizer_epsilon(targets=targets, sigma=sigma, dummies=dummies)
    assert mpmath.mpf(pure_cap_up(computed)) >= _exact_local_eps0(targets, sigma, dummies)


@pytest.mark.parametrize(
    ("eps0", "rounds"), list(itertools.product([0.1, 0.3, 0.7, 1.1], [2, 3, 7]))
)
def test_composed_cap_is_at_least_rounds_times_eps0(eps0: float, rounds: int) -> None:
    exact = rounds * mpmath.mpf(eps0)
    assert mpmath.mpf(product_up(rounds, eps0)) >= exact


def _exact_composed_binary_rr_delta(eps0: float, rounds: int, epsilon: float) -> mpmath.mpf:
    """Exact δ of ``rounds`` shuffled binary RR reports of n = 2 users, worst pair.

    The shuffled output of one round is the count of ones; the pair differs in one user's
    value with the other user's value fixed (both choices are tried)."""
    p = mpmath.exp(mpmath.mpf(eps0)) / (1 + mpmath.exp(mpmath.mpf(eps0)))
    one = {1: p, 0: 1 - p}
    worst = mpmath.mpf(0)
    for other in (0, 1):
        laws = []
        for mine in (0, 1):
            law = [mpmath.mpf(0)] * 3
            for a, b in itertools.product((0, 1), repeat=2):
                pa = one[1] if a == mine else one[0]
                pb = one[1] if b == other else one[0]
                law[a + b] += pa * pb
            laws.append(law)
        for first, second in ((laws[0], laws[1]), (laws[1], laws[0])):
            total = mpmath.mpf(0)
            for counts in itertools.product(range(3), repeat=rounds):
                P = mpmath.fprod(first[c] for c in counts)
                Q = mpmath.fprod(second[c] for c in counts)
                total += max(P - mpmath.exp(mpmath.mpf(epsilon)) * Q, 0)
            worst = max(worst, total)
    return worst


@pytest.mark.parametrize(("eps0", "rounds"), [(0.3, 3), (0.1, 3), (0.7, 2)])
def test_composed_delta_just_below_the_cap_is_not_zero(eps0: float, rounds: int) -> None:
    epsilon = _below(rounds * mpmath.mpf(eps0))
    exact = _exact_composed_binary_rr_delta(eps0, rounds, epsilon)
    assert exact > 0
    got = shuffle_delta(eps0=eps0, n=2, k=2, rounds=rounds, epsilon=epsilon).delta
    assert got is not None
    assert mpmath.mpf(got) >= exact


def test_scrambler_delta_just_below_eps0_is_not_zero() -> None:
    # the review's case: T = 2, σ = 0.05, n = 3, d = 0 (exact δ ≈ 6.66e-17 there)
    epsilon = _below(_exact_local_eps0(2, 0.05, 0))
    for method in ("best", "lemma2-exact", "exact"):
        got = scrambler_delta(
            targets=2, sigma=0.05, n=3, dummies=0, epsilon=epsilon, method=method
        ).delta
        assert got is not None, method
        assert got > 6.6e-17, method
