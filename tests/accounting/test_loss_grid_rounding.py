"""The PLD grid never rounds a privacy loss down (issue 28, R2).

``to_pld`` puts each outcome's loss ``ln P − ln Q (+ loss_error)`` on a grid of ``interval``
steps; dp_accounting reads index ``i`` back as the float ``i · interval``. The check here is
exact rational arithmetic on the floats involved: every index must read back to at least the
exact loss, and at most two steps above it (so the rounding is not needlessly loose). The old
code forgave 1e-9 of a step, so a loss just above a grid point went one step down: the
crafted cases fail there.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from crowdhide.accounting.composition import _rounded_loss_pmf

INTERVALS = [1e-4, 1e-3, 3e-5, 0.1]


def _cases(interval: float, rng: np.random.Generator) -> list[tuple[float, float, float]]:
    """(log_p, log_q, loss_error): losses just above, on and below grid points, and random."""
    cases: list[tuple[float, float, float]] = []
    for k in (1, 7, 12_345, 60_000, -3, -40_000):
        on_grid = k * interval
        for ulps in (0, 1, 3, 1_000, 100_000):
            loss = on_grid
            for _ in range(min(ulps, 3)):
                loss = math.nextafter(loss, math.inf)
            if ulps > 3:
                loss = on_grid * (1.0 + math.copysign(ulps * 2.0**-52, on_grid))
            # log-probabilities stay <= 0; the loss is their difference
            cases.append((-0.25, -0.25 - loss, 0.0) if loss >= 0 else (-0.25 + loss, -0.25, 0.0))
            if abs(loss) <= 1.5:
                cases.append((-1.5 + loss, -1.5, 0.0) if loss <= 0 else (-1.6, -1.6 - loss, 0.0))
    for _ in range(200):
        log_p, log_q = -rng.exponential(3.0, size=2)
        error = float(rng.choice([0.0, 1e-15, 1e-12, 1e-9]))
        cases.append((float(log_p), float(log_q), error))
    return cases


@pytest.mark.parametrize("interval", INTERVALS)
def test_every_loss_reads_back_at_or_above_its_exact_value(interval: float) -> None:
    rng = np.random.default_rng(28)
    for log_p, log_q, error in _cases(interval, rng):
        pmf, infinite = _rounded_loss_pmf(
            np.array([log_p]), np.array([log_q]), interval, 0.0, error
        )
        assert infinite == 0.0
        if not pmf:  # a mass that underflows to 0 is dropped: it adds nothing to delta
            assert math.exp(log_p) == 0.0
            continue
        (index,) = pmf
        exact = Fraction(log_p) - Fraction(log_q) + Fraction(error)
        read_back = Fraction(index * interval)
        assert read_back >= exact, (log_p, log_q, error, index)
        assert read_back - exact <= 2 * Fraction(interval) + Fraction(error), (log_p, log_q)


def test_exact_zero_loss_stays_on_zero() -> None:
    pmf, _ = _rounded_loss_pmf(np.log([0.5, 0.5]), np.log([0.5, 0.5]), 1e-4)
    assert pmf == {0: pytest.approx(1.0)}
