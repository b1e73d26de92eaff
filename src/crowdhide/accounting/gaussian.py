"""The Gaussian privacy profile: one implementation for every Gaussian in crowdhide.

For the Gaussian mechanism ``x + N(0, σ²)`` with L2-sensitivity Δ, write ``μ = Δ/σ``. Its exact
privacy curve (Balle & Wang, ICML 2018, Theorem 8) is

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ),

the hockey-stick divergence of ``N(0, 1)`` and ``N(μ, 1)``; it is also the curve of μ-GDP
(Dong, Roth, Su 2022). Evaluated in log space with ``scipy.special.log_ndtr`` as
``log Φ(a) + log(1 − exp(ε + log Φ(b) − log Φ(a)))`` so that δ down to 1e-300 and μ from 1e-12
to 1e6 neither underflow nor cancel.

Examples
--------
>>> import math
>>> round(math.exp(float(gaussian_log_delta(0.0, mu=1.0))), 12)  # 2Φ(1/2) − 1
0.382924922548
>>> round(gaussian_epsilon(mu=1.0, delta=1e-5), 4)
4.3772
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.special import log_ndtr

from crowdhide._validation import check_probability, check_real
from crowdhide.accounting.logmath import log1mexp
from crowdhide.accounting.roots import safe_root

__all__ = ["gaussian_delta", "gaussian_epsilon", "gaussian_log_delta"]

FloatArray = npt.NDArray[np.float64]


def gaussian_log_delta(epsilon: npt.ArrayLike, *, mu: npt.ArrayLike) -> FloatArray:
    """Exact ``log δ(ε)`` of the Gaussian mechanism with shift ``μ = Δ/σ``, vectorized.

    ``μ = 0`` (no signal) gives ``-inf``. Broadcasts ``epsilon`` against ``mu``.

    Examples
    --------
    >>> gaussian_log_delta([0.0, 1.0], mu=0.0).tolist()
    [-inf, -inf]
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    m = np.asarray(mu, dtype=np.float64)
    eps, m = np.broadcast_arrays(eps, m)
    out = np.full(eps.shape, -np.inf)
    live = m > 0
    if np.any(live):
        e, mm = eps[live], m[live]
        log_a = log_ndtr(mm / 2 - e / mm)
        log_b = log_ndtr(-mm / 2 - e / mm)
        # The divergence is non-negative; at the limit of double precision rounding can
        # push the ratio above 1 by an ulp, which is δ = 0.
        ratio = np.minimum(e + log_b - log_a, 0.0)
        with np.errstate(divide="ignore"):
            out[live] = log_a + log1mexp(ratio)
    return out


def gaussian_delta(epsilon: float, *, mu: float) -> float:
    """δ(ε) of the Gaussian mechanism with shift μ (exact)."""
    return math.exp(float(gaussian_log_delta(epsilon, mu=mu)))


def gaussian_epsilon(*, mu: float, delta: float) -> float:
    """Smallest ε with Gaussian δ(ε) <= δ for shift μ (exact, from the safe side).

    Examples
    --------
    >>> gaussian_epsilon(mu=0.0, delta=1e-6)
    0.0
    """
    m = check_real("mu", mu, low=0.0)
    target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
    if m == 0.0:
        return 0.0

    def log_delta(e: float) -> float:
        return float(gaussian_log_delta(e, mu=m))

    hi = 1.0
    while log_delta(hi) > target:
        hi *= 2.0
    return safe_root(log_delta, target, 0.0, hi, xtol=1e-13)
