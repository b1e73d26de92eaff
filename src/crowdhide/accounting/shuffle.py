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
    randomizer (``k=None``) it is reported with ``valid=False`` (e.g. ε0-LDP Laplace on
    [0, 1] violates the condition).
``krr_clone``
    k-RR / binary RR only: crowdhide's k-RR clone reduction, a certificate for every
    dataset. Each other user's report law is ``2r (K(x)+K(x'))/2 + (1−2r) R_v`` with
    ``r = 1/(e^{ε0}+1)`` and ``R_v >= 0`` for every value v; revealing who is a clone and
    the residual reports gives the exact divergence of ``(C, histogram of the target's and
    the clones' k-RR reports)``, ``C ~ Bin(n−1, 2r)`` — FMT23's decomposition without
    discarding the clones' k-RR noise. Evaluated on rigorous blocks of clone counts and of
    reports on {x, x'} (:mod:`crowdhide.accounting._krr_fast`): O(1) work in n, within
    ~0.1–0.5 % in ε of the unblocked sum. For k = 2 it is the FMT23 pair.
``exact``
    k-RR / binary RR only: the exact worst-case curve, ``max`` over *every* dataset of the
    other users of the exact hockey-stick divergence of the two output-histogram
    distributions: exhaustive enumeration of dataset classes for ``n <= EXHAUSTIVE_MAX_N``,
    and for k = 2 all n datasets, each exactly, for ``n <= BINARY_EXACT_MAX_N``; outside
    that range it is reported ``valid=False``. The worst dataset depends on ε, so no single
    "worst pair" exists.
``krr_lower``
    k-RR only: a rigorous *lower bound* (``kind="lower"``) from canonical datasets (all
    others on one third value z; all others on x'), O(1) in n beyond n = 1000.
``ldp_lower``
    Without ``k``: a lower bound over all ε0-LDP randomizers (3-RR and binary RR are such
    randomizers).

Every answer also carries the lower bound's ε or δ (``epsilon_lower`` / ``delta_lower``).
``best`` is the smallest valid upper bound (``kind`` "upper" or "exact").

Examples
--------
>>> r = shuffle_epsilon(eps0=4.0, n=100_000, delta=1e-6, bound="feldman2021")
>>> round(r.epsilon, 4), r.valid
(0.1698, True)
>>> best = shuffle_epsilon(eps0=2.0, n=100_000, delta=1e-6, k=4)
>>> best.bound, best.valid
('krr_clone', True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting import _krr_fast
from crowdhide.accounting import _shuffle_pairs as pairs
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.roots import safe_root
from crowdhide.errors import UnmetTargetError

__all__ = [
    "ALL_KRR_MAX_N",
    "BINARY_EXACT_MAX_N",
    "BOUNDS",
    "EXHAUSTIVE_MAX_N",
    "KRR_CLONE_BEST_MAX_N",
    "KRR_LOWER_MAX_N",
    "SHUFFLE_BOUNDS",
    "KrrShuffleCurve",
    "ShuffleBound",
    "ShuffleResult",
    "calibrate_eps0",
    "calibrate_n",
    "epsilon_vs_n",
    "krr_dataset_curve",
    "krr_shuffle_curve",
    "shuffle_bound_curve",
    "shuffle_delta",
    "shuffle_delta_all",
    "shuffle_epsilon",
    "shuffle_epsilon_all",
]

#: Names accepted by ``bound=`` (plus ``"best"``; ``"all"`` in the CLI).
SHUFFLE_BOUNDS: tuple[str, ...] = (
    "erlingsson2019",
    "balle2019_hoeffding",
    "balle2019_bennett",
    "feldman2021_closed",
    "feldman2021",
    "feldman2023",
    "krr_clone",
    "exact",
    "krr_lower",
    "ldp_lower",
)
#: Largest n for the exhaustive worst case over datasets (``exact``, k >= 3).
EXHAUSTIVE_MAX_N = 14
#: Largest n for ``exact`` with k = 2 (binary RR: all n datasets, each exactly).
BINARY_EXACT_MAX_N = _krr_fast.BINARY_EXACT_MAX_N
_MAX_N = 10**9
#: Largest n for the exact canonical-dataset curves (:func:`krr_shuffle_curve`,
#: :func:`krr_dataset_curve`: O(n) work).
KRR_LOWER_MAX_N = pairs.KRR_EXACT_MAX_N
#: ``best`` uses ``krr_clone`` at every n (blocked sums: O(1) work in n since issue 15).
KRR_CLONE_BEST_MAX_N = _MAX_N
#: ``*_all`` evaluate every k-RR bound at every n (kept for compatibility).
ALL_KRR_MAX_N = _MAX_N
#: ``krr_lower`` adds the "all others on x'" dataset (O(√n) incomplete-beta calls per δ) for
#: k >= 3 only up to this n; the third-value dataset (O(1) in n) always counts.
KRR_SAME_LOWER_MAX_N = 100_000
#: ``krr_lower`` uses the full exact canonical-dataset curves (O(n) cells) up to this n.
KRR_FULL_LOWER_MAX_N = 1000
_MAX_EPS0 = 50.0
#: Relative margin by which every reported δ is rounded away from the truth (up for
#: certificates, down for lower bounds) and every ε is solved at a target δ moved the same
#: way. The exact computations (``exact``, clone pairs at n = 1, k-RR at ε = 0) match the
#: truth to ~1e-14 relative; without a margin float error could put them below it.
_ROUNDING_MARGIN = 1e-9
_MAX_K = 10**6


@dataclass(frozen=True, slots=True)
class ShuffleResult:
    """One bound's answer for shuffled ε0-LDP reports.

    Attributes
    ----------
    epsilon, delta
        The (ε, δ) pair (``nan`` when the bound does not apply).
    bound
        Name of the bound (one of :data:`SHUFFLE_BOUNDS`).
    valid
        Whether the bound's validity conditions hold, i.e. whether the numbers mean what
        ``kind`` says.
    eps0, n, k
        Inputs: local ε0, number of users, domain size of k-RR (``None``: any ε0-LDP
        randomizer).
    note
        Why a bound does not apply, or how the number was obtained.
    kind
        ``"upper"`` (a certificate), ``"exact"`` (certificate and tight) or ``"lower"``.
    epsilon_lower, delta_lower
        The lower bound's ε (for an ε query) or δ (for a δ query): the truth for the worst
        dataset lies between it and the certificate (``nan`` when not computed).
    lower_bound
        Name of that lower bound (``krr_lower`` with ``k``, ``ldp_lower`` without).
    """

    epsilon: float
    delta: float
    bound: str
    valid: bool
    eps0: float
    n: int
    k: int | None
    note: str = ""
    kind: str = "upper"
    epsilon_lower: float = math.nan
    delta_lower: float = math.nan
    lower_bound: str = ""

    @property
    def is_certificate(self) -> bool:
        """Whether (ε, δ) is a valid DP guarantee."""
        return self.valid and self.kind in ("upper", "exact")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return asdict(self)


class _NotApplicableError(ValueError):
    """Raised inside a bound when its validity conditions fail."""


# --------------------------------------------------------------------------------------
# Closed forms and blanket bounds (log δ as functions of ε)


def _erlingsson_log_delta(eps: float, eps0: float, n: int) -> float:
    """δ = exp(−n (ε / (12 ε0))²), Erlingsson et al. (SODA 2019), inverted."""
    if eps0 > 0.5 or n < 1000:
        raise _NotApplicableError("needs eps0 <= 0.5, n >= 1000")
    if eps >= eps0:
        return -math.inf
    log_delta = -n * (eps / (12.0 * eps0)) ** 2
    if log_delta > math.log(0.01):
        raise _NotApplicableError("needs delta <= 0.01")
    return log_delta


def _erlingsson_epsilon(delta: float, eps0: float, n: int) -> float:
    if eps0 > 0.5 or n < 1000:
        raise _NotApplicableError("needs eps0 <= 0.5, n >= 1000")
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
        gamma = k / (math.exp(eps0) + k - 1.0)
        b_plus = gamma * -math.expm1(eps) + (1.0 - gamma) * k
        b_range = (1.0 - gamma) * k * (big + 1.0)
        var = gamma * (2.0 - gamma) * math.expm1(eps) ** 2 + (1.0 - gamma) ** 2 * k * (
            big * big + 1.0
        )
    return gamma, b_plus, b_range, var


def _hoeffding_log_delta(eps: float, eps0: float, n: int, k: int | None) -> float:
    """Balle et al. (2019), Hoeffding: δ = b²/(4aγn) (1 − γ(1 − e^{−2a²/b²}))^n, a = e^ε − 1."""
    if eps >= eps0:
        return -math.inf
    if eps <= 0.0:
        return 0.0
    gamma, _, b_range, _ = _blanket_params(eps, eps0, k)
    a = math.expm1(eps)
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
    if eps_at(lo) <= eps:
        return lo
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if eps_at(mid) <= eps:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-12 * max(1.0, abs(hi)):
            break
    return hi


# --------------------------------------------------------------------------------------
# Curves


def _solve_epsilon(curve: PrivacyCurve, log_target: float, eps0: float) -> float:
    """Smallest ε (to 1e-10 ε0) with ``log δ(ε) <= log_target``, from the safe side.

    Every shuffle curve has δ(ε0) = 0, so ``[0, ε0]`` brackets the root; the coarser
    tolerance than :meth:`PrivacyCurve.epsilon` saves evaluations of the O(n) curves.
    """
    if curve.log_delta(0.0) <= log_target:
        return 0.0
    return safe_root(curve.log_delta, log_target, 0.0, eps0, xtol=max(1e-13, 1e-10 * eps0))


class _AdaptiveCurve(PrivacyCurve):
    """A curve from ``fn(eps, log_tail)``: summation windows are widened until the tail
    bound added to δ is negligible (< e^{-14} ≈ 1e-6 relative), so small δ stay tight. While
    solving for ε at a target δ the windows never need tails below ``δ e^{-40}``: a value
    computed with them that is below the target is a valid answer."""

    def __init__(self, fn: Callable[[float, float], float], eps0: float) -> None:
        self._fn = fn
        self._eps0 = eps0
        self._max_l = 2000.0
        self._start_l = 40.0

    def log_delta(self, epsilon: float) -> float:
        big_l = min(self._start_l, self._max_l)
        value = self._fn(epsilon, -big_l)
        while value > -math.inf and value <= -big_l + 14.0 and big_l < self._max_l:
            big_l = min(max(-value + 30.0, 2.0 * big_l), self._max_l)
            value = self._fn(epsilon, -big_l)
        return min(value, 0.0)

    def solving_for(self, log_target: float | None) -> None:
        """Enter (``log_target`` given) or leave (None) the mode used while solving ε(δ)."""
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


class _FunctionCurve(PrivacyCurve):
    def __init__(self, fn: Callable[[float], float], eps0: float) -> None:
        self._fn = fn
        self._eps0 = eps0

    def log_delta(self, epsilon: float) -> float:
        return min(self._fn(epsilon), 0.0)

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
            return safe_root(self.log_delta, target, 0.0, self._eps0, xtol=xtol, lower_side=True)
        finally:
            for curve in self._adaptive:
                curve.solving_for(None)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


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


def _check_inputs(eps0: Any, n: Any, k: Any) -> tuple[float, int, int | None]:
    e0 = check_real("eps0", eps0, low=0.0, low_open=True, high=_MAX_EPS0)
    nn = check_int("n", n, low=1, high=_MAX_N)
    kk = None if k is None else check_int("k", k, low=2, high=_MAX_K)
    return e0, nn, kk


def _check_bound(bound: Any, *, allow_best: bool = True) -> str:
    if not isinstance(bound, str):
        raise TypeError(f"bound must be a string, got {bound!r}")
    names = (*SHUFFLE_BOUNDS, "best") if allow_best else SHUFFLE_BOUNDS
    if bound not in names:
        raise ValueError(f"bound must be one of {', '.join(names)}; got {bound!r}")
    return bound


def shuffle_bound_curve(*, bound: str, eps0: float, n: int, k: int | None = None) -> PrivacyCurve:
    """The :class:`~crowdhide.accounting.PrivacyCurve` of one bound.

    Raises
    ------
    ValueError
        If the bound's parameter-level validity conditions fail (the message says which).

    Examples
    --------
    >>> c = shuffle_bound_curve(bound="feldman2023", eps0=4.0, n=10_000, k=2)
    >>> round(c.delta(0.1), 6)
    0.009209
    """
    e0, nn, kk = _check_inputs(eps0, n, k)
    name = _check_bound(bound, allow_best=False)
    try:
        return BOUNDS[name].curve(e0, nn, kk)
    except _NotApplicableError as exc:
        raise ValueError(str(exc)) from None


# --------------------------------------------------------------------------------------
# The registry of bounds


@dataclass(frozen=True, slots=True)
class ShuffleBound:
    """One shuffle bound: what it is, where it comes from, when it applies.

    ``scope`` is ``"any"`` (any ε0-LDP randomizer, and k-RR), ``"krr"`` (needs ``k``) or
    ``"generic"`` (only without ``k``: a lower bound over *all* ε0-LDP randomizers is not one
    for k-RR). ``build(eps0, n, k)`` returns the curve or raises ``_NotApplicableError``
    naming the violated condition; ``solve(delta, eps0, n)`` is an optional closed-form ε.
    """

    name: str
    kind: str
    citation: str
    scope: str
    build: Callable[[float, int, int | None], PrivacyCurve]
    solve: Callable[[float, float, int], float] | None = None
    certificate_without_k: bool = True
    note: str = ""
    in_best: Callable[[float, int, int | None], bool] = lambda eps0, n, k: True

    def applies_to(self, k: int | None) -> bool:
        """Whether the bound is listed for this randomizer class."""
        return {"any": True, "krr": k is not None, "generic": k is None}[self.scope]

    def valid_for(self, k: int | None) -> bool:
        """Whether its numbers mean what ``kind`` says for this randomizer class."""
        return self.certificate_without_k or k is not None

    def note_for(self, k: int | None) -> str:
        if not self.valid_for(k):
            return "not a certificate for every eps0-LDP randomizer (give k)"
        return self.note

    def curve(self, eps0: float, n: int, k: int | None) -> PrivacyCurve:
        if self.scope == "krr" and k is None:
            raise _NotApplicableError(f"{self.name} is for k-ary randomized response: give k")
        return self.build(eps0, n, k)


def _erlingsson_curve(eps0: float, n: int, k: int | None) -> PrivacyCurve:
    if eps0 > 0.5 or n < 1000:
        raise _NotApplicableError("needs eps0 <= 0.5, n >= 1000")
    return _FunctionCurve(lambda e: _erlingsson_log_delta(e, eps0, n), eps0)


def _fmt21_closed_curve(eps0: float, n: int, k: int | None) -> PrivacyCurve:
    if math.log(4.0) - n * math.exp(-eps0) / 16.0 >= 0.0:
        raise _NotApplicableError("needs n > 16 e^eps0 ln 4")
    return _FunctionCurve(lambda e: _fmt21_closed_log_delta(e, eps0, n), eps0)


def _clone_curve(beta_of: Callable[[float], float]) -> Callable[..., PrivacyCurve]:
    def build(eps0: float, n: int, k: int | None) -> PrivacyCurve:
        beta = beta_of(eps0)
        return _AdaptiveCurve(lambda e, t: pairs.clone_pair_log_delta(n, eps0, beta, e, t), eps0)

    return build


def _krr_clone_curve(eps0: float, n: int, k: int | None) -> PrivacyCurve:
    kk = int(k or 2)
    if kk == 2:  # every clone reports x or x': the k-RR clone pair is the FMT23 pair
        return _clone_curve(lambda e0: 2.0 / (math.exp(e0) + 1.0))(eps0, n, k)
    return _AdaptiveCurve(lambda e, t: _krr_fast.krr_clone_fast_log_delta(n, kk, eps0, e, t), eps0)


def _exact_curve(eps0: float, n: int, k: int | None) -> PrivacyCurve:
    if k == 2:  # binary RR: n datasets, each an exact count law (O(n · window) per δ)
        if n > BINARY_EXACT_MAX_N:
            raise _NotApplicableError(f"computed only for n <= {BINARY_EXACT_MAX_N} (k = 2)")
        return _AdaptiveCurve(lambda e, t: _krr_fast.binary_rr_worst_log_delta(n, eps0, e, t), eps0)
    if n > EXHAUSTIVE_MAX_N:
        raise _NotApplicableError(f"enumerated only for n <= {EXHAUSTIVE_MAX_N}")
    return KrrShuffleCurve(eps0=eps0, n=n, k=int(k or 2), exhaustive=True)


def _exact_in_best(eps0: float, n: int, k: int | None) -> bool:
    return n <= (BINARY_EXACT_MAX_N if k == 2 else EXHAUSTIVE_MAX_N)


def _blanket(fn: Callable[..., float]) -> Callable[..., PrivacyCurve]:
    def build(eps0: float, n: int, k: int | None) -> PrivacyCurve:
        return _FunctionCurve(lambda e: fn(e, eps0, n, k), eps0)

    return build


_FMT23_NOTE = "; ".join(
    ["Feldman, McMillan, Talwar (SODA 2023) clone pair", "needs R(x)+R(x') <= (e^eps0+1) R(v)"]
)
#: Every bound crowdhide knows, in listing order.
BOUNDS: dict[str, ShuffleBound] = {
    b.name: b
    for b in (
        ShuffleBound(
            "erlingsson2019", "upper", "Erlingsson et al., SODA 2019", "any",
            _erlingsson_curve, solve=lambda d, e0, n: _erlingsson_epsilon(d, e0, n),
            in_best=lambda e0, n, k: e0 <= 0.5 and n >= 1000,
        ),
        ShuffleBound(
            "balle2019_hoeffding", "upper", "Balle, Bell, Gascon, Nissim, CRYPTO 2019", "any",
            _blanket(_hoeffding_log_delta),
        ),
        ShuffleBound(
            "balle2019_bennett", "upper", "Balle, Bell, Gascon, Nissim, CRYPTO 2019", "any",
            _blanket(_bennett_log_delta),
        ),
        ShuffleBound(
            "feldman2021_closed", "upper", "Feldman, McMillan, Talwar, FOCS 2021 (closed form)",
            "any", _fmt21_closed_curve, solve=lambda d, e0, n: _fmt21_closed_epsilon(d, e0, n),
        ),
        ShuffleBound(
            "feldman2021", "upper", "Feldman, McMillan, Talwar, FOCS 2021", "any",
            _clone_curve(lambda e0: math.exp(-e0)),
            # With k the FMT23 pair (more clones, same mixture) is a post-processing of it.
            in_best=lambda e0, n, k: k is None,
        ),
        ShuffleBound(
            "feldman2023", "upper", _FMT23_NOTE, "any",
            _clone_curve(lambda e0: 2.0 / (math.exp(e0) + 1.0)), certificate_without_k=False,
            # k >= 3: krr_clone is a post-processing of this pair (>= 24 % tighter in ε
            # even at ε0 -> 0), so best skips it there for speed.
            in_best=lambda e0, n, k: k == 2,
        ),
        ShuffleBound(
            "krr_clone", "upper", "crowdhide k-RR clone reduction (docs/shuffle.md)", "krr",
            _krr_clone_curve,
            in_best=lambda e0, n, k: k != 2,  # k = 2: the same curve as feldman2023
        ),
        ShuffleBound(
            "exact", "exact", "exhaustive enumeration of datasets", "krr", _exact_curve,
            note="exhaustive worst case", in_best=_exact_in_best,
        ),
        ShuffleBound(
            "krr_lower", "lower", "canonical k-RR datasets (docs/shuffle.md)", "krr",
            lambda e0, n, k: _krr_lower_curve(e0, n, int(k or 2)),
            note="lower bound (canonical datasets)",
        ),
        ShuffleBound(
            "ldp_lower", "lower", "3-RR and binary RR are eps0-LDP (docs/shuffle.md)", "generic",
            lambda e0, n, k: _ldp_lower_curve(e0, n),
            note="lower bound over all eps0-LDP randomizers (3-RR / binary RR datasets)",
        ),
    )
}  # fmt: skip


def _one_epsilon(name: str, eps0: float, n: int, delta: float, k: int | None) -> ShuffleResult:
    entry = BOUNDS[name]
    base = ShuffleResult(math.nan, delta, name, False, eps0, n, k, "", entry.kind)
    # Pessimistic rounding (issue 15): solve at a target a relative _ROUNDING_MARGIN on the
    # safe side, so a computed δ off by that much can never make the answer unsafe.
    lower = entry.kind == "lower"
    target = delta * (1.0 + _ROUNDING_MARGIN if lower else 1.0 - _ROUNDING_MARGIN)
    try:
        if entry.solve is not None:
            eps = entry.solve(target, eps0, n)
        else:
            eps = entry.curve(eps0, n, k).epsilon(min(target, 1.0 - 1e-16))
    except _NotApplicableError as exc:
        return replace(base, note=str(exc))
    eps = min(eps, eps0)
    return replace(base, epsilon=eps, valid=entry.valid_for(k), note=entry.note_for(k))


def _one_delta(name: str, eps0: float, n: int, eps: float, k: int | None) -> ShuffleResult:
    entry = BOUNDS[name]
    base = ShuffleResult(eps, math.nan, name, False, eps0, n, k, "", entry.kind)
    try:
        delta = 0.0 if eps >= eps0 else entry.curve(eps0, n, k).delta(eps)
    except _NotApplicableError as exc:
        return replace(base, note=str(exc))
    scale = 1.0 - _ROUNDING_MARGIN if entry.kind == "lower" else 1.0 + _ROUNDING_MARGIN
    delta = min(delta * scale, 1.0)
    return replace(base, delta=delta, valid=entry.valid_for(k), note=entry.note_for(k))


def _applicable(k: int | None) -> tuple[str, ...]:
    return tuple(name for name, b in BOUNDS.items() if b.applies_to(k))


def _upper_candidates(eps0: float, n: int, k: int | None) -> tuple[str, ...]:
    """Bounds worth evaluating for ``best`` (certificates that can apply)."""
    return tuple(
        name
        for name in _applicable(k)
        if BOUNDS[name].kind != "lower" and BOUNDS[name].valid_for(k)
        and BOUNDS[name].in_best(eps0, n, k)
    )  # fmt: skip


def _lower_name(k: int | None) -> str:
    return "krr_lower" if k is not None else "ldp_lower"


def _with_lower(
    results: list[ShuffleResult], *, delta: float | None = None, epsilon: float | None = None
) -> list[ShuffleResult]:
    """Attach the lower bound (ε at ``delta`` or δ at ``epsilon``) to every result."""
    if not results:
        return results
    first = results[0]
    name = _lower_name(first.k)
    if delta is not None:
        low = next((r for r in results if r.bound == name), None)
        low = low or _one_epsilon(name, first.eps0, first.n, delta, first.k)
        return [
            replace(r, epsilon_lower=low.epsilon, lower_bound=name) if low.valid else r
            for r in results
        ]
    assert epsilon is not None
    low = next((r for r in results if r.bound == name), None)
    low = low or _one_delta(name, first.eps0, first.n, epsilon, first.k)
    return [
        replace(r, delta_lower=low.delta, lower_bound=name) if low.valid else r for r in results
    ]


def shuffle_epsilon_all(
    *, eps0: float, n: int, delta: float, k: int | None = None
) -> list[ShuffleResult]:
    """ε at ``delta`` from every applicable bound (invalid ones with ``valid=False``).

    Every result carries the lower bound's ε in ``epsilon_lower``.

    Parameters
    ----------
    eps0
        Local DP level of each user's randomizer, ``0 < eps0 <= 50``.
    n
        Number of users, ``1 <= n <= 1e9``.
    delta
        Target δ, ``0 < delta < 1`` (down to 1e-300).
    k
        Domain size of k-ary randomized response (``k = 2``: binary RR); ``None`` means any
        ε0-LDP randomizer (generic bounds only).
    """
    e0, nn, kk = _check_inputs(eps0, n, k)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    rows = [_one_epsilon(name, e0, nn, d, kk) for name in _applicable(kk)]
    return _with_lower(rows, delta=d)


def shuffle_delta_all(
    *, eps0: float, n: int, epsilon: float, k: int | None = None
) -> list[ShuffleResult]:
    """δ at ``epsilon`` from every applicable bound (see :func:`shuffle_epsilon_all`)."""
    e0, nn, kk = _check_inputs(eps0, n, k)
    eps = check_real("epsilon", epsilon, low=0.0)
    rows = [_one_delta(name, e0, nn, eps, kk) for name in _applicable(kk)]
    return _with_lower(rows, epsilon=eps)


def _pick_best(results: list[ShuffleResult], key: str) -> ShuffleResult:
    certs = [r for r in results if r.is_certificate and not math.isnan(getattr(r, key))]
    if not certs:  # pragma: no cover - feldman2021 always applies
        raise ValueError("no valid bound applies to these parameters")
    order = list(BOUNDS)
    return min(certs, key=lambda r: (getattr(r, key), order.index(r.bound)))


def _check_named(name: str, k: int | None) -> None:
    if name != "best" and BOUNDS[name].scope == "krr" and k is None:
        raise ValueError(f"bound {name!r} needs k (k-ary randomized response)")


def shuffle_epsilon(
    *,
    eps0: float,
    n: int,
    delta: float,
    k: int | None = None,
    bound: str = "best",
    lower: bool = True,
) -> ShuffleResult:
    """ε of n shuffled ε0-LDP reports at ``delta`` from one bound (default: the best).

    ``bound="best"`` returns the smallest ε among valid certificates. A named bound whose
    conditions fail is returned with ``valid=False`` and a note (no exception). With
    ``lower`` (default) the result also carries ``epsilon_lower``, the ε of the lower bound
    (``krr_lower`` with ``k``, ``ldp_lower`` without): the truth lies in between.

    Examples
    --------
    >>> r = shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6, k=2, bound="feldman2023")
    >>> round(r.epsilon, 5), r.epsilon_lower <= r.epsilon
    (0.04321, True)
    """
    name = _check_bound(bound)
    e0, nn, kk = _check_inputs(eps0, n, k)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    _check_named(name, kk)
    if name != "best":
        result = _one_epsilon(name, e0, nn, d, kk)
    else:
        rows = [_one_epsilon(b, e0, nn, d, kk) for b in _upper_candidates(e0, nn, kk)]
        result = _pick_best(rows, "epsilon")
    return _with_lower([result], delta=d)[0] if lower else result


def shuffle_delta(
    *,
    eps0: float,
    n: int,
    epsilon: float,
    k: int | None = None,
    bound: str = "best",
    lower: bool = True,
) -> ShuffleResult:
    """δ of n shuffled ε0-LDP reports at ``epsilon`` (see :func:`shuffle_epsilon`); with
    ``lower`` the result carries ``delta_lower``.

    Examples
    --------
    >>> round(shuffle_delta(eps0=4.0, n=10_000, epsilon=0.1, k=2).delta, 6)
    0.009209
    """
    name = _check_bound(bound)
    e0, nn, kk = _check_inputs(eps0, n, k)
    eps = check_real("epsilon", epsilon, low=0.0)
    _check_named(name, kk)
    if name != "best":
        result = _one_delta(name, e0, nn, eps, kk)
    else:
        rows = [_one_delta(b, e0, nn, eps, kk) for b in _upper_candidates(e0, nn, kk)]
        result = _pick_best(rows, "delta")
    return _with_lower([result], epsilon=eps)[0] if lower else result


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
    e0, nn, kk = _check_inputs(eps0, n, k)
    if kk is None:  # pragma: no cover - typed as int
        raise TypeError("k must be an integer, got None")
    if nn > KRR_LOWER_MAX_N:
        raise ValueError(f"n must be <= {KRR_LOWER_MAX_N} for the k-RR curve, got {n!r}")
    return KrrShuffleCurve(eps0=e0, n=nn, k=kk, exhaustive=nn <= EXHAUSTIVE_MAX_N)


def krr_dataset_curve(*, eps0: float, n: int, k: int, others: str) -> PrivacyCurve:
    """Exact curve (both directions) of shuffled k-RR for one canonical dataset.

    ``others="third"``: the other n − 1 users all hold one value z ∉ {x, x'} (k >= 3);
    ``others="same"``: they all hold x' (equivalently x). Exact for that dataset (windows'
    tails are bounded and added, so it is an upper bound for the dataset within ~1e-6
    relative), hence a lower bound on the worst case over datasets. Useful to check
    per-dataset results such as the x0-count δ of Biswas et al. (seed 003), which can never
    exceed the full-histogram curve of the same dataset.

    Examples
    --------
    >>> c = krr_dataset_curve(eps0=math.log(13), n=1000, k=4, others="same")
    >>> round(c.epsilon(1e-4), 5)
    0.30038
    """
    e0, nn, kk = _check_inputs(eps0, n, k)
    if kk is None:  # pragma: no cover - typed as int
        raise TypeError("k must be an integer, got None")
    if others not in ("third", "same"):
        raise ValueError(f"others must be 'third' or 'same', got {others!r}")
    if others == "third" and kk < 3:
        raise ValueError(f"others='third' needs k >= 3, got k={k!r}")
    if nn > KRR_LOWER_MAX_N:
        raise ValueError(f"n must be <= {KRR_LOWER_MAX_N} for the k-RR curve, got {n!r}")
    fn = pairs.krr_third_log_delta if others == "third" else pairs.krr_same_log_delta
    return _AdaptiveCurve(lambda e, t: fn(nn, kk, e0, e, t), e0)


def calibrate_eps0(
    *, epsilon: float, delta: float, n: int, k: int | None = None, bound: str = "best"
) -> ShuffleResult:
    """Largest ε0 (to 1e-6 relative) whose shuffled guarantee is (epsilon, delta) or better.

    Returns the :class:`ShuffleResult` at the calibrated ε0 (its ``eps0``); the achieved
    ``epsilon`` is ``<=`` the target. ε0 = ``epsilon`` always works (shuffling never hurts).

    Examples
    --------
    >>> r = calibrate_eps0(epsilon=0.5, delta=1e-6, n=50_000, k=2)
    >>> r.eps0 > 2.0 and r.epsilon <= 0.5
    True
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True, high=_MAX_EPS0)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    _, nn, kk = _check_inputs(1.0, n, k)
    name = _check_bound(bound)

    def achieved(e0: float, lower: bool = False) -> ShuffleResult:
        return shuffle_epsilon(eps0=e0, n=nn, delta=d, k=kk, bound=name, lower=lower)

    def ok(r: ShuffleResult) -> bool:
        return r.is_certificate and r.epsilon <= target

    lo = target
    lo_res = achieved(lo)
    if not ok(lo_res):
        # ε0 = ε is ε-DP for every bound that caps at ε0; a failing named bound is invalid.
        raise ValueError(f"bound {name!r} does not apply at eps0={target!r}: {lo_res.note}")
    hi = min(2.0 * target + 1.0, _MAX_EPS0)
    while ok(achieved(hi)):
        if hi >= _MAX_EPS0:
            return achieved(hi, lower=True)
        lo, hi = hi, min(2.0 * hi, _MAX_EPS0)
    while hi - lo > 1e-6 * lo:
        mid = 0.5 * (lo + hi)
        if ok(achieved(mid)):
            lo = mid
        else:
            hi = mid
    return achieved(lo, lower=True)


def calibrate_n(
    *, epsilon: float, delta: float, eps0: float, k: int | None = None, bound: str = "best"
) -> ShuffleResult:
    """Smallest n whose shuffled guarantee is (epsilon, delta) or better.

    Raises
    ------
    crowdhide.errors.UnmetTargetError
        If even n = 1e9 does not reach the target.

    Examples
    --------
    >>> r = calibrate_n(epsilon=0.5, delta=1e-6, eps0=2.0)
    >>> r.epsilon <= 0.5, shuffle_epsilon(eps0=2.0, n=r.n - 1, delta=1e-6).epsilon > 0.5
    (True, True)
    """
    target = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    e0, _, kk = _check_inputs(eps0, 1, k)
    name = _check_bound(bound)

    def ok(m: int) -> bool:
        r = shuffle_epsilon(eps0=e0, n=m, delta=d, k=kk, bound=name, lower=False)
        return r.is_certificate and r.epsilon <= target

    if ok(1):
        return shuffle_epsilon(eps0=e0, n=1, delta=d, k=kk, bound=name)
    lo, hi = 1, 2
    while not ok(hi):
        if hi >= _MAX_N:
            raise UnmetTargetError(
                f"no n <= {_MAX_N} reaches epsilon={target!r} at delta={d!r} with eps0={e0!r}"
            )
        lo, hi = hi, min(2 * hi, _MAX_N)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return shuffle_epsilon(eps0=e0, n=hi, delta=d, k=kk, bound=name)


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
    """ε against n for every bound (``nan`` where a bound does not apply); optional PNG.

    Returns ``{"n": [...], "epsilon": {bound: [...]}, "valid": {bound: [...]}}``.

    Examples
    --------
    >>> d = epsilon_vs_n(eps0=1.0, delta=1e-6, n_min=1000, n_max=10_000, points=2)
    >>> d["n"], round(d["epsilon"]["feldman2021"][1], 4)
    ([1000, 10000], 0.053)
    """
    e0, lo, kk = _check_inputs(eps0, n_min, k)
    _, hi, _ = _check_inputs(eps0, n_max, k)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    count = check_int("points", points, low=2, high=200)
    if hi <= lo:
        raise ValueError(f"n_max must be > n_min, got n_min={n_min!r}, n_max={n_max!r}")
    grid = sorted({round(x) for x in np.geomspace(lo, hi, count)})
    series: dict[str, list[float]] = {}
    valid: dict[str, list[bool]] = {}
    for name in _applicable(kk):
        eps_list, ok_list = [], []
        for n in grid:
            r = _one_epsilon(name, e0, n, d, kk)
            eps_list.append(r.epsilon if r.valid else math.nan)
            ok_list.append(r.valid)
        series[name], valid[name] = eps_list, ok_list
    if out is not None:
        _plot(grid, series, title=f"eps0={e0:g}, delta={d:g}, k={kk or 'any'}", out=out)
    return {"n": grid, "epsilon": series, "valid": valid}


def _plot(grid: list[int], series: dict[str, list[float]], *, title: str, out: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, values in series.items():
        if all(math.isnan(v) for v in values):
            continue
        style = "--" if name == "krr_lower" else "-"
        ax.plot(grid, values, style, marker="o", markersize=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (users)")
    ax.set_ylabel("epsilon after shuffling")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
