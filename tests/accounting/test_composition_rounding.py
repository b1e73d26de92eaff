"""Basic and advanced composition never round below the exact value of their formulas.

Each result is compared with the same formula evaluated in 60-digit arithmetic (mpmath) on the
same float inputs, over a grid of parameters drawn at random: an ε or δ an ulp below the exact
one is a certificate below the truth. The last tests show that the plain float evaluation the
library used before does land below the exact value on this grid, so the checks can fail.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from crowdhide.accounting import (
    PrivacyStatement,
    advanced_composition,
    basic_composition,
    heterogeneous_advanced_composition,
)
from crowdhide.accounting.composition import advanced_epsilon
from crowdhide.accounting.ledger import spent
from crowdhide.accounting.logmath import relative_up, sum_up

mpmath.mp.dps = 60
MP = mpmath.mpf
#: How far above the exact value a result may be: the allowance of the error model, not more.
LOOSE = 64 * 2.0**-52


def _grid(seed: int, cells: int) -> list[tuple[list[float], float]]:
    """(ε's of the parts, slack) cells: 2–40 parts, ε from 1e-4 to 3, slack 1e-300 to 0.5."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(cells):
        count = int(rng.integers(2, 41))
        eps = (10.0 ** rng.uniform(-4, math.log10(3.0), size=count)).tolist()
        out.append((eps, float(10.0 ** rng.uniform(-300, math.log10(0.5)))))
    return out


GRID = _grid(2026_12_02, 150)


def _exact_advanced(eps: float, count: int, slack: float) -> mpmath.mpf:
    e, k = MP(eps), MP(count)
    advanced = mpmath.sqrt(2 * k * mpmath.log(1 / MP(slack))) * e + k * e * mpmath.expm1(e)
    return min(advanced, k * e)


def _exact_heterogeneous(eps: list[float], deltas: list[float], slack: float) -> tuple:
    e = [MP(x) for x in eps]
    drift = mpmath.fsum(x * mpmath.tanh(x / 2) for x in e)
    sq = mpmath.fsum(x * x for x in e)
    candidates = [
        mpmath.fsum(e),
        drift + mpmath.sqrt(2 * sq * mpmath.log(mpmath.e + mpmath.sqrt(sq) / MP(slack))),
        drift + mpmath.sqrt(2 * sq * mpmath.log(1 / MP(slack))),
    ]
    keep = (1 - MP(slack)) * mpmath.fprod(1 - MP(d) for d in deltas)
    return min(candidates), 1 - keep


def _above(value: float, exact: mpmath.mpf) -> bool:
    """At or above the exact value, and not looser than the error model's allowance."""
    return exact <= MP(value) <= exact * (1 + MP(LOOSE)) or (exact == 0 and value == 0)


@pytest.mark.parametrize("cell", range(0, 150, 3))
def test_basic_composition_is_at_least_the_exact_sums(cell: int) -> None:
    eps, slack = GRID[cell]
    deltas = [slack * (i + 1) / len(eps) / 10 for i in range(len(eps))]
    got = basic_composition(
        [PrivacyStatement(epsilon=e, delta=d) for e, d in zip(eps, deltas, strict=True)]
    )
    assert _above(got.epsilon, mpmath.fsum(MP(e) for e in eps))
    assert _above(got.delta, mpmath.fsum(MP(d) for d in deltas))


@pytest.mark.parametrize("cell", range(150))
def test_advanced_epsilon_is_at_least_the_exact_formula(cell: int) -> None:
    eps, slack = GRID[cell]
    count = len(eps) ** 2
    assert _above(advanced_epsilon(eps[0], count, slack), _exact_advanced(eps[0], count, slack))
    got = advanced_composition(epsilon=eps[0], delta=eps[1] * 1e-7, count=count, delta_slack=slack)
    assert _above(got.delta, count * MP(eps[1] * 1e-7) + MP(slack))


@pytest.mark.parametrize("cell", range(0, 150, 2))
def test_heterogeneous_advanced_composition_is_at_least_the_exact_formula(cell: int) -> None:
    eps, slack = GRID[cell]
    deltas = [1e-9 * e for e in eps]
    parts = [PrivacyStatement(epsilon=e, delta=d) for e, d in zip(eps, deltas, strict=True)]
    got = heterogeneous_advanced_composition(parts, delta_slack=slack)
    exact_eps, exact_delta = _exact_heterogeneous(eps, deltas, slack)
    assert _above(got.epsilon, exact_eps)
    assert _above(got.delta, exact_delta)


@pytest.mark.parametrize("cell", range(0, 150, 10))
def test_the_ledger_spends_at_least_the_exact_basic_and_advanced_epsilon(cell: int) -> None:
    """``spent``'s advanced ε is at least the exact KOV15 ε at the slack where the exact
    composed δ equals the δ asked (the ε only grows as the slack shrinks)."""
    eps, slack = GRID[cell]
    deltas = [1e-12] * len(eps)
    delta = max(slack, 1e-9)
    result = spent(
        [PrivacyStatement(epsilon=e, delta=d) for e, d in zip(eps, deltas, strict=True)],
        delta=delta,
    )
    keep = mpmath.fprod(1 - MP(d) for d in deltas)
    exact_slack = 1 - (1 - MP(delta)) / keep
    exact_eps, _ = _exact_heterogeneous(eps, deltas, float(exact_slack))
    # float(exact_slack) is within half an ulp: recompute the ε on both sides of it
    for side in (math.nextafter(float(exact_slack), 0.0), float(exact_slack)):
        exact_eps = max(exact_eps, _exact_heterogeneous(eps, deltas, side)[0])
    assert MP(result.bounds["advanced"]) >= exact_eps
    assert MP(result.bounds["basic"]) >= mpmath.fsum(MP(e) for e in eps)


def _plain_advanced(eps: float, count: int, slack: float) -> float:
    """The formula in plain floats, as the library evaluated it before session 34."""
    advanced = math.sqrt(2.0 * count * math.log(1.0 / slack)) * eps
    return min(advanced + count * eps * math.expm1(eps), count * eps)


def test_the_checks_catch_plain_float_evaluation() -> None:
    """Plain float sums and the plain advanced formula fall below the exact values on this
    grid (so the tests above can fail), and the rounded-up helpers do not."""
    low_sums = sum(math.fsum(eps) < mpmath.fsum(MP(e) for e in eps) for eps, _ in GRID)
    low_advanced = sum(
        MP(_plain_advanced(eps[0], len(eps) ** 2, s)) < _exact_advanced(eps[0], len(eps) ** 2, s)
        for eps, s in GRID
    )
    assert low_sums > 10, low_sums
    assert low_advanced > 10, low_advanced
    assert all(MP(sum_up(eps)) >= mpmath.fsum(MP(e) for e in eps) for eps, _ in GRID)


def test_relative_up_covers_its_allowance() -> None:
    for value in (1e-300, 0.1, 1.0, 3.0, 7e200):
        assert MP(relative_up(value, ulps=8)) >= MP(value) * (1 + 8 * MP(2) ** -52)
