"""The shuffle bounds' parameters and raw curves (internal; split off
:mod:`crowdhide.accounting.shuffle.generic`, which registers, rounds and answers them).

:class:`ShuffleParams` (re-exported by ``generic``) and, per bound of
:data:`~crowdhide.accounting.shuffle.generic.SHUFFLE_BOUNDS`, the function building its raw
:class:`~crowdhide.accounting.curves.PrivacyCurve` from the parameters, its parameter
condition and its loss allowance on ε. The bounds' descriptions are in ``generic``'s
module docstring.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.logmath import (
    MACHINE_EPSILON,
    loss_allowance,
    probability_loss_allowance,
)
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _krr4_small, _krr_fast, _krr_small
from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle._far_half import bound_memo
from crowdhide.accounting.shuffle._kink_finish import KinkedBracketedCurve
from crowdhide.accounting.shuffle.closed_forms import (
    _erlingsson_epsilon,
    _erlingsson_log_delta,
    _fmt21_closed_epsilon,
    _fmt21_closed_log_delta,
    _NotApplicableError,
)
from crowdhide.accounting.shuffle.curves import (
    BRACKET_RTOL,
    TINY_LOG_DELTA,
    VARIATION_RATIO_MIN_DELTA,
    BracketedCurve,
    KrrShuffleCurve,
    _AdaptiveCurve,
    _FunctionCurve,
    secant_bracket,
)

__all__ = ["BINARY_EXACT_MAX_N", "EXHAUSTIVE_MAX_N", "ShuffleParams", "variation_ratio_start"]

#: Largest n for the exhaustive worst case over datasets (``exact``, k >= 3).
EXHAUSTIVE_MAX_N = 14
#: Largest n for ``exact`` with k = 2 (binary RR: all n datasets, each exactly).
BINARY_EXACT_MAX_N = _krr_fast.BINARY_EXACT_MAX_N
_MAX_N = 10**9
_MAX_EPS0 = 50.0
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
    from crowdhide.accounting.shuffle.binary_rr import binary_rr_tilted_curve  # k = 2 only

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


def _clone_curve(eps0: float, n: int, beta: float, *, tiny_rtol: float = 0.0) -> PrivacyCurve:
    def fn(e: float, t: float) -> float:
        return pairs.clone_pair_log_delta(n, eps0, beta, e, t)

    return _AdaptiveCurve(fn, eps0, tiny_rtol=tiny_rtol)


#: Relative width at which the FMT21 pair's ε search stops below ``TINY_LOG_DELTA`` (issue
#: 32). There its log δ near the root is a staircase: the deep tails' upper bounds
#: (``_pairs._clone_excess``) depend on ε only through the integer threshold a*, so log δ
#: sits flat just above the target (n = 1e4, ε0 = 1, δ = 1e-300: -690.774 against -690.776
#: over ε in [0.577914, 0.577921], 1.3e-5 relative) and the search to 1e-10 ε0 crept along
#: it (48 evaluations, 104 ms; 24-34 in the other cells). At :data:`BRACKET_RTOL` it stops
#: after 14-36; the answer is still a point that passes by its own evaluation, at most
#: that fraction above the root (measured: +1e-7 … +6e-7 relative).
FMT21_TINY_RTOL = BRACKET_RTOL


def _fmt21_curve(p: ShuffleParams) -> PrivacyCurve:
    return _clone_curve(p.eps0, p.n, math.exp(-p.eps0), tiny_rtol=FMT21_TINY_RTOL)


#: The same stop for the FMT23 pair (``feldman2023``, and ``krr_clone``/``krr_blanket`` at
#: k = 2, which are its curve): the same deep tails, the same staircase (issue 32, s26-tiny:
#: n = 1e9, ε0 = 8, δ = 1e-300: log δ = -690.775530 against the target -690.775528 over ε in
#: [0.0905289076, 0.0905289405], 3.6e-7 relative, crept along from its passing end in steps
#: of 4e-10, 57 evaluations, 154 ms; 22-35 in the other solved cells). At
#: :data:`BRACKET_RTOL` it stops after 15-22; answers move up by 4.6e-8 … 8.2e-7 relative.
FMT23_TINY_RTOL = BRACKET_RTOL


def _fmt23_curve(p: ShuffleParams) -> PrivacyCurve:
    beta = 2.0 / (math.exp(p.eps0) + 1.0)
    return _clone_curve(p.eps0, p.n, beta, tiny_rtol=FMT23_TINY_RTOL)


def _variation_ratio_curve(p: ShuffleParams) -> PrivacyCurve:
    from crowdhide.accounting.shuffle.variation_ratio import VariationRatio  # k = None only

    bound = VariationRatio(p.n, p.eps0)
    # The search starts at the ε of its reference (the pair at μ = 1, blocked: 7-20 ms to
    # solve, the FMT23 pair 11-63 ms, and closer to the certificate's); its first step takes
    # the slope of the FMT23 pair (unblocked, smoother: with the reference's a third
    # evaluation was needed in 5 of 48 cells).
    floor = _StartCurve(variation_ratio_start(p.n, p.eps0), _fmt23_curve(p))
    return BracketedCurve(
        bound,
        p.eps0,
        floor,
        min_delta=VARIATION_RATIO_MIN_DELTA,
        deep_rtol=VARIATION_RATIO_DEEP_RTOL,
    )


#: The relative width at which ``variation_ratio``'s ε search stops below δ = 1e-280
#: (``curves.DEEP_RTOL_DELTA``): a quarter of the refinement's own ``EPS_RTOL`` (s36-deep).
VARIATION_RATIO_DEEP_RTOL = 1e-4


def variation_ratio_start(n: int, eps0: float) -> PrivacyCurve:
    """Where the ``variation_ratio`` search starts: ε(δ) of its reference (the pair at
    μ = 1). The search only goes up from there (:class:`BracketedCurve`), so this ε, capped
    at ε0, is a lower bound on the bound's raw ε at the same δ; a caller can skip the
    certificate where this alone is not below another one's answer (``query.py``)."""
    from crowdhide.accounting.shuffle.variation_ratio import VariationRatio  # k = None only

    return _AdaptiveCurve(VariationRatio(n, eps0).reference, eps0)


class _StartCurve(PrivacyCurve):
    """Where a :class:`BracketedCurve` search starts: ε(δ) of ``start``, log δ (for the
    first step's slope) of ``slope``. Either only decides where the search looks."""

    def __init__(self, start: PrivacyCurve, slope: PrivacyCurve) -> None:
        self._start, self._slope = start, slope

    def log_delta(self, epsilon: float) -> float:
        return self._slope.log_delta(epsilon)

    def epsilon(self, delta: float) -> float:
        return self._start.epsilon(delta)

    def epsilon_upper_hint(self) -> float:
        return self._start.epsilon_upper_hint()


def _krr_clone_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n, k = p.eps0, p.n, int(p.k or 2)
    if k == 2:  # every clone reports x or x': the k-RR clone pair is the FMT23 pair
        return _fmt23_curve(p)
    return TinyTargetBracketedCurve(
        lambda e, t: _krr_fast.krr_clone_fast_log_delta(n, k, eps0, e, t),
        eps0,
        _third_value_floor(eps0, n, k),
        bracketed=n <= KRR_CLONE_BRACKET_MAX_N,
    )


#: Up to this n krr_clone's root is searched in a bracket from the floor's ε down to
#: δ = 1e-250 (:meth:`TinyTargetBracketedCurve._bracketed_root`). The floor's ε costs about
#: 20 evaluations of ~1 ms (40 ms cold at n = 1e9), which pays where the certificate's own
#: evaluations cost ~10 ms (n <= 1e7), not beyond, where they cost ~1 ms. Measured (CPU, the
#: query with its lower bound, k in {4, 100}, ε0 in {0.5, 2, 4}, δ in {1e-6, 1e-10}, 12 per
#: n): plain search / bracketed n = 1e5 1586 / 974 ms, 1e7 761 / 513, 1e8 447 / 486; at
#: n = 1e9 a query took 9-15 ms plain and 50-100 ms bracketed.
KRR_CLONE_BRACKET_MAX_N = 10**7


class TinyTargetBracketedCurve(BracketedCurve):
    """krr_clone's curve. Its first question is the plain search's (log δ just below ε0: a
    curve failing there answers ε0). Then, down to δ = 1e-250, the plain search's root
    (Chandrupatla to ``1e-10 ε0``, a passing point) inside a bracket that secant steps from
    the floor's ε found (:meth:`_bracketed_root`); below, where the blocked sum is a step at
    its rounding floor and the plain search bisected [0, ε0] in ~22 evaluations (issue 32:
    0.22-0.3 s at n = 1e6, δ = 1e-300), :class:`BracketedCurve`'s search from the floor's ε.
    Every ε returned is ε0 or passes by its own evaluation. ``bracketed=False`` keeps the
    plain search above δ = 1e-250 (beyond :data:`KRR_CLONE_BRACKET_MAX_N`)."""

    def __init__(
        self,
        fn: Callable[[float, float], float],
        eps0: float,
        floor: PrivacyCurve,
        *,
        bracketed: bool = True,
    ) -> None:
        super().__init__(fn, eps0, floor)
        self._bracketed = bracketed

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        xtol = max(1e-13, 1e-10 * self._eps0)  # as _solve_epsilon
        top = self._eps0 - xtol
        if target >= TINY_LOG_DELTA and not (self._bracketed and top > 0.0):
            return _AdaptiveCurve.epsilon(self, delta)
        self.solving_for(target)
        try:
            log_delta = functools.cache(self.log_delta)
            if top > 0.0 and log_delta(top) > target:
                return self._eps0
            if target >= TINY_LOG_DELTA:
                return self._bracketed_root(log_delta, delta, top, xtol)
        finally:
            self.solving_for(None)
        return super().epsilon(delta)

    def _bracketed_root(
        self, log_delta: Callable[[float], float], delta: float, top: float, xtol: float
    ) -> float:
        """The plain search's tolerance in a narrow bracket (issue 32: about 15 evaluations
        on [0, ε0] at n = 1e6, 0.1-0.15 s at ε0 = 4, where the root is near 0.03): ``lo`` the
        floor's ε (the floor is a lower bound on the truth, so the certificate fails there
        too; it is evaluated, and returned if it passes), ``hi`` the first passing secant
        step (or ``top``, which passed). Only the bracket is taken from the secant steps,
        never their estimate of the root, which a kink in log δ can put 2 % too high
        (k = 10, ε0 = 4, n = 1e3, δ = 1e-10: 3.978 for 3.9085)."""
        target = math.log(delta)
        lo = min(self._floor.epsilon(delta), top)
        g_lo = log_delta(lo)
        if g_lo <= target:
            return lo
        lo, _, hi, _ = secant_bracket(log_delta, target, (lo, g_lo), top, self._slope(lo))
        return safe_root(log_delta, target, lo, hi, xtol=xtol)


def _third_value_floor(eps0: float, n: int, k: int) -> PrivacyCurve:
    """The exact third-value count (O(1) in n): a lower bound on the k-RR curve, so every
    k-RR certificate fails wherever it fails."""
    return _FunctionCurve(
        lambda e: _krr_fast.krr_third_marginal_lower_log_delta(n, k, eps0, e), eps0
    )


def _krr_blanket_curve(p: ShuffleParams) -> PrivacyCurve:
    eps0, n, k = p.eps0, p.n, int(p.k or 2)
    if k == 2:  # every uniform report is x or x': the blanket is the FMT23 pair
        return _fmt23_curve(p)
    # The third-value count is a lower bound on the truth, so on this certificate too: its
    # ε (microseconds, O(1) in n) starts the search a fraction of a per cent below.
    # The far tails' bounds are kept over the curve's evaluations (the same floats).
    memo = bound_memo()
    # (below δ = 1e-250 its bracket is finished from the failing side: section 1w)
    return KinkedBracketedCurve(
        lambda e, t: _krr_fast.krr_blanket_log_delta(n, k, eps0, e, t, memo=memo),
        eps0,
        _third_value_floor(eps0, n, k),
    )


def _exact_condition(p: ShuffleParams) -> str | None:
    if p.k == 2 and p.n > BINARY_EXACT_MAX_N:
        return f"computed only for n <= {BINARY_EXACT_MAX_N} (k = 2)"
    limit = _krr4_small.SMALL_EXACT_LIMITS.get(int(p.k or 2), (None, None))[0]
    if limit is not None and p.n > limit:
        return f"enumerated only for n <= {limit} (k = {p.k})"
    if p.k not in (2, 3, 4) and p.n > EXHAUSTIVE_MAX_N:
        return f"enumerated only for n <= {EXHAUSTIVE_MAX_N}"
    return None


def _exact_in_best(p: ShuffleParams) -> bool:
    """k = 3, 4 beyond SMALL(4)_EXACT_BEST_MAX_N a query takes seconds: best (calibrations,
    certificate curves) keep krr_blanket there; ``bound="exact"`` still answers."""
    limit = _krr4_small.SMALL_EXACT_LIMITS.get(int(p.k or 2), (None, None))[1]
    return (limit is None or p.n <= limit) and _exact_condition(p) is None


def _exact_loss_error(p: ShuffleParams) -> float:
    """k >= 3: the exhaustive classes' losses are logs of probabilities convolved from n
    reports (each step a sum of 4 positive products: <= 5 roundings) and normalised by a
    pairwise sum over (n+1)^3 cells; k = 2: thresholds from e^ε and e^ε0 only."""
    if p.k == 2:
        return loss_allowance(p.eps0)
    if p.k in (3, 4):  # _krr_small's / _krr4_small's budget (their module docstrings)
        budget = (_krr_small if p.k == 3 else _krr4_small).rounding_budget(p.n)
        return max(probability_loss_allowance(budget), loss_allowance(p.eps0))
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
    if p.k in (3, 4):  # every class's law by stencils, pruned: n up to SMALL(4)_EXACT_MAX_N
        small = _krr_small.SmallKrrExactCurve if p.k == 3 else _krr4_small.SmallKrr4ExactCurve
        return small(eps0=eps0, n=n)
    return KrrShuffleCurve(eps0=eps0, n=n, k=int(p.k or 2), exhaustive=True)


def _blanket(fn: Callable[..., float]) -> Callable[[ShuffleParams], PrivacyCurve]:
    def build(p: ShuffleParams) -> PrivacyCurve:
        return _FunctionCurve(lambda e: fn(e, p.eps0, p.n, p.k), p.eps0)

    return build
