"""Rigorous upper bounds on deep binomial tails, in log space (internal).

Where SciPy's incomplete beta is not trusted (tails below ``BETAINC_TRUSTED``,
docs/proofs/betainc-underflow.md) an upper bound needs a tail bound of its own. The Chernoff
bound ``e^{−n KL}`` is sound but overstates a tail ``t`` standard deviations out by about
``√(2π) t``: at δ = 1e-300 that moved certificates up by up to 29 %. The tail is instead
bounded by its first term times a geometric series: the binomial's term ratio falls away
from the mean, so every later ratio is at most the first one, ``r``, and
``P(X >= k) <= P(X = k)/(1 − r)`` (docs/proofs/betainc-underflow.md, "Geometric bound").
Both are computed with their rounding allowances on the safe side; the smaller is used.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import xlog1py, xlogy

from crowdhide.accounting._pmf_lower import log_pmf_terms
from crowdhide.accounting.logmath import MACHINE_EPSILON, log_terms_error

__all__ = ["log_geometric_tail", "log_tail_upper"]

FloatArray = npt.NDArray[np.float64]

#: Allowances on a Chernoff exponent ``−n KL`` (its roundings: below 1e-12 relative and 1e-6
#: absolute at n <= 1e9), as in ``shuffle._split_clone``.
KL_RTOL, KL_ATOL = 1e-9, 1e-5

#: Relative allowance on the computed term ratio ``r``: two products, one quotient and the
#: rounded ``1 − p`` are four roundings of at most ``ε/2`` each (``n − k`` and ``k + 1`` are
#: exact integers below 2^53), so ``fl(r) (1 + 2ε)`` is above the exact ratio; 4ε is taken.
RATIO_RTOL = 4.0 * MACHINE_EPSILON


def _log_tail_vec(
    n: FloatArray, p: float | FloatArray, t: FloatArray, *, upper: bool
) -> FloatArray:
    """The Chernoff exponent ``−n KL(t/n ‖ p)`` of ``P(X >= t)`` (``upper``) or ``P(X <= t)``,
    0 on the mean's side, −inf outside ``0..n`` (n > 0; ``p`` a float or one per element);
    not yet rounded up."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.clip(t / np.maximum(n, 1.0), 0.0, 1.0)
        kl = xlogy(x, x / p) + xlog1py(1.0 - x, -x) - xlog1py(1.0 - x, -p)
    out = -n * kl
    if upper:
        out = np.where(t <= n * p, 0.0, out)
        out = np.where(t > n, -np.inf, out)
    else:
        out = np.where(t >= n * p, 0.0, out)
        out = np.where(t < 0, -np.inf, out)
    return np.asarray(out, dtype=np.float64)


def log_geometric_tail(
    n: npt.ArrayLike, p: float | FloatArray, t: npt.ArrayLike, *, upper: bool
) -> FloatArray:
    """Log of ``P(X = k)/(1 − r)``, an upper bound on ``P(X >= t)`` (``upper``, ``k = ⌈t⌉``)
    or ``P(X <= t)`` (``k = ⌊t⌋``) of ``X ~ Bin(n, p)``, elementwise; ``r`` is the term ratio
    away from the mean at k, ``(n − k) p / ((k + 1)(1 − p))`` above, ``k (1 − p) /
    ((n − k + 1) p)`` below. The log-pmf from log-gamma values and the ``−ln(1 − r)`` each
    carry their rounding allowance upwards (:func:`~crowdhide.accounting.logmath.
    log_terms_error` over all the terms, ``r`` raised by :data:`RATIO_RTOL`). ``+inf``
    (no bound) where ``r >= 1`` (near the mean), ``p`` is not in (0, 1) or n is not an
    integer; 0 and −inf where the tail is certainly 1 or 0.

    Examples
    --------
    >>> from scipy.stats import binom
    >>> exact = binom.sf(59, 100, 0.3)     # P(X >= 60)
    >>> bound = float(np.exp(log_geometric_tail(100.0, 0.3, 60.0, upper=True)))
    >>> bool(exact <= bound < 1.1 * exact)
    True
    """
    n_, t_ = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(t, dtype=np.float64))
    p_ = np.broadcast_to(np.asarray(p, dtype=np.float64), n_.shape)
    k = np.ceil(t_) if upper else np.floor(t_)
    valid = (p_ > 0.0) & (p_ < 1.0) & (n_ == np.floor(n_)) & (n_ >= 0.0)
    inside = valid & (k >= 0.0) & (k <= n_)
    # outside the support on the far side the tail is 0, on the near side it is 1
    beyond = (k > n_) if upper else (k < 0.0)
    kk, pp = np.where(inside, k, 0.0), np.where(valid, p_, 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        if upper:
            ratio = (n_ - kk) * pp / ((kk + 1.0) * (1.0 - pp))
        else:
            ratio = kk * (1.0 - pp) / ((n_ - kk + 1.0) * pp)
        ratio = ratio * (1.0 + RATIO_RTOL)
        geometric = -np.log1p(-np.minimum(ratio, 1.0))  # +inf at r >= 1
    terms = log_pmf_terms(n_, kk, pp)
    with np.errstate(invalid="ignore"):
        log_bound = sum(terms) + geometric + log_terms_error(*terms, geometric)
    out = np.where(inside & (ratio < 1.0), np.minimum(log_bound, 0.0), np.inf)
    out = np.where(valid & beyond, -np.inf, out)
    # k on the mean's side of the support edge (t <= 0 above, t >= n below): the tail is 1
    whole = (k <= 0.0) if upper else (k >= n_)
    return np.asarray(np.where(valid & whole, 0.0, out), dtype=np.float64)


def log_tail_upper(
    n: npt.ArrayLike, p: float | FloatArray, t: npt.ArrayLike, *, upper: bool
) -> FloatArray:
    """Log of a rigorous upper bound on ``P(X >= t)`` (``upper``) or ``P(X <= t)`` of
    ``X ~ Bin(n, p)`` (n > 0), elementwise: the smaller of the Chernoff bound (exponent
    raised by :data:`KL_RTOL` and :data:`KL_ATOL`) and :func:`log_geometric_tail`, at most 0.
    Never −inf for a positive tail.

    Examples
    --------
    >>> float(log_tail_upper(10**9, 0.3, 3.1e8, upper=True)[()]) < -2300.0   # below 1e-1000
    True
    """
    n_, t_ = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(t, dtype=np.float64))
    chernoff = _log_tail_vec(n_, p, t_, upper=upper)
    chernoff = np.minimum(chernoff * (1.0 - KL_RTOL) + KL_ATOL, 0.0)
    geometric = log_geometric_tail(n_, p, t_, upper=upper)
    return np.asarray(np.minimum(chernoff, geometric), dtype=np.float64)
