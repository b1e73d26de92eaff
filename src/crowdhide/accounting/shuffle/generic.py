"""Privacy amplification by shuffling: what (ε, δ) do n shuffled ε0-LDP reports give?

n users each apply an ε0-LDP local randomizer and a trusted shuffler releases the multiset of
reports. Neighbouring datasets differ in one user's value (*substitute* relation, n fixed).
Every function answers for that relation.

Bounds (:data:`SHUFFLE_BOUNDS`) and what they promise
-------------------------------------------------------

``erlingsson2019``
    Erlingsson et al. (SODA 2019): ``ε = 12 ε0 sqrt(ln(1/δ)/n)``; certificate for any ε0-LDP
    randomizer when ε0 <= 1/2, n >= 1000, δ <= 0.01.
``balle2019_hoeffding``, ``balle2019_bennett``
    Balle, Bell, Gascón, Nissim (CRYPTO 2019), privacy blanket with Hoeffding resp. Bennett
    concentration; generic ε0-LDP parameters without ``k``, k-RR parameters with ``k``.
``feldman2021_closed``
    Feldman, McMillan, Talwar (FOCS 2021) closed form, with ``ln(4/δ)`` in both the bound and
    its validity condition ``ε0 <= ln(n / (16 ln(4/δ)))`` (the paper prints ``ln(2/δ)``; the
    authors' code and apple/ml-shuffling-amplification issue #1 use 4/δ, the conservative
    choice). Any ε0-LDP randomizer.
``feldman2021``
    Exact hockey-stick divergence of the FMT21 clone pair (``C ~ Bin(n−1, e^{−ε0})``); the
    authors' "numerical" bound without their block discretisation. Any ε0-LDP randomizer.
``feldman2023``
    Exact divergence of the stronger clone pair of Feldman, McMillan, Talwar (SODA 2023):
    ``C ~ Bin(n−1, 2/(e^{ε0}+1))``. The clone decomposition behind it needs every report
    distribution to dominate the average of any two others: ``R(x)(y) + R(x')(y) <=
    (e^{ε0}+1) R(v)(y)`` for all x, x', v, y (the erratum of arXiv 2208.04591 restricts the
    general theorems to such randomizers). k-RR and binary RR satisfy it (with equality on
    the reported value), so with ``k`` it is a certificate; for an unspecified ε0-LDP
    randomizer (``k=None``) it does not apply (``conditions_met=False``; e.g. ε0-LDP
    Laplace on [0, 1] violates the condition).
``variation_ratio``
    Any ε0-LDP randomizer: the split clone system (informative clones at rate 2μ/(e^{ε0}+1),
    uninformative ones at (1−μ)e^{−ε0}, μ the pair's total variation over tanh(ε0/2)),
    maximised over μ in cells (:mod:`crowdhide.accounting.shuffle.variation_ratio`). It certifies
    the FMT23 pair's value — the one Wang et al. (VLDB 2024) give for every ε0-LDP
    randomizer — to within 0.1–0.8 % in ε, without FMT23's condition. ``best`` without k.
``krr_clone``
    k-RR / binary RR only: crowdhide's k-RR clone reduction, a certificate for every
    dataset. Each other user's report law is ``2r (K(x)+K(x'))/2 + (1−2r) R_v`` with
    ``r = 1/(e^{ε0}+1)`` and ``R_v >= 0`` for every value v; revealing who is a clone and
    the residual reports gives the exact divergence of ``(C, histogram of the target's and
    the clones' k-RR reports)``, ``C ~ Bin(n−1, 2r)`` — FMT23's decomposition without
    discarding the clones' k-RR noise. Evaluated on rigorous blocks of clone counts and of
    reports on {x, x'} (:mod:`crowdhide.accounting.shuffle._krr_fast`): O(1) work in n, within
    ~0.1–0.5 % in ε of the unblocked sum. For k = 2 it is the FMT23 pair.
``binary_rr_blocks``
    binary RR only, any n: datasets in blocks, each block's pairs a post-processing of one
    core dataset (:mod:`crowdhide.accounting.shuffle.binary_rr`), each core evaluated by tilted
    contour integrals with every tail and rounding error bounded
    (:mod:`crowdhide.accounting.shuffle.binary_rr_contour`); within ~0.4–0.6 % in ε of the lower
    bound at n p q >= 64, tens of milliseconds per query up to n = 1e9.
``exact``
    k-RR / binary RR only: the exact worst-case curve, ``max`` over *every* dataset of the
    other users of the exact hockey-stick divergence of the two output-histogram
    distributions: exhaustive enumeration of dataset classes for ``n <= EXHAUSTIVE_MAX_N``,
    and for k = 2 all n datasets, each exactly, for ``n <= BINARY_EXACT_MAX_N``; outside
    that range it does not apply. The worst dataset depends on ε, so no single
    "worst pair" exists.
``krr_lower``
    k-RR only: a rigorous *lower bound* (``kind="lower"``) from canonical datasets (all
    others on one third value z; all others on x'), O(1) in n beyond n = 1000.
``ldp_lower``
    Without ``k``: a lower bound over all ε0-LDP randomizers (3-RR and binary RR are such
    randomizers).

The bounds are :class:`ShuffleBound` objects in :data:`SHUFFLE_REGISTRY`, a
:class:`~crowdhide.accounting.registry.Registry` over :class:`ShuffleParams`; every answer is
a :class:`~crowdhide.accounting.statement.PrivacyStatement` (``source`` names the bound,
``inputs`` holds ε0, n, k) and also carries the lower bound's statement in ``lower``.
``best`` is the smallest certificate (``kind`` "upper" or "exact" with its conditions met).
Bounds whose conditions fail answer with ``conditions_met=False`` and the reason in ``notes``.

Examples
--------
>>> r = shuffle_epsilon(eps0=4.0, n=100_000, delta=1e-6, bound="feldman2021")
>>> round(r.epsilon, 4), r.conditions_met
(0.1698, True)
>>> best = shuffle_epsilon(eps0=2.0, n=100_000, delta=1e-6, k=4)
>>> best.source, best.is_certificate, best.lower.source
('krr_clone', True, 'krr_lower')
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.curves import PrivacyCurve, RoundedCurve
from crowdhide.accounting.logmath import (
    MACHINE_EPSILON,
    loss_allowance,
    probability_loss_allowance,
)
from crowdhide.accounting.registry import Registry, best_of
from crowdhide.accounting.roots import LOG_ZERO, calibrate, safe_root
from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle.binary_rr import binary_rr_tilted_curve
from crowdhide.accounting.shuffle.variation_ratio import VariationRatio, one_report_log_delta
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError, UnmetTargetError

__all__ = [
    "BINARY_EXACT_MAX_N",
    "EXHAUSTIVE_MAX_N",
    "KRR_BLANKET_BEST_MAX_N",
    "KRR_LOWER_EXACT_MAX_EPS0",
    "KRR_LOWER_MAX_N",
    "SHUFFLE_BOUNDS",
    "SHUFFLE_REGISTRY",
    "BracketedCurve",
    "KrrShuffleCurve",
    "SafeSideCurve",
    "ShuffleBound",
    "ShuffleParams",
    "calibrate_eps0",
    "calibrate_n",
    "epsilon_vs_n",
    "krr_dataset_curve",
    "krr_shuffle_curve",
    "lower_bound_name",
    "shuffle_bound_curve",
    "shuffle_delta",
    "shuffle_delta_all",
    "shuffle_epsilon",
    "shuffle_epsilon_all",
]

#: Largest n for the exhaustive worst case over datasets (``exact``, k >= 3).
EXHAUSTIVE_MAX_N = 14
#: Largest n for ``exact`` with k = 2 (binary RR: all n datasets, each exactly).
BINARY_EXACT_MAX_N = _krr_fast.BINARY_EXACT_MAX_N
_MAX_N = 10**9
#: Largest n for the exact canonical-dataset curves (:func:`krr_shuffle_curve`,
#: :func:`krr_dataset_curve`: O(n) work).
KRR_LOWER_MAX_N = pairs.KRR_EXACT_MAX_N
#: ``krr_lower`` adds the "all others on x'" dataset (O(√n) incomplete-beta calls per δ) for
#: k >= 3 only up to this n; the third-value dataset (O(1) in n) always counts.
KRR_SAME_LOWER_MAX_N = 100_000
#: Beyond this ε0 the k-RR dataset evaluators lose ``1 − p`` to rounding (about 1e-16 ·
#: e^{ε0}/(k−1) relative): ``krr_lower`` then uses only the "others on x'" count, which is
#: given that complement directly (``_krr_fast.same_value_lower_log_delta``).
KRR_LOWER_EXACT_MAX_EPS0 = 12.0
#: ``krr_lower`` uses the full exact canonical-dataset curves (O(n) cells) up to this n.
KRR_FULL_LOWER_MAX_N = 1000
#: ``best`` evaluates ``krr_blanket`` (k >= 3) up to this n; beyond, ``krr_clone`` is tighter.
KRR_BLANKET_BEST_MAX_N = 100_000
_MAX_EPS0 = 50.0
#: Relative margin by which every reported δ is rounded away from the truth (up for
#: certificates, down for lower bounds) and every ε is solved at a target δ moved the same
#: way. The exact computations (``exact``, clone pairs at n = 1, k-RR at ε = 0) match the
#: truth to ~1e-14 relative; without a margin float error could put them below it.
_ROUNDING_MARGIN = 1e-9
_MAX_K = 10**6


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleParams:
    """n shuffled ε0-LDP reports: the parameters every shuffle bound is evaluated for.

    Parameters
    ----------
    eps0
        Local DP level of each user's randomizer, ``0 < eps0 <= 50``.
    n
        Number of users, ``1 <= n <= 1e9``.
    k
        Domain size of k-ary randomized response (``k = 2``: binary RR); ``None`` means any
        ε0-LDP randomizer (generic bounds only).

    Examples
    --------
    >>> ShuffleParams(eps0=1.0, n=1000, k=2)
    ShuffleParams(eps0=1.0, n=1000, k=2)
    >>> ShuffleParams(eps0=1.0, n=0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: n must be >= 1, got 0
    """

    eps0: float
    n: int
    k: int | None = None

    def __post_init__(self) -> None:
        e0 = check_real("eps0", self.eps0, low=0.0, low_open=True, high=_MAX_EPS0)
        object.__setattr__(self, "eps0", e0)
        object.__setattr__(self, "n", check_int("n", self.n, low=1, high=_MAX_N))
        if self.k is not None:
            object.__setattr__(self, "k", check_int("k", self.k, low=2, high=_MAX_K))


class _NotApplicableError(ValueError):
    """Raised while evaluating a curve whose condition depends on the queried δ
    (``erlingsson2019``: δ <= 0.01; ``feldman2021_closed``: ε0 <= ln(n/(16 ln(4/δ))));
    conditions on the parameters alone are answered by :meth:`ShuffleBound.applies`."""


# --------------------------------------------------------------------------------------
# Closed forms and blanket bounds (log δ as functions of ε)


def _erlingsson_log_delta(eps: float, eps0: float, n: int) -> float:
    """δ = exp(−n (ε / (12 ε0))²), Erlingsson et al. (SODA 2019), inverted."""
    if eps >= eps0:
        return -math.inf
    log_delta = -n * (eps / (12.0 * eps0)) ** 2
    if log_delta > math.log(0.01):
        raise _NotApplicableError("needs delta <= 0.01")
    return log_delta


def _erlingsson_epsilon(delta: float, eps0: float, n: int) -> float:
    if delta > 0.01:
        raise _NotApplicableError("needs delta <= 0.01")
    return min(12.0 * eps0 * math.sqrt(-math.log(delta) / n), eps0)


def _blanket_params(eps: float, eps0: float, k: int | None) -> tuple[float, float, float, float]:
    """(γ, b₊, b, c): blanket probability, max, range and variance bound of the privacy
    amplification random variable (Balle et al. 2019; generic or k-RR)."""
    big = math.exp(eps)
    if k is None:
        gamma = math.exp(-eps0)
        b_plus = math.exp(eps0) * -math.expm1(eps - 2.0 * eps0)
        b_range = (big + 1.0) * 2.0 * math.sinh(eps0)
        var = math.exp(eps0) * (big * big + 1.0) - 2.0 * gamma * math.exp(eps - 2.0 * eps0)
    else:
        # 1 − γ and b₊ = k (e^{ε0} − e^ε)/(e^{ε0} + k − 1) in closed form: as differences
        # they cancel for small ε0 or large k (1 − γ ~ ε0/k), down to a negative b₊
        em1, spread = math.expm1(eps0), big * math.expm1(eps0 - eps)
        gamma, rest = k / (em1 + k), em1 / (em1 + k)
        b_plus = k * spread / (em1 + k)
        b_range = rest * k * (big + 1.0)
        var = gamma * (2.0 - gamma) * math.expm1(eps) ** 2 + rest**2 * k * (big * big + 1.0)
    return gamma, b_plus, b_range, var


def _hoeffding_log_delta(eps: float, eps0: float, n: int, k: int | None) -> float:
    """Balle et al. (2019), Hoeffding: δ = b²/(4aγn) (1 − γ(1 − e^{−2a²/b²}))^n, a = e^ε − 1."""
    if eps >= eps0:
        return -math.inf
    if eps <= 0.0:
        return 0.0
    gamma, _, b_range, _ = _blanket_params(eps, eps0, k)
    a = math.expm1(eps)
    if b_range * b_range == 0.0:
        return one_report_log_delta(eps, eps0)
    inner = -gamma * -math.expm1(-2.0 * a * a / (b_range * b_range))
    value = (
        2.0 * math.log(b_range) - math.log(4.0 * a) - math.log(gamma * n) + n * math.log1p(inner)
    )
    return min(value, 0.0)


def _bennett_log_delta(eps: float, eps0: float, n: int, k: int | None) -> float:
    """Balle et al. (2019), Bennett: δ = b₊/(γ n ln(1+β)) Σ_{m>=1} Bin(m; n, γ) e^{−m α φ(β)},
    α = c/b₊², β = a b₊/c, φ(u) = (1+u)ln(1+u) − u. The binomial sum equals
    ``(1 − γ(1 − e^{−αφ}))^n − (1 − γ)^n`` (evaluated in log space)."""
    if eps >= eps0:
        return -math.inf
    if eps <= 0.0:
        return 0.0
    gamma, b_plus, _, var = _blanket_params(eps, eps0, k)
    a = math.expm1(eps)
    if b_plus * b_plus == 0.0 or var == 0.0:
        return one_report_log_delta(eps, eps0)
    alpha, beta = var / b_plus**2, a * b_plus / var
    phi = (1.0 + beta) * math.log1p(beta) - beta
    if phi <= 0.0:  # rounding for tiny β: φ(β) ≈ β²/2 > 0
        phi = beta * beta / 2.0 * (1.0 - beta / 3.0)
    kappa = alpha * phi
    log_all = n * math.log1p(-gamma * -math.expm1(-kappa))
    log_zero = n * math.log1p(-gamma) if gamma < 1.0 else -math.inf
    log_sum = log_all + float(np.log(-np.expm1(min(log_zero - log_all, 0.0)) + 0.0))
    value = math.log(b_plus) - math.log(gamma * n) - math.log(math.log1p(beta)) + log_sum
    return min(value, 0.0)


def _fmt21_closed_epsilon(
    delta: float, eps0: float, n: int, *, log_delta: float | None = None
) -> float:
    """FMT21 closed form with ln(4/δ) (authors' code form); ``log_delta`` overrides δ."""
    log4d = math.log(4.0) - (math.log(delta) if log_delta is None else log_delta)
    if eps0 > math.log(n / (16.0 * log4d)):
        raise _NotApplicableError(
            f"needs eps0 <= ln(n/(16 ln(4/delta))) = {math.log(n / (16.0 * log4d)):.4g}"
        )
    a = 8.0 * math.sqrt(math.exp(eps0) * log4d / n)
    c = 8.0 * math.exp(eps0) / n
    e = math.log1p(a + c)
    b = -math.expm1(-eps0)
    d = 1.0 + math.exp(-eps0 - e)
    return min(math.log1p(b / d * (a + c)), eps0)


def _fmt21_closed_log_delta(eps: float, eps0: float, n: int) -> float:
    """Smallest δ (log) whose closed-form ε is <= eps and for which the validity holds."""
    if eps >= eps0:
        return -math.inf
    # Validity: ln(4/δ) <= n e^{-ε0}/16  <=>  log δ >= ln 4 − n e^{−ε0}/16.
    log_min = math.log(4.0) - n * math.exp(-eps0) / 16.0
    if log_min >= 0.0:
        raise _NotApplicableError("needs n > 16 e^eps0 ln 4")

    def eps_at(log_delta: float) -> float:
        return _fmt21_closed_epsilon(0.0, eps0, n, log_delta=log_delta)

    lo, hi = max(log_min, -800.0), -1e-12
    if eps_at(hi) > eps:
        return 0.0  # even δ → 1 does not reach ε: trivial
    # ε(log δ) is non-increasing: the smallest passing log δ, from the passing side.
    return calibrate(lambda x: eps_at(x) <= eps, low=lo, high=hi, increasing=True, rtol=1e-12)


# --------------------------------------------------------------------------------------
# Curves


def _solve_epsilon(curve: PrivacyCurve, log_target: float, eps0: float) -> float:
    """Smallest ε (to 1e-10 ε0) with ``log δ(ε) <= log_target``, from the safe side.

    Every shuffle curve has δ(ε0) = 0, so ``[0, ε0]`` brackets the root; the coarser
    tolerance than :meth:`PrivacyCurve.epsilon` saves evaluations of the O(n) curves.
    """
    xtol = max(1e-13, 1e-10 * eps0)
    # A curve that stays above the target up to ε0 (an evaluator whose rounding floor is
    # above a tiny δ, e.g. `exact` at δ = 1e-300) gives ε0 after one evaluation instead of a
    # root search that closes in on ε0 in ~35 (each O(n · window): 3.5 s at n = 2500).
    log_delta = functools.cache(curve.log_delta)  # the new upper end is evaluated once
    top = eps0 - xtol
    if top <= 0.0:
        top = eps0
    elif log_delta(top) > log_target:
        return eps0
    # safe_root returns 0 itself when δ(0) already meets the target (one evaluation there).
    return safe_root(log_delta, log_target, 0.0, top, xtol=xtol)


#: log δ of the ε query that δ queries should agree with (set by the calibrations, see
#: :func:`_summed_like_epsilon_at`); None: δ queries choose their own tail level.
_DELTA_QUERY_LEVEL: ContextVar[float | None] = ContextVar("_DELTA_QUERY_LEVEL", default=None)


@contextmanager
def _summed_like_epsilon_at(log_delta: float) -> Iterator[None]:
    """Within the block, δ queries of the adaptive curves sum to the tail level that an ε
    query at ``log_delta`` uses. Both values are upper bounds either way; summed alike, a δ
    query that meets the target at ε is followed by an ε query that does too, which saves
    the calibrations their settling ε queries."""
    token = _DELTA_QUERY_LEVEL.set(log_delta)
    try:
        yield
    finally:
        _DELTA_QUERY_LEVEL.reset(token)


class _AdaptiveCurve(PrivacyCurve):
    """A curve from ``fn(eps, log_tail)``: summation windows are widened until the tail
    bound added to δ is negligible (< e^{-14} ≈ 1e-6 relative), so small δ stay tight. While
    solving for ε at a target δ the windows never need tails below ``δ e^{-40}``: a value
    computed with them that is below the target is a valid answer."""

    def __init__(self, fn: Callable[[float, float], float], eps0: float) -> None:
        self._fn = fn
        self._eps0 = eps0
        self.solving_for(None)

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._eps0:  # every shuffle of ε0-LDP reports is ε0-DP (κ rounded up
            return -math.inf  # in a clone system can leave a sliver of δ there)
        big_l = min(self._start_l, self._max_l)
        value = self._fn(epsilon, -big_l)
        while value > -math.inf and value <= -big_l + 14.0 and big_l < self._max_l:
            big_l = min(max(-value + 30.0, 2.0 * big_l), self._max_l)
            value = self._fn(epsilon, -big_l)
        return min(value, 0.0)

    def solving_for(self, log_target: float | None) -> None:
        """Enter (``log_target`` given) or leave (None) the mode used while solving ε(δ)."""
        if log_target is None:
            log_target = _DELTA_QUERY_LEVEL.get()
        if log_target is None:
            self._max_l, self._start_l = 2000.0, 40.0
        else:
            self._max_l = self._start_l = max(min(2000.0, -log_target + 40.0), 40.0)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        self.solving_for(target)
        try:
            return _solve_epsilon(self, target, self._eps0)
        finally:
            self.solving_for(None)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


#: ``variation_ratio`` is not solved for ε below this δ: its δ stops at a rounding floor of
#: a few times 1e-300 (measured: 2e-300 at n = 1e6, ε0 = 1), so at δ = 1e-300 it answered ε0
#: after 2-3.6 s; the FMT21 pair, also in ``best``, answers there.
VARIATION_RATIO_MIN_DELTA = 1e-280
#: Relative accuracy in ε of :class:`BracketedCurve`'s search: a passing point whose
#: estimated distance to the root is below this fraction of ε is returned (far below the
#: certificates' own blocking error of about 1e-3, but the calibrations settle on the ε
#: query and need it this close to the δ query's root).
BRACKET_RTOL = 1e-6
#: Below this log δ a search that finds no passing point asks whether the curve sits at its
#: rounding floor (:func:`at_floor`): the blocked evaluators add absolute allowances of about
#: 1e-300 that grow with ε, so there no larger ε passes (variation_ratio at n = 1e6,
#: δ = 1e-300 searched for 2.4 s to answer ε0).
TINY_LOG_DELTA = math.log(1e-250)


def at_floor(log_delta: Callable[[float], float], target: float, x: float, g: float) -> bool:
    """Whether a failing ``(x, g = log δ(x))`` at a tiny target is a rounding floor: log δ
    falls by less than 0.05 over the next per cent of ε (a tail still above the target falls
    by several there). Then the answer is ε0 (always valid); otherwise the caller searches."""
    if target >= TINY_LOG_DELTA:
        return False
    return g - log_delta(1.01 * x + 1e-12) < 0.05


#: Secant steps :class:`BracketedCurve` takes before it falls back to a bracketed search.
BRACKET_SECANT_STEPS = 6


def secant_bracket(
    log_delta: Callable[[float], float],
    target: float,
    start: tuple[float, float],
    top: float,
    slope: float,
    *,
    rtol: float = BRACKET_RTOL,
    steps: int = BRACKET_SECANT_STEPS,
) -> tuple[float, float, float, bool]:
    """Secant steps on a non-increasing ``log_delta`` from a failing ``start = (x, log δ(x))``
    with an initial ``slope``: ``(lo, log δ(lo), hi, done)`` with ``lo`` failing and ``hi``
    passing (``hi = top`` if no step passed); ``done`` when the estimated root is within
    ``2 rtol`` of ``hi``. Each step is aimed ``rtol/2`` past the
    estimated root, so it usually lands passing; the estimate only decides when to stop,
    every point returned as passing passed by its own value."""
    (lo, g_lo), hi = start, top
    last, g_last = lo, g_lo  # the secant runs through the two latest points
    for _ in range(steps):
        if not (math.isfinite(slope) and slope < 0.0):
            break
        root = last + (target - g_last) / slope
        if hi < top and hi - root <= 2.0 * rtol * hi:  # the estimate is off by about rtol
            return lo, g_lo, hi, True
        guess = root + 0.5 * rtol * root
        if not lo < guess < hi:  # the estimate left the bracket: bisect it instead
            guess = 0.5 * (lo + hi)
        g = log_delta(guess)
        slope = (g - g_last) / (guess - last) if guess != last else slope
        last, g_last = guess, g
        if g <= target:
            hi = guess
        else:
            lo, g_lo = guess, g
    return lo, g_lo, hi, False


class BracketedCurve(_AdaptiveCurve):
    """An :class:`_AdaptiveCurve` that is never below ``floor`` (δ for δ): its ε(δ) is
    searched from ``floor``'s ε upwards, so an expensive curve that sits a few per cent above
    a cheap one is solved in a handful of evaluations. Only points whose own ``log δ`` meets
    the target are returned, so a floor that is not one costs time, never soundness.

    The search (issue 32: two or three evaluations instead of six or more) takes secant
    steps on ``log δ`` from the floor's ε, the first with the floor's slope (the two curves
    are nearly parallel in log δ), each aimed a little past the root; it returns the first
    passing point whose estimated distance to the root is below :data:`BRACKET_RTOL` of ε,
    and otherwise searches the bracket the steps found.
    """

    def __init__(
        self,
        fn: Callable[[float, float], float],
        eps0: float,
        floor: PrivacyCurve,
        *,
        min_delta: float = 0.0,
    ) -> None:
        super().__init__(fn, eps0)
        self._floor = floor
        self._min_delta = min_delta

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        if delta < self._min_delta:
            raise _NotApplicableError(
                f"its blocked sums add absolute rounding allowances of about 1e-300, so it is "
                f"not solved below delta = {self._min_delta:g} (got {delta:g}); feldman2021 "
                "has no such floor"
            )
        lo = min(self._floor.epsilon(delta), self._eps0)
        log_delta = functools.cache(self.log_delta)  # the bracket's ends are evaluated once

        self.solving_for(target)
        try:
            g_lo = log_delta(lo)
            if g_lo <= target:
                return lo
            lo, hi = self._secant(log_delta, target, lo, g_lo)
            if hi <= lo:  # the secant steps found a point close enough to the root
                return hi
            return safe_root(log_delta, target, lo, hi, xtol=max(1e-13, BRACKET_RTOL * hi))
        finally:
            self.solving_for(None)

    def _slope(self, eps: float) -> float:
        """The floor's ``d log δ/dε`` at ``eps`` (a forward difference; 0 if not finite)."""
        step = max(1e-4 * eps, 1e-9)
        pair = self._floor.log_delta(eps), self._floor.log_delta(eps + step)
        slope = (pair[1] - pair[0]) / step
        return slope if math.isfinite(slope) and slope < 0.0 else 0.0

    def _secant(
        self, log_delta: Callable[[float], float], target: float, lo: float, g_lo: float
    ) -> tuple[float, float]:
        """Failing and passing ends ``(lo, hi)`` of a bracket (``hi = ε0`` if none passed), or
        ``(p, p)`` for a passing p within :data:`BRACKET_RTOL` of the root."""
        lo, g_lo, hi, done = secant_bracket(
            log_delta, target, (lo, g_lo), self._eps0, self._slope(lo)
        )
        if done:
            return hi, hi
        if hi < self._eps0:
            return lo, hi
        if at_floor(log_delta, target, lo, g_lo):
            return self._eps0, self._eps0
        for growth in (1.01, 1.05, 1.5):  # grow a bracket
            step = min(lo * growth + 1e-12, hi)
            if step >= hi or log_delta(step) <= target:
                return lo, step
            lo = step
        return lo, hi


class _FunctionCurve(PrivacyCurve):
    """A curve from ``log δ(ε)``, with an optional closed-form ε(δ)."""

    def __init__(
        self,
        fn: Callable[[float], float],
        eps0: float,
        epsilon_of: Callable[[float], float] | None = None,
    ) -> None:
        self._fn = fn
        self._eps0 = eps0
        self._epsilon_of = epsilon_of

    def log_delta(self, epsilon: float) -> float:
        return min(self._fn(epsilon), 0.0)

    def epsilon(self, delta: float) -> float:
        if self._epsilon_of is None:
            return super().epsilon(delta)
        return self._epsilon_of(check_probability("delta", delta, allow_zero=False))

    def epsilon_upper_hint(self) -> float:
        return self._eps0


#: In lower-bound mode, δ values below this are reported as 0 (see KrrShuffleCurve).
_LOWER_BOUND_FLOOR_LOG = math.log(1e-250)
_LOWER_BOUND_RELATIVE_SLACK_LOG = math.log1p(-1e-5)


class KrrShuffleCurve(PrivacyCurve):
    """Privacy curve of n shuffled k-RR reports.

    ``exhaustive=True``: the exact worst case over all datasets of the other users (max of
    the exact curves of every dataset class); ``False``: the max of the exact curves of the
    two canonical datasets (a lower bound on the worst case). In that mode δ below 1e-250 is
    reported as 0, because the canonical-dataset evaluators add rigorous tail and underflow
    bounds (meant for upper bounds) that can reach ~1e-290 and would otherwise make the
    "lower" bound exceed the truth far in the tail.
    """

    def __init__(self, *, eps0: float, n: int, k: int, exhaustive: bool) -> None:
        self.eps0, self.n, self.k, self.exhaustive = eps0, n, k, exhaustive
        self._members: list[PrivacyCurve] = []
        if exhaustive:
            self._members = [c for _, c in pairs.krr_config_curves(n, k, eps0)]
        else:
            self._members.append(
                _AdaptiveCurve(lambda e, t: pairs.krr_same_log_delta(n, k, eps0, e, t), eps0)
            )
            if k >= 3:
                self._members.append(
                    _AdaptiveCurve(lambda e, t: pairs.krr_third_log_delta(n, k, eps0, e, t), eps0)
                )

    @property
    def members(self) -> list[PrivacyCurve]:
        """The per-dataset (class) curves this curve is the maximum of."""
        return list(self._members)

    @property
    def is_certificate(self) -> bool:
        """Whether :meth:`delta` is a valid upper bound (exhaustive worst case)."""
        return self.exhaustive

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self.eps0:
            return -math.inf
        value = max(m.log_delta(epsilon) for m in self._members)
        if self.exhaustive:
            return value
        # Lower-bound mode. The canonical-dataset evaluators are upper bounds for their
        # dataset: they add bounds on the windows' tails (< 1e-6 relative) and on underflow
        # (absolute, at most ~1e-290). Removing the relative part and reporting values in
        # the underflow zone as 0 keeps the result below the datasets' true δ.
        if value < _LOWER_BOUND_FLOOR_LOG:
            return -math.inf
        return value + _LOWER_BOUND_RELATIVE_SLACK_LOG

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        adaptive = [m for m in self._members if isinstance(m, _AdaptiveCurve)]
        for member in adaptive:
            member.solving_for(target)
        try:
            return _solve_epsilon(self, target, self.eps0)
        finally:
            for member in adaptive:
                member.solving_for(None)

    def epsilon_upper_hint(self) -> float:
        return self.eps0


class _LowerCurve(PrivacyCurve):
    """Maximum of rigorous lower bounds ``log δ(ε)``; ε(δ) from the *lower* side, so the
    returned ε satisfies δ_lower(ε) >= δ: the true curve needs at least that ε."""

    def __init__(
        self,
        members: list[Callable[[float], float]],
        eps0: float,
        adaptive: list[_AdaptiveCurve] | None = None,
    ) -> None:
        self._members = members
        self._eps0 = eps0
        # Adaptive curves inside the members: put into solving mode while solving ε(δ).
        self._adaptive = list(adaptive or [])
        self._adaptive += [m.curve for m in members if isinstance(m, _SameLower)]

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._eps0:
            return -math.inf
        return min(max(m(epsilon) for m in self._members), 0.0)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        for curve in self._adaptive:
            curve.solving_for(target)
        try:
            if self.log_delta(0.0) <= target:
                return 0.0
            xtol = max(1e-13, 1e-10 * self._eps0)
            # A lower bound that is still above the target just below ε0 (tiny δ at small n)
            # answers there at once, instead of closing in on ε0 in ~35 evaluations (7.8 s for
            # k = 3, n = 1e3, δ = 1e-300): the truth needs at least that ε.
            top = self._eps0 - xtol
            if top > 0.0 and self.log_delta(top) > target:
                return top
            return _lower_root(self.log_delta, target, self._eps0, xtol)
        finally:
            for curve in self._adaptive:
                curve.solving_for(None)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


def _lower_root(
    log_delta: Callable[[float], float], target: float, top: float, xtol: float
) -> float:
    """The largest failing ε of a lower bound below its root in ``(0, top)`` (``log δ(0)``
    above the target): secant steps from ε = 0 with the curve's own slope, then a bracketed
    search of what they leave, to ``BRACKET_RTOL`` — every point returned fails by its own
    value, so it stays a lower bound (about 8 evaluations instead of 35: at n = 1e3,
    δ = 1e-300 each costs 0.1-0.2 s)."""
    log_delta = functools.cache(log_delta)
    g0 = log_delta(0.0)
    step = 1e-6 * top
    g1 = log_delta(step)
    if g1 <= target:
        return safe_root(log_delta, target, 0.0, step, xtol=xtol, lower_side=True)
    lo, _, hi, done = secant_bracket(log_delta, target, (step, g1), top, (g1 - g0) / step, steps=10)
    if done and hi - lo <= 4.0 * BRACKET_RTOL * hi:
        return lo
    tol = max(xtol, BRACKET_RTOL * hi)
    return safe_root(log_delta, target, lo, hi, xtol=tol, lower_side=True)


class _SameLower:
    """Lower bound from the exact "all others on x'" curve: that evaluator is an upper bound
    for its dataset within 1e-5 relative plus an underflow floor, removed as in
    :class:`KrrShuffleCurve`."""

    def __init__(self, eps0: float, n: int, k: int) -> None:
        self.curve = _AdaptiveCurve(lambda e, t: pairs.krr_same_log_delta(n, k, eps0, e, t), eps0)

    def __call__(self, eps: float) -> float:
        value = self.curve.log_delta(eps)
        if value < _LOWER_BOUND_FLOOR_LOG:
            return -math.inf
        return value + _LOWER_BOUND_RELATIVE_SLACK_LOG


def _krr_lower_curve(eps0: float, n: int, k: int) -> PrivacyCurve:
    """``krr_lower``: for n <= KRR_FULL_LOWER_MAX_N the exact curves of both canonical datasets
    (O(n) cells); beyond, the exact counts (x, x') of the third-value dataset (k >= 3, O(1)
    in n) and the exact "all others on x'" dataset (k = 2, or n <= KRR_SAME_LOWER_MAX_N)."""
    members: list[Callable[[float], float]] = []
    adaptive: list[_AdaptiveCurve] = []
    if eps0 > KRR_LOWER_EXACT_MAX_EPS0:
        # The dataset evaluators work with p = e/(e+k−1), whose 1 − p is lost to rounding
        # here; the "others on x'" count of x-reports is given its complement directly.
        e = math.exp(eps0)
        keep, other = e / (e + k - 1.0), 1.0 / (e + k - 1.0)
        rests = ((k - 1.0) * other, (e + k - 2.0) * other)
        members.append(
            lambda eps: _krr_fast.same_value_lower_log_delta(
                n, keep, other, eps, p_rest=rests[0], q_rest=rests[1]
            )
        )
        return _LowerCurve(members, eps0, adaptive)
    if n <= KRR_FULL_LOWER_MAX_N:
        canonical = KrrShuffleCurve(eps0=eps0, n=n, k=k, exhaustive=False)
        members.append(canonical.log_delta)
        adaptive += [c for c in canonical.members if isinstance(c, _AdaptiveCurve)]
    if k >= 3:
        members.append(lambda e: _krr_fast.krr_third_marginal_lower_log_delta(n, k, eps0, e))
    if n > KRR_FULL_LOWER_MAX_N and k == 2:
        members.append(lambda e: _krr_fast.binary_same_lower_log_delta(n, eps0, e))
    elif n > KRR_FULL_LOWER_MAX_N and n <= KRR_SAME_LOWER_MAX_N:
        members.append(_SameLower(eps0, n, k))
    return _LowerCurve(members, eps0, adaptive)


def _ldp_lower_curve(eps0: float, n: int) -> PrivacyCurve:
    """``ldp_lower``: 3-RR (others on a third value) and binary RR (others on x') are ε0-LDP
    randomizers, so their exact datasets bound the worst case over all ε0-LDP randomizers."""
    members: list[Callable[[float], float]] = [
        lambda e: _krr_fast.krr_third_marginal_lower_log_delta(n, 3, eps0, e),
        lambda e: _krr_fast.binary_same_lower_log_delta(n, eps0, e),
    ]
    return _LowerCurve(members, eps0)


# --------------------------------------------------------------------------------------
# The registry of bounds


class SafeSideCurve(RoundedCurve):
    """A bound's curve as reported (pessimistic rounding, issues 15 and 28): a
    :class:`~crowdhide.accounting.curves.RoundedCurve` with the relative
    :data:`_ROUNDING_MARGIN` on δ and the absolute
    :func:`~crowdhide.accounting.logmath.loss_allowance` on ε (the shuffle evaluators'
    losses and thresholds near ε0). Every shuffle of ε0-LDP reports is ε0-DP, so ε is capped
    at ε0 and δ(ε >= ε0) = 0.
    """

    def __init__(
        self, inner: PrivacyCurve, eps0: float, *, lower: bool, loss_error: float | None = None
    ) -> None:
        super().__init__(
            inner,
            relative=_ROUNDING_MARGIN,
            loss_error=loss_allowance(eps0) if loss_error is None else loss_error,
            lower=lower,
            cap=eps0,
        )
        self._eps0 = eps0

    def epsilon_upper_hint(self) -> float:
        return self._eps0


def _closed_form(params: ShuffleParams) -> float:
    """Loss allowance of a closed form in ε and ε0 (``expm1`` wherever two exponentials
    would cancel): its rounding is relative, covered by the relative margin."""
    return 0.0


def _clone_pair_loss(params: ShuffleParams) -> float:
    """Loss allowance of a bound that is the FMT clone pair (``feldman2021``/``2023``, and
    ``krr_clone``/``krr_blanket`` at k = 2): :func:`_shuffle_pairs.clone_pair_log_delta`
    computes its thresholds without cancellation (``expm1(ε0 − ε)``) and adds their
    rounding (``theta_rtol``) itself, so it needs none; other k: the default."""
    return 0.0 if params.k in (None, 2) else loss_allowance(params.eps0)


def _always(params: ShuffleParams) -> bool:
    return True


def _no_condition(params: ShuffleParams) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class ShuffleBound:
    """One shuffle bound (a :class:`~crowdhide.accounting.registry.Bound` over
    :class:`ShuffleParams`): what it is, where it comes from, when it applies.

    ``scope`` is ``"any"`` (any ε0-LDP randomizer, and k-RR), ``"krr"`` (needs ``k``) or
    ``"generic"`` (only without ``k``: a lower bound over *all* ε0-LDP randomizers is not one
    for k-RR). ``condition(params)`` is the reason its parameter conditions fail (or None),
    ``build(params)`` its raw curve; ``in_best(params)`` says whether ``best`` needs to
    evaluate it (a bound another one dominates is skipped for speed).
    """

    name: str
    kind: Kind
    citation: str
    scope: str
    build: Callable[[ShuffleParams], PrivacyCurve]
    condition: Callable[[ShuffleParams], str | None] = _no_condition
    certificate_without_k: bool = True
    in_best: Callable[[ShuffleParams], bool] = _always
    #: Most grid points :func:`epsilon_vs_n` evaluates this bound at (None: all of them);
    #: for bounds that take a second or more per point.
    plot_points: int | None = None
    #: The absolute loss allowance on ε of its evaluator (None: thresholds computed from
    #: e^ε and e^ε0, :func:`~crowdhide.accounting.logmath.loss_allowance`).
    loss_error: Callable[[ShuffleParams], float] | None = None

    def listed_for(self, k: int | None) -> bool:
        """Whether the bound is listed (``*_all``, ``--bound all``) for this randomizer class."""
        return {"any": True, "krr": k is not None, "generic": k is None}[self.scope]

    def applies(self, params: ShuffleParams) -> str | None:
        """``None`` when the bound's conditions hold for ``params``, else the reason."""
        if self.scope == "krr" and params.k is None:
            return f"{self.name} is for k-ary randomized response: give k"
        if self.scope == "generic" and params.k is not None:
            return f"{self.name} is a lower bound over all eps0-LDP randomizers: omit k"
        if not self.certificate_without_k and params.k is None:
            return "not a certificate for every eps0-LDP randomizer (give k)"
        return self.condition(params)

    def curve(self, params: ShuffleParams) -> PrivacyCurve:
        """The bound's curve as reported (rounded to the safe side, ε capped at ε0)."""
        loss = None if self.loss_error is None else self.loss_error(params)
        return SafeSideCurve(
            self.build(params), params.eps0, lower=self.kind == "lower", loss_error=loss
        )


def _erlingsson_condition(p: ShuffleParams) -> str | None:
    return "needs eps0 <= 0.5, n >= 1000" if p.eps0 > 0.5 or p.n < 1000 else None


def _erlingsson_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n = p.eps0, p.n
    return _FunctionCurve(
        lambda e: _erlingsson_log_delta(e, eps0, n), eps0, lambda d: _erlingsson_epsilon(d, eps0, n)
    )


def _binary_blocks_condition(p: ShuffleParams) -> str | None:
    return None if p.k == 2 else "binary RR (k = 2) only"


def _binary_blocks_curve(p: ShuffleParams) -> PrivacyCurve:
    return binary_rr_tilted_curve(eps0=p.eps0, n=p.n)


def _binary_noise(p: ShuffleParams) -> float:
    """``n p q`` of binary RR: the variance of the count, in reports."""
    return p.n / (4.0 * math.cosh(p.eps0 / 2.0) ** 2)


def _fmt21_closed_condition(p: ShuffleParams) -> str | None:
    if math.log(4.0) - p.n * math.exp(-p.eps0) / 16.0 >= 0.0:
        return "needs n > 16 e^eps0 ln 4"
    return None


def _fmt21_closed_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n = p.eps0, p.n
    return _FunctionCurve(
        lambda e: _fmt21_closed_log_delta(e, eps0, n),
        eps0,
        lambda d: _fmt21_closed_epsilon(d, eps0, n),
    )


def _clone_curve(eps0: float, n: int, beta: float) -> PrivacyCurve:
    return _AdaptiveCurve(lambda e, t: pairs.clone_pair_log_delta(n, eps0, beta, e, t), eps0)


def _fmt21_curve(p: ShuffleParams) -> PrivacyCurve:
    return _clone_curve(p.eps0, p.n, math.exp(-p.eps0))


def _fmt23_curve(p: ShuffleParams) -> PrivacyCurve:
    return _clone_curve(p.eps0, p.n, 2.0 / (math.exp(p.eps0) + 1.0))


def _variation_ratio_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n = p.eps0, p.n
    # Its top cell bounds the FMT23 pair from above, so the pair's ε is a floor.
    return BracketedCurve(
        VariationRatio(n, eps0), eps0, _fmt23_curve(p), min_delta=VARIATION_RATIO_MIN_DELTA
    )


def _krr_clone_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n, k = p.eps0, p.n, int(p.k or 2)
    if k == 2:  # every clone reports x or x': the k-RR clone pair is the FMT23 pair
        return _fmt23_curve(p)
    return _AdaptiveCurve(lambda e, t: _krr_fast.krr_clone_fast_log_delta(n, k, eps0, e, t), eps0)


def _krr_blanket_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n, k = p.eps0, p.n, int(p.k or 2)
    if k == 2:  # every uniform report is x or x': the blanket is the FMT23 pair
        return _fmt23_curve(p)
    # The third-value count is a lower bound on the truth, so on this certificate too: its
    # ε (microseconds, O(1) in n) starts the search a fraction of a per cent below.
    floor = _FunctionCurve(
        lambda e: _krr_fast.krr_third_marginal_lower_log_delta(n, k, eps0, e), eps0
    )
    return BracketedCurve(
        lambda e, t: _krr_fast.krr_blanket_log_delta(n, k, eps0, e, t), eps0, floor
    )


def _exact_condition(p: ShuffleParams) -> str | None:
    if p.k == 2 and p.n > BINARY_EXACT_MAX_N:
        return f"computed only for n <= {BINARY_EXACT_MAX_N} (k = 2)"
    if p.k != 2 and p.n > EXHAUSTIVE_MAX_N:
        return f"enumerated only for n <= {EXHAUSTIVE_MAX_N}"
    return None


def _exact_loss_error(p: ShuffleParams) -> float:
    """k >= 3: the exhaustive classes' losses are logs of probabilities convolved from n
    reports (each step a sum of 4 positive products: <= 5 roundings) and normalised by a
    pairwise sum over (n+1)^3 cells; k = 2: thresholds from e^ε and e^ε0 only."""
    if p.k == 2:
        return loss_allowance(p.eps0)
    steps = 5.0 * (p.n + 1) + 3.0 * math.log2(p.n + 1) + 4.0
    return max(probability_loss_allowance(steps * MACHINE_EPSILON), loss_allowance(p.eps0))


class _FlooredCurve(_AdaptiveCurve):
    """An :class:`_AdaptiveCurve` whose evaluator adds an absolute floor to every δ: an ε
    query below it is refused before any work (it could only answer ε0)."""

    def __init__(
        self, fn: Callable[[float, float], float], eps0: float, floor: float, why: str
    ) -> None:
        super().__init__(fn, eps0)
        self._floor, self._why = floor, why

    def epsilon(self, delta: float) -> float:
        if delta <= self._floor:
            raise _NotApplicableError(
                f"{self._why} adds up to {self._floor:.3g} to delta: no delta below it "
                f"(got {delta:g})"
            )
        return super().epsilon(delta)


def _exact_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n = p.eps0, p.n
    if p.k == 2:  # binary RR: n datasets, each an exact count law (O(n · window) per δ)
        # Its per-row underflow bound is (window + 1) · 1e-300 <= (n + 2) · 1e-300: at
        # δ = 1e-300 it took 57 s (under load; 7.5 s CPU at n = 2500) to answer ε0.
        return _FlooredCurve(
            lambda e, t: _krr_fast.binary_rr_worst_log_delta(n, eps0, e, t),
            eps0,
            (n + 2) * 1e-300,
            "exact (k = 2) is rounded up by an underflow bound that",
        )
    return KrrShuffleCurve(eps0=eps0, n=n, k=int(p.k or 2), exhaustive=True)


def _blanket(fn: Callable[..., float]) -> Callable[[ShuffleParams], PrivacyCurve]:
    def build(p: ShuffleParams) -> PrivacyCurve:
        return _FunctionCurve(lambda e: fn(e, p.eps0, p.n, p.k), p.eps0)

    return build


_BALLE = "Balle, Bell, Gascon, Nissim, CRYPTO 2019"
_FMT23 = "Feldman, McMillan, Talwar (SODA 2023) clone pair; needs R(x)+R(x') <= (e^eps0+1) R(v)"
_BLANKET_EXACT = (
    "privacy blanket of Balle et al., CRYPTO 2019, summed exactly (crowdhide, docs/shuffle.md)"
)
_VARIATION_RATIO = (
    "split clones over the total variation (accounting/shuffle/variation_ratio.py); the value of "
    "Wang et al., VLDB 2024, for any eps0-LDP randomizer"
)
_BOUNDS: tuple[ShuffleBound, ...] = (
        ShuffleBound(
            "erlingsson2019", "upper", "Erlingsson et al., SODA 2019", "any", _erlingsson_curve,
            _erlingsson_condition, in_best=lambda p: _erlingsson_condition(p) is None,
            loss_error=_closed_form,
        ),
        ShuffleBound(
            "balle2019_hoeffding", "upper", _BALLE, "any", _blanket(_hoeffding_log_delta),
            loss_error=_closed_form,
        ),
        ShuffleBound(
            "balle2019_bennett", "upper", _BALLE, "any", _blanket(_bennett_log_delta),
            loss_error=_closed_form,
        ),
        ShuffleBound(
            "feldman2021_closed", "upper", "Feldman, McMillan, Talwar, FOCS 2021 (closed form)",
            "any", _fmt21_closed_curve, _fmt21_closed_condition, loss_error=_closed_form,
        ),
        ShuffleBound(
            "feldman2021", "upper", "Feldman, McMillan, Talwar, FOCS 2021", "any", _fmt21_curve,
            # With k the FMT23 pair (more clones, same mixture) is a post-processing of it.
            in_best=lambda p: p.k is None, loss_error=lambda p: 0.0,
        ),
        ShuffleBound(
            "feldman2023", "upper", _FMT23, "any", _fmt23_curve, certificate_without_k=False,
            # k >= 3: krr_clone is a post-processing of this pair (>= 24 % tighter in ε
            # even at ε0 -> 0), so best skips it there for speed; k = 2: binary_rr_blocks
            # is 11-47 % tighter once the count has some noise (n p q >= 64).
            in_best=lambda p: p.k == 2 and (p.n <= BINARY_EXACT_MAX_N or _binary_noise(p) < 64),
            loss_error=lambda p: 0.0,  # the clone pair: see _clone_pair_loss
        ),
        ShuffleBound(
            "variation_ratio", "upper", _VARIATION_RATIO, "any", _variation_ratio_curve,
            # With k the k-RR bounds are post-processings of the FMT23 pair, which this
            # bound is never below.
            in_best=lambda p: p.k is None, plot_points=8,
        ),
        ShuffleBound(
            "krr_clone", "upper", "crowdhide k-RR clone reduction (docs/shuffle.md)", "krr",
            _krr_clone_curve, in_best=lambda p: p.k != 2,  # k = 2: the same curve as feldman2023
            loss_error=_clone_pair_loss,
        ),
        ShuffleBound(
            "krr_blanket", "upper", _BLANKET_EXACT, "krr", _krr_blanket_curve,
            # k = 2: the same pair as feldman2023; beyond KRR_BLANKET_BEST_MAX_N krr_clone
            # is the tighter one (docs/shuffle.md).
            in_best=lambda p: p.k != 2 and p.n <= KRR_BLANKET_BEST_MAX_N,
            loss_error=_clone_pair_loss,
        ),
        ShuffleBound(
            "binary_rr_blocks", "upper",
            "crowdhide blocks of datasets (accounting/shuffle/binary_rr.py)",
            "krr", _binary_blocks_curve, _binary_blocks_condition,
            # Beyond the exhaustive range, at every n (contour integrals: milliseconds).
            in_best=lambda p: p.k == 2 and p.n > BINARY_EXACT_MAX_N,
        ),
        ShuffleBound(
            "exact", "exact", "exhaustive enumeration of datasets", "krr", _exact_curve,
            _exact_condition, in_best=lambda p: _exact_condition(p) is None,
            loss_error=_exact_loss_error,
        ),
        ShuffleBound(
            "krr_lower", "lower", "canonical k-RR datasets (docs/shuffle.md)", "krr",
            lambda p: _krr_lower_curve(p.eps0, p.n, int(p.k or 2)),
        ),
        ShuffleBound(
            "ldp_lower", "lower", "3-RR and binary RR are eps0-LDP (docs/shuffle.md)", "generic",
            lambda p: _ldp_lower_curve(p.eps0, p.n),
        ),
)  # fmt: skip
#: Every shuffle bound crowdhide knows, in listing order.
SHUFFLE_REGISTRY: Registry[ShuffleParams] = Registry(_BOUNDS, what="bound")
#: Names accepted by ``bound=`` (plus ``"best"``; ``"all"`` in the CLI).
SHUFFLE_BOUNDS: tuple[str, ...] = SHUFFLE_REGISTRY.names
_BY_NAME = {b.name: b for b in _BOUNDS}


def lower_bound_name(k: int | None) -> str:
    """The lower bound attached to every answer: ``krr_lower`` with ``k``, ``ldp_lower``
    without (a lower bound over all ε0-LDP randomizers)."""
    return "krr_lower" if k is not None else "ldp_lower"


def _check_bound(bound: Any, *, allow_best: bool = True) -> str:
    if not isinstance(bound, str):
        raise TypeError(f"bound must be a string, got {bound!r}")
    names = (*SHUFFLE_BOUNDS, "best") if allow_best else SHUFFLE_BOUNDS
    if bound not in names:
        raise InvalidParameterError(f"bound must be one of {', '.join(names)}; got {bound!r}")
    return bound


def _query(delta: float | None, epsilon: float | None) -> dict[str, float]:
    """Validated ε query (``delta`` given) or δ query (``epsilon`` given)."""
    if delta is not None:
        return {"delta": check_probability("delta", delta, allow_zero=False, allow_one=False)}
    return {"epsilon": check_real("epsilon", epsilon, low=0.0)}


def _evaluate(name: str, params: ShuffleParams, query: dict[str, float]) -> PrivacyStatement:
    """``SHUFFLE_REGISTRY.statement``, with the conditions that depend on the queried δ."""
    try:
        return SHUFFLE_REGISTRY.statement(name, params, **query)
    except _NotApplicableError as exc:
        return PrivacyStatement.not_applicable(
            source=name, reason=str(exc), kind=SHUFFLE_REGISTRY[name].kind, inputs=asdict(params)
        )


def _with_lower_of(
    rows: list[PrivacyStatement], params: ShuffleParams, query: dict[str, float]
) -> list[PrivacyStatement]:
    """Attach the lower bound (evaluated once, or found among ``rows``) to every row."""
    name = lower_bound_name(params.k)
    low = next((r for r in rows if r.source == name), None) or _evaluate(name, params, query)
    if not low.conditions_met:
        return rows
    return [replace(r, lower=low) for r in rows]


def _answer(
    bound: str, params: ShuffleParams, query: dict[str, float], *, lower: bool
) -> PrivacyStatement:
    """One bound's statement, or with ``bound="best"`` the smallest certificate."""
    if bound != "best":
        if _BY_NAME[bound].scope == "krr" and params.k is None:
            raise InvalidParameterError(f"bound {bound!r} needs k (k-ary randomized response)")
        one = _evaluate(bound, params, query)
        return _with_lower_of([one], params, query)[0] if lower else one
    names = [
        b.name for b in _BOUNDS
        if b.listed_for(params.k) and b.kind != "lower" and b.in_best(params)
    ]  # fmt: skip
    if lower:
        names.append(lower_bound_name(params.k))
    rows = [_evaluate(name, params, query) for name in names]
    best = best_of(rows, by="epsilon" if "delta" in query else "delta")
    if not lower or best.lower is not None:
        return best
    # No certificate (e.g. δ = 1 everywhere at ε0 ~ 30): still show the lower bound.
    return _with_lower_of([best, *rows], params, query)[0]


#: ``progress(bound, done, total)``: called before each bound of ``*_all`` is evaluated.
Progress = Callable[[str, int, int], None]


def _all(
    params: ShuffleParams, query: dict[str, float], progress: Progress | None
) -> list[PrivacyStatement]:
    listed = [b.name for b in _BOUNDS if b.listed_for(params.k)]
    rows = []
    for done, name in enumerate(listed):
        if progress is not None:
            progress(name, done, len(listed))
        rows.append(_evaluate(name, params, query))
    return _with_lower_of(rows, params, query)


def shuffle_epsilon_all(
    *, eps0: float, n: int, delta: float, k: int | None = None, progress: Progress | None = None
) -> list[PrivacyStatement]:
    """ε at ``delta`` from every bound listed for ``k`` (those whose conditions fail with
    ``conditions_met=False`` and the reason in ``notes``).

    Every statement carries the lower bound's statement in ``lower``.

    Parameters
    ----------
    eps0, n, k
        See :class:`ShuffleParams`.
    delta
        Target δ, ``0 < delta < 1`` (down to 1e-300).
    progress
        Optional ``progress(bound, done, total)``, called before each bound is evaluated.
    """
    return _all(ShuffleParams(eps0=eps0, n=n, k=k), _query(delta, None), progress)


def shuffle_delta_all(
    *, eps0: float, n: int, epsilon: float, k: int | None = None, progress: Progress | None = None
) -> list[PrivacyStatement]:
    """δ at ``epsilon`` from every listed bound (see :func:`shuffle_epsilon_all`)."""
    return _all(ShuffleParams(eps0=eps0, n=n, k=k), _query(None, epsilon), progress)


def shuffle_epsilon(
    *,
    eps0: float,
    n: int,
    delta: float,
    k: int | None = None,
    bound: str = "best",
    lower: bool = True,
) -> PrivacyStatement:
    """ε of n shuffled ε0-LDP reports at ``delta`` from one bound (default: the best).

    ``bound="best"`` returns the smallest ε among certificates. A named bound whose
    conditions fail is returned with ``conditions_met=False`` and the reason in ``notes`` (no
    exception). With ``lower`` (default) the statement also carries ``lower``, the statement
    of the lower bound (``krr_lower`` with ``k``, ``ldp_lower`` without): the truth lies in
    between.

    Examples
    --------
    >>> r = shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6, k=2, bound="feldman2023")
    >>> round(r.epsilon, 5), r.lower.epsilon <= r.epsilon
    (0.04321, True)
    """
    name = _check_bound(bound)
    params = ShuffleParams(eps0=eps0, n=n, k=k)
    return _answer(name, params, _query(delta, None), lower=lower)


def shuffle_delta(
    *,
    eps0: float,
    n: int,
    epsilon: float,
    k: int | None = None,
    bound: str = "best",
    lower: bool = True,
) -> PrivacyStatement:
    """δ of n shuffled ε0-LDP reports at ``epsilon`` (see :func:`shuffle_epsilon`); with
    ``lower`` the statement carries the lower bound's δ in ``lower``.

    Examples
    --------
    >>> r = shuffle_delta(eps0=4.0, n=10_000, epsilon=0.1, k=2)
    >>> r.source, round(r.delta, 6)
    ('binary_rr_blocks', 0.003391)
    """
    name = _check_bound(bound)
    params = ShuffleParams(eps0=eps0, n=n, k=k)
    return _answer(name, params, _query(None, epsilon), lower=lower)


def shuffle_bound_curve(*, bound: str, eps0: float, n: int, k: int | None = None) -> PrivacyCurve:
    """The :class:`~crowdhide.accounting.PrivacyCurve` of one bound, as reported (rounded a
    relative 1e-9 to the safe side, capped at ε0).

    Raises
    ------
    InvalidParameterError
        If the bound's parameter-level conditions fail (the message says which).

    Examples
    --------
    >>> c = shuffle_bound_curve(bound="feldman2023", eps0=4.0, n=10_000, k=2)
    >>> round(c.delta(0.1), 6)
    0.009209
    """
    params = ShuffleParams(eps0=eps0, n=n, k=k)
    entry = SHUFFLE_REGISTRY[_check_bound(bound, allow_best=False)]
    reason = entry.applies(params)
    if reason is not None:
        raise InvalidParameterError(reason)
    return entry.curve(params)


def krr_shuffle_curve(*, eps0: float, n: int, k: int) -> KrrShuffleCurve:
    """Privacy curve of n shuffled k-RR reports (substitute relation).

    For ``n <= EXHAUSTIVE_MAX_N`` it is the exact worst case over all datasets (a
    certificate, tight). For larger n it is the max of the exact curves of the two canonical
    datasets (all other users on one third value; all on x'), which is exact for those
    datasets and a lower bound on the worst case (``curve.is_certificate`` is False); use
    :func:`shuffle_delta` for a certificate.

    Examples
    --------
    >>> c = krr_shuffle_curve(eps0=math.log(13), n=1000, k=4)
    >>> round(c.epsilon(1e-4), 5), c.is_certificate
    (0.38895, False)
    """
    p = ShuffleParams(eps0=eps0, n=n, k=k)
    e0, nn, kk = p.eps0, p.n, int(k)
    if nn > KRR_LOWER_MAX_N:
        raise InvalidParameterError(f"n must be <= {KRR_LOWER_MAX_N} for the k-RR curve, got {n!r}")
    return KrrShuffleCurve(eps0=e0, n=nn, k=kk, exhaustive=nn <= EXHAUSTIVE_MAX_N)


def krr_dataset_curve(*, eps0: float, n: int, k: int, others: str) -> PrivacyCurve:
    """Exact curve (both directions) of shuffled k-RR for one canonical dataset.

    ``others="third"``: the other n − 1 users all hold one value z ∉ {x, x'} (k >= 3);
    ``others="same"``: they all hold x' (equivalently x). Exact for that dataset (windows'
    tails are bounded and added, so it is an upper bound for the dataset within ~1e-6
    relative), hence a lower bound on the worst case over datasets. Useful to check
    per-dataset results such as the x0-count δ of Biswas, Jung and Palamidessi (shuffled
    k-RR), which can never exceed the full-histogram curve of the same dataset.

    Examples
    --------
    >>> c = krr_dataset_curve(eps0=math.log(13), n=1000, k=4, others="same")
    >>> round(c.epsilon(1e-4), 5)
    0.30038
    """
    p = ShuffleParams(eps0=eps0, n=n, k=k)
    e0, nn, kk = p.eps0, p.n, int(k)
    if others not in ("third", "same"):
        raise InvalidParameterError(f"others must be 'third' or 'same', got {others!r}")
    if others == "third" and kk < 3:
        raise InvalidParameterError(f"others='third' needs k >= 3, got k={k!r}")
    if nn > KRR_LOWER_MAX_N:
        raise InvalidParameterError(f"n must be <= {KRR_LOWER_MAX_N} for the k-RR curve, got {n!r}")
    fn = pairs.krr_third_log_delta if others == "third" else pairs.krr_same_log_delta
    return _AdaptiveCurve(lambda e, t: fn(nn, kk, e0, e, t), e0)


def _delta_query(
    params: Callable[[float], dict[str, Any]], bound: str, epsilon: float, delta: float
) -> Callable[[float], float]:
    """``x -> log δ`` of ``bound`` at ``epsilon`` for the parameters ``params(x)``, memoized:
    one δ query per point, several times cheaper than solving for ε. A bound that does not
    certify there gives ``−LOG_ZERO`` (fails every target); δ = 0 gives ``LOG_ZERO``. In exact
    arithmetic δ(ε) <= δ exactly when ε(δ) <= ε; the δ queries are summed like an ε query at
    ``delta`` (:func:`_summed_like_epsilon_at`) so that the blocked sums agree too, up to the
    ε solver's tolerance, which the callers settle afterwards."""
    log_target = math.log(delta)

    @functools.cache
    def log_delta(x: float) -> float:
        with _summed_like_epsilon_at(log_target):
            r = shuffle_delta(epsilon=epsilon, bound=bound, lower=False, **params(x))
        if not r.is_certificate or math.isnan(r.delta):
            return -LOG_ZERO
        return math.log(r.delta) if r.delta > 0 else LOG_ZERO

    return log_delta


#: Steps taken back along a calibration when the ε query at the δ-calibrated point lands a
#: hair above the target (the two queries sum to different tail levels).
_SETTLE_STEPS = 50


def calibrate_eps0(
    *, epsilon: float, delta: float, n: int, k: int | None = None, bound: str = "best"
) -> PrivacyStatement:
    """Largest ε0 (to 1e-6 relative) whose shuffled guarantee is (epsilon, delta) or better.

    Returns the statement at the calibrated ε0 (``inputs["eps0"]``) with the target recorded
    (``meets_target``); the achieved ``epsilon`` is ``<=`` the target. ε0 = ``epsilon``
    always works (shuffling never hurts).

    Examples
    --------
    >>> r = calibrate_eps0(epsilon=0.5, delta=1e-6, n=50_000, k=2)
    >>> r.inputs["eps0"] > 2.0, r.epsilon <= 0.5, r.meets_target
    (True, True, True)
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True, high=_MAX_EPS0)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    nn, kk = ShuffleParams(eps0=1.0, n=n, k=k).n, k
    name = _check_bound(bound)

    def achieved(e0: float, lower: bool = False) -> PrivacyStatement:
        return shuffle_epsilon(eps0=e0, n=nn, delta=d, k=kk, bound=name, lower=lower)

    log_delta_at = _delta_query(lambda e0: {"eps0": e0, "n": nn, "k": kk}, name, target, d)

    first = achieved(target)
    if not (first.is_certificate and first.epsilon <= target):
        # ε0 = ε is ε-DP for every bound that caps at ε0; a failing named bound does not apply.
        reason = "; ".join(first.notes)
        raise InvalidParameterError(f"bound {name!r} does not apply at eps0={target!r}: {reason}")
    # Grow the bracket from ε0 = ε by doubling: the curves are cheapest, and best behaved,
    # at moderate ε0, so ε0 = 50 is evaluated only when everything below it passes.
    log_d = math.log(d)
    lo, hi = target, min(2.0 * target + 1.0, _MAX_EPS0)
    while lo < _MAX_EPS0 and log_delta_at(hi) <= log_d:
        lo, hi = hi, min(2.0 * hi, _MAX_EPS0)
    found = lo
    if lo < _MAX_EPS0:
        # The largest passing ε0 by bracketed interpolation on log δ (it is smooth in ε0),
        # not bisection on pass/fail: ~3x fewer δ queries. The variable is −ε0 so that the
        # curve is non-increasing; the returned point is one whose own query passes.
        found = -safe_root(lambda x: log_delta_at(-x), log_d, -hi, -lo, xtol=max(1e-13, 1e-6 * hi))
    result = achieved(found, lower=True)
    for _ in range(_SETTLE_STEPS):  # the answer is the ε query: make it meet the target too
        if result.epsilon <= target or found <= target:
            break
        found = max(target, found * (1.0 - 2e-4))
        result = achieved(found, lower=True)
    return result.with_target(epsilon=target, delta=d)


def calibrate_n(
    *, epsilon: float, delta: float, eps0: float, k: int | None = None, bound: str = "best"
) -> PrivacyStatement:
    """Smallest n whose shuffled guarantee is (epsilon, delta) or better.

    Returns the statement at the calibrated n (``inputs["n"]``) with the target recorded.

    Raises
    ------
    crowdhide.errors.UnmetTargetError
        If even n = 1e9 does not reach the target.

    Examples
    --------
    >>> r = calibrate_n(epsilon=0.5, delta=1e-6, eps0=2.0)
    >>> r.epsilon <= 0.5
    True
    >>> shuffle_epsilon(eps0=2.0, n=r.inputs["n"] - 1, delta=1e-6).epsilon > 0.5
    True
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    e0, kk = ShuffleParams(eps0=eps0, n=1, k=k).eps0, k
    name = _check_bound(bound)

    log_d = math.log(d)
    log_delta_at = _delta_query(lambda m: {"eps0": e0, "n": int(m), "k": kk}, name, target, d)

    # Grow the bracket by doubling from n = 1 (small n are cheap), then search it.
    lo, hi = 1, 1
    while log_delta_at(hi) > log_d:
        if hi >= _MAX_N:
            raise UnmetTargetError(
                f"no n <= {_MAX_N} reaches epsilon={target!r} at delta={d!r} with eps0={e0!r}"
            )
        lo, hi = hi, min(2 * hi, _MAX_N)
    m = hi
    if hi > lo:
        # Bracketed interpolation on log δ over real x at n = ⌈x⌉ (non-increasing), to a
        # bracket narrower than 1/2: then ⌈x⌉ passes and ⌈x⌉ − 1 fails, the smallest passing
        # n. ~2x fewer δ queries than bisecting pass/fail on the integers.
        x = safe_root(lambda v: log_delta_at(math.ceil(v)), log_d, float(lo), float(hi), xtol=0.25)
        m = math.ceil(x)
    result = shuffle_epsilon(eps0=e0, n=m, delta=d, k=kk, bound=name)
    for _ in range(_SETTLE_STEPS):  # the answer is the ε query: make it meet the target too
        if (result.is_certificate and result.epsilon <= target) or m >= _MAX_N:
            break
        m = min(_MAX_N, m + 1 + m // 5000)
        result = shuffle_epsilon(eps0=e0, n=m, delta=d, k=kk, bound=name)
    return result.with_target(epsilon=target, delta=d)


def epsilon_vs_n(
    *,
    eps0: float,
    delta: float,
    k: int | None = None,
    n_min: int = 100,
    n_max: int = 10**7,
    points: int = 16,
    out: Any = None,
) -> dict[str, Any]:
    """ε against n for every listed bound (``nan`` where a bound does not apply); optional PNG.

    A bound that takes a second or more per point (``variation_ratio``) is evaluated at up to
    8 grid points spread evenly, ``nan`` (and ``conditions_met`` false) at the others.

    Returns ``{"n": [...], "epsilon": {bound: [...]}, "conditions_met": {bound: [...]}}``.

    Examples
    --------
    >>> d = epsilon_vs_n(eps0=1.0, delta=1e-6, n_min=1000, n_max=10_000, points=2)
    >>> d["n"], round(d["epsilon"]["feldman2021"][1], 4)
    ([1000, 10000], 0.053)
    """
    lo = ShuffleParams(eps0=eps0, n=n_min, k=k)
    hi = ShuffleParams(eps0=eps0, n=n_max, k=k).n
    query = _query(delta, None)
    count = check_int("points", points, low=2, high=200)
    if hi <= lo.n:
        raise InvalidParameterError(f"n_max must be > n_min, got n_min={n_min!r}, n_max={n_max!r}")
    grid = sorted({round(x) for x in np.geomspace(lo.n, hi, count)})
    if out is not None:  # before the work: a missing matplotlib is reported at once
        require("matplotlib", purpose="shuffle plot")
    series: dict[str, list[float]] = {}
    met: dict[str, list[bool]] = {}
    for entry in _BOUNDS:
        if not entry.listed_for(lo.k):
            continue
        chosen = _plot_subset(len(grid), entry.plot_points)
        rows = [
            _evaluate(entry.name, replace(lo, n=n), query) if i in chosen else None
            for i, n in enumerate(grid)
        ]
        series[entry.name] = [r.epsilon if r and r.conditions_met else math.nan for r in rows]
        met[entry.name] = [bool(r and r.conditions_met) for r in rows]
    if out is not None:
        title = f"eps0={lo.eps0:g}, delta={query['delta']:g}, k={lo.k or 'any'}"
        _plot(grid, series, title=title, out=out)
    return {"n": grid, "epsilon": series, "conditions_met": met}


def _plot_subset(size: int, most: int | None) -> set[int]:
    """Indices of the grid points a bound is evaluated at: all, or ``most`` spread evenly
    (both ends included)."""
    if most is None or size <= most:
        return set(range(size))
    return {round(i * (size - 1) / (most - 1)) for i in range(most)}


def _plot(grid: list[int], series: dict[str, list[float]], *, title: str, out: Any) -> None:
    require("matplotlib", purpose="shuffle plot").use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, values in series.items():
        if all(math.isnan(v) for v in values):
            continue
        style = "--" if name == "krr_lower" else "-"
        # Finite points only, so a bound evaluated on part of the grid draws a joined line.
        xs = [x for x, v in zip(grid, values, strict=True) if math.isfinite(v)]
        ys = [v for v in values if math.isfinite(v)]
        ax.plot(xs, ys, style, marker="o", markersize=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (users)")
    ax.set_ylabel("epsilon after shuffling")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
