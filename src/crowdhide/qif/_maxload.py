"""Exact distribution of the maximum load of balls thrown into bins (used by ``qif.shuffle``).

The uninformed single-target vulnerability of the shuffle is ``E[max load]/n`` for ``n``
balls in ``k`` bins (Jurado, Gonze, Alvim, Palamidessi, eq. 13), and the informed adversary
needs the max-load law of ``m`` balls in ``k − 1`` bins for a window of ``m``. Both come
from one routine.

Method (Poissonization). Let ``X_1..X_b`` be i.i.d.
``Poisson(λ)``. Given ``ΣX = m`` they are ``Multinomial(m; 1/b, …)``, so

    P(max load ≤ ℓ | m balls) = P(all X_j ≤ ℓ, ΣX = m) / Poisson(m; bλ),

and the numerator is coefficient ``m`` of the ``b``-fold convolution power of the truncated
Poisson pmf ``t_ℓ(i) = Pois(i; λ)[i ≤ ℓ]``. The power is taken in the Fourier domain (one
FFT per ``ℓ``, batched over ``ℓ``, exponentiation by squaring), with a transform length
that holds the whole linear convolution (no aliasing). All values are probabilities, so
nothing overflows for any ``n``.

Truncations, both controlled by a union bound with ``scipy.stats.binom`` so that what is
dropped has probability at most ``TAIL = 1e-20``:

* upper: ``ℓ`` stops at ``ℓ_hi`` with ``b · P(Bin(m_hi, 1/b) > ℓ_hi) ≤ TAIL`` (beyond it the
  CDF is 1 up to ``TAIL``);
* lower: bins below ``a`` are dropped, with ``b · P(Bin(m_lo, 1/b) < a) ≤ TAIL``; this is
  what keeps the transform length ``≈ b·(ℓ_hi − a)`` proportional to ``√(bn)`` (times a log
  factor) instead of ``n``.

Round-off: FFT errors are absolute, about ``1e-16`` times the largest coefficient, i.e. a
relative error ``~1e-13`` on the CDF at the centre ``m ≈ bλ``; at the edges of a window of
``m`` the relative error grows like ``1/Poisson(m; bλ)``, but callers weight those ``m`` by
binomial probabilities that are smaller still (binomial tails are lighter than Poisson
tails), and the CDF is clipped to ``[0, 1]`` and made monotone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy import fft as sfft
from scipy.special import gammaln
from scipy.stats import binom

from crowdhide.accounting.roots import calibrate
from crowdhide.errors import InvalidParameterError, ResourceLimitError

__all__ = ["TAIL", "expected_max_load_float", "max_load_cdf_table"]

FloatArray = npt.NDArray[np.float64]

#: Probability mass allowed to be dropped by each truncation.
TAIL = 1e-20

#: Smallest log Poisson weight of a count in one table: ``exp`` of its negative stays finite.
_LOG_SMALLEST_WEIGHT = -690.0

#: Largest ``rows × transform length`` block processed at once (memory guard).
_BLOCK = 1 << 22

#: Largest total ``load levels × transform length`` (time guard: ``n = 1e6, k = 10`` needs
#: 1.6e8 and takes ~7 s; 5.4e6 balls in 3,284 bins need 1.15e9 and took 100 s of CPU on a
#: loaded machine, over the 60 s bound of issue 28 — 4e8 keeps every accepted table near 35 s).
MAX_WORK = 400_000_000


def _power(values: npt.NDArray[np.complex128], exponent: int) -> npt.NDArray[np.complex128]:
    """Element-wise integer power by repeated squaring (accurate: ~log2(e) roundings)."""
    result: npt.NDArray[np.complex128] | None = None
    base = values
    while exponent:
        if exponent & 1:
            result = base if result is None else result * base
        exponent >>= 1
        if exponent:
            base = base * base
    assert result is not None
    return result


def _work(m_lo: int, m_hi: int, bins: int) -> int:
    """``load levels × transform length`` of the table for ``m ∈ [m_lo, m_hi]`` (cheap)."""
    ell_lo, ell_hi, a = _bounds(m_lo, m_hi, bins)
    return (ell_hi - ell_lo + 1) * int(sfft.next_fast_len(bins * (ell_hi - a) + 1, real=True))


def _largest_accepted(bins: int) -> int:
    """Largest ``n`` whose one-point table (``m = n``) is within :data:`MAX_WORK`: a
    bisection on the (non-decreasing in practice) work, bounded by 64 steps."""
    low, high = 1, 2
    while _work(high, high, bins) <= MAX_WORK and high < 1 << 62:
        low, high = high, 2 * high
    for _ in range(64):
        if high - low <= 1:
            break
        middle = (low + high) // 2
        low, high = (middle, high) if _work(middle, middle, bins) <= MAX_WORK else (low, middle)
    return low


def _bounds(m_lo: int, m_hi: int, bins: int) -> tuple[int, int, int]:
    """(ℓ_lo, ℓ_hi, a): smallest possible max load, upper cut, lower bin cut."""
    ell_lo = -(-m_lo // bins)
    prob = 1.0 / bins

    # Integer searches on the (accurate) survival function and CDF: scipy's isf/ppf are not
    # reliable at 1e-20. Upper cut: the smallest ℓ whose union-bounded tail is within TAIL.
    def upper_cut_ok(ell: float) -> bool:
        return bins * float(binom.sf(ell, m_hi, prob)) <= TAIL

    # Lower cut: the largest a whose dropped lower tail is within TAIL.
    def lower_cut_ok(a: float) -> bool:
        return bins * float(binom.cdf(a - 1, m_lo, prob)) <= TAIL

    ell_hi = _integer_threshold(upper_cut_ok, -(-m_hi // bins), m_hi, increasing=True)
    a = _integer_threshold(lower_cut_ok, 0, ell_lo, increasing=False)
    return ell_lo, ell_hi, a


def _integer_threshold(
    passes: Callable[[float], bool], low: int, high: int, *, increasing: bool
) -> int:
    """:func:`crowdhide.accounting.calibrate` on the integers ``[low, high]`` (``low`` when
    the interval is a single point)."""
    if low >= high:
        return low
    found = calibrate(
        passes, low=low, high=high, increasing=increasing, integer=True, what="max-load cut"
    )
    return int(found)


def max_load_cdf_table(m_lo: int, m_hi: int, bins: int) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """CDF of the max load of ``m`` balls in ``bins`` bins, for ``m ∈ [m_lo, m_hi]``.

    Returns ``(ells, cdf)`` with ``cdf[i, j] = P(max load ≤ ells[i] | m_lo + j balls)``;
    the CDF is 0 below ``ells[0]`` and 1 from ``ells[-1]`` on (up to ``TAIL``).
    """
    if bins < 1 or m_lo < 0 or m_hi < m_lo:
        raise InvalidParameterError(f"invalid max-load window m=[{m_lo}, {m_hi}], bins={bins}")
    ms = np.arange(m_lo, m_hi + 1)
    if m_hi == 0 or bins == 1:
        # One bin: the max load is m. Zero balls: it is 0.
        ells = np.arange(m_lo, m_hi + 1) if bins == 1 else np.array([0])
        cdf = (ms[None, :] <= ells[:, None]).astype(np.float64)
        return ells.astype(np.int64), cdf
    ell_lo, ell_hi, a = _bounds(m_lo, m_hi, bins)
    ells = np.arange(ell_lo, ell_hi + 1)
    lam = max(0.5 * (m_lo + m_hi), 0.5) / bins
    support = np.arange(a, ell_hi + 1)
    base = np.exp(support * math.log(lam) - lam - gammaln(support + 1.0))
    length = sfft.next_fast_len(bins * (ell_hi - a) + 1, real=True)
    work = (ell_hi - ell_lo + 1) * length
    if work > MAX_WORK:
        raise ResourceLimitError(
            f"n={m_hi} balls in {bins} bins is too large for the exact max-load computation "
            f"(work {work:.2e} > {MAX_WORK:.0e}; at most n={_largest_accepted(bins)} balls in "
            f"{bins} bins); use gaussian_shuffle_vulnerability for an approximation"
        )
    log_denominator = ms * math.log(bins * lam) - bins * lam - gammaln(ms + 1.0)
    if log_denominator.min() < _LOG_SMALLEST_WEIGHT:
        # The CDF at such m is round-off divided by a weight below 1e-300: refuse rather
        # than return inf or NaN (callers keep their windows of m far narrower than this).
        raise ResourceLimitError(
            f"the max-load window m=[{m_lo}, {m_hi}] in {bins} bins is too wide for one "
            "exact table (the Poisson weight of its edges is below 1e-300)"
        )
    offsets = ms - bins * a
    cdf = np.empty((ells.size, ms.size))
    block = max(1, _BLOCK // length)
    for start in range(0, ells.size, block):
        chunk = ells[start : start + block]
        rows = np.where(support[None, :] <= chunk[:, None], base[None, :], 0.0)
        spectrum = _power(sfft.rfft(rows, n=length, axis=1), bins)
        conv = sfft.irfft(spectrum, n=length, axis=1)
        cdf[start : start + block] = conv[:, offsets] * np.exp(-log_denominator)[None, :]
    np.clip(cdf, 0.0, 1.0, out=cdf)
    cdf = np.maximum.accumulate(cdf, axis=0)
    cdf[-1] = 1.0
    # Below ceil(m / bins) the max load is impossible: exact zeros, not round-off.
    cdf[ells[:, None] * bins < ms[None, :]] = 0.0
    return ells.astype(np.int64), cdf


def expected_max_load_float(n: int, bins: int) -> float:
    """``E[max load]`` of ``n`` balls in ``bins`` bins, float (error ~1e-13 relative)."""
    if n == 0:
        return 0.0
    ells, cdf = max_load_cdf_table(n, n, bins)
    # E[M] = Σ_{ℓ ≥ 0} P(M > ℓ) = ℓ_lo + Σ_{ℓ=ℓ_lo}^{ℓ_hi−1} (1 − F(ℓ)).
    return float(ells[0] + np.sum(1.0 - cdf[:-1, 0]))
