"""The reduced pairs' evaluators (``accounting/shuffle/_pairs.py``): caching keeps values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting import binomial_rows
from crowdhide.accounting.binomial_rows import (
    RowSuffixSums,
    RowWindows,
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


def _former_excess(rows: RowWindows, theta: np.ndarray, sums: RowSuffixSums) -> np.ndarray:
    """``row_log_excess_above`` as it was before s31-krr: one pass over the whole matrix,
    the next column's suffix sum through a clipped index and a ``where``."""
    width = rows.log_pmf.shape[1]
    lo = rows.lo[:, None]
    idx = np.minimum(np.maximum(np.floor(theta) + 1.0 - lo, 0.0), width).astype(np.int64)
    first = np.minimum(idx.min(axis=1), width - 1)
    shift, sf_rev, ss_rev = sums.sums(first)
    floor = width * 1e-300
    inside = idx < width
    safe = np.minimum(idx, width - 1)
    at = (width - 1 - safe) + (np.arange(rows.log_pmf.shape[0]) * width)[:, None]
    sf_at = sf_rev.ravel()[at] + floor
    ss_at = np.where(safe < width - 1, ss_rev.ravel()[np.maximum(at - 1, 0)], 0.0)
    ss_at = ss_at + width * floor
    body = (np.maximum(lo + safe - theta, 0.0) * sf_at + ss_at) * inside
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(body) + shift[:, None])


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
        excess = _former_excess(chunk.a_rows, theta, RowSuffixSums(chunk.a_rows))
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


@pytest.mark.parametrize("block", [1, 700, 16_384, 10**9])
def test_row_excess_in_blocks_keeps_the_floats(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``row_log_excess_above`` takes its rows a block at a time (issue 32, s31-krr): the
    floats of the former one-pass computation, whatever the block, on windows of many
    widths and thresholds below, inside and beyond each row's support."""
    monkeypatch.setattr(binomial_rows, "_BLOCK_CELLS", block)
    rng = np.random.default_rng(3)
    table = gammaln_table(5000)
    for _ in range(25):
        n = int(rng.integers(5, 3000))
        count = int(rng.integers(1, 60))
        s = np.sort(rng.integers(0, n, count)).astype(np.float64)
        rows = row_windows(s, 0.5, -float(rng.uniform(5.0, 700.0)), table)
        columns = int(rng.integers(1, 300))
        theta = s[:, None] * rng.uniform(-0.2, 1.3, (count, columns)) + rng.uniform(-3.0, 3.0)
        new = row_log_excess_above(rows, theta, s, sums=RowSuffixSums(rows))
        assert np.array_equal(new, _former_excess(rows, theta, RowSuffixSums(rows)))
