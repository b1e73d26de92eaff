"""The split system's layout takes its block masses from tails at shared block edges
(``_split_clone._edge_masses``, issue 32: a quarter of the incomplete betas). It must give
the very floats of :func:`block_masses` on every live block: checked over a grid of layouts
against the layout built with one :func:`block_masses` call per range, and the check is
shown to catch an edge taken one column off."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.binomial_tails import block_masses
from crowdhide.accounting.shuffle import _split_clone as sc
from crowdhide.accounting.shuffle.variation_ratio import SPLIT_TIERS, clone_rates

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _one(p: float | FloatArray) -> float:
    """The rate of a layout built alone (stacked layouts pass it per row: one value here)."""
    values = np.unique(np.asarray(p))
    assert values.size == 1
    return float(values[0])


def _reference(
    counts: FloatArray,
    p: float | FloatArray,
    s_start: FloatArray,
    s_end: FloatArray,
    live: BoolArray,
    shift: float,
) -> FloatArray:
    lo, hi = np.asarray(s_start - shift), np.asarray(s_end - shift)
    mass = block_masses(counts, _one(p), lo, hi, upper=True)
    return np.asarray(np.where(live, mass, 0.0))


def _off_by_one(
    counts: FloatArray,
    p: float | FloatArray,
    s_start: FloatArray,
    s_end: FloatArray,
    live: BoolArray,
    shift: float,
) -> FloatArray:
    # every block's upper edge read one count too high: must be caught
    lo, hi = np.asarray(s_start - shift), np.asarray(s_end - shift + 1.0)
    mass = block_masses(counts, _one(p), lo, hi, upper=True)
    return np.asarray(np.where(live, mass, 0.0))


def _cases() -> Iterator[tuple[int, float, float, float, float, int, float]]:
    for n in (50, 1_000, 10_000, 10**6, 10**9):
        for eps0 in (0.5, 2.0, 6.0):
            for lo, hi in ((0.05, 0.15), (0.5, 0.7), (0.96, 0.985), (0.999, 0.9995)):
                for tier in range(len(SPLIT_TIERS)):
                    c_inf, c_zero = clone_rates(lo, eps0)[0], clone_rates(hi, eps0)[1]
                    yield n, hi, c_inf, c_zero, -63.0 if n > 50 else -30.0, tier, eps0


def _layouts(monkeypatch: pytest.MonkeyPatch, masses: object) -> list[tuple[FloatArray, ...]]:
    out = []
    with monkeypatch.context() as patch:
        if masses is not None:
            patch.setattr(sc, "_edge_masses", masses)
        for n, mu, c_inf, c_zero, log_tail, tier, _ in _cases():
            sc._layout.cache_clear()
            c_points, s_points, eta = SPLIT_TIERS[tier]
            layout = sc._layout(n, mu, c_inf, c_zero, log_tail, c_points, s_points, eta)
            out.append(tuple(np.atleast_1d(np.asarray(part)) for part in layout))
    sc._layout.cache_clear()
    return out


def _same(a: list[tuple[FloatArray, ...]], b: list[tuple[FloatArray, ...]]) -> bool:
    return all(
        x.shape == y.shape and np.array_equal(x, y)
        for one, other in zip(a, b, strict=True)
        for x, y in zip(one, other, strict=True)
    )


def test_edge_masses_give_the_floats_of_block_masses(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _layouts(monkeypatch, None)
    assert _same(fast, _layouts(monkeypatch, _reference))
    # the comparison sees an edge off by one count
    assert not _same(fast, _layouts(monkeypatch, _off_by_one))


def test_grid_has_wide_blocks_and_both_tail_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grid above exercises live blocks wider than one count (where edges are shared)
    on both sides of the mean (upper and lower tails)."""
    seen = {"wide": False, "upper": False, "lower": False}

    def recording(
        counts: FloatArray,
        p: float | FloatArray,
        s_start: FloatArray,
        s_end: FloatArray,
        live: BoolArray,
        shift: float,
    ) -> FloatArray:
        upper = (s_start - shift) > counts * p
        seen["wide"] |= bool((live & (s_end > s_start))[:, 1:].any())
        seen["upper"] |= bool((live & upper).any())
        seen["lower"] |= bool((live & ~upper).any())
        return _reference(counts, p, s_start, s_end, live, shift)

    _layouts(monkeypatch, recording)
    assert all(seen.values()), seen
