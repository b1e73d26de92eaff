"""The per-cell bound of ``variation_ratio`` (docs/proofs/variation-ratio.md, §6.1).

Each member of ``_cell_log_delta`` — the mixture bound ``μ_hi δ_top(c_inf(μ_lo))``, the split
system at the cell's corners, one report's variation — and their minimum are compared with
the split clone system enumerated outcome by outcome (``split_system_delta``) at every μ of a
grid inside the cell, each μ with its own clone rates. The comparison can fail: the mixture
bound with its factor μ_hi lowered by 1 % is exceeded by the exact system in a cell below
μ = 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle import variation_ratio as module
from crowdhide.accounting.shuffle.variation_ratio import clone_rates
from tests.accounting.test_variation_ratio import split_system_delta

#: Cells (μ_lo, μ_hi): next to μ = 1, the top cell, a wide one, one below MIXTURE_ABOVE.
CELLS = [(0.995, 0.999), (0.998, 0.999), (0.99, 1.0), (0.98, 0.99), (0.5, 0.985), (0.2, 0.6)]


def _exact_in_cell(n: int, eps0: float, lo: float, hi: float, eps: float) -> float:
    mus = np.linspace(lo, hi, 6)
    return max(
        split_system_delta(n, eps0, float(mu), *clone_rates(float(mu), eps0), eps) for mu in mus
    )


@pytest.mark.parametrize(("n", "eps0"), [(3, 2.5), (8, 1.5), (16, 0.5)])
@pytest.mark.parametrize("frac", [0.0, 0.3, 0.7])
def test_each_member_and_the_cell_bound_dominate_the_exact_system(
    n: int, eps0: float, frac: float
) -> None:
    eps = frac * eps0
    for lo, hi in CELLS:
        log_lo, log_hi = math.log(lo), math.log(hi)
        exact = _exact_in_cell(n, eps0, lo, hi, eps)
        mixture = math.exp(module._mixture_log_delta(n, eps0, log_lo, log_hi, eps, -60.0))
        assert exact <= mixture * (1 + 1e-9) + 1e-15, (lo, hi)
        assert exact <= hi * math.tanh(eps0 / 2.0) * (1 + 1e-12)  # one report's variation
        for tier in range(len(module.SPLIT_TIERS)):
            cell = math.exp(module._cell_log_delta(n, eps0, log_lo, log_hi, eps, -60.0, tier=tier))
            assert exact <= cell * (1 + 1e-9) + 1e-15, (lo, hi, tier)


@pytest.mark.parametrize(("n", "eps0", "frac"), [(8, 1.5, 0.3), (16, 2.5, 0.2)])
def test_a_mixture_factor_one_per_cent_lower_is_caught(n: int, eps0: float, frac: float) -> None:
    """The factor μ_hi cannot be lowered: in the cell [0.998, 0.999] the exact system at
    μ_hi comes within 0.2 % of the mixture bound (measured 0.998 and 0.9986)."""
    eps = frac * eps0
    lo, hi = 0.998, 0.999
    exact = split_system_delta(n, eps0, hi, *clone_rates(hi, eps0), eps)
    mixture = math.exp(module._mixture_log_delta(n, eps0, math.log(lo), math.log(hi), eps, -60.0))
    assert exact <= mixture
    assert exact > 0.99 * mixture
