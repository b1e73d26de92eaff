"""Block masses of the split layout from cumulative ratio steps (internal, issue 32).

:func:`crowdhide.accounting.shuffle._split_clone._build_layouts` needs, per row (a clone
count C) and per block ``[a, b]`` of ``s = T + I`` (``T ~ Ber(μ)``, ``I ~ Bin(C, μ')``), an
upper bound on the block's mass. Two incomplete betas per block edge cost most of a layout
where the rows' windows are short; here a row's weights come from the exact ratio
recurrence ``pmf(k+1)/pmf(k) = (C − k) μ' / ((k + 1)(1 − μ'))``, multiplied out from the
row's mode (weight 1) in both directions, and are **normalised to sum to one over the row's
range**. The true pmf is the same relative weights divided by the total mass (1) of
Bin(C, μ'), at least their sum over the range, so the normalised weights are at least the
true ones: no log-gamma anchor, and every weight is at most about 1 (no overflow).

The floating-point error is bounded per row (:func:`cumulative_error`: a relative part and
an absolute part for underflow) and added to each block's mass, so the result is at least
the true mass. The proof is docs/proofs/variation-ratio.md, §7.1.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.logmath import MACHINE_EPSILON

FloatArray = npt.NDArray[np.float64]

__all__ = ["cumulative_error", "cumulative_log_masses", "cumulative_rows"]

#: Rows whose range of I (``last − first + 2`` points) is at most this many points per
#: block that needs a mass (plus one) take their block masses from
#: :func:`cumulative_log_masses`, the others keep the incomplete betas: a row costs
#: O(points) array steps here (110-340 ns per point measured, in groups) against about four
#: incomplete betas and their error bounds per block there (1.0-2.0 µs per block).
POINTS_PER_BLOCK = 10.0
#: ... and at most this many points (the padded arrays of a group of rows stay small).
CUMULATIVE_MAX_POINTS = 8192


def cumulative_rows(points: FloatArray, blocks: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which rows (``points`` in their I range, ``blocks`` needing a mass) take their masses
    from :func:`cumulative_log_masses` (:data:`POINTS_PER_BLOCK`): a cost choice only, both
    ways give upper bounds."""
    limit = np.minimum(POINTS_PER_BLOCK * (blocks + 1.0), CUMULATIVE_MAX_POINTS)
    return np.asarray(points <= limit)


#: Factor of spare on the error model of :func:`cumulative_error` (each term is bounded to
#: first order; the factor covers the second-order terms such as ``(1 + u)^k − 1 − k u``).
ERROR_SPARE = 2.0

#: Rows are processed in groups of similar length (up to this ratio between the longest and
#: the shortest), each padded only to its own longest: the widths differ by 100x between
#: the systems stacked in one call.
WIDTH_GROUP = 2.0


def cumulative_error(points: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per row of ``points`` points (m), ``(relative, absolute)``: a block mass of
    :func:`cumulative_log_masses` before its allowance, raised to ``mass (1 + relative) +
    absolute``, is at least the block's mass under the normalised exact weights
    (``u = 2^-52``; docs/proofs/variation-ratio.md, §7.1):

    * a ratio step ``((C − k)/(k + 1)) · (μ'/(1 − μ'))`` (or its inverse) carries at most 5
      roundings and the running product one more, so a weight at most m − 1 steps from the
      mode is within ``(1 ± u)^{6m}`` of its exact value while it is a normal float;
    * a block sum and the row's normaliser (at most m positive terms) add ``(1 ± u)^m``
      each, their quotient, the mixture ``μ M_1 + (1 − μ) M_0`` and the log that follows
      (``|log mass| <= 750``) about ``(6 + 750) u``: relative ``u (14m + 756)``, times
      :data:`ERROR_SPARE`;
    * below the normal range each rounding errs by at most ``2^-1075`` absolute and the
      following steps (ratios below 1 away from the mode) do not magnify it: at most
      ``3m · 2^-1074`` per weight, ``8 m² 2^-1074`` per block after dividing by the
      normaliser (at least 1/2); ``m² · 1e-322`` holds it with room.

    Examples
    --------
    >>> rel, ab = cumulative_error(np.array([4000.0]))
    >>> bool(1e-11 < rel[0] < 1e-10 and ab[0] < 1e-314)
    True
    """
    relative = ERROR_SPARE * MACHINE_EPSILON * (14.0 * points + 756.0)
    return np.asarray(relative, dtype=np.float64), np.asarray(points**2 * 1e-322)


def _row_weights(
    counts: FloatArray, p: FloatArray, start: FloatArray, last: FloatArray, width: int
) -> FloatArray:
    """Per row the weights of Bin(C, p) on ``start + 0..width-1`` relative to the mode's
    (0 past the row's range ``[start, last]`` or past C), normalised to sum to one: from
    the mode rightwards by ``(C − k) p/((k + 1)(1 − p))``, leftwards by its inverse
    ``(k + 1)(1 − p)/((C − k) p)``, as running products (every factor past the mode is at
    most 1 up to rounding, so no weight overflows)."""
    j = np.arange(width, dtype=np.float64)[None, :]
    k = start[:, None] + j
    mode = np.clip(np.floor((counts + 1.0) * p), start, last)[:, None] - start[:, None]
    odds = (p / (1.0 - p))[:, None]
    # C − (k − 1) is (C − k) + 1 exactly (integers below 2^53): one difference for both
    # factors, and the steps in place (issue 32: the same floats in fewer passes)
    gap = counts[:, None] - k
    with np.errstate(divide="ignore", invalid="ignore"):
        # factor of column j: w(j)/w(j − 1) right of the mode, w(j)/w(j + 1) left of it
        up = gap + 1.0
        np.divide(up, k, out=up)
        np.multiply(up, odds, out=up)
        down = k + 1.0
        np.divide(down, gap, out=down)
        np.divide(down, odds, out=down)
    # a row's columns inside its range are a prefix (k rises along it), so a factor right of
    # the mode past the range only reaches running products past it, which are set to 0
    # below: it need not be 0 itself (the same floats in the range)
    inside = k <= np.minimum(last, counts)[:, None]
    right = np.where(j > mode, up, 1.0)
    left = np.where(j < mode, down, 1.0)
    weights = np.cumprod(right, axis=1, out=right)
    weights *= np.cumprod(left[:, ::-1], axis=1)[:, ::-1]
    weights = np.where(inside, weights, 0.0)
    # a sequential sum (the last running sum): the padding's zeros at the end leave a row's
    # float as it is alone, unlike a pairwise sum over the padded length
    total = np.cumsum(weights, axis=1)[:, -1]
    return np.asarray(weights / total[:, None], dtype=np.float64)


def _block_sums(
    weights: FloatArray, columns: tuple[FloatArray, FloatArray], live: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """Per live block the sums of ``weights`` over its columns ``[begin, end]`` of its row and
    over ``[begin + 1, end + 1]`` (0 elsewhere): one ``add.reduceat`` over the flattened rows
    (issue 32: one call for both, was one each), a block's ``begin, end + 1, begin + 1,
    end + 2`` as consecutive indices. Each sum is a reduction over the same stretch of the
    same array as a call of its own gives it (the same floats); the segments between (from
    ``end + 1`` to ``begin + 1``, or to the next block) are not used."""
    rows, width = weights.shape
    flat = np.concatenate([weights.ravel(), np.zeros(2)])
    base = (np.arange(rows, dtype=np.int64) * width)[:, None]
    begin = (base + columns[0].astype(np.int64))[live]
    end = (base + columns[1].astype(np.int64))[live] + 1
    indices = np.empty(4 * begin.size, dtype=np.int64)
    indices[0::4], indices[1::4] = begin, end
    indices[2::4], indices[3::4] = begin + 1, end + 1
    here, shifted = np.zeros(live.shape), np.zeros(live.shape)
    if begin.size:
        sums = np.add.reduceat(flat, indices)
        here[live], shifted[live] = sums[0::4], sums[2::4]
    return here, shifted


def cumulative_log_masses(
    counts: FloatArray,
    p: FloatArray,
    mu: FloatArray,
    s_range: tuple[FloatArray, FloatArray],
    blocks: tuple[FloatArray, FloatArray],
    live: npt.NDArray[np.bool_],
) -> FloatArray:
    """Upper bounds on the log masses of the ``live`` blocks ``[s_start, s_end]`` of
    ``s = T + I`` (−inf elsewhere), ``T ~ Ber(μ)``, ``I ~ Bin(C, p)``, one row per count C
    (``counts``, ``p`` and ``mu`` per row, ``mu`` a column), every block of a row inside its
    ``s_range`` ``[first, last]`` (``first >= 1``, ``first − 1 <= ⌊(C + 1) p⌋ <= last``: the
    mode inside), the live blocks of a row contiguous. The row's I range is
    ``[first − 1, last]``; the allowance of :func:`cumulative_error` is added and the result
    capped at 0 (a mass is at most 1). Rows are grouped by length (:data:`WIDTH_GROUP`).

    Examples
    --------
    >>> from scipy.stats import binom
    >>> one = np.array([1.0])
    >>> got = cumulative_log_masses(np.array([10.0]), np.array([0.3]), np.array([[0.5]]),
    ...     (one, np.array([11.0])), (np.array([[1.0, 4.0]]), np.array([[3.0, 11.0]])),
    ...     np.array([[True, True]]))
    >>> exact = [0.5 * (binom.cdf(2, 10, 0.3) + binom.cdf(3, 10, 0.3) - binom.pmf(0, 10, 0.3)),
    ...          0.5 * (binom.sf(2, 10, 0.3) + binom.sf(3, 10, 0.3))]
    >>> bool(np.all(np.exp(got[0]) >= exact) and np.all(np.exp(got[0]) <= np.array(exact) * 1.001))
    True
    """
    first, last = s_range
    points = last - first + 2.0
    out = np.full(live.shape, -np.inf)
    group = np.floor(np.log(points) / np.log(WIDTH_GROUP))
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        width = int(points[rows].max())
        weights = _row_weights(counts[rows], p[rows], first[rows] - 1.0, last[rows], width)
        col = first[rows][:, None]
        s_start, s_end, alive = blocks[0][rows], blocks[1][rows], live[rows]
        # s = I + 1 (T = 1) sits at column s − first, s = I (T = 0) one column further right
        m1, m0 = _block_sums(weights, (s_start - col, s_end - col), alive)
        relative, absolute = cumulative_error(points[rows])
        mass = (mu[rows] * m1 + (1.0 - mu[rows]) * m0) * (1.0 + relative[:, None])
        with np.errstate(divide="ignore"):
            log_mass = np.log(mass + absolute[:, None])
        out[rows] = np.where(alive, np.minimum(log_mass, 0.0), -np.inf)
    return out
