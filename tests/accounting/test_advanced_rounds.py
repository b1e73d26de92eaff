"""Composed rounds by advanced composition of the FMT21 single-round certificate
(``_advanced_rounds``): the theorem's premise in exact rationals and against the library's
own KOV15 composition, the exact R-fold composition of binary randomized response, the
screen, the round trip, and ``best`` taking it (docs/proofs/profile-pair.md §20)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from crowdhide.accounting.composition import heterogeneous_advanced_composition
from crowdhide.accounting.shuffle import generic
from crowdhide.accounting.shuffle._advanced_rounds import (
    ADVANCED_SOURCE,
    _grid,
    _largest_index_within,
    advanced_rounds,
    kov_epsilon,
)
from crowdhide.accounting.shuffle._rounds_apart import rounds_apart_curve
from crowdhide.accounting.shuffle.composition import composed_shuffle
from crowdhide.accounting.statement import PrivacyStatement
from tests.accounting._rounds_oracles import binary_pair, composed_delta


def _member(eps0: float, n: int, rounds: int, query: dict[str, float]) -> PrivacyStatement:
    curve = rounds_apart_curve(eps0, n, rounds)
    assert curve is not None
    st = advanced_rounds(curve.one, eps0, n, rounds, query, math.inf)
    assert st is not None
    assert st.source == ADVANCED_SOURCE
    return st


@pytest.mark.parametrize(("eps1", "rounds", "slack"), [
    (0.1, 100, 1e-6), (0.0017, 10_000, 5e-301), (0.004, 10_000, 5e-21), (0.6, 3, 1e-5),
    (2.0, 50, 1e-9),
])  # fmt: skip
def test_kov_epsilon_is_the_librarys_kov15(eps1: float, rounds: int, slack: float) -> None:
    """:func:`kov_epsilon` is at least ``heterogeneous_advanced_composition``'s ε (an
    independent implementation of KOV15 Theorem 3.5) and within 1e-11 of it. (With
    √(2R) made √(1.98 R), 1 % less, it is below it: this fails.)"""
    one = PrivacyStatement(epsilon=eps1, delta=0.0)
    ref = heterogeneous_advanced_composition([one] * rounds, delta_slack=slack).epsilon
    mine = kov_epsilon(eps1, rounds, slack)
    assert ref <= mine <= ref * (1 + 1e-11)


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), [
    (1.0, 10**9, 10_000, 1e-20), (1.0, 10**9, 10_000, 1e-300), (4.0, 10**9, 1_000, 1e-300),
    (1.0, 10**4, 50, 1e-10),
])  # fmt: skip
def test_the_premise_in_exact_rationals(eps0: float, n: int, rounds: int, delta: float) -> None:
    """The theorem's premise at the ε query's grid point t: ``R t + δ̃ <= 2 R t <= δ`` in
    exact rationals, the FMT21 round's δ at its ε1 at most t, and the library's KOV15 for R
    rounds of ``(ε1, t)`` at slack ``δ̃`` at most the member's ε with δ at most δ. (With the
    bound 2 R t computed as 1.98 R t, the grid point is 1 % too large: this fails.)"""
    st = _member(eps0, n, rounds, {"delta": delta})
    j = _largest_index_within(rounds, delta)
    assert j is not None
    t = _grid(j)
    slack = math.nextafter(math.nextafter(rounds * t, 0.0), 0.0)
    assert rounds * Fraction(t) + Fraction(slack) <= 2 * rounds * Fraction(t) <= Fraction(delta)
    eps1 = generic.shuffle_epsilon(eps0=eps0, n=n, delta=t, bound="feldman2021", lower=False)
    back = generic.shuffle_delta(eps0=eps0, n=n, epsilon=eps1.epsilon, bound="feldman2021")
    assert back.delta <= t
    one = PrivacyStatement(epsilon=eps1.epsilon, delta=t)
    kov = heterogeneous_advanced_composition([one] * rounds, delta_slack=slack)
    assert kov.epsilon <= st.epsilon
    assert kov.delta <= delta


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), [
    (1.0, 60, 3, 1e-4), (2.0, 40, 4, 1e-6), (0.5, 100, 3, 1e-5),
])  # fmt: skip
def test_above_the_exact_composition_of_binary_rr(
    eps0: float, n: int, rounds: int, delta: float
) -> None:
    """Both queries for R rounds of binary RR are not below the exact R-fold composition of
    its worst pair (outcome by outcome)."""
    st = _member(eps0, n, rounds, {"delta": delta})
    p, q = binary_pair(n, eps0)
    exact = composed_delta(p, q, rounds, st.epsilon)
    assert exact <= delta
    back = _member(eps0, n, rounds, {"epsilon": st.epsilon})
    assert exact <= back.delta <= delta


def test_the_screen_and_the_round_trip() -> None:
    """Just above the member's answer nothing skips it (either query); where it is skipped
    (10 rounds, δ = 1e-6: the composed pair is far tighter) its own answer is indeed above."""
    eps0, n, rounds, delta = 1.0, 10**9, 10_000, 1e-20
    curve = rounds_apart_curve(eps0, n, rounds)
    assert curve is not None
    st = _member(eps0, n, rounds, {"delta": delta})
    ask = {"delta": delta}
    assert advanced_rounds(curve.one, eps0, n, rounds, ask, st.epsilon * (1 + 1e-9)) == st
    back = _member(eps0, n, rounds, {"epsilon": st.epsilon})
    assert back.delta <= delta
    again = advanced_rounds(curve.one, eps0, n, rounds, {"epsilon": st.epsilon}, delta * 1.02)
    assert again == back
    composed = composed_shuffle(eps0=1.0, n=10**4, delta=1e-6, rounds=10)
    small = rounds_apart_curve(1.0, 10**4, 10)
    assert small is not None
    asked = {"delta": 1e-6}
    assert advanced_rounds(small.one, 1.0, 10**4, 10, asked, composed.epsilon) is None
    alone = advanced_rounds(small.one, 1.0, 10**4, 10, asked, math.inf)
    assert alone is not None
    assert alone.epsilon > composed.epsilon


@pytest.mark.parametrize(("delta", "before"), [(1e-20, 1.0238), (1e-300, 17.970)])
def test_best_takes_it_at_many_rounds(delta: float, before: float) -> None:
    """10^4 rounds at (ε0, n) = (1, 1e9): the composed pair or the rounds apart answered
    ``before``; advanced composition answers less than half of it, and the δ query at its
    answer is at most δ."""
    st = composed_shuffle(eps0=1.0, n=10**9, delta=delta, rounds=10_000)
    assert st.source == ADVANCED_SOURCE
    assert st.epsilon < before / 2
    assert composed_shuffle(eps0=1.0, n=10**9, epsilon=st.epsilon, rounds=10_000).delta <= delta


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), [
    (1.0, 10**9, 10_000, 1e-300), (1.0, 10**9, 10_000, 1e-20), (0.5, 10**9, 10, 1e-300),
])  # fmt: skip
def test_the_composed_curve_has_it_and_answers_at_n_1e9(
    eps0: float, n: int, rounds: int, delta: float
) -> None:
    """``shuffle_curve`` of composed rounds has the member, so where it (or the FMT21 rounds
    apart) wins, the curve's ε is ``best``'s and its δ there at most δ; at n = 1e9 the clone
    pair is too large to compose, so the curve is built without it (before s34 it raised),
    and only exporting its PLD raises."""
    from crowdhide import shuffle_curve
    from crowdhide.errors import ResourceLimitError

    curve = shuffle_curve(eps0=eps0, n=n, rounds=rounds)
    assert "advanced_rounds" in curve.members
    assert "clone_pair_pld" not in curve.members
    asked = composed_shuffle(eps0=eps0, n=n, delta=delta, rounds=rounds)
    assert curve.epsilon(delta) == asked.epsilon
    assert curve.delta(asked.epsilon) <= delta
    with pytest.raises(ResourceLimitError, match="too large for composition"):
        curve.to_pld()


def test_a_sampled_curve_at_n_1e9_still_names_the_limit() -> None:
    """No member answers sampled rounds at n = 1e9 but the clone pair: the error stays."""
    from crowdhide import shuffle_curve
    from crowdhide.errors import ResourceLimitError

    with pytest.raises(ResourceLimitError, match="too large for composition"):
        shuffle_curve(eps0=1.0, n=10**9, rounds=10, sample_rate=0.5)
