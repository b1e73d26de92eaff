"""The curve of a mechanism's certificate or lower bound: the largest of several ``log δ``
members, each solved for ε from its own safe side.

A member is one certificate cell or one lower-bound configuration, a function
``fn(ε, log_tail) -> log δ``. :class:`MemberCurve` keeps the largest of them (an upper bound
is only as good as its weakest cell; a lower bound as its strongest configuration), and
:func:`upper_root` finds a certificate member's smallest passing ε from the passing side with
a few secant steps before falling back to the bracketed search; a lower bound's members
are solved largest first (:meth:`MemberCurve._lower_epsilon`), each by :func:`lower_root`
from the failing side. Used by
:mod:`crowdhide.accounting.shuffle.mechanisms`.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator

from crowdhide._validation import check_probability
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle._settle import SETTLE_ROUNDS, SETTLE_TOL, settling
from crowdhide.accounting.shuffle.curves import (
    BRACKET_RTOL,
    TINY_LOG_DELTA,
    at_floor,
    secant_bracket,
)

__all__ = ["MemberCurve", "lower_root", "upper_root"]

#: The windows' tail level of :meth:`MemberCurve.log_delta` (a δ query).
DEFAULT_LOG_TAIL = -60.0
#: Below this ``log δ`` the default tail is too shallow for a slope (values within 14 of
#: the tail are mostly the mass outside the windows).
DEEP_LOG_DELTA = DEFAULT_LOG_TAIL + 14.0


#: A δ query settles the members within this (in log δ) of the largest (:meth:`MemberCurve.
#: _settled`): between two tails a member's value moved by at most 0.01 at δ >= 1e-10
#: (up to 0.04 at 1e-300, where the values first are the tail's mass and all are settled).
SETTLE_NEAR = 0.05
#: ... and sums them to tails no deeper than e^-2000 (those of every δ a float holds).
DEEPEST_TAIL = 2000.0


#: :func:`upper_root` answers ε0 at once where its secant steps found no passing point and
#: their failing end is within this fraction of ε0 (s27-mech): ε0 is always a valid answer,
#: at most this fraction above what the search of the rest would return
#: (docs/proofs/mechanism-certificates.md, section 1k).
TOP_GAP = 1e-3


def _solve_tail(target: float) -> float:
    """The windows' tail level while solving for ``log δ = target``: far below it."""
    return min(-40.0, target - 40.0)


class MemberCurve(PrivacyCurve):
    """The largest of several ``log δ`` members ``fn(ε, log_tail)`` (certificate cells or
    lower-bound configurations), ε(δ) solved member by member from the safe side."""

    def __init__(
        self,
        members: list[Callable[[float, float], float]],
        eps0: float,
        *,
        lower: bool,
        screens: list[Callable[[float, float], float] | None] | None = None,
        solvers: list[Callable[[float], float] | None] | None = None,
        cliffs: list[Callable[[], float] | None] | None = None,
        first: int | None = None,
        stepped: bool = False,
    ) -> None:
        self._members, self._eps0, self._lower = members, eps0, lower
        # a lower bound's member solved first at δ >= 1e-250 (None: the last; section 1w)
        self._first = first
        # certificate members whose log δ steps (upper_root's ``stepped``: Laplace's cells)
        self._stepped = stepped
        self._screens = screens if screens is not None else [None] * len(members)
        # lower members with their own ε(δ) from the lower side (CurveLowerMember)
        self._solvers = solvers if solvers is not None else [None] * len(members)
        # lower members' points just below their jump to −inf (lower_root's ``cliff``)
        self._cliffs = cliffs if cliffs is not None else [None] * len(members)
        # per (δ, start): the running answer and how many members (largest first) it has
        # passed; the start is part of the key, so every answer is a function of both alone
        self._progress: dict[tuple[float, float], tuple[float, int]] = {}
        # per (δ, start): the largest stop probed (_fails_at)
        self._probed: dict[tuple[float, float], float] = {}
        self.start: Callable[[float], float] | None = None  # per δ: a floor for the answer
        # the windows' tail level of log_delta (deeper while a search for a tiny δ takes
        # its slope from this curve: :meth:`tail_for`)
        self.log_tail = DEFAULT_LOG_TAIL

    def log_delta(self, epsilon: float) -> float:
        if not self._members:
            return -math.inf
        if self.log_tail == DEFAULT_LOG_TAIL and settling() and not self._lower:
            return min(self._settled(epsilon), 0.0)
        return min(max(fn(epsilon, self.log_tail) for fn in self._members), 0.0)

    def _settled(self, epsilon: float) -> float:
        """A δ query (issue 32, s33-cons; docs/proofs/mechanism-certificates.md §1x): every
        member at the default tail (all again at twice the tail while the largest is mostly
        the tail's mass), then the members within :data:`SETTLE_NEAR` of the largest again at
        the tail an ε search at that largest value sums to (:func:`_solve_tail`), until that
        tail moves by less than ``SETTLE_TOL``; per member the least of its values and, near
        the largest, of its screen (a bound of the same pairs the search may have
        passed instead). Each is an upper bound on that member's δ, so their largest is one
        for the curve; a member left below the largest by more than SETTLE_NEAR is below the
        δ any ε search certifying ``epsilon`` was asked at."""
        if epsilon >= self._eps0:  # ε0-DP whatever the members' rounding says
            return -math.inf
        best = [fn(epsilon, DEFAULT_LOG_TAIL) for fn in self._members]
        tried: list[set[float]] = [{DEFAULT_LOG_TAIL} for _ in best]
        screened = [screen is None for screen in self._screens]
        for _ in range(4 * SETTLE_ROUNDS):
            top = max(best)
            if top == -math.inf:
                break
            tail = _solve_tail(top)
            deepest = min(min(done) for done in tried)
            wide = top <= deepest + 14.0  # mostly the mass outside the windows: every member
            if wide:
                tail = min(tail, 2.0 * deepest)
            tail = max(tail, -DEEPEST_TAIL)  # as the adaptive curves' deepest windows
            near = [i for i, v in enumerate(best) if wide or v >= top - SETTLE_NEAR]
            due = [i for i in near if min(abs(tail - t) for t in tried[i]) >= SETTLE_TOL]
            due += [i for i in near if not screened[i] and i not in due]
            if not due:
                break
            for i in due:
                if min(abs(tail - t) for t in tried[i]) >= SETTLE_TOL:
                    best[i] = min(best[i], self._members[i](epsilon, tail))
                    tried[i].add(tail)
                screen = self._screens[i]
                if not screened[i] and screen is not None:
                    best[i] = min(best[i], screen(epsilon, tail))
                    screened[i] = True
        return max(best)

    @contextlib.contextmanager
    def tail_for(self, delta: float) -> Iterator[None]:
        """While a search for ``delta`` takes slopes from :meth:`log_delta`: below
        :data:`DEEP_LOG_DELTA` its tail is the members' own solving tail (issue 32: at
        δ = 1e-300 the default tail flattened log δ near e^-60, the slope was lost and the
        restricted variation-ratio search bisected a 1 % bracket in 11 evaluations of
        0.3-1 s each). Above it, unchanged. Any tail gives a valid bound; it only decides
        where the search looks."""
        target = math.log(delta)
        if target < DEEP_LOG_DELTA:
            self.log_tail = _solve_tail(target)
        try:
            yield
        finally:
            self.log_tail = DEFAULT_LOG_TAIL

    def epsilon(self, delta: float) -> float:
        return self.epsilon_until(delta, math.inf)

    def epsilon_until(self, delta: float, stop: float, start: float = 0.0) -> float:
        """The running answer after at least one more member, and after as many as it takes
        to reach ``stop`` (:meth:`epsilon` once all are taken: :meth:`finished`). It only
        grows member by member, so it is a lower bound on :meth:`epsilon`, which is all a
        caller taking the least of several certificates (:class:`_Least`) needs. A later
        call for the same δ resumes where this one stopped, so the members are solved in
        the same order from the same running answers as by one call: the same floats.

        A member with a ``screen`` (``log δ`` of a cheaper bound of the same pairs, e.g.
        one report's variation) that already meets the target at the running answer is
        not evaluated: that answer holds for its pairs (δ is non-increasing in ε). Where the
        next member fails at ``stop`` the call returns ``stop`` instead (:meth:`_fails_at`).
        A screen takes ``(ε, log_tail)`` (the tail the member would be solved with).

        ``start`` (issue 32) is where every member's search starts (a lower bound on the
        answer, e.g. a lower bound's ε, so the members below it cost one evaluation each):
        an explicit argument, so the same ``(δ, start)`` gives the same float whoever asks.
        The answer is never below it, and it is returned only where every member passes
        there (each member's search evaluates its start first), so a start above the root
        costs tightness (the answer is the start), never soundness."""
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        tail = _solve_tail(target)
        key = (delta, start)
        best, done = self._progress.get(key, (0.0, 0))
        if not done:  # the search starts there, not at 0
            best = max(best, start, 0.0 if self.start is None else self.start(delta))
        if self._lower and done < len(self._members):  # (solved once per (δ, start))
            best = self._lower_epsilon(delta, target, best)
            self._progress[key] = best, len(self._members)
            return best
        members = list(
            zip(
                reversed(self._members),
                reversed(self._screens),
                reversed(self._solvers),
                strict=True,
            )
        )
        if done < len(members) and self._fails_at(members[done][:2], target, (best, stop), key):
            return stop
        first = True  # every call takes at least one member (if any is left)
        while done < len(members) and (first or best < stop):
            fn, screen, solver = members[done]
            done, first = done + 1, False
            # (at ε0 every member passes without an evaluation: no screen then)
            screened = screen is not None and not self._lower and best < self._eps0
            if screened and screen is not None and screen(best, tail) <= target:
                continue
            if solver is not None and self._lower:
                # both are ε the truth needs at least (each fails its own lower bound)
                best = max(best, solver(delta))
                continue
            best = self._solve_member(fn, target, best)
        self._progress[key] = best, done
        return best

    def _lower_epsilon(self, delta: float, target: float, best: float) -> float:
        """A lower bound's ε: the largest of its members' (issue 32: Laplace's sixteen
        members, solved in list order, each raised the running answer with a root search
        of 10-30 evaluations). The first member in the usual order is solved; then every
        other member is taken in the order of its ``log δ`` there, largest first, so the
        strongest is solved next and the rest mostly pass at the running answer (one
        evaluation each: the start of their root search). The order is only a schedule:
        each member is still solved from the running answer, so the result is the largest
        member's failing point (each a proven lower bound) as before, within the root
        tolerance (the first is the ``first`` member at δ >= 1e-250 where one is given:
        section 1w). A member that passes at the first member's answer is not solved: its
        root lies below the answer (δ is non-increasing in ε), so it cannot raise the
        largest (were a member's rounding to break that, leaving it out only lowers a
        lower bound). Members with their own solver are taken first."""
        order = list(reversed(range(len(self._members))))
        plain = [i for i in order if self._solvers[i] is None]
        for i in order:
            solver = self._solvers[i]
            if solver is not None:  # both are ε the truth needs at least
                best = max(best, solver(delta))
        if not plain:
            return best
        if self._first in plain and target >= TINY_LOG_DELTA:  # (only a schedule: above)
            plain.insert(0, plain.pop(plain.index(self._first)))
        best = self._solve_member(self._members[plain[0]], target, best, self._cliffs[plain[0]])
        at = best
        probe = {i: self._lower_value(i, target, at) for i in plain[1:]}
        for i in sorted(probe, key=lambda j: -probe[j]):  # stable: ties keep list order
            if probe[i] > target:  # else it passes at a smaller ε: it cannot raise the max
                # its value at the probe is the one its search would evaluate there first
                # (s31-pw: the same float, one evaluation fewer)
                known = {at: probe[i]}
                best = self._solve_member(self._members[i], target, best, self._cliffs[i], known)
        return best

    def _lower_value(self, i: int, target: float, at: float) -> float:
        """Member i's ``log δ`` at ``at`` as its root search sees it (−inf at ε0)."""
        if at >= self._eps0:
            return -math.inf
        return min(self._members[i](at, _solve_tail(target)), 0.0)

    def _fails_at(
        self,
        member: tuple[Callable[[float, float], float], Callable[[float, float], float] | None],
        target: float,
        window: tuple[float, float],
        key: tuple[float, float],
    ) -> bool:
        """Whether the next member fails at ``stop`` (``window = (best, stop)``), so the
        curve's ε is above stop: one evaluation instead of its root (issue 32). Progress is
        not recorded (a later call solves it as before: the same floats); each δ probes
        only at a larger stop than before, so calls still advance."""
        best, stop = window
        if self._lower or not best <= stop < self._eps0:
            return False
        if stop <= self._probed.get(key, -math.inf):
            return False
        self._probed[key] = stop
        fn, screen = member
        if screen is not None and screen(stop, _solve_tail(target)) <= target:  # it passes there
            return False
        return min(fn(stop, _solve_tail(target)), 0.0) > target

    def known_floor(self, delta: float, start: float = 0.0) -> float:
        """A lower bound on :meth:`epsilon_until`'s answers for ``(δ, start)`` that costs no
        member evaluation: the point its search starts from where a :attr:`start` is set and
        nothing is solved yet (every answer is at least it), else −inf. Calling it computes
        :attr:`start` (the capped search's floor, which the search needs first anyway)."""
        if self.start is None or self._lower or (delta, start) in self._progress:
            return -math.inf
        return max(start, self.start(delta), 0.0)

    def finished(self, delta: float, start: float = 0.0) -> bool:
        """Whether every member is solved for δ from ``start`` (:meth:`epsilon_until` is
        then the answer)."""
        return self._progress.get((delta, start), (0.0, 0))[1] >= len(self._members)

    def _solve_member(
        self,
        fn: Callable[[float, float], float],
        target: float,
        best: float,
        cliff: Callable[[], float] | None = None,
        known: dict[float, float] | None = None,
    ) -> float:
        """The running answer after one member: unchanged if the member meets the target
        there (one evaluation: the root search returns its lower end), else its root.
        ``known``: values of the member's curve already evaluated (the same floats)."""
        tail = _solve_tail(target)
        xtol = max(1e-13, 1e-10 * self._eps0)
        held = known or {}

        def curve(eps: float) -> float:
            if eps in held:
                return held[eps]
            if eps >= self._eps0:  # ε0-DP whatever the member's rounding says
                return -math.inf
            return min(fn(eps, tail), 0.0)

        if self._lower:
            return lower_root(curve, target, best, self._eps0, xtol, cliff=cliff)
        return upper_root(curve, target, best, self._eps0, xtol, stepped=self._stepped)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


def upper_root(
    curve: Callable[[float], float],
    target: float,
    lo: float,
    top: float,
    xtol: float,
    *,
    stepped: bool = False,
) -> float:
    """The smallest passing ε of a certificate member in ``[lo, top]`` from the passing side:
    secant steps (:func:`~crowdhide.accounting.shuffle.curves.secant_bracket`, started with the
    member's own slope at ``lo``) to within ``BRACKET_RTOL`` of the root, else a bracketed
    search — 5-6 evaluations instead of about 16 for a search of ``[0, ε0]`` to 1e-10. Where
    the first slope aims beyond ``(1 − TOP_GAP) ε0``, one evaluation there first
    (:func:`_fails_near_top`). ``stepped``: a bracket the secant steps leave below ε0 is
    searched up from its failing end (:func:`_up_from`) instead of by the bracketed search."""
    curve = functools.cache(curve)  # the fallback search re-evaluates the bracket's ends
    g_lo = curve(lo)
    if g_lo <= target:
        return lo
    step = max(1e-4 * lo, 1e-6 * top)
    g_step = curve(lo + step) if lo + step < top else -math.inf
    if g_step <= target:  # the root lies within the first step
        return safe_root(curve, target, lo, lo + step, xtol=xtol)
    slope = (g_step - g_lo) / step
    if _fails_near_top(curve, target, (lo + step, g_step), slope, top):
        return top  # the root lies in ((1 − TOP_GAP) ε0, ε0]: ε0 (valid; section 1m)
    near = _NearTop(curve, target, top)
    left, g_left, right, done = secant_bracket(
        curve,
        target,
        (lo + step, g_step),
        top,
        slope,
        steps=10,
        stop=near if target < TINY_LOG_DELTA else None,  # above: the steps as before (1w)
    )
    if near.failed:
        return top  # the member fails at (1 − TOP_GAP) ε0: ε0 (valid; sections 1m, 1w)
    if done:
        # the estimate trusts the secant; a blocked member can flatten and bend (log δ of
        # the split systems at ε >= ε0/2), so a point a few tolerances below must fail
        return _down_from(curve, target, left, right)
    if right < top and right - left <= NARROW * BRACKET_RTOL * right:
        # steps that ended on a stepped log δ (δ = 1e-300): the bracket is narrow but the
        # secant's estimates are not to be trusted, nor the interpolation's (section 1t)
        return _down_from(curve, target, left, right)
    if stepped and right < top and g_left - target <= STEP_GAP:
        return _up_from(curve, target, left, right)
    if right >= top and (left >= (1.0 - TOP_GAP) * top or at_floor(curve, target, left, g_left)):
        # nothing passed below ε0 and the failing end is within TOP_GAP of it (the search of
        # that last sliver cost 8-12 evaluations), or a tiny δ's rounding floor: ε0 (valid)
        return top
    if target < TINY_LOG_DELTA and g_left - target <= STEP_GAP:
        # the steps stalled next to the root: a stepped log δ (δ = 1e-300), section 1w
        return _up_from(curve, target, left, right)
    return safe_root(curve, target, left, right, xtol=max(xtol, BRACKET_RTOL * right))


#: A bracket the secant steps leave (not done) at most this many ``BRACKET_RTOL`` wide is
#: searched by :func:`_down_from`.
NARROW = 64.0
#: Steps :func:`_down_from` takes down from a passing point before it bisects what is left.
DOWN_STEPS = 6


def _down_from(curve: Callable[[float], float], target: float, left: float, right: float) -> float:
    """A passing point of ``curve`` in ``(left, right]`` (``right`` passing, ``left`` failing:
    the secant steps' bracket, its root estimated close below ``right``) with a failing
    point within ``4 BRACKET_RTOL`` of it below (``left`` counts): relative steps down from
    ``right`` of ``4 BRACKET_RTOL``, doubled while they pass (at most :data:`DOWN_STEPS`),
    then halvings of the last gap. A first step that fails returns ``right`` after one
    evaluation, as before; where it passed, the former search of ``[left, step]`` crept
    along a stepped ``log δ`` (δ = 1e-300) by half its tolerance per evaluation, 8-10 of
    them (docs/proofs/mechanism-certificates.md, section 1t). Only points that pass by their
    own value are returned; past the steps, the bracketed search as before."""
    passing, scale = right, 4.0 * BRACKET_RTOL
    for step in range(DOWN_STEPS):
        x = passing * (1.0 - scale)  # the first is the former probe, the same float
        if x <= left or curve(x) > target:
            if step == 0:  # a failing point within 4 BRACKET_RTOL below: as before
                return passing
            left = max(left, x)
            break
        passing, scale = x, 2.0 * scale
    else:
        return safe_root(curve, target, left, passing, xtol=BRACKET_RTOL * passing)
    return _halve(curve, target, left, passing)


#: Below ``TINY_LOG_DELTA`` (every certificate member) or for a ``stepped`` member (Laplace's
#: cells, every δ), a failing end of the secant steps at most this far above the target in
#: ``log δ`` (the steps not done) is followed up by :func:`_up_from`: the steps of a stepped
#: ``log δ`` at δ = 1e-300 are 0.005-0.06 high, Laplace's flat stretches 0.001-0.014 (ends
#: tens or hundreds above the target are far from the root, searched as before; sections 1v,
#: 1w).
STEP_GAP = 0.1


class _NearTop:
    """``secant_bracket``'s ``stop`` in :func:`upper_root`: where a secant estimate (no step
    passed yet) lies at or beyond ``(1 − TOP_GAP) ε0``, one evaluation there (once per
    search); failing there, the steps end and the answer is ε0 (:attr:`failed`), as
    :func:`_fails_near_top` does for the first estimate (issue 32: at δ = 1e-300 the steps
    halved the way to ε0 ten times on a floor hundreds above the target). Passing, nothing
    changes but the one evaluation (the value is cached: the same floats). Only below
    ``TINY_LOG_DELTA``: above it a smooth search ends well inside the sliver (the piecewise
    mechanism at (8, 1e3, 1e-10): 7.9933, not ε0, a 8e-4 difference the probe would give up)."""

    def __init__(self, curve: Callable[[float], float], target: float, top: float) -> None:
        self._curve, self._target, self._near = curve, target, (1.0 - TOP_GAP) * top
        self.asked = self.failed = False

    def __call__(self, root: float) -> bool:
        if self.asked or root < self._near:
            return False
        self.asked = True
        self.failed = self._curve(self._near) > self._target
        return self.failed


def _up_from(curve: Callable[[float], float], target: float, left: float, right: float) -> float:
    """A passing point of ``curve`` in ``(left, right]`` (``left`` failing next to the target,
    ``right`` passing or ε0) with a failing point within ``4 BRACKET_RTOL`` of it below: the
    mirror of :func:`_down_from`, relative steps up from ``left`` of ``4 BRACKET_RTOL``,
    doubled while they fail, then halvings of the last gap. At δ = 1e-300 the secant steps
    stall on a plateau of a stepped ``log δ`` a few 1e-5 below its step (their slope goes
    to 0) and the bracketed search of ``[left, right]`` took 13-16 evaluations, ``right``
    often ε0; Laplace's cells crept along the flat stretch by a few tolerances per
    evaluation, 17-21 of them (issue 32; docs/proofs/mechanism-certificates.md, sections 1v
    and 1w). Only points that pass by their own value are returned (``right`` itself where no
    step below it passed)."""
    failing, passing, scale = left, right, 4.0 * BRACKET_RTOL
    while True:
        x = failing * (1.0 + scale)
        if x >= passing:
            break
        if curve(x) <= target:
            passing = x
            break
        failing, scale = x, 2.0 * scale
    return _halve(curve, target, failing, passing)


def _halve(curve: Callable[[float], float], target: float, failing: float, passing: float) -> float:
    """Halvings of ``[failing, passing]`` until it is at most ``4 BRACKET_RTOL`` wide: its
    passing end, a point that passed by its own value (the last step of :func:`_down_from`
    and :func:`_up_from`)."""
    while passing - failing > 4.0 * BRACKET_RTOL * passing:
        mid = 0.5 * (failing + passing)
        if curve(mid) > target:
            failing = mid
        else:
            passing = mid
    return passing


def _fails_near_top(
    curve: Callable[[float], float],
    target: float,
    start: tuple[float, float],
    slope: float,
    top: float,
) -> bool:
    """Whether the member fails at ``(1 − TOP_GAP) ε0``, asked only where the secant's first
    estimate from the failing ``start`` (with ``slope``) lies there or beyond (issue 32: at
    δ = 1e-300 and n = 1e3-1e4 the member sits hundreds above the target with no slope to
    speak of, and the ten secant steps bisected towards ε0 to answer ε0 by the
    :data:`TOP_GAP` rule, 10-12 evaluations of 5-20 ms). Failing there, the smallest passing
    point is above it (log δ is non-increasing), so ε0 is within ``TOP_GAP`` of it
    (docs/proofs/mechanism-certificates.md, section 1m). Passing, the search goes on as
    before (the value is cached: the same floats, one evaluation more)."""
    x, g = start
    near = (1.0 - TOP_GAP) * top
    if x >= near:
        return False
    aimed = x + (target - g) / slope if math.isfinite(slope) and slope < 0.0 else math.inf
    return aimed >= near and curve(near) > target


def lower_root(
    curve: Callable[[float], float],
    target: float,
    lo: float,
    top: float,
    xtol: float,
    *,
    cliff: Callable[[], float] | None = None,
) -> float:
    """The largest failing ε of a lower-bound member in ``[lo, top]`` to within ``xtol``
    (the tolerance of a search of the whole bracket): ``lo`` where it passes there, else
    secant steps from ``lo`` (as :func:`upper_root`) to a bracket of about
    ``BRACKET_RTOL`` and the bracketed search from the failing side inside it (issue 32:
    6-10 evaluations instead of 15-35 from ``[lo, ε0]``, where ``log δ`` is −inf at ε0).
    Every point returned failed by its own value, so it is a lower bound on the truth's ε
    whatever the steps did.

    ``cliff`` (a member that jumps to −inf: the conditional-mean member, whose last
    positive cell ends its support) gives a point just below that jump; where the secant
    aims at or past it and the member fails there, it is the answer (``log δ`` is −inf
    above, so it is that member's crossing within its slack; at δ = 1e-300 the search
    bisected the jump in ~30 evaluations; docs/proofs/mechanism-certificates.md §1o)."""
    curve = functools.cache(curve)  # the search re-evaluates the bracket's ends
    g_lo = curve(lo)
    if g_lo <= target:
        return lo
    step = max(1e-4 * lo, 1e-6 * top)
    if lo + step >= top:
        return safe_root(curve, target, lo, top, xtol=xtol, lower_side=True)
    g_step = curve(lo + step)
    if g_step <= target:  # the root lies within the first step
        return safe_root(curve, target, lo, lo + step, xtol=xtol, lower_side=True)
    slope = (g_step - g_lo) / step
    if cliff is not None and _fails_at_cliff(curve, target, (lo + step, g_step), slope, cliff):
        return cliff()
    left, _, right, _ = secant_bracket(curve, target, (lo + step, g_step), top, slope, steps=10)
    return safe_root(curve, target, left, right, xtol=xtol, lower_side=True)


def _fails_at_cliff(
    curve: Callable[[float], float],
    target: float,
    start: tuple[float, float],
    slope: float,
    cliff: Callable[[], float],
) -> bool:
    """Whether the member fails at its cliff point, asked only where the point lies above
    the failing ``start`` and the secant's estimate from there (with ``slope``) lies at or
    beyond it (else the crossing is a smooth one below: no evaluation spent). Passing, the
    search goes on as before (the value is cached)."""
    x, g = start
    at = cliff()
    if not x < at:
        return False
    aimed = x + (target - g) / slope if math.isfinite(slope) and slope < 0.0 else math.inf
    return aimed >= at and curve(at) > target
