"""Composed rounds by basic composition of ``best``'s own single-round certificate
(``_own_round``): its premise in exact rationals, against the exact R-fold composition of
binary randomized response, its screen never skipping where it wins, and ``best`` taking it
(docs/proofs/profile-pair.md §20)."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle._own_round import OWN_SOURCE, own_rounds
from crowdhide.accounting.shuffle._rounds_apart import SOURCE
from crowdhide.accounting.shuffle.composition import composed_shuffle
from tests.accounting._rounds_oracles import (
    binary_pair,
    composed_delta,
    each_round_meets_its_share,
)


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), [
    (1.0, 10**4, 10, 1e-20), (1.0, 10**6, 10, 1e-20), (8.0, 10**9, 10, 1e-20),
    (2.0, 10**9, 100, 1e-20), (1.0, 10**4, 2, 1e-6),
])  # fmt: skip
def test_each_round_meets_its_share(eps0: float, n: int, rounds: int, delta: float) -> None:
    """Basic composition's premise in exact rationals: R times the single-round ``best``
    certificate's δ at ε/R (rounded down) is at most the δ asked. (With the share δ/R made
    1 % larger in ``RoundsApartCurve.epsilon`` this fails in every cell: R δ1 is then
    about 1.01 δ, the single round's δ query at its ε answer being within 0.1 % of it.)"""
    st = own_rounds(eps0, n, rounds, {"delta": delta}, math.inf)
    assert st is not None
    assert st.source == OWN_SOURCE
    assert each_round_meets_its_share(eps0, n, rounds, st.epsilon, delta)


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), [
    (1.0, 300, 2, 1e-6), (2.0, 200, 2, 1e-8), (1.0, 60, 3, 1e-4), (0.5, 400, 2, 1e-5),
])  # fmt: skip
def test_above_the_exact_composition_of_binary_rr(
    eps0: float, n: int, rounds: int, delta: float
) -> None:
    """Both queries of the member for R rounds of binary RR are not below the exact R-fold
    composition of its worst pair: its ε at δ has composed δ at most δ, its δ at that ε is at
    least the composed δ; and the check flags an ε 5 % below that composition's own."""
    st = own_rounds(eps0, n, rounds, {"delta": delta}, math.inf)
    assert st is not None
    p, q = binary_pair(n, eps0)
    assert composed_delta(p, q, rounds, st.epsilon) <= delta
    back = own_rounds(eps0, n, rounds, {"epsilon": st.epsilon}, math.inf)
    assert back is not None
    assert composed_delta(p, q, rounds, st.epsilon) <= back.delta <= delta
    lo, hi = 0.0, rounds * eps0  # the exact composition's ε at δ, by bisection
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if composed_delta(p, q, rounds, mid) > delta else (lo, mid)
    assert composed_delta(p, q, rounds, 0.95 * hi) > delta


def test_the_screen_never_skips_a_winner() -> None:
    """At (ε0, n) = (8, 1e9) binary RR's lower bound is within 0.06 % of the member's ε at
    δ = 1e-20: a composed answer just above the member's must not make it skipped (by either
    query), and one just below binary RR's own R ε1 must. (Comparing at 0.99 times the
    per-round ε instead of the quotient rounded up skips the member here, so this fails.)"""
    eps0, n, rounds, delta = 8.0, 10**9, 10, 1e-20
    st = own_rounds(eps0, n, rounds, {"delta": delta}, math.inf)
    assert st is not None
    assert own_rounds(eps0, n, rounds, {"delta": delta}, st.epsilon * (1 + 1e-9)) == st
    assert own_rounds(eps0, n, rounds, {"delta": delta}, 0.999 * st.epsilon) is None
    back = own_rounds(eps0, n, rounds, {"epsilon": st.epsilon}, math.inf)
    assert back is not None
    assert own_rounds(eps0, n, rounds, {"epsilon": st.epsilon}, back.delta * 1.001) == back
    assert own_rounds(eps0, n, rounds, {"epsilon": st.epsilon}, back.delta * 1e-3) is None


def test_skipped_cells_cannot_win() -> None:
    """Where the screen skips (δ = 1e-6, where the composed pair grows like √R), the
    member's own answer is indeed above the composed one."""
    for eps0, n in ((1.0, 10**4), (4.0, 10**6)):
        composed = composed_shuffle(eps0=eps0, n=n, delta=1e-6, rounds=10)
        assert composed.source not in (SOURCE, OWN_SOURCE)
        assert own_rounds(eps0, n, 10, {"delta": 1e-6}, composed.epsilon) is None
        alone = own_rounds(eps0, n, 10, {"delta": 1e-6}, math.inf)
        assert alone is not None
        assert alone.epsilon > composed.epsilon


@pytest.mark.parametrize(("eps0", "n", "rounds", "fmt21"), [
    (1.0, 10**6, 10, 0.13041), (8.0, 10**9, 10, 0.29858), (4.0, 10**9, 100, 0.39107),
])  # fmt: skip
def test_best_takes_it_below_fmt21(eps0: float, n: int, rounds: int, fmt21: float) -> None:
    """At δ = 1e-20 ``best`` answered the FMT21 member's ε (``fmt21``); the single round's
    own certificate is up to ×1.42 below it, and the δ query at the answer is at most δ."""
    st = composed_shuffle(eps0=eps0, n=n, delta=1e-20, rounds=rounds)
    assert st.source == OWN_SOURCE
    assert st.epsilon < fmt21 / 1.2
    back = composed_shuffle(eps0=eps0, n=n, epsilon=st.epsilon, rounds=rounds)
    assert back.delta <= 1e-20


def test_not_asked_below_the_variation_ratio_floor() -> None:
    """Per-round δ below 1e-280 (δ = 1e-300): the FMT21 member answers, as before."""
    assert own_rounds(1.0, 10**6, 10, {"delta": 1e-300}, math.inf) is None
    assert composed_shuffle(eps0=1.0, n=10**6, delta=1e-300, rounds=10).source == SOURCE
