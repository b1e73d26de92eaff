"""The s-block columns of a split-clone layout that can hold a block (internal; issue 32).

:func:`~crowdhide.accounting.shuffle._split_clone._build_layouts` gives each system
``points`` s-block columns per clone-count row. Where every row's s range is shorter than
that, its blocks are one s wide and the columns past the longest range are empty in every
row: they are not computed (:func:`used_columns`) but filled afterwards with the values an
empty block gets (:func:`padded`), so the layout has the shape and the floats it had
(tests/accounting/test_split_clone_columns.py). At n = 1e3 the piecewise mechanism's
revealed-class systems left about two thirds of their 192 columns empty. :func:`split_rows`
cuts each row's s range into its blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["padded", "split_rows", "used_columns"]

FloatArray = npt.NDArray[np.float64]


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
