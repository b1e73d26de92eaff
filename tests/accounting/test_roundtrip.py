"""Round trip of the two shuffle queries (issue 32, s33-cons): δ at the ε an ε query
returned is at most the δ it was asked at.

Before, the δ query summed its blocked windows to other tails than the ε search (the floats
of a blocked sum depend on them: up to 0.4 % of δ at δ = 1e-10, 9x at 1e-300), a mechanism's
δ query to a fixed tail e^-60 (5e-296 instead of 1e-300 at R = 10^4), and the composed
rows' δ query made none of the tilted passes the ε search certified with. Each δ query now
also evaluates those (docs/proofs/profile-pair.md §17, mechanism-certificates.md §1x) and
answers the least of valid upper bounds; the brute-force tests below check that the least
is still one.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _settle
from crowdhide.accounting.shuffle.composition import composed_shuffle
from crowdhide.accounting.shuffle.query import shuffle_delta, shuffle_epsilon
from tests.accounting import _mechanism_matrices as mm

#: Rows as ``bench_shuffle.py --table`` asks them (mechanism domains of MECHANISM_DOMAIN).
ROWS: dict[str, dict[str, Any]] = {
    "generic": {},
    "k=3": {"k": 3},
    "k=4": {"k": 4},
    "k=10": {"k": 10},
    "krr": {"mechanism": "krr", "d": 16},
    "oue": {"mechanism": "oue", "d": 16},
    "hadamard": {"mechanism": "hadamard", "d": 16},
    "subset": {"mechanism": "subset", "d": 16, "k": 4},
    "piecewise": {"mechanism": "piecewise"},
    "laplace": {"mechanism": "laplace"},
}

#: (row, ε0, n, δ): cells whose δ query at the ε answer was above δ before (the ratio).
FAST_CELLS = [
    ("generic", 0.5, 10**4, 1e-6),  # 1.00085 (variation_ratio's tails)
    ("generic", 4.0, 10**6, 1e-10),  # 1.0035
    ("k=3", 0.5, 10**6, 1e-10),  # 1.0049 (krr_clone)
    ("k=4", 2.0, 10**4, 1e-300),  # 9.0 (krr_blanket)
    ("krr", 8.0, 10**6, 1e-6),  # 1.010 (member tails e^-60)
    ("oue", 1.0, 10**4, 1e-6),  # 1.0023
    ("hadamard", 1.0, 10**4, 1e-6),
    ("oue", 2.0, 10**9, 1e-300),  # 6.5e-26 for 1e-300
    ("laplace", 4.0, 10**6, 1e-6),
    ("R=1", 1.0, 10**6, 1e-10),  # 1.0028
    ("R=10", 2.0, 10**6, 1e-10),  # 1.097 (tilted passes)
    ("R=100", 1.0, 10**4, 1e-10),  # 2.2e-6 relative
    ("R=100", 0.5, 10**9, 1e-300),  # 297
    ("R=10000", 8.0, 10**9, 1e-300),  # 5.3e4 (5e-296)
]

SLOW_CELLS = [
    (row, eps0, n, delta)
    for row in (*ROWS, "R=10", "R=100")
    for eps0 in (0.5, 2.0, 8.0)
    for n in (10**3, 10**6)
    for delta in (1e-6, 1e-10)
]


def _queries(row: str) -> tuple[Any, Any]:
    """``(ε at δ, δ at ε)`` of a row, each called with ``eps0, n`` and the asked value."""
    if row.startswith("R="):
        rounds = int(row[2:])

        def composed(**kw: Any) -> Any:
            return composed_shuffle(rounds=rounds, **kw)

        return composed, composed
    extra = ROWS[row]

    def eps_at(**kw: Any) -> Any:
        return shuffle_epsilon(**kw, **extra)

    def delta_at(**kw: Any) -> Any:
        return shuffle_delta(**kw, **extra)

    return eps_at, delta_at


def _round_trip(row: str, eps0: float, n: int, delta: float) -> float:
    """δ at the ε answer over δ (nan where the ε answer is not a finite certificate)."""
    eps_at, delta_at = _queries(row)
    first = eps_at(eps0=eps0, n=n, delta=delta)
    if not (first.is_certificate and math.isfinite(first.epsilon)):
        return math.nan
    return float(delta_at(eps0=eps0, n=n, epsilon=first.epsilon).delta) / delta


@pytest.mark.parametrize(("row", "eps0", "n", "delta"), FAST_CELLS)
def test_delta_at_the_epsilon_answer_is_at_most_delta(
    row: str, eps0: float, n: int, delta: float
) -> None:
    ratio = _round_trip(row, eps0, n, delta)
    assert not ratio > 1.0, (row, eps0, n, delta, ratio)


@pytest.mark.slow
@pytest.mark.parametrize(("row", "eps0", "n", "delta"), SLOW_CELLS)
def test_round_trip_wider_grid(row: str, eps0: float, n: int, delta: float) -> None:
    ratio = _round_trip(row, eps0, n, delta)
    assert not ratio > 1.0, (row, eps0, n, delta, ratio)


class _Off:
    """A stand-in for the settling flag that stays off."""

    def get(self) -> bool:
        return False

    def set(self, value: bool) -> None:
        return None

    def reset(self, token: object) -> None:
        return None


@contextlib.contextmanager
def _unsettled() -> Iterator[None]:
    """δ queries as before: no tails of their own value, no passes of an ε search."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_settle, "_SETTLING", _Off())
        yield


@pytest.mark.parametrize(
    ("row", "eps0", "n", "delta"),
    [("generic", 0.5, 10**4, 1e-6), ("krr", 8.0, 10**6, 1e-6), ("R=10", 2.0, 10**6, 1e-10)],
)
def test_the_round_trip_catches_an_unsettled_delta_query(
    row: str, eps0: float, n: int, delta: float
) -> None:
    """The check can fail: with the δ query as before, these cells are above δ."""
    eps_at, delta_at = _queries(row)
    first = eps_at(eps0=eps0, n=n, delta=delta)
    with _unsettled():
        before = delta_at(eps0=eps0, n=n, epsilon=first.epsilon).delta
    after = delta_at(eps0=eps0, n=n, epsilon=first.epsilon).delta
    assert before > delta >= after


def _krr(eps0: float, k: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    e = math.exp(eps0)
    return np.where(np.eye(k) > 0, e / (e + k - 1), 1.0 / (e + k - 1))


@pytest.mark.parametrize(
    ("kw", "matrix"),
    [
        ({"k": 3}, lambda e0: _krr(e0, 3)),
        ({"mechanism": "oue", "d": 3}, lambda e0: mm.oue(e0, 3)),
        ({"mechanism": "hadamard", "d": 3}, lambda e0: mm.hadamard(e0, 3)),
        ({"mechanism": "krr", "d": 3}, lambda e0: _krr(e0, 3)),
    ],
)
@pytest.mark.parametrize("n", [2, 3])
def test_settled_delta_is_above_the_exact_delta(kw: dict[str, Any], matrix: Any, n: int) -> None:
    """Brute force: the least of the bounds a δ query now evaluates is still at least the
    exact worst δ(ε) of the randomizer's shuffled reports (and at most the former answer)."""
    for eps0 in (0.5, 2.0):
        grid = [0.05 * eps0, 0.3 * eps0, 0.7 * eps0]
        exact = mm.worst_deltas(matrix(eps0), n, grid)
        for eps, truth in zip(grid, exact, strict=True):
            now = shuffle_delta(eps0=eps0, n=n, epsilon=eps, **kw).delta
            with _unsettled():
                before = shuffle_delta(eps0=eps0, n=n, epsilon=eps, **kw).delta
            assert truth <= now * (1 + 1e-9), (kw, n, eps0, eps)
            assert now <= before, (kw, n, eps0, eps)


def test_settled_tails_are_a_bound_for_a_blocked_sum() -> None:
    """Brute force at a size the blocked sums block: variation_ratio's settled δ at
    n = 6 is at least the exact worst δ of 3-ary RR (a generic ε0-LDP randomizer), and
    every tail it sums to gives a bound too."""
    eps0, n = 1.0, 6
    grid = [0.1, 0.4]
    exact = mm.worst_deltas(_krr(eps0, 3), n, grid)
    for eps, truth in zip(grid, exact, strict=True):
        settled = shuffle_delta(eps0=eps0, n=n, epsilon=eps, bound="variation_ratio").delta
        assert truth <= settled * (1 + 1e-9)
