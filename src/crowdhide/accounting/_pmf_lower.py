"""A proven lower bound on a binomial point probability, computed in log space.

Where SciPy's incomplete beta is not trusted (tails below ``BETAINC_TRUSTED``, see
docs/proofs/betainc-underflow.md) a *lower* bound cannot use a Chernoff bound; the point
probability of the nearest outcome is one, and at those depths it carries almost all of the
tail (the terms fall geometrically away from the mean); :func:`excess_floor` turns it into a
lower bound on an expected excess.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from crowdhide.accounting.logmath import MACHINE_EPSILON, log_terms_error

__all__ = ["binomial_pmf_lower", "excess_floor", "log_pmf_terms"]

FloatArray = npt.NDArray[np.float64]


def binomial_pmf_lower(n: npt.ArrayLike, p: float, k: npt.ArrayLike) -> FloatArray:
    """A lower bound on ``P(X = k)`` for ``X ~ Bin(n, p)``, elementwise (0 outside
    ``0..n``): the log-pmf from log-gamma values less its rounding bound
    (:func:`~crowdhide.accounting.logmath.log_terms_error`), then ``exp`` rounded down.

    Examples
    --------
    >>> from scipy.stats import binom
    >>> exact = binom.pmf(3, 10, 0.5)
    >>> bool(exact * (1 - 1e-12) <= binomial_pmf_lower(10.0, 0.5, 3.0) <= exact)
    True
    """
    n_, k_ = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(k, dtype=np.float64))
    if not 0.0 < p < 1.0:
        return np.zeros(n_.shape, dtype=np.float64)
    inside = (k_ >= 0.0) & (k_ <= n_)
    ks = np.clip(k_, 0.0, n_)
    terms = log_pmf_terms(n_, ks, p)
    log_pmf = np.minimum(sum(terms) - log_terms_error(*terms), 0.0)
    # exp is within one ulp; in the subnormal range it may lose up to the least subnormal
    value = np.exp(log_pmf) * (1.0 - 4.0 * MACHINE_EPSILON) - 5e-324
    return np.asarray(np.where(inside, np.maximum(value, 0.0), 0.0), dtype=np.float64)


def log_pmf_terms(
    n: FloatArray, k: FloatArray, p: float | FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """The five terms whose sum is ``log P(Bin(n, p) = k)`` (log-gamma values and the two
    ``log p`` / ``log(1 − p)`` multiples), kept apart so a caller can bound their rounding
    (:func:`~crowdhide.accounting.logmath.log_terms_error`) on its own safe side."""
    return (
        gammaln(n + 1.0),
        -gammaln(k + 1.0),
        -gammaln(n - k + 1.0),
        k * np.log(p),
        (n - k) * np.log1p(-p),
    )


def excess_floor(
    n: FloatArray,
    p: float,
    theta: FloatArray,
    shift: FloatArray,
    *,
    above: bool,
    where: npt.NDArray[np.bool_] | None = None,
) -> FloatArray:
    """A proven lower bound on ``E[(X − θ)_+]`` (``above``) or ``E[(θ − X)_+]`` for
    ``X ~ Bin(n, p)`` and any true threshold within ``shift`` of ``θ``: the term of the
    nearest outcome beyond it, ``(a − θ − shift)_+ P(X = a)``, with the point probability
    from :func:`binomial_pmf_lower` (for where the incomplete betas are not trusted).

    ``where`` (a mask of the arguments' broadcast shape): the bound of those elements only,
    0 elsewhere. Every operation is elementwise, so they are the same floats as without it
    (issue 32, s35-lower: the excesses rounded down read the floor only where a tail is
    untrusted, which at δ >= 1e-10 is nowhere, and it cost 3-4 % of the k-RR and mechanism
    rows' CPU)."""
    if where is not None:
        n_, theta_, shift_, mask = np.broadcast_arrays(
            np.asarray(n, dtype=np.float64),
            np.asarray(theta, dtype=np.float64),
            np.asarray(shift, dtype=np.float64),
            where,
        )
        out = np.zeros(mask.shape)
        if mask.any():
            out[mask] = excess_floor(n_[mask], p, theta_[mask], shift_[mask], above=above)
        return out
    if above:
        nearest = np.floor(theta) + 1.0
        gap = nearest - theta - shift
    else:
        nearest = np.ceil(theta) - 1.0
        gap = theta - shift - nearest
    return np.asarray(np.maximum(gap, 0.0) * binomial_pmf_lower(n, p, nearest), dtype=np.float64)
