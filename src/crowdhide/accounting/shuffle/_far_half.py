"""Excesses ``E[(A − θ)_+]``, ``A ~ Bin(s, 1/2)``, whose tails lie far below the trusted
incomplete betas: their upper bound without the incomplete betas (internal).

:func:`~crowdhide.accounting.shuffle._krr_fast.excess_half` (rounded up) computes three half
tails per element (:func:`~crowdhide.accounting.binomial_tails.half_tails`) and, where the
first is below ``BETAINC_TRUSTED``, takes the smaller of their difference (plus its error,
at least ``UNTRUSTED_ATOL`` times each scale there) and the deep bound ``(s/2) T̄₁ + shift ·
T̄₂`` (``T̄`` the rounded-up Chernoff/geometric bounds of ``P(Bin(s − 1, ½) >= a* − 1)`` and
``P(Bin(s, ½) >= a* − 1)``, ``trusted_tail``). At δ = 1e-300 about four elements in five
are there, most of them with tails that SciPy returns as 0 (issue 32, s28-tiny).

Where the slope tail's own rounded-up Chernoff bound is at most :data:`FAR_LEVEL`, both true
tails are below it, so the first computed tail is below ``BETAINC_TRUSTED`` (SciPy's value is
within 2.6e-10 relative, or wrong and below 1.001 · 4.3e-243) and the difference plus its
allowance is at least ``UNTRUSTED_ATOL · s/2``, above the deep bound: the minimum is the deep
bound. It is returned here without the incomplete betas (docs/proofs/betainc-underflow.md,
"Far tails"). It bounds the true excess whatever SciPy returns, so the value is an upper
bound in every case, and never below the former minimum.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting._half_memo import PairMemo, pair_keys
from crowdhide.accounting._tail_upper import KL_ATOL, KL_RTOL
from crowdhide.accounting.binomial_tails import (
    UNTRUSTED_ATOL,
    _distinct,
    _log_tail_vec,
    trusted_tail,
)

__all__ = [
    "FAR_LEVEL",
    "bound_memo",
    "far_excess",
    "far_exponent",
    "far_mask",
    "far_rule_holds",
    "far_tail",
    "half_tail_bounds",
]

FloatArray = npt.NDArray[np.float64]

#: A slope tail whose rounded-up Chernoff bound is at most this is "far": the deep bound is
#: at most ``(s/2 + 4e-15 θ)`` times it, below the difference's allowance
#: ``UNTRUSTED_ATOL (s/2 + θ)`` by a factor of 100.
FAR_LEVEL = 1e-2 * UNTRUSTED_ATOL


def far_rule_holds(trusted: float) -> bool:
    """Whether the far rule gives the former floats with ``trusted`` as the caller's
    ``BETAINC_TRUSTED``: a far first tail (true value below 1e-242, SciPy's below 1.001 times
    that or 4.31e-243) must count as untrusted, which any level above ``UNTRUSTED_ATOL``
    ensures (a test that sets the level to 0 gets the plain incomplete betas everywhere)."""
    return trusted > UNTRUSTED_ATOL


def far_mask(s: FloatArray, theta: FloatArray) -> npt.NDArray[np.bool_]:
    """Where the rounded-up Chernoff bound of ``P(Bin(s, ½) >= ⌊θ⌋)`` (the slope tail, which
    is above the first tail ``P(Bin(s − 1, ½) >= ⌊θ⌋)``) is at most :data:`FAR_LEVEL`
    (False where θ is NaN)."""
    with np.errstate(invalid="ignore"):
        return far_tail(s, np.floor(theta))


def far_tail(m: FloatArray, edge: FloatArray) -> npt.NDArray[np.bool_]:
    """Where the rounded-up Chernoff bound of ``P(Bin(m, ½) >= edge)`` is at most
    :data:`FAR_LEVEL` (False where it is NaN)."""
    with np.errstate(invalid="ignore"):
        return far_exponent(_log_tail_vec(m, 0.5, edge, upper=True))


def far_exponent(exponent: FloatArray) -> npt.NDArray[np.bool_]:
    """:func:`far_tail` from the Chernoff exponent ``_log_tail_vec(m, 0.5, edge, upper=True)``
    (a caller that has computed it already passes it: issue 32, the split clone system's
    blocks computed it twice)."""
    with np.errstate(invalid="ignore"):
        bound = np.minimum(exponent * (1.0 - KL_RTOL) + KL_ATOL, 0.0)
        return np.asarray(bound <= math.log(FAR_LEVEL))


def far_excess(
    s: FloatArray, theta: FloatArray, theta_rtol: float, *, memo: PairMemo | None = None
) -> FloatArray:
    """The deep bound ``(s/2) T̄₁ + shift · T̄₂`` of ``E[(A − θ)_+]`` with ``shift =
    theta_rtol |θ|``: the same floats as ``_krr_fast._deep_excess`` gives it. With a
    ``memo`` (:func:`bound_memo`) ``T̄₁`` and ``T̄₂`` come from it: the same floats."""
    a_star = np.floor(theta) + 1.0
    if memo is None:
        marks = np.zeros(a_star.shape)  # 0 asks trusted_tail for the bound of every element
        bound = trusted_tail(marks, s - 1.0, 0.5, a_star - 1.0, upper=True)
        slope = trusted_tail(marks, s, 0.5, a_star - 1.0, upper=True)
    else:  # both tails of an element in one call: T̄₁ at (a* − 1, s − 1), T̄₂ at (a* − 1, s)
        units = np.concatenate([(s - 1.0).ravel(), s.ravel()])
        both = half_tail_bounds(units, np.concatenate([(a_star - 1.0).ravel()] * 2), memo)
        bound, slope = both[: s.size].reshape(s.shape), both[s.size :].reshape(s.shape)
    shift = theta_rtol * np.abs(theta)
    return np.asarray(np.abs(0.5 * s) * bound + shift * slope, dtype=np.float64)


def _tail_bound(k: FloatArray, m: FloatArray) -> FloatArray:
    """``trusted_tail``'s rounded-up bound of ``P(Bin(m, ½) >= k)`` (its deep branch, taken
    for every element), elementwise."""
    return trusted_tail(np.zeros(k.shape), m, 0.5, k, upper=True)


def bound_memo() -> PairMemo:
    """A memo for :func:`far_excess` over one root search (issue 32, s31-krr): its
    evaluations at nearby ε ask the same blocks, whose thresholds mostly stay put
    (krr_blanket at k = 4, ε0 = 1, n = 1e3, δ = 1e-300: 0.32 M far elements over 21
    evaluations, 42 k distinct). Kept per search, not across queries: a process-wide memo
    grew with every query and its searches and merges cost more than they saved."""
    return PairMemo(1 << 18)


def half_tail_bounds(m: FloatArray, k: FloatArray, memo: PairMemo) -> FloatArray:
    """:func:`_tail_bound` of ``(k, m)`` elementwise (1-D), once per distinct integral pair
    kept in ``memo``: the same floats, bit for bit, as the bound of each element evaluated
    on its own (a memo of an elementwise, deterministic function). Small arrays and pairs
    outside the memo's packing (``−2 <= k, m < 2^30``, integral) are evaluated directly."""
    packable = (m >= -2.0) & (m < 2.0**30) & (k >= -2.0) & (k < 2.0**30)
    if m.size < _MEMO_MIN or not bool(np.all(packable & (m == np.floor(m)) & (k == np.floor(k)))):
        return _tail_bound(k, m)
    pairs, place = _distinct(pair_keys(k, m))
    if pairs.size > memo.capacity:
        memo = PairMemo(pairs.size)
    return memo.values(pairs, _tail_bound)[place]


#: Smaller arrays are evaluated directly (the sort and the search would cost more).
_MEMO_MIN = 256
