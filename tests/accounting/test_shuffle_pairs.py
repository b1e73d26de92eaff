"""The reduced pairs' evaluators (``accounting/shuffle/_pairs.py``): caching keeps values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.binomial_rows import (
    RowSuffixSums,
    gammaln_table,
    row_log_excess_above,
    row_windows,
    rowwise_logsumexp,
)
from crowdhide.accounting.logmath import logsumexp
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


def _former_third_log_delta(n: int, k: int, eps0: float, eps: float, tail: float) -> float:
    """``krr_third_log_delta`` as it was before s31-krr: each chunk's whole c window, its
    terms summed by ``rowwise_logsumexp`` (the layout's s rows and a windows, c rebuilt)."""
    layout = pairs._third_value_layout(n, k, eps0, tail)
    p, q, e = pairs._krr_params(k, eps0)
    p_z = min(p / (1.0 - 2.0 * q), 1.0) if k > 3 else 1.0
    table = gammaln_table(n + 3)
    big, em1, shrink = math.exp(eps), math.expm1(eps0), -math.expm1(-eps0)
    parts = []
    for chunk in layout.chunks:
        s = chunk.s
        c_rows = row_windows(n - s, p_z, tail, table)
        cs = c_rows.values
        theta = (math.expm1(eps) * (n - cs * shrink) / em1 + big * s[:, None]) / (1.0 + big)
        excess = row_log_excess_above(chunk.a_rows, theta, s, sums=RowSuffixSums(chunk.a_rows))
        inner = rowwise_logsumexp(c_rows.log_pmf + excess)
        parts.append(np.logaddexp(inner, chunk.log_outside))
    scale = math.log(em1) + math.log1p(big) - math.log(n)
    total = float(logsumexp(layout.s_log_pmf + np.concatenate(parts))) + scale
    for extra in layout.log_tails:
        total = float(np.logaddexp(total, extra + math.log(e)))
    return total + layout.rounding


@pytest.mark.parametrize(
    ("n", "k", "eps0", "tail"),
    [(1000, 10, 2.0, -432.44), (1000, 100, 2.0, -432.44), (1000, 4, 1.0, -432.44),
     (1000, 16, 0.5, -432.44), (300, 3, 4.0, -100.0), (100, 10, 4.0, -50.0),
     (50, 5, 8.0, -700.0)],
)  # fmt: skip
def test_third_value_kept_columns_keep_the_floats(n: int, k: int, eps0: float, tail: float) -> None:
    """The third-value dataset sums each chunk over the c columns that hold mass (issue 32,
    s31-krr: the window is up to twice the support at δ = 1e-300): the same floats as the
    whole window, from ε near 0 to near ε0 (where few cells are left)."""
    for eps in np.linspace(0.01, 0.99 * eps0, 6):
        new = pairs.krr_third_log_delta(n, k, eps0, float(eps), tail)
        assert new == _former_third_log_delta(n, k, eps0, float(eps), tail), (eps, new)
