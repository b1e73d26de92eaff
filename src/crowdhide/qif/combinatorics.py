"""Datasets, histograms and multinomials for the shuffle model (Jurado et al., §II–III).

A dataset is a tuple ``x ∈ {0..k-1}^n`` (value ``v`` stands for the ``v``-th element of the
value set); its histogram counts each value. Datasets are enumerated in lexicographic order
and histograms in decreasing lexicographic order (``(n, 0, …)`` first), as in Table I of the
paper. Enumerations are guarded by :data:`MAX_ENUMERATION` so that nobody builds a ``k^n``
object by accident: the analytic functions of :mod:`crowdhide.qif.shuffle` never enumerate.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from crowdhide._validation import check_int
from crowdhide.errors import InvalidParameterError, ResourceLimitError

__all__ = [
    "MAX_ENUMERATION",
    "check_size",
    "dataset_histograms",
    "datasets",
    "histograms",
    "log_multinomial",
    "multinomial",
    "n_histograms",
]

#: Largest number of datasets/histograms (or matrix entries, for channels) built explicitly.
MAX_ENUMERATION = 1 << 24

IntArray = npt.NDArray[np.int64]


def check_size(what: str, size: int, *, limit: int = MAX_ENUMERATION) -> None:
    """Refuse to enumerate more than ``limit`` objects, naming what would be built."""
    if size > limit:
        raise ResourceLimitError(
            f"{what} would have {size} entries (limit {limit}); use the reduced/analytic "
            "functions of crowdhide.qif.shuffle instead of explicit enumeration"
        )


def check_power_size(what: str, base: int, exponent: int, *, limit: int) -> None:
    """:func:`check_size` for ``base ** exponent`` entries, decided in log space first.

    The exact integer ``base ** exponent`` takes minutes to compute for ``base`` and
    ``exponent`` near 1e6; the logarithm refuses such inputs at once.
    """
    if exponent * math.log(max(base, 1)) > math.log(limit) + 1.0:
        raise ResourceLimitError(
            f"{what} would have about 10^{exponent * math.log10(max(base, 1)):.0f} entries "
            f"(limit {limit}); use the reduced/analytic functions of crowdhide.qif.shuffle"
        )
    check_size(what, base**exponent, limit=limit)


def _check_nk(n: Any, k: Any) -> tuple[int, int]:
    return check_int("n", n, low=1), check_int("k", k, low=2)


def datasets(*, n: int, k: int) -> IntArray:
    """All ``k^n`` datasets as rows of an ``(k^n, n)`` array, lexicographic order.

    Examples
    --------
    >>> datasets(n=2, k=2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    n, k = _check_nk(n, k)
    check_size(f"the dataset space {k}^{n}", k**n)
    grid = np.indices((k,) * n).reshape(n, -1).T
    return np.ascontiguousarray(grid, dtype=np.int64)


def n_histograms(*, n: int, k: int) -> int:
    """Number of histograms (weak compositions of ``n`` into ``k`` parts), ``C(n+k-1, k-1)``.

    Examples
    --------
    >>> n_histograms(n=6, k=3)
    28
    """
    n = check_int("n", n, low=0)
    k = check_int("k", k, low=1)
    return math.comb(n + k - 1, k - 1)


def histograms(*, n: int, k: int) -> IntArray:
    """All histograms of ``n`` items over ``k`` values, decreasing lexicographic order.

    Examples
    --------
    >>> histograms(n=3, k=2).tolist()
    [[3, 0], [2, 1], [1, 2], [0, 3]]
    """
    n = check_int("n", n, low=0)
    k = check_int("k", k, low=1)
    check_size(f"the histogram space of n={n}, k={k}", n_histograms(n=n, k=k))
    # Stars and bars: bar positions in increasing lexicographic order give h_0 increasing.
    bars = np.array(list(itertools.combinations(range(n + k - 1), k - 1)), dtype=np.int64)
    bars = bars.reshape(-1, k - 1)
    edges = np.hstack(
        [np.full((bars.shape[0], 1), -1), bars, np.full((bars.shape[0], 1), n + k - 1)]
    )
    hists = np.diff(edges, axis=1) - 1
    return np.ascontiguousarray(hists[::-1], dtype=np.int64)


def dataset_histograms(data: IntArray, *, k: int) -> IntArray:
    """Histogram of every row of ``data`` (vectorized).

    Examples
    --------
    >>> dataset_histograms(np.array([[0, 0, 1], [1, 1, 1]]), k=2).tolist()
    [[2, 1], [0, 3]]
    """
    k = check_int("k", k, low=1)
    arr = np.asarray(data, dtype=np.int64)
    if arr.ndim != 2 or (arr.size and (arr.min() < 0 or arr.max() >= k)):
        raise InvalidParameterError(f"data must be a 2-D array of values in [0, {k - 1}]")
    counts: IntArray = (arr[:, :, None] == np.arange(k)[None, None, :]).sum(axis=1)
    return counts.astype(np.int64)


def multinomial(n: int, counts: Any) -> int:
    """Exact multinomial coefficient ``n! / Π counts_v!`` (``|[x]|`` of the paper).

    Examples
    --------
    >>> multinomial(3, (2, 1))
    3
    """
    counts = [int(c) for c in counts]
    if sum(counts) != n or min(counts, default=0) < 0:
        raise InvalidParameterError(f"counts must be non-negative and sum to n={n}, got {counts}")
    result = math.factorial(n)
    for c in counts:
        result //= math.factorial(c)
    return result


def log_multinomial(n: Any, counts: Any) -> npt.NDArray[np.float64]:
    """``log(n! / Π counts_v!)`` along the last axis, vectorized (``gammaln``)."""
    counts_arr = np.asarray(counts, dtype=np.float64)
    return np.asarray(
        gammaln(np.asarray(n, dtype=np.float64) + 1.0) - gammaln(counts_arr + 1.0).sum(axis=-1)
    )
