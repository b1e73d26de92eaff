"""The Gaussian privacy profile: one implementation for every Gaussian in crowdhide.

For the Gaussian mechanism ``x + N(0, σ²)`` with L2-sensitivity Δ, write ``μ = Δ/σ``. Its exact
privacy curve (Balle & Wang, ICML 2018, Theorem 8) is

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ),

the hockey-stick divergence of ``N(0, 1)`` and ``N(μ, 1)``; it is also the curve of μ-GDP
(Dong, Roth, Su 2022). It is evaluated in log space as
``log Φ(a) + log(1 − exp(ε + log Φ(b) − log Φ(a)))`` with ``a = μ/2 − ε/μ``, ``b = a − μ``. For
μ <= 1 the inner log-ratio is integrated instead of differenced (see
:func:`_log_ratio_by_quadrature`), so δ down to 1e-300 and μ from 1e-12 to 1e6 neither
underflow nor cancel; δ is then rounded up by :data:`ROUNDING_MARGIN`.

Examples
--------
>>> import math
>>> round(math.exp(float(gaussian_log_delta(0.0, mu=1.0))), 9)  # 2Φ(1/2) − 1
0.382924923
>>> round(gaussian_epsilon(mu=1.0, delta=1e-5), 4)
4.3772
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.special import erfcx, log_ndtr

from crowdhide._validation import check_probability, check_real
from crowdhide.accounting.logmath import log1mexp
from crowdhide.accounting.roots import safe_root

__all__ = ["ROUNDING_MARGIN", "gaussian_delta", "gaussian_epsilon", "gaussian_log_delta"]

FloatArray = npt.NDArray[np.float64]

#: Relative amount by which every δ is rounded up (log δ + margin): larger than the evaluation
#: error (~1e-13 relative, checked against 80-digit arithmetic in the tests).
ROUNDING_MARGIN = 1e-10
#: Below this μ the log-ratio is integrated (16-point Gauss–Legendre) instead of differenced.
_QUADRATURE_MAX_MU = 1.0
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
_SQRT2 = math.sqrt(2.0)
_LN2 = math.log(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gaussian_log_delta(epsilon: npt.ArrayLike, *, mu: npt.ArrayLike) -> FloatArray:
    """``log δ(ε)`` of the Gaussian mechanism with shift ``μ = Δ/σ``, vectorized.

    Exact up to a pessimistic rounding: the value is raised by :data:`ROUNDING_MARGIN`
    (relative, in δ), which exceeds the floating-point error of the evaluation, so the result
    is never below the true δ. ``μ = 0`` (no signal) gives ``-inf``. Broadcasts ``epsilon``
    against ``mu``.

    Examples
    --------
    >>> gaussian_log_delta([0.0, 1.0], mu=0.0).tolist()
    [-inf, -inf]
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    m = np.asarray(mu, dtype=np.float64)
    if eps.ndim == 0 and m.ndim == 0:  # calibrators call this in loops: skip the masking
        return np.asarray(_scalar_log_delta(float(eps), float(m)))
    eps, m = np.broadcast_arrays(eps, m)
    out = np.full(eps.shape, -np.inf)
    live = m > 0
    if np.any(live):
        e, mm = eps[live], m[live]
        upper = mm / 2 - e / mm
        # Each branch on its own elements: a tiny μ sends ``upper`` to -inf, where the
        # differenced form is -inf - (-inf).
        quad = mm <= _QUADRATURE_MAX_MU
        log_ratio = np.empty_like(upper)
        log_ratio[quad] = _log_ratio_by_quadrature(upper[quad], mm[quad])
        far, u = ~quad, upper[~quad]
        log_ratio[far] = np.minimum(e[far] + log_ndtr(u - mm[far]) - log_ndtr(u), 0.0)
        with np.errstate(divide="ignore"):
            out[live] = log_ndtr(upper) + log1mexp(log_ratio) + ROUNDING_MARGIN
    return out


def _scalar_log_delta(eps: float, mu: float) -> float:
    if not mu > 0.0:
        return -math.inf
    upper = mu / 2 - eps / mu
    if mu <= _QUADRATURE_MAX_MU:
        t = (upper - 0.5 * mu) + 0.5 * mu * _GL_NODES
        integral = 0.5 * mu * float((_SQRT_2_OVER_PI / erfcx(-t / _SQRT2) + t) @ _GL_WEIGHTS)
        log_ratio = min(-integral, 0.0)
    else:
        log_ratio = min(eps + float(log_ndtr(upper - mu)) - float(log_ndtr(upper)), 0.0)
    if log_ratio == 0.0:
        return -math.inf
    # log(1 − e^x), accurate on both sides of −ln 2 (Mächler 2012).
    tail = (
        math.log(-math.expm1(log_ratio)) if log_ratio > -_LN2 else math.log1p(-math.exp(log_ratio))
    )
    return float(log_ndtr(upper)) + tail + ROUNDING_MARGIN


def _log_ratio_by_quadrature(upper: FloatArray, mu: FloatArray) -> FloatArray:
    """``ε + log Φ(b) − log Φ(a)`` (a = upper, b = a − μ) without cancellation.

    Since ``d/dt log Φ(t) = λ(t) = φ(t)/Φ(t)`` and ``ε = −∫_b^a t dt``, the quantity equals
    ``−∫_b^a (λ(t) + t) dt``: a smooth positive integrand over an interval of width μ, where
    the direct difference of two large logs loses up to 1e-4 relative for tiny μ. With
    ``λ(t) = √(2/π) / erfcx(−t/√2)`` no exponential over- or underflows.
    """
    half = 0.5 * mu[..., None]
    t = (upper - 0.5 * mu)[..., None] + half * _GL_NODES
    integrand: FloatArray = _SQRT_2_OVER_PI / erfcx(-t / _SQRT2) + t
    integral: FloatArray = half[..., 0] * (integrand @ _GL_WEIGHTS)
    return np.minimum(-integral, 0.0)


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
