"""The curve machinery of the shuffle bounds: adaptive tail windows, the bracketed ε search,
the exact k-RR curves and the lower-bound curves (internal to the shuffle wing).

:mod:`crowdhide.accounting.shuffle.generic` builds its bounds from these;
:mod:`crowdhide.accounting.shuffle.mechanisms` reuses the bracketed search.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from crowdhide._validation import check_probability
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle._settle import (
    settled_value,
    settling,
    tail_level,
    unsettled,
)
from crowdhide.accounting.shuffle.closed_forms import _NotApplicableError
from crowdhide.errors import InvalidParameterError

__all__ = [
    "BRACKET_RTOL",
    "KRR_FULL_LOWER_MAX_N",
    "KRR_LOWER_EXACT_MAX_EPS0",
    "KRR_SAME_LOWER_MAX_N",
    "TINY_LOG_DELTA",
    "VARIATION_RATIO_MIN_DELTA",
    "BracketedCurve",
    "KrrShuffleCurve",
    "at_floor",
    "secant_bracket",
]

#: ``krr_lower`` adds the "all others on x'" dataset (O(√n) incomplete-beta calls per δ) for
#: k >= 3 only up to this n; the third-value dataset (O(1) in n) always counts.
KRR_SAME_LOWER_MAX_N = 100_000
#: Beyond this ε0 the k-RR dataset evaluators lose ``1 − p`` to rounding (about 1e-16 ·
#: e^{ε0}/(k−1) relative): ``krr_lower`` then uses only the "others on x'" count, which is
#: given that complement directly (``_krr_fast.same_value_lower_log_delta``).
KRR_LOWER_EXACT_MAX_EPS0 = 12.0
#: ``krr_lower`` uses the full exact canonical-dataset curves (O(n) cells) up to this n.
KRR_FULL_LOWER_MAX_N = 1000


def _solve_epsilon(
    curve: PrivacyCurve, log_target: float, eps0: float, *, rtol: float = 0.0
) -> float:
    """Smallest ε (to 1e-10 ε0, or ``rtol`` relative if larger) with ``log δ(ε) <=
    log_target``, from the safe side.

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
    return safe_root(log_delta, log_target, 0.0, top, xtol=xtol, rtol=rtol)


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
    solving for ε at a target δ the windows are cut at the tails of :func:`tail_level` (a
    value computed with them that is below the target is a valid answer).

    The blocked evaluators place their windows and blocks by the tail, so their floats
    depend on it (issue 32, s33-cons: up to 0.4 % of δ at δ = 1e-10, 9x at 1e-300 between
    the tails a δ query used to stop at and those of the ε search). A δ query therefore
    also sums to the tails an ε search at its own value uses, again at the value that gives,
    until they repeat, and answers the least value it computed (each one an upper bound):
    at an ε search's answer it finds that search's value (docs/proofs/profile-pair.md, §17).

    ``tiny_rtol``: the relative width at which its ε search stops below
    :data:`TINY_LOG_DELTA` (0: 1e-10 ε0 absolute, as above it). The answer is a passing
    point by its own evaluation either way; the width only bounds how far above the root."""

    def __init__(
        self, fn: Callable[[float, float], float], eps0: float, *, tiny_rtol: float = 0.0
    ) -> None:
        self._fn = fn
        self._eps0 = eps0
        self._tiny_rtol = tiny_rtol
        self.solving_for(None)

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._eps0:  # every shuffle of ε0-LDP reports is ε0-DP (κ rounded up
            return -math.inf  # in a clone system can leave a sliver of δ there)
        big_l = min(self._start_l, self._max_l)
        value = self._fn(epsilon, -big_l)
        while value > -math.inf and value <= -big_l + 14.0 and big_l < self._max_l:
            big_l = min(max(-value + 30.0, 2.0 * big_l), self._max_l)
            value = self._fn(epsilon, -big_l)
        if not self._solving and settling():  # also the tails an ε search at its value
            # sums to (_settle.py): the least of these and the value as before
            value = settled_value(functools.partial(self._fn, epsilon), {big_l: value})
        return min(value, 0.0)

    def solving_for(self, log_target: float | None) -> None:
        """Enter (``log_target`` given) or leave (None) the mode used while solving ε(δ)."""
        if log_target is None:
            log_target = _DELTA_QUERY_LEVEL.get()
        # summed to a given level (an ε search's, or the calibrations' and profile grids' δ
        # queries): those tails only; else a δ query follows its own value's
        self._solving = log_target is not None
        if log_target is None:
            self._max_l, self._start_l = 2000.0, 40.0
        else:
            self._max_l = self._start_l = tail_level(log_target)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        self.solving_for(target)
        rtol = self._tiny_rtol if target < TINY_LOG_DELTA else 0.0
        try:
            return _solve_epsilon(self, target, self._eps0, rtol=rtol)
        finally:
            self.solving_for(None)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


#: ``variation_ratio`` is not solved for ε below this δ (the FMT21 pair, also in ``best``,
#: answers there). It was 1e-280, for time (1-40 s per query at δ = 1e-300, n = 1e4-1e6,
#: docs/proofs/variation-ratio.md, section 7); since the split cells' deep excesses take their
#: own geometric bound (s36-deep, section 11) a query at δ = 1e-300 takes 0.1-2.1 s and
#: answers within 1.0025x the FMT23 pair's ε, so it is solved at every δ.
VARIATION_RATIO_MIN_DELTA = 0.0
#: Below this δ a :class:`BracketedCurve` made with ``deep_rtol`` stops its search at that
#: relative width instead (``variation_ratio``: its supremum is a staircase in ε there, on
#: which a search to BRACKET_RTOL crept for 25 suprema; docs/proofs/variation-ratio.md, §11).
#: Every δ at or above it keeps its search, so its answers keep their floats.
DEEP_RTOL_DELTA = 1e-280
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


#: :meth:`BracketedCurve._creep` answers ε0 when this many times the last fall of log δ,
#: kept up over the rest of the bracket, would still not reach the target (a looser 10
#: gives up on a curve that drops steeply just below ε0: tests/accounting/test_bracketed_creep.py).
CREEP_FLATNESS = 100.0
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
    stop: Callable[[float], bool] | None = None,
) -> tuple[float, float, float, bool]:
    """Secant steps on a non-increasing ``log_delta`` from a failing ``start = (x, log δ(x))``
    with an initial ``slope``: ``(lo, log δ(lo), hi, done)`` with ``lo`` failing and ``hi``
    passing (``hi = top`` if no step passed); ``done`` when the estimated root is within
    ``2 rtol`` of ``hi``. Each step is aimed ``rtol/2`` past the
    estimated root, so it usually lands passing; the estimate only decides when to stop,
    every point returned as passing passed by its own value. ``stop(root)``, asked before
    each step while no step has passed, ends the steps where it says so (not done): the
    caller's own shortcut (``_member_curve.upper_root``'s probe next to ``top``)."""
    (lo, g_lo), hi = start, top
    last, g_last = lo, g_lo  # the secant runs through the two latest points
    for _ in range(steps):
        if not (math.isfinite(slope) and slope < 0.0):
            break
        root = last + (target - g_last) / slope
        if hi < top and hi - root <= 2.0 * rtol * hi:  # the estimate is off by about rtol
            return lo, g_lo, hi, True
        if stop is not None and hi >= top and stop(root):
            break
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
        deep_rtol: float = BRACKET_RTOL,
    ) -> None:
        super().__init__(fn, eps0)
        self._floor = floor
        self._min_delta = min_delta
        self._deep_rtol = max(deep_rtol, BRACKET_RTOL)
        self._rtol = BRACKET_RTOL  # of the search under way (:meth:`epsilon`)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        if delta < self._min_delta:
            raise _NotApplicableError(
                f"its refinement takes seconds per query at such small delta, so it is not "
                f"solved below delta = {self._min_delta:g} (got {delta:g}); feldman2021 "
                "answers there"
            )
        lo = min(self._floor.epsilon(delta), self._eps0)
        log_delta = functools.cache(self.log_delta)  # the bracket's ends are evaluated once
        self._rtol = self._deep_rtol if delta < DEEP_RTOL_DELTA else BRACKET_RTOL

        self.solving_for(target)
        try:
            g_lo = log_delta(lo)
            if g_lo <= target:
                return lo
            lo, hi = self._secant(log_delta, target, lo, g_lo)
            if hi >= self._eps0 > lo:  # nothing passed below ε0 yet
                lo, hi = self._creep(log_delta, target, lo, hi)
            if hi <= lo:  # the secant steps found a point close enough to the root
                return hi
            return self._finish(log_delta, target, lo, hi)
        finally:
            self.solving_for(None)

    def _finish(
        self, log_delta: Callable[[float], float], target: float, lo: float, hi: float
    ) -> float:
        """The passing end of the bracket ``[lo, hi]`` searched to :data:`BRACKET_RTOL` (a
        subclass may search it otherwise: ``_kink_finish.KinkedBracketedCurve``)."""
        return safe_root(log_delta, target, lo, hi, xtol=max(1e-13, self._rtol * hi))

    def _slope(self, eps: float) -> float:
        """The floor's ``d log δ/dε`` at ``eps`` (a forward difference; 0 if not finite)."""
        step = max(1e-4 * eps, 1e-9)
        pair = self._floor.log_delta(eps), self._floor.log_delta(eps + step)
        slope = (pair[1] - pair[0]) / step
        return slope if math.isfinite(slope) and slope < 0.0 else 0.0

    def _creep(
        self, log_delta: Callable[[float], float], target: float, lo: float, hi: float
    ) -> tuple[float, float]:
        """Bisection steps towards ε0 while nothing passed, at a tiny target only: ``(ε0,
        ε0)`` once log δ falls by less than :func:`at_floor`'s 0.05 per 1 % of ε between two
        failing points (a rounding floor above the target: no ε below ε0 passes), or so
        slowly that 100 times that fall over the rest of the bracket stays above the target
        (ε0 is always valid, so either only costs tightness), else the bracket. Issue 32:
        krr_blanket at n = 1e3, δ = 1e-300 sat at its floor (-689.97 for a target of
        -690.78, k = 4, ε0 = 1) and the bracketed search closed in on ε0 in about 15
        evaluations, 0.2 s."""
        g_lo = log_delta(lo)
        while target < TINY_LOG_DELTA and hi - lo > max(1e-13, BRACKET_RTOL * hi):
            x = 0.5 * (lo + hi)
            g = log_delta(x)
            if g <= target:
                return lo, x
            fell = g_lo - g
            # at the floor, or so flat that CREEP_FLATNESS times its slope meets no target by ε0
            hopeless = g - target > CREEP_FLATNESS * fell * (hi - x) / (x - lo)
            if fell < 5.0 * (x - lo) / lo or hopeless:
                return self._eps0, self._eps0
            lo, g_lo = x, g
        return lo, hi

    def _secant(
        self, log_delta: Callable[[float], float], target: float, lo: float, g_lo: float
    ) -> tuple[float, float]:
        """Failing and passing ends ``(lo, hi)`` of a bracket (``hi = ε0`` if none passed), or
        ``(p, p)`` for a passing p within :data:`BRACKET_RTOL` of the root."""
        lo, g_lo, hi, done = secant_bracket(
            log_delta, target, (lo, g_lo), self._eps0, self._slope(lo), rtol=self._rtol
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


#: In lower-bound mode, δ values below this are reported as 0 (see KrrShuffleCurve). The
#: dataset evaluators are upper bounds: a tail they need below ``BETAINC_TRUSTED`` (1e-200)
#: is the smaller of its Chernoff and geometric bounds, which exceeds the true tail (itself
#: below ~1e-200) by at most the Chernoff bound's factor sqrt(8n) over the truth. Summed over
#: an evaluation's terms that surplus is below e^{2 ε0} n sqrt(8n) 1e-200 <= 2e-182 in δ
#: (ε0 <= KRR_LOWER_EXACT_MAX_EPS0 = 12, n <= KRR_SAME_LOWER_MAX_N = 1e5), so a value at or
#: above 1e-170 is the dataset's true δ within the 1e-5 relative slack below. At 1e-250 (the
#: cut before the incomplete beta's underflow was found) the surplus could decide a member:
#: k = 100, ε0 = 4, n = 1e4, δ = 1e-300 gave a lower bound 1.19469 where tight tails give
#: 1.19165 (session 24).
_LOWER_BOUND_FLOOR_LOG = math.log(1e-170)
_LOWER_BOUND_RELATIVE_SLACK_LOG = math.log1p(-1e-5)


class KrrShuffleCurve(PrivacyCurve):
    """Privacy curve of n shuffled k-RR reports.

    ``exhaustive=True``: the exact worst case over all datasets of the other users (max of
    the exact curves of every dataset class); ``False``: the max of the exact curves of the
    two canonical datasets (a lower bound on the worst case). In that mode δ below 1e-170 is
    reported as 0, because the canonical-dataset evaluators add rigorous tail and underflow
    bounds (meant for upper bounds) that can reach ~1e-187 (see _LOWER_BOUND_FLOOR_LOG) and
    would otherwise make the "lower" bound exceed the truth far in the tail.
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
        # (absolute, at most ~1e-187). Removing the relative part and reporting values in
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
        *,
        floor: Callable[[float], float] | None = None,
        cut: list[_SameLower] | None = None,
    ) -> None:
        self._members = members
        self._eps0 = eps0
        # With the floor, members cut to 0 below 1e-250 (cheapest first); together they must
        # be all the members for the search below the cut (:meth:`_epsilon_below_cut`).
        self._cut = list(cut or [])
        if self._cut and (floor is None or len(members) != len(self._cut) + 1):
            raise InvalidParameterError(
                "cut members need a floor and must be all the other members", parameter="cut"
            )
        # A cheap member (microseconds): where it fails the maximum fails too, so its root
        # starts the search of the expensive members' (issue 32: 3-4 evaluations, not 13).
        self._floor = floor
        if floor is not None and floor not in members:
            raise InvalidParameterError(
                "the floor of a lower curve must be one of its members", parameter="floor"
            )
        # Adaptive curves inside the members: put into solving mode while solving ε(δ).
        self._adaptive = list(adaptive or [])
        self._adaptive += [m.curve for m in members if isinstance(m, _SameLower)]

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._eps0:
            return -math.inf
        with unsettled():  # a lower bound's δ: its members' own tails, as before
            return min(max(m(epsilon) for m in self._members), 0.0)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        for curve in self._adaptive:
            curve.solving_for(target)
        try:
            # The floor failing decides like the maximum failing, without its evaluation.
            if not self._floor_fails(0.0, target) and self.log_delta(0.0) <= target:
                return 0.0
            xtol = max(1e-13, 1e-10 * self._eps0)
            if self._cut and target < _BELOW_CUT_LOG:
                return self._epsilon_below_cut(target, xtol)
            # A lower bound that is still above the target just below ε0 (tiny δ at small n)
            # answers there at once, instead of closing in on ε0 in ~35 evaluations (7.8 s for
            # k = 3, n = 1e3, δ = 1e-300): the truth needs at least that ε.
            top = self._eps0 - xtol
            if top > 0.0 and self._floor_fails(top, target):
                return top
            # Below the cut (1e-170) the members are cut to 0 (see KrrShuffleCurve): the root
            # is that step, which secant steps do not find faster than the plain search.
            start = self._floor_fails(0.0, target) and target > _LOWER_BOUND_FLOOR_LOG
            if top > 0.0 and self._floor is not None and start:
                # It asks log δ(top) itself, only if no point below top passed.
                return _lower_root_from_floor(self.log_delta, self._floor, target, top, xtol)
            if top > 0.0 and self.log_delta(top) > target:
                return top
            return _lower_root(self.log_delta, target, self._eps0, xtol)
        finally:
            for curve in self._adaptive:
                curve.solving_for(None)

    def epsilon_upper_hint(self) -> float:
        return self._eps0

    def _epsilon_below_cut(self, target: float, xtol: float) -> float:
        """ε(δ) for δ below the cut (issue 32: 7 s at n = 1e3, δ = 1e-300). The failing set
        of a maximum is the union of its members', so its root is the largest of theirs; a
        cut member is either −inf or at least the cut (less its 1e-5), so it fails the
        target exactly where it fails :data:`_BELOW_CUT_LOG`, where it is smooth. The cheap
        members' roots are searched; the costly ones (the O(n) third-value dataset) are asked
        once, just above the answer, and searched only if they still fail there. Each root
        returned fails its member, hence the maximum: a lower bound either way."""
        top = self._eps0 - xtol
        for curve in self._adaptive:  # windows for values at the cut, not at the target
            curve.solving_for(_BELOW_CUT_LOG)
        best = _member_lower_root(self._floor, target, top, xtol) if self._floor else 0.0
        # A cut member fails the target where its uncut curve is at or above the cut.
        cheap = self._cut[0].curve.log_delta
        # Where it already passes at the floor's root, its own root lies below (it is
        # non-increasing) and cannot raise the maximum: one evaluation instead of its
        # search (issue 32: 14-16 evaluations, 50-114 ms at n = 1e4, δ = 1e-300).
        if not (0.0 < best < top and min(cheap(best), 0.0) <= _LOWER_BOUND_FLOOR_LOG):
            best = max(best, _member_lower_root(cheap, _LOWER_BOUND_FLOOR_LOG, top, xtol))
        for costly in self._cut[1:]:
            above = min(top, best + max(xtol, 4.0 * BRACKET_RTOL * best))
            raw = functools.cache(costly.curve.log_delta)
            # costly(above) > target exactly where raw(above) is at or above the cut
            if best < top and raw(above) >= _LOWER_BOUND_FLOOR_LOG:  # k >= 10, n = 1e3
                best = max(best, _cut_member_root(raw, above, top, xtol))
        return best

    def _floor_fails(self, eps: float, target: float) -> bool:
        return self._floor is not None and min(self._floor(eps), 0.0) > target


#: Below this log δ, :meth:`_LowerCurve._epsilon_below_cut` answers: a nat under the cut,
#: which the cut members' values (at least the cut less 1e-5 relative) all exceed.
_BELOW_CUT_LOG = _LOWER_BOUND_FLOOR_LOG - 1.0


def _member_lower_root(
    member: Callable[[float], float], target: float, top: float, xtol: float
) -> float:
    """A failing ε of one non-increasing lower-bound member near its root in ``[0, top]``:
    0 if it passes there already, ``top`` if it still fails there, else :func:`_lower_root`."""
    if min(member(0.0), 0.0) <= target:
        return 0.0
    if min(member(top), 0.0) > target:
        return top
    return _lower_root(member, target, top, xtol)


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


#: Relative accuracy in ε of :func:`_lower_root_from_floor`, a twentieth of
#: :data:`BRACKET_RTOL`: its answers sit closer to the root than :func:`_lower_root`'s in most
#: cells (measured over k in {3, 4, 10, 100}, n in 50..1e5, eps0 in {0.5, 1, 4}: higher in
#: 151 of 216, at most 9e-8 relative lower in 33), at about one evaluation more.
FLOOR_START_RTOL = 0.05 * BRACKET_RTOL


def _lower_secant(
    log_delta: Callable[[float], float],
    target: float,
    start: tuple[float, float],
    top: float,
    slope: float,
) -> tuple[float, float, bool]:
    """Secant steps on a non-increasing ``log_delta`` from a failing ``start`` upwards, each
    aimed ``FLOOR_START_RTOL/2`` short of the estimated root so that it usually lands failing:
    ``(lo, hi, done)`` with ``lo`` failing and ``hi`` passing (``top``, not evaluated, if
    none passed); ``done`` once the estimated root is within ``2 FLOOR_START_RTOL`` of
    ``lo``."""
    rtol = FLOOR_START_RTOL
    (lo, g_lo), hi = start, top
    last, g_last = lo, g_lo
    for _ in range(BRACKET_SECANT_STEPS):
        if not (math.isfinite(slope) and slope < 0.0):
            break
        root = last + (target - g_last) / slope
        if root - lo <= 2.0 * rtol * lo:
            return lo, hi, True
        guess = root - 0.5 * rtol * root
        if not lo < guess < hi:  # the estimate left the bracket: bisect it instead
            guess = 0.5 * (lo + hi)
        g = log_delta(guess)
        slope = (g - g_last) / (guess - last) if guess != last else slope
        last, g_last = guess, g
        if g > target:
            lo, g_lo = guess, g
        else:
            hi = guess
    return lo, hi, False


def _lower_root_from_floor(
    log_delta: Callable[[float], float],
    floor: Callable[[float], float],
    target: float,
    top: float,
    xtol: float,
) -> float:
    """:func:`_lower_root` of a maximum of lower bounds that includes the cheap ``floor``
    (failing at 0 and passing at ``top``): the floor's own largest failing point fails the
    maximum too, so the secant steps on the maximum start there, with the floor's slope.
    ``top`` is returned when the maximum still fails there (asked only if no step passed,
    as the maximum is non-increasing). Every point returned fails by its own value (a lower
    bound) and is within about :data:`FLOOR_START_RTOL` of the root (3 evaluations of the
    maximum at n = 1e3, k = 4, where :func:`_lower_root` took 13)."""
    start = _lower_root(floor, target, top, xtol)
    log_delta = functools.cache(log_delta)
    step = max(1e-4 * start, 1e-9)
    slope = (floor(start + step) - floor(start)) / step
    lo, hi, done = _lower_secant(log_delta, target, (start, log_delta(start)), top, slope)
    if hi >= top and log_delta(top) > target:  # no passing point below top: ask top
        return top
    if done:
        return lo
    tol = max(xtol, FLOOR_START_RTOL * hi)
    return safe_root(log_delta, target, lo, hi, xtol=tol, lower_side=True)


def _cut_member_root(raw: Callable[[float], float], start: float, top: float, xtol: float) -> float:
    """A failing ε of a cut member near its root, searched from ``start`` (where its uncut
    curve ``raw``, cached by the caller, is at or above the cut, so the member fails the
    target there): secant steps on ``raw`` against the cut, their first slope from a second
    point ``1e-3`` relative above ``start`` (the O(1) floor is no guide here: it is −inf
    there for k >= 10), then a bracketed search of what they leave to
    :data:`FLOOR_START_RTOL`; ``top`` if ``raw`` is still at the cut there. Every point
    returned is at or above the cut by its own evaluation, hence fails the member: a lower
    bound (issue 32: the plain search to ``xtol`` took 11-14 evaluations of the O(n)
    dataset, 2.1 s at k = 10, n = 1e3, δ = 1e-300)."""
    g = raw(start)
    probe = min(start * (1.0 + 1e-3) + xtol, top)
    g_probe = raw(probe)
    if g_probe >= _LOWER_BOUND_FLOOR_LOG:  # still failing: the secant goes on from there
        start, g, slope = probe, g_probe, (g_probe - g) / (probe - start)
    else:
        slope = (g_probe - g) / (probe - start)
        top = probe
    lo, hi, done = _lower_secant(raw, _LOWER_BOUND_FLOOR_LOG, (start, g), top, slope)
    check = lo * (1.0 + 2.0 * FLOOR_START_RTOL)
    if done and check < hi:
        # ``done`` trusts a slope that may come from the tail floor beyond the curve's
        # cliff (k = 100, ε0 = 4: 2.508 for 3.045): one point just above lo settles it.
        if raw(check) >= _LOWER_BOUND_FLOOR_LOG:
            lo = check
        else:
            hi = check
    if hi >= top and raw(top) >= _LOWER_BOUND_FLOOR_LOG:  # no passing point below top
        return top
    tol = max(xtol, FLOOR_START_RTOL * hi)
    return safe_root(raw, _LOWER_BOUND_FLOOR_LOG, lo, hi, xtol=tol, lower_side=True)


class _SameLower:
    """Lower bound from the exact "all others on x'" curve (or, ``third``, the exact
    third-value dataset's): that evaluator is an upper bound for its dataset within 1e-5
    relative plus an underflow floor, removed as in :class:`KrrShuffleCurve` (the largest of
    both, cut alike, is that curve's value: the same floats)."""

    def __init__(self, eps0: float, n: int, k: int, *, third: bool = False) -> None:
        def fn(e: float, t: float) -> float:  # looked up per call (tests count the calls)
            evaluate = pairs.krr_third_log_delta if third else pairs.krr_same_log_delta
            return evaluate(n, k, eps0, e, t)

        self.curve = _AdaptiveCurve(fn, eps0)

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
    cut: list[_SameLower] = []  # the canonical datasets, cheap one first
    if n <= KRR_FULL_LOWER_MAX_N:  # KrrShuffleCurve(exhaustive=False), member by member
        cut = [_SameLower(eps0, n, k)] + ([_SameLower(eps0, n, k, third=True)] if k >= 3 else [])
        members += cut
    floor = None
    if k >= 3:
        floor = functools.partial(_krr_fast.krr_third_marginal_lower_log_delta, n, k, eps0)
        members.append(floor)
    if n > KRR_FULL_LOWER_MAX_N and k == 2:
        members.append(lambda e: _krr_fast.binary_same_lower_log_delta(n, eps0, e))
    elif n > KRR_FULL_LOWER_MAX_N and n <= KRR_SAME_LOWER_MAX_N:
        cut = [_SameLower(eps0, n, k)]
        members += cut
    # The O(1) third-value count starts the search of the O(n) (or O(√n)) members.
    floor = floor if len(members) > 1 else None
    return _LowerCurve(members, eps0, adaptive, floor=floor, cut=cut if floor else None)


def _ldp_lower_curve(eps0: float, n: int) -> PrivacyCurve:
    """``ldp_lower``: 3-RR (others on a third value) and binary RR (others on x') are ε0-LDP
    randomizers, so their exact datasets bound the worst case over all ε0-LDP randomizers."""

    def same(e: float) -> float:
        return _krr_fast.binary_same_lower_log_delta(n, eps0, e)

    members: list[Callable[[float], float]] = [
        lambda e: _krr_fast.krr_third_marginal_lower_log_delta(n, 3, eps0, e),
        same,
    ]
    # binary RR's is the cheap member (under a millisecond): its root starts the search of
    # the maximum (issue 32: from ε = 0 the first two evaluations of the 3-RR member sat at
    # the centre of Bin(s, 1/2), where each incomplete beta costs ~15x one in the tail:
    # 60-100 ms of a query at n = 1e9; section 1t of docs/proofs/mechanism-certificates.md)
    return _LowerCurve(members, eps0, floor=same)
