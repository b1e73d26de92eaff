"""Two-count lower bound of "all others on x'" for OUE and RAPPOR (issue 32, item 2).

The dataset: every other user holds x', the target holds x or x'. Only the two bits
``(b_x, b_x')`` of a unary report depend on the target's value, and the likelihood ratio
``L = P_x/P_x'`` of a report is ``e = e^{ε0}`` on bits (1, 0), ``1/e`` on (0, 1) and 1
elsewhere (both encodings: OUE ``P_x(1, 0) = (1 − f)/2``, ``P_x'(1, 0) = f/2``, f = 1/(e + 1);
RAPPOR ``u²`` and ``w²``, u = t/(t + 1), w = 1/(t + 1), t = e^{ε0/2}). So the counts
``(A, B)`` of reports on (1, 0) and (0, 1) among all n are a *sufficient* statistic: their
divergence is the dataset's exact δ, not a projection (the one-region member of
``_krr_fast.same_value_lower_log_delta`` sees A alone).

Under x' the n reports are i.i.d. with ``s = A + B ~ Bin(n, ν)`` and ``A | s ~ Bin(s, r)``:
OUE ``ν = 1/2``, RAPPOR ``ν = u² + w²``, both ``r = 1/(e + 1)``. The target is one of n
exchangeable reports, so with ``E = e^ε``

    δ_fwd(ε) = (1/n) E[(n − E n + (e − 1) A − (1 − 1/e) B)_+]
             = (c/n) E[(A − θ_s)_+],        θ_s = (n (E − 1) + (1 − 1/e) s)/c,
    δ_bwd(ε) = (1/n) E[(n − E Σ_i L(Y_i))_+]
             = (E c/n) E[(θ'_s − A)_+],     θ'_s = (n (1/E − 1) + (1 − 1/e) s)/c,

``c = e − 1/e``. **Blocks of s.** One more report adds ``(e − 1/e)·Ber(r) − (1 − 1/e)`` to the
argument of ``(·)_+``, an independent increment of mean 0 (``c r = 1 − 1/e``); ``(·)_+`` is
convex, so each conditional term is non-decreasing in s (Jensen). A block ``[s_lo, s_hi]``
therefore contributes at least its mass (rounded down) times its term at ``s_lo`` (rounded
down); s outside a window of tail ``e^{−40}`` is dropped. Both only lower the sum, so the
result is at most this dataset's δ, which is at most the worst case.

Where it wins (measured in docs/proofs/mechanism-certificates.md, section 1g): RAPPOR at
ε0 <= 1.25, where "others on x'" has more signal than the third-value regions see (ε0 = 1:
5-7 % in ε); OUE only by tenths of a per cent at ε0 <= 0.75; and both at δ near 1e-300 and
n <= 1e4 through the blocks down to s = n (:func:`_upper_flank`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from crowdhide.accounting.binomial_tails import block_masses
from crowdhide.accounting.logmath import logsumexp
from crowdhide.accounting.shuffle._krr_fast import (
    _THETA_RTOL,
    FloatArray,
    _split,
    _window_edges,
    binomial_excess,
)

__all__ = ["rappor_same_nu", "two_count_same_lower_log_delta"]

#: Blocks of s (the terms barely move with s: the increment has mean 0).
POINTS = 256

#: Tail of Bin(n, ν) left out of the window (dropping mass only lowers a lower bound).
WINDOW_TAIL = 40.0

#: Relative amount the result is lowered: the prefactor's and the sum's roundings, and the
#: rounding of ν and r = 1/(e + 1) (a relative η in p moves a binomial tail at most by
#: ``η |a − s p|/(p(1 − p))`` relatively: about 2e-10 at n = 1e9 and tail 1e-300).
ROUND_RTOL = 1e-9


def rappor_same_nu(eps0: float) -> float:
    """RAPPOR's ``ν = u² + w²``: the probability that the bits (x, x') of an x'-user differ."""
    t = math.exp(eps0 / 2.0)
    keep, flip = t / (t + 1.0), 1.0 / (t + 1.0)
    return keep * keep + flip * flip


def _upper_flank(hi: float, n: int) -> tuple[FloatArray, FloatArray]:
    """Blocks of s from ``hi + 1`` to n, of widths 1, 1, 2, 4, ... from n down: at δ near
    1e-300 the largest losses sit at s = n (RAPPOR ε0 = 8, n = 1e4: every report (0, 1)
    has probability ``u^{2n}`` ≈ e^{−366} and likelihood ratio e^{ε0})."""
    if hi >= n:
        return np.zeros(0), np.zeros(0)
    ends, starts = [float(n)], [float(n)]
    width = 1.0
    while starts[-1] - 1.0 > hi:
        ends.append(starts[-1] - 1.0)
        starts.append(max(ends[-1] - width + 1.0, hi + 1.0))
        width *= 2.0
    return np.array(starts), np.array(ends)


@functools.lru_cache(maxsize=32)
def _layout(n: int, nu: float, points: int) -> tuple[FloatArray, FloatArray]:
    """ε-independent part (cached): each block's smallest s and its mass, rounded down."""
    nn = np.array([float(n)])
    lo, hi = _window_edges(nn, nu, WINDOW_TAIL)
    start, end = _split(lo, hi, points)
    flank_start, flank_end = _upper_flank(float(hi[0]), n)
    start, end = np.concatenate([start[0], flank_start]), np.concatenate([end[0], flank_end])
    start = np.maximum(start, 1.0)  # s = 0 contributes 0 to either direction
    keep = start <= end
    start, end = start[keep], end[keep]
    mass = block_masses(np.full(start.shape, float(n)), nu, start, end, upper=False)
    return start, mass


def two_count_same_lower_log_delta(
    n: int, nu: float, eps0: float, eps: float, *, points: int = POINTS
) -> float:
    """Rigorous *lower* bound on ``log δ(ε)`` of shuffled OUE (``nu = 1/2``) or RAPPOR
    (``nu = rappor_same_nu(eps0)``): the counts of bits (1, 0) and (0, 1) when every other
    user holds x' (module docstring), both directions, at least ``−inf``.

    Examples
    --------
    >>> import math
    >>> v = two_count_same_lower_log_delta(1000, rappor_same_nu(1.0), 1.0, 0.1)
    >>> -17.0 < v < -15.0   # δ(0.1) ≈ 1.2e-7
    True
    """
    if eps >= eps0 or n < 1 or not 0.0 < nu < 1.0:
        return -math.inf  # |log L| <= ε0 for every report: δ(ε >= ε0) = 0
    e = math.exp(eps0)
    c = 2.0 * math.sinh(eps0)  # e − 1/e
    lose = -math.expm1(-eps0)  # 1 − 1/e
    s, mass = _layout(n, nu, points)
    r = 1.0 / (e + 1.0)
    fwd_head, bwd_head = n * math.expm1(eps), n * math.expm1(-eps)
    # θ's are sums and differences of a few rounded terms: their error scales with the terms
    theta_f = (fwd_head + lose * s) / c
    err_f = _THETA_RTOL * (abs(fwd_head) + lose * s) / c
    theta_b = (bwd_head + lose * s) / c
    err_b = _THETA_RTOL * (abs(bwd_head) + lose * s) / c
    fwd = binomial_excess(theta_f, s, r, above=True, upper=False, theta_err=err_f)
    bwd = binomial_excess(theta_b, s, r, above=False, upper=False, theta_err=err_b)
    with np.errstate(divide="ignore"):
        log_mass = np.log(mass)
        forward = logsumexp(log_mass + np.log(fwd)) + math.log(c / n)
        backward = logsumexp(log_mass + np.log(bwd)) + math.log(c / n) + eps
    return float(max(forward, backward)) + math.log1p(-ROUND_RTOL)
