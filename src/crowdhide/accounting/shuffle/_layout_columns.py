"""The s-block columns of a split-clone layout that can hold a block (internal; issue 32).

:func:`~crowdhide.accounting.shuffle._split_clone._build_layouts` gives each system
``points`` s-block columns per clone-count row. Where every row's s range is shorter than
that, its blocks are one s wide and the columns past the longest range are empty in every
row: they are not computed (:func:`used_columns`) but filled afterwards with the values an
empty block gets (:func:`padded`), so the layout has the shape and the floats it had
(tests/accounting/test_split_clone_columns.py). At n = 1e3 the piecewise mechanism's
revealed-class systems left about two thirds of their 192 columns empty. :func:`split_rows`
cuts each row's s range into its blocks. :func:`column_groups` splits a stack of systems into
groups padded alike (s31-pw).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.shuffle._krr_fast import CLONE_EXACT

__all__ = ["clone_width", "column_groups", "padded", "split_rows", "used_columns"]

FloatArray = npt.NDArray[np.float64]


def clone_width(lo: int, size: int, *, c_points: int, eta: float, big_l: float) -> int:
    """Clone-count block width: only as fine as needed (as in the one-rate evaluator): a
    relative change η/L of the count, or of g, across a block moves log h by about η. Small
    windows: every count. A block is taken at its smallest count: δ is non-increasing in C."""
    points = min(c_points, max(math.ceil(size / max(1.0, eta * lo / big_l)), 1))
    return -(-size // points) if size > max(points, CLONE_EXACT) else 1


def used_columns(
    points: Sequence[int], spans: FloatArray, starts: npt.ArrayLike, ends: npt.ArrayLike
) -> list[int]:
    """Per system, the s-block columns that can hold a block: its ``points``, or the longest
    of its rows' s ranges where shorter (``spans``: the length per row; system i has the
    rows ``starts[i]:ends[i]``). A row of span ``r <= points`` has blocks one s wide with
    ``points`` or with any count from ``r`` up, so its first ``r`` columns are the same
    blocks and the rest are empty; a row of span ``r > points`` keeps ``points``.

    Examples
    --------
    >>> used_columns([192, 8], np.array([40.0, 55.0, 300.0]), [0, 2], [2, 3])
    [55, 8]
    """
    bounds = zip(np.asarray(starts).tolist(), np.asarray(ends).tolist(), strict=True)
    return [min(p, max(int(spans[a:b].max()), 1)) for p, (a, b) in zip(points, bounds, strict=True)]


def padded(x: FloatArray, width: int, pad: float | FloatArray) -> FloatArray:
    """``x`` cut or padded to ``width`` columns with ``pad`` (a float, or a column: one value
    per row), as a new contiguous array.

    Examples
    --------
    >>> padded(np.array([[1.0, 2.0], [3.0, 4.0]]), 3, np.array([[7.0], [8.0]])).tolist()
    [[1.0, 2.0, 7.0], [3.0, 4.0, 8.0]]
    """
    out = np.empty((x.shape[0], width))
    used = min(width, x.shape[1])
    out[:, :used] = x[:, :used]
    out[:, used:] = pad
    return out


def split_rows(
    lo: FloatArray, hi: FloatArray, points: FloatArray, columns: int
) -> tuple[FloatArray, FloatArray]:
    """:func:`~crowdhide.accounting.shuffle._krr_fast._split` with each row's own number of
    blocks ``points`` (the same floats), padded to ``columns``: a row's blocks past its own
    number start past ``hi`` (``points`` blocks of the width span the row), so are empty."""
    width = np.maximum(np.ceil((hi - lo + 1.0) / points), 1.0)
    j = np.arange(columns, dtype=np.float64)[None, :]
    start = lo[:, None] + j * width[:, None]
    end = np.minimum(start + width[:, None] - 1.0, hi[:, None])
    return start, end


#: Fixed cost of one stacked block stage of ``_build_layouts`` in padded blocks (a few ms of
#: array steps on any shape, against about 0.4 µs per block: measured at n = 1e3 … 1e9).
GROUP_COST_BLOCKS = 10_000


def column_groups(used: Sequence[int], rows: Sequence[int]) -> list[list[int]]:
    """The systems (indices into ``used``, their columns, and ``rows``, their clone-count
    rows) in groups whose blocks are computed in one stacked call each, every system's rows
    padded to its group's most columns: the cheapest split into runs of the systems sorted by
    their columns, each run costing :data:`GROUP_COST_BLOCKS` plus its rows times its most
    columns (issue 32: the piecewise mechanism's 46 revealed-class cells at n = 1e3 padded to
    160 columns where most use 46 cost more stacked than one at a time). Only a cost choice:
    every step of a layout is elementwise or within a row, so each has the floats it has
    alone (tests/accounting/test_split_clone_batch.py).

    Examples
    --------
    >>> column_groups([46, 160, 47], [225, 236, 225])
    [[0, 2], [1]]
    >>> column_groups([48, 64, 64], [16, 512, 512])
    [[0, 1, 2]]
    """
    order = sorted(range(len(used)), key=lambda i: (used[i], i))
    # best[j]: least cost of the first j systems in order; cut[j]: where its last run starts
    best, cut = [0.0] + [float("inf")] * len(order), [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):
        stacked = 0
        for i in range(j, 0, -1):  # the run order[i - 1 : j], padded to used[order[j - 1]]
            stacked += rows[order[i - 1]]
            cost = best[i - 1] + GROUP_COST_BLOCKS + stacked * used[order[j - 1]]
            if cost < best[j]:
                best[j], cut[j] = cost, i - 1
    groups, j = [], len(order)
    while j > 0:
        groups.append(sorted(order[cut[j] : j]))
        j = cut[j]
    return sorted(groups)
