"""The lower bound of composed rounds (``composed_lower``) against exact computations: one
and two rounds of its two datasets outcome by outcome, three rounds of binary randomized
response; it must be at most the truth everywhere, close to it somewhere, and the check
must catch masses or losses raised by 1 %."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _lower_round_pmfs, composed_lower
from crowdhide.accounting.shuffle.composition import composed_shuffle
from crowdhide.errors import InvalidParameterError
from tests.accounting._rounds_oracles import (
    binary_pair,
    composed_delta,
    third_value_pair,
    two_round_delta,
)

_PAIRS: dict[str, Callable[[int, float], tuple[np.ndarray, np.ndarray]]] = {
    _lower_round_pmfs.DATASETS[0]: third_value_pair,
    _lower_round_pmfs.DATASETS[1]: binary_pair,
}


@functools.lru_cache(maxsize=8)
def _pair(dataset: str, n: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    return _PAIRS[dataset](n, eps0)


def _exact(dataset: str, n: int, eps0: float, rounds: int, eps: float) -> float:
    p, q = _pair(dataset, n, eps0)
    if rounds == 2:
        return max(two_round_delta(p, q, eps), two_round_delta(q, p, eps))
    return max(composed_delta(p, q, rounds, eps), composed_delta(q, p, rounds, eps))


def _worst_ratio(dataset: str, n: int, eps0: float, rounds: int) -> float:
    """The largest lower/exact over a grid of ε where the exact δ is above 1e-12."""
    composed_lower._rounds_pmfs.cache_clear()
    held = composed_lower._rounds_pmfs(eps0, n, rounds, dataset)
    worst = 0.0
    for eps in np.linspace(0.0, rounds * eps0, 41)[:-1]:
        exact = _exact(dataset, n, eps0, rounds, float(eps))
        lower = max(composed_lower._read_lower(h, float(eps)) for h in held)
        if exact > 1e-12:
            worst = max(worst, lower / exact)
    return worst


_CASES = [
    (_lower_round_pmfs.DATASETS[0], 40, 1.0, 1),
    (_lower_round_pmfs.DATASETS[0], 30, 2.0, 2),
    (_lower_round_pmfs.DATASETS[0], 30, 0.5, 2),
    (_lower_round_pmfs.DATASETS[1], 200, 1.0, 1),
    (_lower_round_pmfs.DATASETS[1], 300, 0.5, 2),
    (_lower_round_pmfs.DATASETS[1], 40, 4.0, 3),
    (_lower_round_pmfs.DATASETS[0], 30, 8.0, 1),
    (_lower_round_pmfs.DATASETS[0], 20, 30.0, 2),
]


@pytest.mark.parametrize(("dataset", "n", "eps0", "rounds"), _CASES)
def test_at_most_the_exact_and_close_to_it(dataset: str, n: int, eps0: float, rounds: int) -> None:
    """Below the exact composed δ at every ε of the grid (up to the oracle's float sums),
    within 0.1 % of it at some."""
    worst = _worst_ratio(dataset, n, eps0, rounds)
    assert worst <= 1.0 + 1e-9
    assert worst >= 0.999


#: Where the exact root at δ is well inside (0, R ε0).
_ROOTS = [
    (_lower_round_pmfs.DATASETS[0], 40, 1.0, 1, 1e-6),
    (_lower_round_pmfs.DATASETS[0], 60, 1.0, 2, 1e-6),
    (_lower_round_pmfs.DATASETS[1], 200, 1.0, 1, 1e-6),
    (_lower_round_pmfs.DATASETS[1], 300, 0.5, 2, 1e-10),
    (_lower_round_pmfs.DATASETS[1], 60, 1.0, 3, 1e-6),
]


@pytest.mark.parametrize(("dataset", "n", "eps0", "rounds", "delta"), _ROOTS)
def test_its_epsilon_is_close_below_the_exact_root(
    dataset: str, n: int, eps0: float, rounds: int, delta: float
) -> None:
    """The ε found at δ for one dataset is at most the exact root (bisection on the exact δ)
    and within 1 % of it."""
    composed_lower._rounds_pmfs.cache_clear()
    held = composed_lower._rounds_pmfs(eps0, n, rounds, dataset)
    found = max(composed_lower._epsilon_lower(h, delta) for h in held)
    lo, hi = 0.0, rounds * eps0
    for _ in range(30):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _exact(dataset, n, eps0, rounds, mid) > delta else (lo, mid)
    assert 0.99 * lo <= found <= hi


@pytest.mark.parametrize("where", ["masses", "losses"])
@pytest.mark.parametrize(("dataset", "n", "eps0", "rounds"), [_CASES[1], _CASES[4]])
def test_the_check_catches_one_percent_up(
    dataset: str, n: int, eps0: float, rounds: int, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masses raised by 1 %, or losses by 1 %, put the bound above the exact δ: the
    comparison above can fail."""
    grid = _lower_round_pmfs._on_grid

    def raised(losses: np.ndarray, masses: np.ndarray, points: int) -> _lower_round_pmfs.Held:
        if where == "masses":
            return grid(losses, masses * 1.01, points)
        return grid(losses + 0.01 * np.abs(losses), masses, points)

    monkeypatch.setattr(_lower_round_pmfs, "_on_grid", raised)
    assert _worst_ratio(dataset, n, eps0, rounds) > 1.0 + 1e-6
    composed_lower._rounds_pmfs.cache_clear()


@pytest.mark.parametrize("rounds", [2, 10])
@pytest.mark.parametrize(
    ("eps0", "n", "delta"), [(1.0, 1000, 1e-6), (4.0, 10_000, 1e-10), (50.0, 10**9, 1e-6)]
)
def test_below_the_composed_certificate(eps0: float, n: int, delta: float, rounds: int) -> None:
    """A lower bound and a certificate of the same rounds: lower <= certificate."""
    lower = composed_lower.composed_lower_epsilon(eps0=eps0, n=n, rounds=rounds, delta=delta)
    upper = composed_shuffle(eps0=eps0, n=n, rounds=rounds, delta=delta)
    assert lower.kind == "lower"
    assert 0.0 < lower.epsilon <= upper.epsilon


def test_at_least_one_round_where_composition_reads_nothing() -> None:
    """At δ = 1e-300 the composed PMFs hold nothing that deep: the single round's bound."""
    from crowdhide.accounting.shuffle.query import shuffle_epsilon

    st = composed_lower.composed_lower_epsilon(eps0=2.0, n=10_000, rounds=10, delta=1e-300)
    one = shuffle_epsilon(eps0=2.0, n=10_000, delta=1e-300, bound="ldp_lower")
    assert st.epsilon == one.epsilon
    assert math.isfinite(st.epsilon)


@pytest.mark.parametrize(
    ("option", "value"), [("eps0", -1.0), ("n", 1), ("rounds", 0), ("delta", 1.5)]
)
def test_invalid_options_are_named(option: str, value: float) -> None:
    args: dict[str, float] = {"eps0": 1.0, "n": 1000, "rounds": 2, "delta": 1e-6}
    args[option] = value
    with pytest.raises(InvalidParameterError, match=option):
        composed_lower.composed_lower_epsilon(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize("rounds", [1, 2])
@pytest.mark.parametrize("eps0", [0.5, 1.0])
def test_blocks_of_s_stay_below_the_exact(
    eps0: float, rounds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 3-RR dataset's blocks of informative counts (used from n of about 1e4), made
    wide (blocks of 10 and 18 counts at n = 240): each block's least loss, point probability
    and weight still give a bound below the exact one."""
    monkeypatch.setattr(_lower_round_pmfs, "_BLOCK_SPREAD", 4.0)
    assert _worst_ratio(_lower_round_pmfs.DATASETS[0], 240, eps0, rounds) <= 1.0 + 1e-9
    composed_lower._rounds_pmfs.cache_clear()


@pytest.mark.parametrize("rounds", [1, 2])
def test_a_block_read_at_one_end_is_caught(rounds: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same wide blocks, each read at its first count alone (not the least of its two
    ends), go above the exact δ (ε0 = 1; at ε0 = 0.5 the block's losses elsewhere hide it)."""
    monkeypatch.setattr(_lower_round_pmfs, "_BLOCK_SPREAD", 4.0)
    block_terms = _lower_round_pmfs._block_terms

    def first_only(
        n: int, big: float, q: float, ends: tuple[float, float], mass: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return block_terms(n, big, q, (ends[0], ends[0]), mass)

    monkeypatch.setattr(_lower_round_pmfs, "_block_terms", first_only)
    assert _worst_ratio(_lower_round_pmfs.DATASETS[0], 240, 1.0, rounds) > 1.0 + 1e-6
    composed_lower._rounds_pmfs.cache_clear()
