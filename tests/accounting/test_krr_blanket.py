"""The exact privacy blanket of shuffled k-RR (``krr_blanket``, issue 15): a certificate
against the exhaustive worst case, the blocked sums against a direct summation of the same
quantity, and its tightness where the clone certificates are loose (small n, large k).
Every comparison is with an independent computation (``tests/oracles/shuffle.py``)."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle.generic import (
    KRR_BLANKET_BEST_MAX_N,
    shuffle_bound_curve,
    shuffle_epsilon,
)
from tests.oracles.shuffle import blanket_delta, worst_case_delta


def _blanket(n: int, k: int, eps0: float, eps: float) -> float:
    return math.exp(fast.krr_blanket_log_delta(n, k, eps0, eps, -60.0))


@pytest.mark.parametrize(
    ("n", "k"), [(2, 3), (3, 3), (5, 3), (8, 3), (3, 4), (6, 4), (4, 6), (5, 5)]
)
def test_blanket_is_above_the_exhaustive_worst_case(n: int, k: int) -> None:
    """Every dataset of the other users, every output histogram (oracle), over a grid."""
    for eps0 in (0.3, 1.0, 2.0, 4.0):
        for eps in (0.0, 0.1, 0.3 * eps0, 0.6 * eps0, 0.9 * eps0):
            truth, _ = worst_case_delta(n, k, eps0, eps)
            assert _blanket(n, k, eps0, eps) >= truth * (1.0 - 1e-12), (n, k, eps0, eps)


def test_a_too_large_blanket_is_caught() -> None:
    """The grid above can fail: claiming 1.5x the uniform share puts the value below the
    worst case at some of its points."""
    below = 0
    for n, k in ((3, 3), (6, 4), (5, 5)):
        for eps0 in (1.0, 2.0):
            e = math.exp(eps0)
            for eps in (0.1, 0.3 * eps0):
                truth, _ = worst_case_delta(n, k, eps0, eps)
                wrong = blanket_delta(n, k, eps0, eps, gamma=1.5 * k / (e + k - 1.0))
                below += wrong < truth
    assert below >= 3


@pytest.mark.parametrize(("n", "k", "eps0"), [(20, 3, 1.0), (60, 4, 0.5), (120, 10, 4.0)])
def test_blocked_sums_bound_the_direct_summation(n: int, k: int, eps0: float) -> None:
    """Blocks, windows and refinement give an upper bound of the same quantity, and a close
    one (a wrong λ, mass or threshold would miss one side or the other)."""
    for eps in (0.05, 0.3 * eps0, 0.7 * eps0):
        direct = blanket_delta(n, k, eps0, eps)
        blocked = _blanket(n, k, eps0, eps)
        assert direct * (1.0 - 1e-12) <= blocked <= direct * 1.02 + 1e-300, (n, k, eps0, eps)


def test_two_values_is_the_fmt23_pair() -> None:
    """k = 2: the uniform share is the clone share 2/(e+1) and λ = κ (docstring)."""
    for n, eps0 in ((50, 1.0), (400, 2.0)):
        for eps in (0.1, 0.4):
            blanket = _blanket(n, 2, eps0, eps)
            fmt23 = shuffle_bound_curve(bound="feldman2023", eps0=eps0, n=n, k=2).delta(eps)
            assert blanket == pytest.approx(fmt23, rel=0.05)


@pytest.mark.parametrize(
    ("n", "k", "eps0", "gap"),
    [(100, 10, 4.0, 1.04), (1000, 10, 4.0, 1.005), (1000, 4, 1.0, 1.005), (10_000, 3, 0.5, 1.002)],
)
def test_blanket_is_tight_where_clones_are_not(n: int, k: int, eps0: float, gap: float) -> None:
    """Within ``gap`` of the lower bound in ε; at n = 100, k = 10, ε0 = 4 the clone
    certificate is 1.156x (docs/shuffle.md)."""
    r = shuffle_epsilon(eps0=eps0, n=n, delta=1e-6, k=k)
    assert r.source == "krr_blanket"
    assert r.lower is not None
    assert r.lower.epsilon <= r.epsilon <= gap * r.lower.epsilon
    clone = shuffle_epsilon(eps0=eps0, n=n, delta=1e-6, k=k, bound="krr_clone", lower=False)
    assert r.epsilon < clone.epsilon
    assert n <= KRR_BLANKET_BEST_MAX_N


def test_blanket_at_one_user_is_randomized_response() -> None:
    """n = 1: no other report, δ(ε) = (e^ε0 − e^ε)/(e^ε0 + k − 1) exactly, rounded up by the
    bound on the incomplete betas' error (scaled by 2λ(1 + e^ε): 2e-4 relative at ε0 = 20,
    ε = 19.8; the large-ε0 regime is covered by test_shuffle_large_eps0.py)."""
    for k, eps0 in ((3, 1.0), (10, 4.0), (5, 20.0)):
        for eps in (0.0, 0.5 * eps0, 0.99 * eps0):
            truth = (math.exp(eps0) - math.exp(eps)) / (math.exp(eps0) + k - 1.0)
            value = _blanket(1, k, eps0, eps)
            assert truth <= value <= truth * (1.0 + 1e-3)
