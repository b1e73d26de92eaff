"""The composed k-RR of a cycle answers below the FFT allowance with basic composition.

Since session 15 a composed PLD refuses (ε = inf) a δ at or below its FFT rounding
allowance; count·ε0 at δ = 0 holds for every δ, so the cycle's composed ε falls back to it
(one ulp up) instead of inf.
"""

from __future__ import annotations

import math

import pytest

from crowdhide.netdp.cycle_privacy import _krr_composed_epsilon


@pytest.mark.parametrize(("eps0", "size", "count"), [(1.0, 2, 10), (0.5, 4, 40), (2.0, 8, 100)])
def test_below_the_allowance_the_answer_is_basic_composition(
    eps0: float, size: int, count: int
) -> None:
    got = _krr_composed_epsilon(eps0, size, count, 1e-300)
    assert math.isfinite(got)
    assert count * eps0 <= got <= math.nextafter(count * eps0, math.inf)


def test_above_the_allowance_the_pld_answer_is_kept() -> None:
    assert _krr_composed_epsilon(1.0, 4, 100, 1e-6) < 0.9 * 100 * 1.0
