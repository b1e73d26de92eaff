"""The reduced pairs' evaluators (``accounting/shuffle/_pairs.py``): caching keeps values."""

from __future__ import annotations

import pytest

from crowdhide.accounting.shuffle import _pairs as pairs


@pytest.mark.parametrize(("n", "k", "eps0"), [(100, 10, 4.0), (1000, 4, 1.0), (1000, 3, 0.5)])
def test_third_value_curve_is_the_same_with_its_windows_kept_or_rebuilt(
    n: int, k: int, eps0: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = -50.0
    assert pairs._third_value_cells(n, k, eps0, tail) <= pairs._LAYOUT_CACHE_CELLS
    kept = [pairs.krr_third_log_delta(n, k, eps0, eps, tail) for eps in (0.05, 0.2, 0.2, 1.0)]
    monkeypatch.setattr(pairs, "_LAYOUT_CACHE_CELLS", 0)
    rebuilt = [pairs.krr_third_log_delta(n, k, eps0, eps, tail) for eps in (0.05, 0.2, 0.2, 1.0)]
    assert kept == rebuilt


def test_the_cell_estimate_covers_the_layout() -> None:
    for n, k, eps0 in [(100, 10, 4.0), (1000, 4, 1.0), (3000, 3, 0.5)]:
        layout = pairs._third_value_layout(n, k, eps0, -60.0)
        cells = sum(c.a_rows.values.size + c.c_values.size for c in layout.chunks)
        assert cells <= pairs._third_value_cells(n, k, eps0, -60.0)
