"""The bracketed search of the k-RR blanket at a tiny δ, finished by regula falsi
(internal; issue 32, docs/proofs/mechanism-certificates.md section 1w).

At δ = 1e-300 and n = 1e3-1e4, ``krr_blanket``'s ``log δ`` bends at its root (k-RR, d = 16,
ε0 = 0.5, n = 1e3: a slope of about -1,800 over the last 1e-4 relative below the root,
-4,700 farther below, steeper again above) and the bracket's passing end sits on the
windows' floor, 40.86 below the target. The bracketed search
(:func:`~crowdhide.accounting.roots.safe_root`, Chandrupatla's interpolation) crept up from
the failing side (+0.029, +0.017, +0.010, +0.007, ...) with bisections of the passing side
in turn: 20 of the query's 30 evaluations of 10-12 ms each. :class:`KinkedBracketedCurve`
finishes the bracket by regula falsi with the Illinois rule instead (18 in all there) and
returns its passing end once it is at most ``4 BRACKET_RTOL`` wide, as
``_member_curve._down_from``'s tolerance. Every point it returns passed by its own value.
"""

from __future__ import annotations

from collections.abc import Callable

from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle.curves import BRACKET_RTOL, TINY_LOG_DELTA, BracketedCurve

__all__ = ["KinkedBracketedCurve", "failing_side_root"]

#: Steps :func:`failing_side_root` takes before the bracketed search of what is left.
KINK_STEPS = 16


class KinkedBracketedCurve(BracketedCurve):
    """:class:`~crowdhide.accounting.shuffle.curves.BracketedCurve` whose bracket is finished
    by :func:`failing_side_root` below ``TINY_LOG_DELTA`` (the same search above it)."""

    def _finish(
        self, log_delta: Callable[[float], float], target: float, lo: float, hi: float
    ) -> float:
        if target >= TINY_LOG_DELTA:
            return super()._finish(log_delta, target, lo, hi)
        return failing_side_root(log_delta, target, lo, hi)


def failing_side_root(
    log_delta: Callable[[float], float], target: float, lo: float, hi: float
) -> float:
    """A passing point in ``(lo, hi]`` (``lo`` failing, ``hi`` passing) with a failing point
    at most ``4 BRACKET_RTOL`` below it (module docstring), else, after :data:`KINK_STEPS`
    steps, the passing end of the bracketed search of what is left to :data:`BRACKET_RTOL`.

    Regula falsi with the Illinois rule (the value kept at an end twice in a row is halved):
    the far passing end sits on the windows' floor (40 below the target), so plain
    interpolation through it kept landing on the failing side; each step moves at least
    half the final width from both ends, and only the bracket's ends are returned."""
    a, fa = lo, log_delta(lo) - target  # failing: fa > 0
    b, fb = hi, log_delta(hi) - target  # passing: fb <= 0
    kept = 0  # +1: the failing end was kept last step, -1: the passing end
    for _ in range(KINK_STEPS):
        tol = 4.0 * BRACKET_RTOL * b
        if b - a <= tol:
            return b  # passing, a failing point within 4 BRACKET_RTOL below
        x = a + fa * (b - a) / (fa - fb)
        x = min(max(x, a + 0.5 * tol), b - 0.5 * tol)
        fx = log_delta(x) - target
        if fx > 0.0:
            a, fa = x, fx
            fb, kept = (0.5 * fb if kept == -1 else fb), -1
        else:
            b, fb = x, fx
            fa, kept = (0.5 * fa if kept == 1 else fa), 1
    return _bracketed(log_delta, target, a, b)


def _bracketed(log_delta: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """The passing end of the bracketed search of ``[lo, hi]`` to :data:`BRACKET_RTOL`."""
    return safe_root(log_delta, target, lo, hi, xtol=max(1e-13, BRACKET_RTOL * hi))
