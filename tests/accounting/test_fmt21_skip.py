"""s22b-skip: ``composed_shuffle`` skips FMT21's composition where δ is below the floor of
every composed PLD's FFT allowance (LEAST_COMPOSITION_ERROR); answers must be unchanged.
s23-comp: there, where the profile pair applies, FMT21 is not even built (same ε)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import cast

import pytest

from crowdhide.accounting.composition import LEAST_COMPOSITION_ERROR, convolution_error
from crowdhide.accounting.logmath import product_up
from crowdhide.accounting.pld_pmf import SparsePmf
from crowdhide.accounting.shuffle.composition import (
    CLONE_PAIR_REGISTRY,
    PROFILE_PAIR,
    ClonePairBound,
    shuffle_pld,
)
from tests.accounting._fmt21_reference import always_composed, composed_params, pairs_answer


def test_floor_is_the_least_convolution_error() -> None:
    # Two one-atom PMFs of zero mass and no error: every term of the bound is 0 except the
    # tail-truncation term at length 1, so the bound is exactly its infimum over all inputs.
    # The floor must not exceed it (raising LEAST_COMPOSITION_ERROR by 1 % fails here).
    atom = SparsePmf(1e-4, {0: 0.0}, 0.0, True)
    assert convolution_error(atom, atom, 0.0, 0.0) >= LEAST_COMPOSITION_ERROR
    assert LEAST_COMPOSITION_ERROR > 0.99 * 3 * 2.0**-53 * 1e-15


@pytest.mark.parametrize(("eps0", "n", "rounds"), [(1.0, 100, 2), (8.0, 1000, 3), (0.5, 50, 4)])
def test_real_compositions_answer_inf_at_the_floor(eps0: float, n: int, rounds: int) -> None:
    pld = shuffle_pld(eps0=eps0, n=n, rounds=rounds, pair="feldman2021")
    assert pld.composition_error >= LEAST_COMPOSITION_ERROR
    assert math.isinf(pld.epsilon(LEAST_COMPOSITION_ERROR))


_CELLS = [
    (1.0, 1000, 2, 1e-300),
    (8.0, 100, 2, 1e-300),
    (4.0, 1000, 10, 1e-300),
    (8.0, 1000, 10, LEAST_COMPOSITION_ERROR),
    (2.0, 10_000, 2, 1e-12),  # not skipped: FMT21 answers 0.3966 < cap 4 here
    (2.0, 10_000, 1, 1e-40),  # one round: not skipped, FMT21 answers 0.549 < cap 2
]


def _skipped(eps0: float, n: int, rounds: int, delta: float) -> bool:
    """Whether s23-comp's rule skips FMT21 altogether (the profile pair answers alone)."""
    return rounds > 1 and delta <= LEAST_COMPOSITION_ERROR


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), _CELLS)
def test_answers_equal_the_full_computation(eps0: float, n: int, rounds: int, delta: float) -> None:
    got = pairs_answer(eps0, n, rounds, delta)
    want = always_composed(eps0, n, rounds, delta)
    assert (got.epsilon, got.delta) == (want.epsilon, want.delta)
    if not _skipped(eps0, n, rounds, delta):
        assert got.source == want.source
        if got.notes[-1].startswith("feldman2021 not composed: a proven lower bound"):
            # s25-comp: FMT21 provably loses (test_fmt21_floor.py): the pair's answer alone
            assert got.source == PROFILE_PAIR
            return
        assert got.notes[-1] == want.notes[-1]  # names both pairs' values and the winner
        return
    # s23-comp: FMT21 not even built (its ε is the cap, never below the pair's): the same ε,
    # named profile_pair also where both are at the cap (FMT21 won the tie before)
    assert got.source == PROFILE_PAIR
    assert got.notes[-1].startswith("feldman2021 not composed: at delta <= ")
    assert want.source == PROFILE_PAIR or want.epsilon == product_up(rounds, eps0)


@pytest.mark.parametrize(("eps0", "n", "rounds", "delta"), _CELLS)
def test_fmt21_is_the_cap_where_it_is_skipped(
    eps0: float, n: int, rounds: int, delta: float
) -> None:
    # The skip is sound only where FMT21 answers its cap R·ε0 (never below the pair's ε,
    # which is capped there too); this fails where the rule skips a cell FMT21 answers
    # below the cap (e.g. the rule raised to 1e-12 or allowed at one round: the last two
    # cells, where FMT21 answers 0.3966 and 0.549).
    params = composed_params(eps0, n, rounds, delta)
    fmt = CLONE_PAIR_REGISTRY.statement("feldman2021", params, delta=delta)
    assert _skipped(eps0, n, rounds, delta) == (fmt.epsilon == product_up(rounds, eps0))


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 1000, 10_000])
def test_capped_cells_at_100_rounds(n: int) -> None:
    got = pairs_answer(8.0, n, 100, 1e-300)
    want = always_composed(8.0, n, 100, 1e-300)
    # s23-comp: FMT21 is not built below the floor; both are at the cap, the pair named
    assert (want.epsilon, want.source) == (800.0, "feldman2021")
    assert (got.epsilon, got.source) == (800.0, PROFILE_PAIR)


@pytest.mark.parametrize(
    ("eps0", "n", "rounds", "delta"), [(2.0, 10_000, 2, 1e-12), (2.0, 10_000, 1, 1e-40)]
)
def test_rule_keeps_cells_where_fmt21_answers_below_its_cap(
    eps0: float, n: int, rounds: int, delta: float
) -> None:
    # FMT21's own answer with the skip field set must be its full answer, below the cap:
    # a rule that skipped here (a raised floor, or one round allowed) would report the cap.
    params = composed_params(eps0, n, rounds, delta)
    bound = cast(ClonePairBound, CLONE_PAIR_REGISTRY["feldman2021"])
    full = bound.curve(params).epsilon(delta)
    ruled = replace(bound, query_delta=delta).curve(params).epsilon(delta)
    assert ruled == full < rounds * eps0
