"""Split-clone layouts computed on the s-block columns a block can occupy (issue 32, s28).

``_split_clone._build_layouts`` gives each system ``points`` s-block columns; where every
row's s range is shorter than that, the blocks are one s wide and the columns past the
longest range are empty in every row. They are no longer computed (``_used_columns``) but
filled with the values an empty block gets (``_padded``), so every layout keeps its shape and
its floats: checked here against the layouts computed on every column, on the piecewise
mechanism's revealed-class systems (n = 1e3, where most columns were empty) and on
variation-ratio cells, alone and stacked; the check is shown to see a 1 % change of a rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.logmath import kappa_up, rate_up
from crowdhide.accounting.shuffle import _split_clone as sc
from crowdhide.accounting.shuffle import mechanisms as mech
from crowdhide.accounting.shuffle import variation_ratio as vr
from crowdhide.accounting.shuffle._layout_columns import padded, used_columns
from crowdhide.accounting.shuffle.randomizers import piecewise_reveal_cells

FloatArray = npt.NDArray[np.float64]


def _every_column(points: Sequence[int], *_: object) -> list[int]:
    """``_used_columns`` as before s28: every system computed on all its columns."""
    return list(points)


def _reveal_systems(eps0: float) -> list[sc.SplitSystem]:
    """The piecewise mechanism's revealed-class split systems (``mechanisms._reveal_member``)."""
    out = []
    for mu, c_inf, w, gamma in piecewise_reveal_cells(eps0)[1]:
        system = mech._reveal_system(mu, c_inf, (w, gamma))
        if system is not None:
            mu_cond, c_zero = system[1]
            mu_up = rate_up(mu_cond, ulps=sc.PARAMETER_ULPS)
            out.append((mu_up, c_inf, c_zero, sc.SPLIT_C_POINTS, sc.SPLIT_S_POINTS, 0.05))
    return out


def _cell_systems(eps0: float) -> list[sc.SplitSystem]:
    out = []
    for lo, hi in ((0.01, 0.05), (0.3, 0.5), (0.9, 0.93), (0.9995, 0.99975)):
        c_inf, c_zero = vr.clone_rates(lo, eps0)[0], vr.clone_rates(hi, eps0)[1]
        for tier in vr.SPLIT_TIERS:
            out.append((rate_up(hi, ulps=sc.PARAMETER_ULPS), c_inf, c_zero, *tier))
    return out


def _same(a: Sequence[FloatArray | float], b: Sequence[FloatArray | float]) -> bool:
    return all(
        np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(a, b, strict=True)
    )


def _layouts(
    n: int, systems: Sequence[sc.SplitSystem], log_tail: float, *, trimmed: bool
) -> list[tuple[FloatArray | float, ...]]:
    """The layouts of ``systems`` one at a time and stacked, with or without the trim."""
    patch = pytest.MonkeyPatch()
    if not trimmed:
        patch.setattr(sc, "_used_columns", _every_column)
    try:
        alone = [sc._build_layouts(n, [s], log_tail)[0] for s in systems]
        stacked = sc._build_layouts(n, systems, log_tail)
    finally:
        patch.undo()
    return [*alone, *stacked]


@pytest.mark.parametrize(
    ("n", "eps0", "log_tail", "kind"),
    [
        (1000, 4.0, -63.0, "reveal"),
        (1000, 8.0, -54.0, "reveal"),
        (10_000, 8.0, -63.0, "reveal"),
        (1000, 0.5, -54.0, "cells"),
        (10_000, 2.0, -730.0, "cells"),
        (10**6, 1.0, -63.0, "cells"),
    ],
)
def test_layouts_on_the_used_columns_keep_their_floats(
    n: int, eps0: float, log_tail: float, kind: str
) -> None:
    # every fourth revealed-class cell: stacked, the 56 of them take 10 s
    systems = _reveal_systems(eps0)[::4] if kind == "reveal" else _cell_systems(eps0)
    trimmed = _layouts(n, systems, log_tail, trimmed=True)
    full = _layouts(n, systems, log_tail, trimmed=False)
    assert all(_same(a, b) for a, b in zip(trimmed, full, strict=True))
    # the comparison sees one system's informative rate 1 % lower
    mu, c_inf, c_zero, c_points, s_points, eta = systems[0]
    changed = sc._build_layouts(n, [(mu, 0.99 * c_inf, c_zero, c_points, s_points, eta)], log_tail)[
        0
    ]
    assert not _same(changed, full[0])


def test_the_revealed_class_layouts_are_trimmed() -> None:
    """Not vacuous: at n = 1e3 most of the revealed-class systems' columns are skipped."""
    seen: list[tuple[int, int]] = []
    inner = used_columns

    def spy(points: Sequence[int], *rest: FloatArray) -> list[int]:
        used = inner(points, *rest)
        seen.extend(zip(points, used, strict=True))
        return used

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sc, "_used_columns", spy)
        sc._build_layouts(1000, _reveal_systems(4.0), -63.0)
    assert sum(u for _, u in seen) < 0.6 * sum(p for p, _ in seen)


@pytest.mark.parametrize(("eps0", "delta"), [(4.0, 1e-10), (8.0, 1e-6)])
def test_revealed_class_member_values_are_unchanged(eps0: float, delta: float) -> None:
    """End to end: the revealed-class members' log δ, the same floats either way."""
    n, kappa, tail = 1000, kappa_up(eps0), math.log(delta) - 40.0
    cells = piecewise_reveal_cells(eps0)[1]

    def values() -> list[float]:
        sc._layout.cache_clear()
        return [
            mech._reveal_member(n, kappa, mu, c_inf, (w, gamma), 0.6 * eps0, tail)
            for mu, c_inf, w, gamma in cells
        ]

    trimmed = values()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sc, "_used_columns", _every_column)
        full = values()
    sc._layout.cache_clear()
    assert trimmed == full


def test_padded() -> None:
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert np.array_equal(padded(x, 4, np.array([[7.0], [8.0]])), [[1, 2, 7, 7], [3, 4, 8, 8]])
    assert np.array_equal(padded(x, 1, -np.inf), [[1.0], [3.0]])
