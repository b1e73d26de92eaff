"""A cell whose excess over the refinement level its width cannot explain is evaluated at
the next resolution instead of being split (``variation_ratio._next_requests``, issue 32).

At ε0 = 2, n = 1e4, δ = 1e-300 (the piecewise mechanism's ``mu_max``) the coarsest
resolution left cells near μ = 0.9 mu_max 26-35 above the level in log δ (32 below it at the
next resolution), and the refinement spent its whole budget splitting them: the certificate
was that artefact's, 1.31388 in ε instead of 1.26123, in 11 refinements instead of one.
"""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.shuffle import _split_clone
from crowdhide.accounting.shuffle import variation_ratio as module

N, EPS0 = 10_000, 2.0
#: The piecewise mechanism's largest μ, (t² + 1)/(t (t + 1)) with t = e^{ε0/2}.
T = math.exp(EPS0 / 2.0)
MU_MAX = (T * T + 1.0) / (T * (T + 1.0))
TARGET = math.log(1e-300)
#: The piecewise query's first ε (its floor's) and tail level there.
EPS, LOG_TAIL = 1.2612277368450444, TARGET - 40.0


def clear_caches() -> None:
    module._clear_caches()
    _split_clone._layout.cache_clear()


def _split_only(
    entry: module._Entry, level: float, rate: float, evaluations: int
) -> list[module._Request]:
    """The refinement with the re-tier rule off: every cell only split."""
    return [(child, entry[2]) for child in module._split(entry, level, rate, evaluations)]


def test_a_coarse_cell_far_above_the_level_goes_finer_not_split() -> None:
    entry = (691.0, (math.log(0.8991), math.log(0.8992)), 0)  # bound -691 at tier 0
    assert module._next_requests(entry, -700.0, 20.0, 0) == [(entry[1], 1)]
    # its width explains the excess: split, at its own resolution
    wide = (699.0, (math.log(0.5), math.log(0.7)), 0)
    children = module._next_requests(wide, -700.0, 20.0, 0)
    assert len(children) >= 2
    assert all(tier == 0 for _, tier in children)
    assert children[0][0][0] == wide[1][0]
    assert children[-1][0][1] == wide[1][1]
    # at the finest resolution there is nothing finer: split
    finest = (691.0, entry[1], len(module.SPLIT_TIERS) - 1)
    assert all(tier == finest[2] for _, tier in module._next_requests(finest, -700.0, 20.0, 0))


def test_the_piecewise_query_passes_at_its_first_epsilon(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the rule the certificate meets δ = 1e-300 at the floor's ε; splitting alone (the
    rule off) leaves it above, at the coarse cells' artefact. Since s36-deep no cell is
    evaluated at the coarsest resolution at such a tail level (``DEEP_LOWEST_TIER``): it is
    allowed here again, so the rule is tested where it matters (above δ = 1e-280)."""
    monkeypatch.setattr(module, "DEEP_LOWEST_TIER", 0)
    clear_caches()
    assert module._supremum(N, EPS0, MU_MAX, EPS, LOG_TAIL)[0] <= TARGET

    monkeypatch.setattr(module, "_next_requests", _split_only)
    clear_caches()
    try:
        assert module._supremum(N, EPS0, MU_MAX, EPS, LOG_TAIL)[0] > TARGET + 20.0
    finally:
        clear_caches()  # no value of the patched refinement outlives the patch


def test_below_delta_1e_280_no_cell_is_at_the_coarsest_resolution_and_splitting_suffices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``DEEP_LOWEST_TIER`` (s36-deep): at δ = 1e-300 the piecewise query's supremum meets
    the target at its first ε with the split-only refinement too (no coarse artefact to
    climb out of). With ``DEEP_LOWEST_TIER = 0`` it does not (the test above)."""
    assert module.lowest_tier(LOG_TAIL) == module.DEEP_LOWEST_TIER == 1
    assert module.lowest_tier(math.log(1e-280) - 40.0) == 0  # at δ = 1e-280: as before

    monkeypatch.setattr(module, "_next_requests", _split_only)
    clear_caches()
    try:
        assert module._supremum(N, EPS0, MU_MAX, EPS, LOG_TAIL)[0] <= TARGET
    finally:
        clear_caches()
