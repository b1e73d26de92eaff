"""Histogram estimators for locally randomized reports and distances between histograms.

* :func:`inversion_histogram_estimate` — the matrix-inversion estimator: the report
  distribution is ``o = f C`` for a row-stochastic channel C (row = true value), so
  ``f̂ = o C⁻¹`` is unbiased; it is then projected onto the probability simplex (the
  projection is post-processing, so it costs no privacy, and never increases the L2 error to
  any distribution).
* :func:`project_to_simplex` — Euclidean projection onto ``{x >= 0, Σ x = total}`` by the
  sort-and-threshold algorithm (Held, Wolfe, Crowder 1974; Duchi et al., ICML 2008),
  O(k log k).
* :func:`total_variation_distance` — ``½ Σ |p − q|``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_bool, check_real
from crowdhide.errors import InvalidParameterError, ParameterTypeError
from crowdhide.mechanisms.arrays import as_count_vector

__all__ = ["inversion_histogram_estimate", "project_to_simplex", "total_variation_distance"]


def _as_vector(name: str, values: Any) -> npt.NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iufb":
        raise ParameterTypeError(
            f"{name} must be a numeric vector, got dtype {arr.dtype}", parameter=name
        )
    vec = arr.astype(np.float64)
    if vec.ndim != 1:
        raise InvalidParameterError(
            f"{name} must be one-dimensional, got shape {vec.shape}", parameter=name
        )
    if vec.size == 0:
        raise InvalidParameterError(f"{name} must not be empty, got an empty array", parameter=name)
    if not np.isfinite(vec).all():
        raise InvalidParameterError(
            f"{name} must be finite, got {vec[~np.isfinite(vec)][:3]!r}", parameter=name
        )
    return vec


def project_to_simplex(v: npt.ArrayLike, *, total: float = 1.0) -> npt.NDArray[np.float64]:
    """Euclidean projection of ``v`` onto ``{x : x >= 0, Σ x = total}``.

    The projection is ``x = max(v − θ, 0)`` with the unique θ making the sum equal to
    ``total``; θ is found from the sorted values in O(k log k).

    Parameters
    ----------
    v
        Finite 1-D vector.
    total
        Sum of the result, > 0 (1 for a probability distribution).

    Returns
    -------
    numpy.ndarray
        The closest point of the simplex to ``v`` in Euclidean distance.

    See Also
    --------
    inversion_histogram_estimate : Uses it to turn an unbiased estimate into a distribution.

    Examples
    --------
    >>> project_to_simplex([0.8, 0.4, 0.1, -0.2]).round(12)
    array([0.7, 0.3, 0. , 0. ])
    >>> project_to_simplex([0.2, 0.8])
    array([0.2, 0.8])
    >>> project_to_simplex([3e300, 1e300, -2e300])  # no overflow: θ is found relative to max
    array([1., 0., 0.])
    """
    vec = _as_vector("v", v)
    s = check_real("total", total, low=0.0, low_open=True)
    # The projection commutes with adding a constant to every coordinate (θ absorbs it), so
    # work relative to the largest value: huge inputs (a debiased estimate at a tiny ε0)
    # then cannot overflow the running sums.
    shifted = vec - float(vec.max())
    u = np.sort(shifted)[::-1]
    ranks = np.arange(1, u.size + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        running = np.cumsum(u)
        # The support is the longest prefix whose values exceed the running threshold, i.e.
        # where sum_{i<=j} (u_i - u_j) < s; that sum grows with j (a prefix), and j = 1
        # always qualifies (its sum is 0). An overflowed (inf/nan) sum does not qualify.
        positive = (running - ranks * u) < s
    rho = int(np.nonzero(positive)[0][-1])
    theta = (float(running[rho]) - s) / (rho + 1)
    out: npt.NDArray[np.float64] = np.maximum(shifted - theta, 0.0)
    # Remove the last rounding residue so that the result sums to `total` to within an ulp.
    support = out > 0
    out[support] += (s - float(out.sum())) / int(support.sum())
    return np.maximum(out, 0.0, out=out)


def inversion_histogram_estimate(
    counts: npt.ArrayLike, channel: npt.ArrayLike, *, project: bool = True
) -> npt.NDArray[np.float64]:
    """Matrix-inversion estimate of the true category distribution from report counts.

    Solves ``Cᵀ f̂ = c / n`` (unbiased), then, if ``project``, projects ``f̂`` onto the
    probability simplex. For k-RR the unprojected estimate equals
    :meth:`KaryRandomizedResponse.estimate_frequencies`.

    Parameters
    ----------
    counts
        Histogram of the reports (length m), non-negative with a positive total.
    channel
        m×m row-stochastic channel ``C[v, o] = P[o | v]``, non-singular.
    project
        Return the projection onto the simplex (a distribution) instead of the raw
        unbiased solution.

    Returns
    -------
    numpy.ndarray
        The estimated distribution (length m): on the simplex if ``project``, else unbiased
        (entries may be negative).

    See Also
    --------
    project_to_simplex : The projection applied when ``project``.
    KaryRandomizedResponse.estimate_frequencies : The k-RR case.

    Examples
    --------
    >>> from crowdhide.mechanisms import KaryRandomizedResponse
    >>> rr = KaryRandomizedResponse(k=4, eps0=float(np.log(3.0)))
    >>> inversion_histogram_estimate([45, 25, 20, 10], rr.channel(), project=False).round(3)
    array([ 0.85,  0.25,  0.1 , -0.2 ])
    >>> inversion_histogram_estimate([45, 25, 20, 10], rr.channel()).round(3)
    array([0.783, 0.183, 0.033, 0.   ])
    """
    do_project = check_bool("project", project)
    mat = np.asarray(channel)
    if mat.dtype.kind not in "iuf":
        raise ParameterTypeError(f"channel must be a numeric matrix, got dtype {mat.dtype}")
    mat = mat.astype(np.float64)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise InvalidParameterError(f"channel must be a square matrix, got shape {mat.shape}")
    c = as_count_vector("counts", counts, length=mat.shape[0])
    if not np.isfinite(mat).all() or (mat < 0).any():
        raise InvalidParameterError("channel must contain finite non-negative probabilities")
    row_sums = mat.sum(axis=1)
    if not np.allclose(row_sums, 1.0, rtol=0.0, atol=1e-9):
        worst = float(row_sums[np.argmax(np.abs(row_sums - 1.0))])
        raise InvalidParameterError(f"channel rows must sum to 1, got a row summing to {worst!r}")
    condition = float(np.linalg.cond(mat))
    if not condition < 1e12:
        raise InvalidParameterError(
            f"channel must be invertible, got condition number {condition:.3g}"
        )
    estimate = np.linalg.solve(mat.T, c / c.sum())
    return project_to_simplex(estimate) if do_project else np.asarray(estimate, dtype=np.float64)


def total_variation_distance(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Total-variation distance ``½ Σ |p_i − q_i|`` of two histograms.

    For probability vectors this is the largest difference of the probability of any event.
    Signed vectors (e.g. unprojected unbiased estimates) are accepted; the result is then half
    their L1 distance.

    Parameters
    ----------
    p, q
        Two 1-D vectors of the same length.

    Returns
    -------
    float
        ``½ Σ |p_i − q_i|`` (at most 1 for probability vectors).

    See Also
    --------
    project_to_simplex : Turns a signed estimate into a distribution first.

    Examples
    --------
    >>> total_variation_distance([0.5, 0.5, 0.0], [0.25, 0.25, 0.5])
    0.5
    """
    a, b = _as_vector("p", p), _as_vector("q", q)
    if a.shape != b.shape:
        raise InvalidParameterError(f"p and q must have the same length, got {a.size} and {b.size}")
    return float(0.5 * np.abs(a - b).sum())
