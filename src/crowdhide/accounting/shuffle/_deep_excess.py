"""A tight upper bound on a deep α-pair excess, for the split clone system below δ = 1e-280
(internal; issue 32, s36-deep).

The split clone system's blocks bound ``H = (2κ(1 + E)/g) E[(A − θ)_+]``, ``A ~ Bin(s, ½)``,
``θ = s/2 + g (E − 1)/(2κ(1 + E))``. Where the tail at θ lies below the trusted incomplete
betas, their bound was ``(s/2) P(Bin(s − 1, ½) >= ⌊θ⌋)`` (``_far_half.far_excess``) or
``(s/2) P(A >= ⌊θ⌋)`` (``_split_clone._deep_log_h``): both drop the ``−θ`` of the excess (and
start a count early), so they overstate it by a factor of about ``(s/2)(1 − r)/r`` (r the term
ratio at θ) — 8 in log δ at s ≈ 1800, ε0 = 2, n = 1e4,
δ = 1e-300 (docs/proofs/variation-ratio.md, §11). This module bounds the excess itself by
its first term times a geometric series:

with ``k = ⌊θ⌋ + 1`` (the least count above θ), ``d = k − θ ∈ (0, 1]`` and the term ratio
``r = (s − k)/(k + 1) < 1``, every later ratio is at most r, so

    E[(A − θ)_+] = Σ_{i>=0} (d + i) P(A = k + i) <= P(A = k) (d (1 − r) + r)/(1 − r)².

It is applied only where the caller's tail level is below :data:`DEEP_EXCESS_TAIL` (the tail
level of an ε search at δ = 1e-280): every answer at δ >= 1e-280 keeps its floats.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting._pmf_lower import log_pmf_terms
from crowdhide.accounting._tail_upper import RATIO_RTOL
from crowdhide.accounting.logmath import log_terms_error

__all__ = ["DEEP_EXCESS_TAIL", "deep_log_h", "log_half_excess_upper"]

FloatArray = npt.NDArray[np.float64]

#: Below this tail level (``log_tail``) the split clone system's block caps also take
#: :func:`deep_log_h`: the tail level an ε search at δ = 1e-280 sums to (40 below the target,
#: ``_settle.tail_level``), so no ε query at δ >= 1e-280 (where ``variation_ratio`` was already
#: solved) sees it.
DEEP_EXCESS_TAIL = math.log(1e-280) - 40.0

#: Relative amount by which a threshold θ is lowered before the bound is taken: twice the
#: threshold's own rounding allowance (``_krr_fast._THETA_RTOL`` = 4e-15), so that with the
#: product's rounding the lowered float is still below the exact θ (the excess is
#: non-increasing in θ).
THETA_LOWER = 8e-15

#: Absolute allowance on ``log(2κ(1 + E)/g)``: four roundings of relative ε each, far below it
#: (the same allowance as ``_split_clone._deep_log_h``'s prefactor).
PREFACTOR_ATOL = 1e-9


def log_half_excess_upper(s: FloatArray, theta: FloatArray) -> FloatArray:
    """Log of an upper bound on ``E[(A − θ)_+]``, ``A ~ Bin(s, ½)``, elementwise, for exact
    (unrounded) thresholds at least ``θ (1 − THETA_LOWER)``: the geometric bound of the module
    docstring at the lowered threshold, every rounding allowance upwards. ``−inf`` where no
    count exceeds θ (``⌊θ⌋ >= s``), ``+inf`` (no bound) where ``r >= 1`` (θ near s/2) or θ < 1.

    Examples
    --------
    >>> from scipy.stats import binom
    >>> s, theta = 200.0, 150.3
    >>> a = np.arange(151, 201)
    >>> exact = float(np.sum((a - theta) * binom.pmf(a, 200, 0.5)))
    >>> bound = float(np.exp(log_half_excess_upper(np.array([s]), np.array([theta]))[0]))
    >>> exact <= bound < 1.05 * exact   # the slack shrinks deeper in the tail
    True
    """
    s_, theta_ = np.broadcast_arrays(
        np.asarray(s, dtype=np.float64), np.asarray(theta, dtype=np.float64)
    )
    low = theta_ * (1.0 - THETA_LOWER)  # below the exact θ (THETA_LOWER's comment)
    k = np.floor(low) + 1.0
    # k − low is exact: both lie in [1, 2^53) within a factor 2 of each other (Sterbenz)
    inside = (low >= 1.0) & (k <= s_) & (s_ == np.floor(s_))
    kk = np.where(inside, k, 1.0)
    ss = np.where(inside, s_, 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (ss - kk) / (kk + 1.0) * (1.0 + RATIO_RTOL)  # above the exact ratio
        usable = inside & (ratio < 1.0)
        r = np.where(usable, ratio, 0.5)
        # the bracket is increasing in r (numerator d + r(1 − d), denominator (1 − r)²)
        bracket = np.log((kk - low) * (1.0 - r) + r)
        geometric = -2.0 * np.log1p(-r)
    terms = log_pmf_terms(ss, kk, 0.5)
    allowance = log_terms_error(*terms, bracket, geometric)
    log_bound = sum(terms) + bracket + geometric + allowance
    out = np.where(usable, log_bound, np.inf)
    empty = (low >= 1.0) & (k > s_)
    return np.asarray(np.where(empty, -np.inf, out), dtype=np.float64)


def deep_log_h(s: FloatArray, g: FloatArray, *, kappa: float, eps: float) -> FloatArray:
    """Log of an upper bound on the block bound ``H(s, g)`` of the split clone system
    (module docstring), with θ computed as ``_split_clone.deep_skipped_h`` computes it.

    Examples
    --------
    >>> import math
    >>> s, g = np.array([1832.0]), np.array([1833.0])
    >>> round(float(deep_log_h(s, g, kappa=math.tanh(1.0), eps=1.3267486)[0]), 2)
    -613.03
    """
    big = math.exp(eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = s / 2.0 + g * math.expm1(eps) / (2.0 * kappa * (1.0 + big))
        prefactor = np.log(2.0 * kappa * (1.0 + big) / g) + PREFACTOR_ATOL
    return np.asarray(log_half_excess_upper(s, theta) + prefactor, dtype=np.float64)
