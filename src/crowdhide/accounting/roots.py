"""One safe-side root finder and one calibrator for every "smallest x with δ(x) <= target".

Calibration questions in crowdhide all have the same shape: a privacy figure is monotone in a
parameter (ε0, n, σ, number of dummies, ε at a fixed δ, ...) and we want the parameter value
at which it crosses the target, returned from the side on which the target *holds*. A root
returned from the wrong side by one ulp would be a certificate below the truth, so both
functions here keep a bracket whose "passing" end is what they return.

* :func:`safe_root` — real root of a non-increasing ``log δ(x) = target`` by Chandrupatla's
  bracketed inverse quadratic interpolation (T. R. Chandrupatla, "A new hybrid
  quadratic/bisection algorithm for finding the zero of a nonlinear function without using
  derivatives", Adv. Eng. Softw. 28(3), 1997): Brent-like convergence, a bracket at every step,
  and no import of ``scipy.optimize`` (~0.2 s at CLI start-up).
* :func:`calibrate` — the parameter at which a monotone *predicate* ("does this statement
  meet the target?") switches, on real or integer domains, with bounded bracket growth.
  Modelled on ``dp_accounting.calibrate_dp_mechanism``: the caller builds the privacy figure
  for a candidate parameter; this function only searches.

Examples
--------
>>> import math
>>> x = safe_root(lambda e: -e, math.log(0.5), 0.0, 5.0)   # log δ(ε) = −ε, δ = 1/2
>>> x >= math.log(2.0) and x - math.log(2.0) < 1e-12
True
>>> calibrate(lambda n: 100.0 / n <= 0.3, low=1, high=10**6, increasing=True, integer=True)
334
"""

from __future__ import annotations

import math
from collections.abc import Callable

from crowdhide.errors import InvalidParameterError, UnmetTargetError

__all__ = ["LOG_ZERO", "calibrate", "safe_root"]

#: log δ is clamped to this value where δ = 0, so that root finding sees finite numbers; it is
#: far below log(1e-300) ≈ −690.8, the smallest δ crowdhide accepts.
LOG_ZERO = -1.0e4

_RTOL = 4.0 * 2.220446049250313e-16
_MAX_STEPS = 500


def safe_root(
    log_delta: Callable[[float], float],
    target: float,
    lo: float,
    hi: float,
    *,
    xtol: float = 1e-13,
    lower_side: bool = False,
    rtol: float = 0.0,
) -> float:
    """Root of the non-increasing ``log_delta(x) = target`` in ``[lo, hi]``, from the safe side.

    Returns ``x`` with ``log_delta(x) <= target`` (so δ(x) <= δ: a valid certificate), or, with
    ``lower_side``, ``x`` with ``log_delta(x) > target`` (for lower bounds on ε). Returns ``lo``
    when ``log_delta(lo)`` is already at or below the target.

    Parameters
    ----------
    log_delta
        Non-increasing function; values below :data:`LOG_ZERO` are clamped to it.
    target
        The target ``log δ``.
    lo, hi
        Bracket; ``log_delta(hi) <= target`` is required.
    xtol
        Absolute width at which to stop (plus 4 ulp relative).
    lower_side
        Return the end of the final bracket on which the target does *not* hold.
    rtol
        Relative width at which to stop as well (the larger of it and 4 ulp counts); the
        end returned is on its side of the root by its own evaluation whatever the width.

    Returns
    -------
    float
        ``x`` on the safe side of the root (see above).

    See Also
    --------
    calibrate : The threshold of a monotone predicate.

    Examples
    --------
    >>> safe_root(lambda x: 1.0 - x, 0.0, 0.0, 3.0) >= 1.0
    True
    >>> safe_root(lambda x: 1.0 - x, 0.0, 0.0, 3.0, lower_side=True) < 1.0
    True
    """

    def gap(x: float) -> float:
        return max(log_delta(x), LOG_ZERO) - target

    g_lo, g_hi = gap(lo), gap(hi)
    if g_lo <= 0.0:
        return lo
    if g_hi > 0.0:
        raise InvalidParameterError(
            f"no root in [{lo!r}, {hi!r}]: log delta stays above {target!r}"
        )
    # Chandrupatla's method: the bracket is always [a, b] (a the newest point, c the point
    # it replaced), so whichever end passes is available at every step.
    a, fa, b, fb = hi, g_hi, lo, g_lo
    c, fc = b, fb
    widths: list[float] = []
    for _ in range(_MAX_STEPS):
        width = abs(a - b)
        tol = xtol + max(_RTOL, rtol) * max(abs(a), abs(b))
        if width <= tol:
            break
        widths.append(width)
        # Without this guard an adversarial curve could creep at tol/2 per step; forcing a
        # bisection when four steps have not halved the bracket bounds the cost by bisection's.
        stalled = len(widths) > 4 and width > 0.5 * widths[-5]
        t = 0.5 if stalled else _interpolation_step(a, fa, b, fb, c, fc)
        edge = min(0.5, 0.5 * tol / width)  # move at least tol/2: the bracket can close
        x = a + min(1.0 - edge, max(edge, t)) * (b - a)
        gx = gap(x)
        if (gx > 0.0) == (fa > 0.0):
            c, fc = a, fa
        else:
            c, fc = b, fb
            b, fb = a, fa
        a, fa = x, gx
    passing, failing = (b, a) if fa > 0.0 else (a, b)
    return failing if lower_side else passing


def _interpolation_step(a: float, fa: float, b: float, fb: float, c: float, fc: float) -> float:
    """Chandrupatla's step as a fraction of ``b − a``: inverse quadratic when it is safe, else 1/2.

    Inverse quadratic interpolation through (a, b, c) is used only when the interpolant is
    monotone on the bracket (Chandrupatla 1997, the ``ξ``/``Φ`` test); otherwise the step
    bisects.
    """
    if c == b or fb == fa or fc in (fb, fa):
        return 0.5
    xi = (a - b) / (c - b)
    phi = (fa - fb) / (fc - fb)
    if not (phi * phi < xi and (1.0 - phi) ** 2 < 1.0 - xi):
        return 0.5
    return fa / (fb - fa) * fc / (fb - fc) + (c - a) / (b - a) * fa / (fc - fa) * fb / (fc - fb)


def calibrate(
    passes: Callable[[float], bool],
    *,
    low: float,
    high: float,
    increasing: bool,
    integer: bool = False,
    rtol: float = 1e-9,
    what: str = "parameter",
) -> float:
    """The parameter value at which a monotone predicate starts to hold, from the passing side.

    With ``increasing=True`` the predicate holds for every value at or above some threshold
    (e.g. "n users are enough") and the smallest passing value is returned; with
    ``increasing=False`` it holds at or below a threshold (e.g. "ε0 is small enough") and the
    largest passing value is returned. The search is a bisection (geometric when both ends
    are positive and far apart) on ``[low, high]``; the returned value always passes.

    Parameters
    ----------
    passes
        Monotone predicate; called O(log((high − low)/rtol)) times.
    low, high
        Search interval (``low < high``); for integers, whole numbers.
    increasing
        Direction of monotonicity (see above).
    integer
        Search whole numbers only; the result is then exact.
    rtol
        Relative width at which a real search stops.
    what
        Name used in the error when no value in the interval passes.

    Returns
    -------
    float
        The smallest (``increasing``) or largest passing value; it always passes.

    Raises
    ------
    UnmetTargetError
        When even the most favourable end of the interval fails.

    See Also
    --------
    safe_root : The root of a non-increasing function from the safe side.
    crowdhide.calibrate : The shuffle and countermeasure calibrations built on it.

    Examples
    --------
    >>> round(calibrate(lambda eps0: eps0 <= 1.25, low=0.0, high=10.0, increasing=False), 6)
    1.25
    >>> calibrate(lambda n: n >= 7, low=1, high=5, increasing=True, integer=True, what="n")
    Traceback (most recent call last):
    ...
    crowdhide.errors.UnmetTargetError: no n in [1, 5] meets the target
    """
    if not low < high:
        raise InvalidParameterError(f"calibrate needs low < high, got low={low!r}, high={high!r}")
    best_end, worst_end = (high, low) if increasing else (low, high)
    if not passes(best_end):
        shown = (int(low), int(high)) if integer else (low, high)
        raise UnmetTargetError(f"no {what} in [{shown[0]}, {shown[1]}] meets the target")
    if passes(worst_end):
        return int(worst_end) if integer else worst_end
    # Invariant: ``good`` passes, ``bad`` fails; they move towards each other.
    good, bad = best_end, worst_end
    for _ in range(_MAX_STEPS):
        if integer:
            if abs(good - bad) <= 1:
                return int(good)
            mid = float((int(good) + int(bad)) // 2)
        else:
            if abs(good - bad) <= rtol * max(abs(good), abs(bad)):
                return good
            lo_, hi_ = min(good, bad), max(good, bad)
            mid = math.sqrt(lo_ * hi_) if lo_ > 0.0 and hi_ > 4.0 * lo_ else 0.5 * (lo_ + hi_)
        if passes(mid):
            good = mid
        else:
            bad = mid
    return int(good) if integer else good
