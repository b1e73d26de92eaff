"""The batched (accelerated) walk composition stays above the exact δ, with a derived
rounding allowance in place of the former ``FFT size × 1e-15`` floor (issue 28).

Binary randomized response at ε0 on a lattice that holds ±ε0 exactly is composed R times by
:func:`~crowdhide.netdp.walk_pld.observer_epsilons`; the exact δ of R-fold RR at the ε it
returns is a 50-digit binomial sum, and must not exceed the asked δ. The same check with a
hockey-stick lowered by 1 % of δ (a perturbed allowance) fails: the grid reaches δ where it
would be caught.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath as mp
import numpy as np
import pytest

from crowdhide.netdp import walk_pld

STEP = 0.01
CELLS = [(0.5, 400), (0.25, 1600), (1.0, 100)]
DELTAS = [1e-6, 1e-9, 1e-11, 1e-12, 1e-13]


def _exact_delta(eps0: float, rounds: int, epsilon: float) -> float:
    with mp.workdps(50):
        p = mp.e ** mp.mpf(eps0) / (1 + mp.e ** mp.mpf(eps0))
        total = mp.mpf(0)
        for j in range(rounds + 1):
            loss = (2 * j - rounds) * mp.mpf(eps0)
            if loss > epsilon:
                total += (
                    mp.binomial(rounds, j)
                    * p**j
                    * (1 - p) ** (rounds - j)
                    * (1 - mp.e ** (epsilon - loss))
                )
        return float(total)


def _rr_pld(eps0: float) -> Any:
    grid = np.arange(0, round(eps0 / STEP) + 5) * STEP
    p = math.exp(eps0) / (1.0 + math.exp(eps0))
    return walk_pld.pld_from_profile(np.maximum(p - np.exp(grid) * (1.0 - p), 0.0), step=STEP)


def _worst_ratio() -> float:
    worst = 0.0
    for eps0, rounds in CELLS:
        pld = _rr_pld(eps0)
        for delta in DELTAS:
            eps = float(walk_pld.observer_epsilons([[rounds]], [pld], delta=delta)[0])
            if math.isfinite(eps):
                worst = max(worst, _exact_delta(eps0, rounds, eps) / delta)
    return worst


@pytest.mark.slow
def test_the_batched_composition_is_not_below_the_exact_delta() -> None:
    assert _worst_ratio() <= 1.0


@pytest.mark.slow
def test_the_check_catches_a_hockey_stick_one_percent_low(monkeypatch: pytest.MonkeyPatch) -> None:
    original: Callable[..., Any] = walk_pld._rounding_allowance
    asked: list[float] = []

    def lowered(c: Any, masses: Any, errors: Any, size: int) -> Any:
        return original(c, masses, errors, size) - 0.01 * asked[-1]

    def epsilons(counts: Any, plds: Any, *, delta: float, accelerated: bool = True) -> Any:
        asked.append(delta)
        return real(counts, plds, delta=delta, accelerated=accelerated)

    real = walk_pld.observer_epsilons
    monkeypatch.setattr(walk_pld, "_rounding_allowance", lowered)
    monkeypatch.setattr(walk_pld, "observer_epsilons", epsilons)
    assert _worst_ratio() > 1.0


@pytest.mark.parametrize(("cycles", "most"), [(10, 1e-11), (1000, 1e-9), (10_000, 1e-7)])
def test_the_allowance_is_small_where_audits_ask(cycles: int, most: float) -> None:
    from scipy import sparse

    from crowdhide.accounting.gaussian import gaussian_log_delta

    pld = walk_pld.pld_from_profile(
        np.exp(gaussian_log_delta(np.arange(0, 400) * STEP, mu=0.1)), step=STEP
    )
    counts = sparse.csr_matrix(np.array([[cycles]]))
    lattices = [walk_pld._lattice(pld)]
    size, _, masses, _ = walk_pld._fft_bins(lattices, counts)
    allowance = walk_pld._rounding_allowance(counts, masses, np.zeros(1), size)
    assert 0.0 < float(allowance[0]) < most
