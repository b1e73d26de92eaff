"""The lazy least of a mechanism's certificate curves (internal; issue 32: piecewise
queries where the revealed-class cells join took 0.4-2.3 s).

:class:`Least` takes the least ε of several certificates of the same pairs, as
:class:`~crowdhide.accounting.curves.SmallestCurve` does (the same floats), but solves them
lazily through :class:`LazyCurve`'s ``epsilon_until``: a lower bound on the member's ε that
only grows, and its ε once ``finished``. :class:`Capped` gives the restricted
variation-ratio search that interface (its floor's ε is a lower bound on its answer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.shuffle._member_curve import MemberCurve
from crowdhide.accounting.shuffle.curves import BracketedCurve
from crowdhide.accounting.shuffle.generic import SafeSideCurve

__all__ = ["Capped", "LazyCurve", "Least", "StartedCertificate"]


@runtime_checkable
class LazyCurve(Protocol):
    """A certificate curve solved step by step for a δ: ``epsilon_until(δ, stop)`` takes at
    least one more step (as many as reach ``stop``), or returns ``stop`` itself once per
    larger stop where one evaluation shows its ε is above it, and returns a lower bound on
    its ε that never falls between calls; once ``finished(δ)`` it is the ε."""

    def epsilon(self, delta: float) -> float: ...

    def epsilon_until(self, delta: float, stop: float, start: float = 0.0) -> float: ...

    def finished(self, delta: float, start: float = 0.0) -> bool: ...


class Capped(PrivacyCurve):
    """The restricted variation-ratio certificate (``mechanisms._capped_curve``): a bracketed search
    that starts at its floor's ε and only goes up, so ``min(floor ε, ε0)`` is a lower bound
    on its answer that costs one split member's root instead of the refinement."""

    def __init__(self, search: BracketedCurve, floor: MemberCurve, eps0: float) -> None:
        self._search, self._floor, self._eps0 = search, floor, eps0
        self._answers: dict[float, float] = {}
        self._floored: set[float] = set()  # the δ whose first call (the floor's ε) was made

    def log_delta(self, epsilon: float) -> float:
        return self._search.log_delta(epsilon)

    def epsilon(self, delta: float) -> float:
        if delta not in self._answers:
            with self._floor.tail_for(delta):  # the search's first slope is the floor's
                self._answers[delta] = self._search.epsilon(delta)
        return self._answers[delta]

    def epsilon_until(self, delta: float, stop: float, start: float = 0.0) -> float:
        """The floor's ε (capped at ε0) on the first call for δ, the answer after. ``start``
        is not used: the search continues from the floor's answer and its refined sums
        are path-dependent (s24-start: piecewise, ε0 = 1, n = 1e9, δ = 1e-300 came out
        1e-4 relative higher when the floor started at a lower bound's ε)."""
        if delta in self._floored:
            return self.epsilon(delta)
        # (the floor may be solved already: another member's known floor is its ε)
        self._floored.add(delta)
        return self.floor_epsilon(delta)

    def finished(self, delta: float, start: float = 0.0) -> bool:
        return delta in self._answers

    def floor_epsilon(self, delta: float) -> float:
        """The floor's ε, capped at ε0 (remembered per δ by the floor)."""
        return min(self._floor.epsilon(delta), self._eps0)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


class Least(PrivacyCurve):
    """The least of several certificate curves of the same pairs (as
    :class:`~crowdhide.accounting.curves.SmallestCurve`: the same floats), solved lazily.
    A lazy member (``_member_curve.MemberCurve``, :class:`Capped`) is advanced step by step
    (``epsilon_until``: its answer so far, a lower bound on its answer, and the answer once
    ``finished``); always the one with the least bound so far, up to the next least bound
    or the least finished answer. A member whose bound reaches the least finished answer
    cannot be below it and is left; the least is unchanged, only the time depends on the
    order (the cheap lower bounds decide which expensive member is solved)."""

    def __init__(self, members: list[PrivacyCurve]) -> None:
        self._members = members

    def log_delta(self, epsilon: float) -> float:
        return min(m.log_delta(epsilon) for m in self._members)

    def epsilon(self, delta: float) -> float:
        return self.epsilon_from(delta, 0.0)

    def epsilon_from(self, delta: float, start: float) -> float:
        """The least ε at δ, every lazy member searched from ``start`` (a lower bound on
        every member's ε: see ``MemberCurve.epsilon_until``)."""
        best = math.inf
        lazy: dict[int, LazyCurve] = {}
        for i, member in enumerate(self._members):
            if isinstance(member, LazyCurve) and not member.finished(delta, start):
                lazy[i] = member
            else:
                best = min(best, member.epsilon(delta))
        # a member's answer is never below its search's own start (MemberCurve.known_floor:
        # the one-rate curve starts at the capped search's floor): where the others' least
        # answer is at most that, it is never probed (s31-pw: one evaluation per query)
        lows = {i: _known_floor(member, delta, start) for i, member in lazy.items()}
        while lows:
            i = min(lows, key=lows.__getitem__)
            if lows[i] >= best:  # every open member's answer is at least best
                break
            stop = min([best, *(low for j, low in lows.items() if j != i)])
            lows[i] = lazy[i].epsilon_until(delta, stop, start)
            if lazy[i].finished(delta, start):
                best = min(best, lows.pop(i))
        return best

    def epsilon_upper_hint(self) -> float:
        return min(m.epsilon_upper_hint() for m in self._members)


def _known_floor(member: LazyCurve, delta: float, start: float) -> float:
    """A lower bound on ``member``'s answer for ``(δ, start)`` known without evaluating it:
    :meth:`MemberCurve.known_floor` where the member has one, else −inf."""
    if isinstance(member, MemberCurve):
        return member.known_floor(delta, start)
    return -math.inf


class StartedCertificate(SafeSideCurve):
    """A mechanism's certificate as reported (:class:`SafeSideCurve` of :class:`Least`),
    its ε at δ searched from ``start(δ)`` — an explicit argument, e.g. the mechanism's lower
    bound's ε at the same δ (issue 32: the certificate's searches from 0 cost about twice
    the evaluations). ``start`` is a function of the asked δ alone, so the curve and every
    query answer the same float for the same question.

    A start at or below the true ε keeps the answer within the search tolerance of the
    unstarted one: the inner curve is solved at a δ lowered by the margin, where every
    certificate's ε is at least the truth's at δ (ε is non-increasing in δ), up to the loss
    allowance. A start above it costs tightness only: the answer is a point where the
    certificate's δ passes (``MemberCurve.epsilon_until``)."""

    def __init__(self, inner: Least, eps0: float, start: Callable[[float], float] | None) -> None:
        super().__init__(inner, eps0, lower=False)
        self._least, self._start = inner, start

    def start_at(self, delta: float) -> float:
        """The start of the search at ``delta`` (0 without one, or outside ``(0, ε0)``)."""
        value = 0.0 if self._start is None else self._start(delta)
        return value if 0.0 < value < self._eps0 else 0.0

    def _inner_epsilon(self, target: float, delta: float) -> float:
        return self._least.epsilon_from(target, self.start_at(delta))
