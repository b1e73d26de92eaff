"""Cells of a ``variation_ratio`` refinement round evaluated together (issue 32).

``_split_clone._build_layouts`` stacks several split systems' rows (their rates per row,
their s blocks padded with empty ones) and ``split_clone_log_deltas`` sums all their heavy
blocks in one call; ``variation_ratio._cells_log_delta`` and ``_refined_cells`` use them for
a whole round of cells. None of this may change a float: checked here against the layouts,
sums and cell bounds computed one system at a time, on systems of very different shapes,
and the check is shown to see a 1 % change of one system's rate.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.logmath import kappa_up, rate_up
from crowdhide.accounting.shuffle import _split_clone as sc
from crowdhide.accounting.shuffle import variation_ratio as vr
from crowdhide.accounting.shuffle._krr_fast import blocks_total, heavy_blocks

FloatArray = npt.NDArray[np.float64]
#: (μ_lo, μ_hi) cells from the bottom to the top (different window shapes and tiers)
CELLS = ((0.01, 0.05), (0.3, 0.5), (0.9, 0.93), (0.985, 0.99166), (0.9995, 0.99975))


def _systems(eps0: float) -> list[sc.SplitSystem]:
    out = []
    for lo, hi in CELLS:
        c_inf, c_zero = vr.clone_rates(lo, eps0)[0], vr.clone_rates(hi, eps0)[1]
        for tier in vr.SPLIT_TIERS:
            out.append((rate_up(hi, ulps=sc.PARAMETER_ULPS), c_inf, c_zero, *tier))
    return out


def _same(a: tuple[FloatArray | float, ...], b: tuple[FloatArray | float, ...]) -> bool:
    return all(
        np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("n", [2, 60, 1000, 10**6, 10**9])
@pytest.mark.parametrize("eps0", [0.5, 4.0])
def test_stacked_layouts_have_the_floats_of_single_ones(n: int, eps0: float) -> None:
    log_tail = -63.0
    systems = _systems(eps0)
    together = sc._build_layouts(n, systems, log_tail)
    alone = [sc._build_layouts(n, [system], log_tail)[0] for system in systems]
    assert all(_same(a, b) for a, b in zip(together, alone, strict=True))
    # the comparison sees one system's informative rate 1 % lower
    changed = list(systems)
    mu, c_inf, *rest = changed[4]
    changed[4] = (mu, 0.99 * c_inf, *rest)  # type: ignore[assignment]
    perturbed = sc._build_layouts(n, changed, log_tail)
    same = [_same(a, b) for a, b in zip(perturbed, alone, strict=True)]
    assert same == [i != 4 for i in range(len(systems))]


@pytest.mark.parametrize(("n", "eps0"), [(60, 1.0), (10**4, 4.0), (10**9, 0.5)])
def test_batched_sums_and_cells_have_the_floats_of_single_ones(n: int, eps0: float) -> None:
    log_tail, kappa = -63.0, kappa_up(eps0)
    eps = 0.3 * eps0
    systems = _systems(eps0)
    together = sc.split_clone_log_deltas(n, kappa, systems, eps, log_tail)
    alone = [sc.split_clone_log_deltas(n, kappa, [s], eps, log_tail)[0] for s in systems]
    assert together == alone
    assert all(math.isfinite(v) for v in together)
    requests = [
        ((math.log(lo), math.log(hi)), tier)
        for lo, hi in (*CELLS, (0.9995, 1.0))
        for tier in range(len(vr.SPLIT_TIERS))
    ]
    cells = vr._cells_log_delta(n, eps0, requests, eps, log_tail)
    single = [vr._cell_log_delta(n, eps0, *cell, eps, log_tail, tier=t) for cell, t in requests]
    assert cells == single
    # ... and a 1 % lower rate of one system shows in its sum
    mu, c_inf, *rest = systems[4]
    lowered = sc.split_clone_log_deltas(n, kappa, [(mu, 0.99 * c_inf, *rest)], eps, log_tail)  # type: ignore[list-item]
    assert lowered[0] != alone[4]


def test_layout_cache_keeps_the_least_recently_used() -> None:
    cache = sc._LayoutCache(2)
    systems = _systems(1.0)[:3]
    first = cache.many(100, systems[:2], -40.0)
    assert cache.many(100, systems[:1], -40.0)[0] is first[0]  # held, and now most recent
    cache.many(100, systems[2:], -40.0)  # drops systems[1]
    assert len(cache.held) == 2
    assert (100, -40.0, systems[1]) not in cache.held
    assert (100, -40.0, systems[0]) in cache.held
    cache.cache_clear()
    assert not cache.held


def _former_sum(layout: sc._Layout, kappa: float, eps: float, log_tail: float) -> float:
    """One layout's sum as ``_blocks_log_deltas`` made it before s27-gen: the heavy mask, the
    heavy blocks' inputs and the light blocks' bound 2 taken at every ε."""
    log_w, s_end, g_low, log_mass, log_out, c_tail = layout
    weight = log_w[:, None] + log_mass
    mask = heavy_blocks(weight, log_tail)
    h = np.full(mask.shape, 2.0)
    h[mask] = sc.deep_skipped_h(
        s_end[mask], g_low[mask], weight[mask], kappa=kappa, eps=eps, log_tail=log_tail
    )
    return blocks_total(log_w, log_mass, h, log_out, c_tail)


@pytest.mark.parametrize(("n", "eps0"), [(60, 1.0), (1000, 4.0), (10**4, 6.0), (10**9, 0.5)])
def test_precomputed_heavy_parts_keep_the_sums_floats(n: int, eps0: float) -> None:
    """s27-gen: each layout's heavy mask, heavy inputs and light terms are computed once with
    the layout (``_heavy_parts``); the sums keep their floats at several ε, and the check
    sees the heavy blocks' masses raised by 1 %."""
    log_tail, kappa = -63.0, kappa_up(eps0)
    layouts = sc._LayoutCache(64).many(n, _systems(eps0), log_tail)
    for frac in (0.8, 0.3, 0.05, 1e-4):
        eps = frac * eps0
        got = sc._blocks_log_deltas(layouts, kappa, eps, log_tail)
        former = [_former_sum(layout, kappa, eps, log_tail) for layout, _ in layouts]
        assert got == former
    # the heavy blocks' masses 1 % larger move the largest sum (at the smallest ε: above the
    # light blocks' floor at every n)
    top = int(np.argmax(got))
    layout, heavy = layouts[top]
    mass = heavy[4] + math.log(1.01)
    moved = sc._blocks_log_deltas([(layout, (*heavy[:4], mass, heavy[5]))], kappa, eps, log_tail)
    assert moved[0] > got[top]
