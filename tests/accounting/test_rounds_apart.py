"""Composed rounds certified one round at a time (``_rounds_apart``): basic composition of
the FMT21 single-round certificate, checked against its own premise with exact rationals
and against the exact R-fold composition of binary randomized response."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle._own_round import OWN_SOURCE
from crowdhide.accounting.shuffle._rounds_apart import (
    SOURCE,
    _fmt21_rounds,
    rounds_apart,
    rounds_apart_curve,
)
from crowdhide.accounting.shuffle.query import shuffle_delta, shuffle_epsilon
from crowdhide.accounting.statement import PrivacyStatement
from tests.accounting._rounds_oracles import (
    binary_pair,
    composed_delta,
    each_round_meets_its_share,
)

_NONE = PrivacyStatement(epsilon=math.inf, delta=1e-6, source="none")


@pytest.mark.parametrize("rounds", [2, 10, 10_000])
@pytest.mark.parametrize(("eps0", "n", "delta"), [
    (1.0, 10_000, 1e-6), (4.0, 10**6, 1e-20), (0.5, 10**9, 1e-300), (2.0, 10**6, 1e-300),
])  # fmt: skip
def test_each_round_meets_its_share(eps0: float, n: int, delta: float, rounds: int) -> None:
    """The premise of basic composition, checked in exact rationals: R times the FMT21
    certificate's δ at ε/R (rounded down) is at most the δ asked."""
    st = _fmt21_rounds(
        eps0, n, rounds, {"delta": delta}, _NONE, rounds_apart_curve(eps0, n, rounds)
    )
    assert st is not None
    assert st.source == SOURCE
    assert each_round_meets_its_share(eps0, n, rounds, st.epsilon, delta, bound="feldman2021")


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), [
    (1.0, 300, 2, 1e-6), (2.0, 200, 2, 1e-8), (1.0, 60, 3, 1e-4), (0.5, 400, 2, 1e-5),
])  # fmt: skip
def test_above_the_exact_composition_of_binary_rr(
    eps0: float, n: int, rounds: int, delta: float
) -> None:
    """The member's (ε, δ) for R rounds of binary RR is not below the exact R-fold
    composition of its worst pair; and the same check flags a statement 5 % below that
    composition's own ε (so it can fail)."""
    st = _fmt21_rounds(
        eps0, n, rounds, {"delta": delta}, _NONE, rounds_apart_curve(eps0, n, rounds)
    )
    assert st is not None
    p, q = binary_pair(n, eps0)
    assert composed_delta(p, q, rounds, st.epsilon) <= delta
    lo, hi = 0.0, rounds * eps0  # the exact composition's ε at δ, by bisection
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if composed_delta(p, q, rounds, mid) > delta else (lo, mid)
    assert composed_delta(p, q, rounds, 0.95 * hi) > delta


@pytest.mark.parametrize(("eps0", "n", "rounds"), [(1.0, 10**6, 10), (2.0, 10**9, 100)])
def test_best_takes_it_where_the_composed_pair_is_loose(eps0: float, n: int, rounds: int) -> None:
    """At δ = 1e-20 the composed pair answered about ε0 (1.0099 at ε0 = 1, n = 1e6, R = 10)
    and 1e-300 the cap R ε0; ``best`` now reports the rounds apart (at 1e-20 the single
    round's own certificate, §20), and the δ query at its answer gives at most the δ asked."""
    for delta in (1e-20, 1e-300):
        st = shuffle_epsilon(eps0=eps0, n=n, delta=delta, rounds=rounds)
        assert st.source == (OWN_SOURCE if delta == 1e-20 else SOURCE)
        assert st.epsilon < eps0
        back = shuffle_delta(eps0=eps0, n=n, epsilon=st.epsilon, rounds=rounds)
        assert back.delta <= delta


def test_not_asked_with_sampling_add_remove_or_a_named_pair() -> None:
    """Its premise is n users in every round under ``substitute``: with sampling or
    add/remove, or a named pair, the composed pair alone answers."""
    from crowdhide.accounting.shuffle.composition import composed_shuffle

    plain = composed_shuffle(eps0=1.0, n=10**6, delta=1e-20, rounds=10)
    assert plain.source == OWN_SOURCE  # best takes it here (the single round's own, §20)
    for extra in ({"sample_rate": 0.9}, {"relation": "add_remove"}, {"pair": "profile_pair"}):
        n = 10**6 if "pair" in extra else 10**4  # sampled / add-remove pairs: at most 4e6 outcomes
        other = composed_shuffle(eps0=1.0, n=n, delta=1e-20, rounds=10, **extra)  # type: ignore[arg-type]
        assert other.source not in (SOURCE, OWN_SOURCE)


def test_mechanism_and_krr_rounds_take_it_too() -> None:
    """Every ε0-LDP randomizer's rounds: a mechanism's pair, and the k-RR pair (FMT23),
    whose composition at n = 1e6 is refused as too large (it answered ResourceLimitError)."""
    for kw in ({"mechanism": "oue", "d": 8}, {"mechanism": "krr", "d": 4}, {"k": 4}):
        st = shuffle_epsilon(eps0=1.0, n=10**6, delta=1e-300, rounds=10, **kw)  # type: ignore[arg-type]
        assert st.source == SOURCE
        assert shuffle_delta(eps0=1.0, n=10**6, epsilon=st.epsilon, rounds=10, **kw).delta <= 1e-300  # type: ignore[arg-type]


def test_skipped_where_the_composed_pair_wins() -> None:
    """At δ = 1e-6 the composed pair is far tighter (√R, not R): one evaluation skips it."""
    composed = shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6, rounds=10)
    assert composed.source != SOURCE
    assert rounds_apart(1.0, 10_000, 10, {"delta": 1e-6}, composed) is None


def test_the_composed_curve_has_the_member_too() -> None:
    """``shuffle_curve`` of composed rounds is the least of the same members as ``best``:
    its ε at δ = 1e-300 is the rounds-apart answer, not the cap R ε0."""
    from crowdhide import shuffle_curve

    curve = shuffle_curve(eps0=1.0, n=10**6, rounds=10)
    asked = shuffle_epsilon(eps0=1.0, n=10**6, delta=1e-300, rounds=10)
    assert curve.epsilon(1e-300) == asked.epsilon < 1.0
    assert curve.delta(asked.epsilon) <= 1e-300
    sampled = shuffle_curve(eps0=1.0, n=10_000, rounds=10, sample_rate=0.9)
    assert "rounds_apart" not in sampled.members


def _fmt21_member(
    eps0: float, n: int, rounds: int, delta: float, composed: PrivacyStatement
) -> PrivacyStatement | None:
    return _fmt21_rounds(
        eps0, n, rounds, {"delta": delta}, composed, rounds_apart_curve(eps0, n, rounds)
    )


def _beaten(epsilon: float) -> PrivacyStatement:
    return PrivacyStatement(epsilon=epsilon, delta=1e-6, source="composed")


@pytest.mark.parametrize("rounds", [10, 10_000])
@pytest.mark.parametrize("delta", [1e-6, 1e-300])
@pytest.mark.parametrize("n", [10**3, 10**6, 10**9])
@pytest.mark.parametrize("eps0", [0.5, 2.0, 8.0])
def test_lower_bound_screen_changes_no_answer(
    eps0: float, n: int, delta: float, rounds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The FMT21 member's screen by binary and 3-RR's lower bounds (§22) returns the same
    statement as without it (the one evaluation of the curve alone), for composed answers
    just below, at and just above the member's own ε and far from it."""
    from crowdhide.accounting.shuffle import _own_round

    own = _fmt21_member(eps0, n, rounds, delta, _NONE)
    assert own is not None
    answers = []
    for screened in (True, False):
        if not screened:
            monkeypatch.setattr(_own_round, "lower_bound_epsilon_above", lambda *args: False)
        answers.append([
            _fmt21_member(eps0, n, rounds, delta, _beaten(own.epsilon * factor))
            for factor in (0.5, 1.0 - 1e-9, 1.0, 1.0 + 1e-9, 2.0)
        ])  # fmt: skip
    assert answers[0] == answers[1]
    assert answers[0][3] == own  # just above its own ε: it wins, never skipped
    assert answers[0][0] is None  # far below: skipped


def test_lower_bound_screen_is_tight_and_alone_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    """At ε0 = 8, n = 1e4, 2 rounds, δ = 1e-6 binary RR's lower bound is within 1.5e-6 of
    the member's per-round ε: a composed answer 1e-9 above the member's must not make it
    skipped, one 1e-5 below must, by the screen alone (the curve's evaluation disabled).
    (Comparing at 0.99 times the per-round quotient instead of the quotient rounded up
    skips the member at 1 + 1e-9 here, so this fails; the grid test above then fails in 10
    of its 36 cells.)"""
    from crowdhide.accounting.shuffle import _best

    eps0, n, rounds, delta = 8.0, 10**4, 2, 1e-6
    own = _fmt21_member(eps0, n, rounds, delta, _NONE)
    assert own is not None
    monkeypatch.setattr(_best, "epsilon_above", lambda *args: False)
    assert _fmt21_member(eps0, n, rounds, delta, _beaten(own.epsilon * (1 + 1e-9))) == own
    assert _fmt21_member(eps0, n, rounds, delta, _beaten(own.epsilon * (1 - 1e-5))) is None
