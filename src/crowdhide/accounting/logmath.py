"""Log-space helpers shared by the accountants (internal)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import cast

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp as _scipy_logsumexp

from crowdhide.errors import InvalidParameterError

__all__ = [
    "MACHINE_EPSILON",
    "kappa_up",
    "log1mexp",
    "log_add",
    "log_sub",
    "log_terms_error",
    "logsumexp",
    "loss_allowance",
    "probability_loss_allowance",
    "product_up",
    "pure_cap_up",
    "rate_down",
    "rate_up",
    "relative_up",
    "sum_up",
]

_LN2 = float(np.log(2.0))
#: The spacing of doubles at 1 (``2^-52``): the unit of every rounding-error model here.
MACHINE_EPSILON = 2.0**-52


def log1mexp(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Return ``log(1 - exp(x))`` for ``x <= 0`` accurately (Mächler 2012).

    ``x = 0`` gives ``-inf``; ``x = -inf`` gives ``0``.

    Examples
    --------
    >>> float(log1mexp(-1e-20))
    -46.0517...
    >>> float(log1mexp(-800.0))
    -0.0
    """
    arr = np.asarray(x, dtype=np.float64)
    out = np.empty_like(arr)
    near = arr > -_LN2
    with np.errstate(divide="ignore"):
        out[near] = np.log(-np.expm1(arr[near]))
        out[~near] = np.log1p(-np.exp(arr[~near]))
    return out


def logsumexp(
    a: npt.ArrayLike, axis: int | tuple[int, ...] | None = None
) -> npt.NDArray[np.float64] | np.float64:
    """``log Σ exp(a)`` over ``axis`` (all axes by default), SciPy's ``logsumexp`` (1.17)
    operation for operation, so bit for bit the same value, for real input without weights.

    SciPy's version spends ~0.5 ms per call on array-API dispatch (measured 585 µs against
    10 µs for a plain sum of 100 terms), and a k-RR query makes ~50 of these sums (issue 32:
    start-up). The arithmetic is kept identical, not improved, so every certificate is
    unchanged; ``tests/accounting/test_logmath_logsumexp.py`` compares the two bit for bit
    (within a few ulp) and against an exact sum. Complex input goes to SciPy.

    Examples
    --------
    >>> float(logsumexp([0.0, 0.0])) == float(np.log(2.0))
    True
    """
    arr = np.asarray(a)
    if arr.dtype != np.float64 or arr.size == 0:  # other dtypes, empty: SciPy itself
        return cast("npt.NDArray[np.float64] | np.float64", _scipy_logsumexp(arr, axis=axis))
    if arr.ndim == 0:
        arr = arr.reshape(1)
    axes = tuple(range(arr.ndim)) if axis is None else axis
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out_inf = np.log(np.sum(np.exp(arr), axis=axes, keepdims=True))
        top = np.max(arr, axis=axes, keepdims=True)
        mask = arr == top
        m = np.sum(mask.astype(np.float64), axis=axes, keepdims=True, dtype=np.float64)
        rest = np.exp(np.where(mask, -np.inf, arr) - top)
        s = np.sum(rest, axis=axes, keepdims=True, dtype=np.float64)
        s = np.where(s == 0, s, s / m)
        sign = np.sign(s + 1) * np.sign(m)
        s = np.where(s < -1, -s - 2, s)
        out = np.log1p(s) + np.log(np.abs(m)) + top
        out[sign < 0] = np.nan
    out = np.squeeze(np.where(np.isfinite(out), out, out_inf), axis=axes)
    return cast("npt.NDArray[np.float64] | np.float64", out[()] if out.ndim == 0 else out)


def log_add(a: float, b: float) -> float:
    """Return ``log(exp(a) + exp(b))``."""
    return float(np.logaddexp(a, b))


def log_sub(a: float, b: float) -> float:
    """Return ``log(exp(a) - exp(b))`` for ``a >= b`` (``-inf`` when equal)."""
    if b > a:
        raise InvalidParameterError(f"log_sub needs a >= b, got a={a!r}, b={b!r}")
    if b == -np.inf:
        return a
    return a + float(log1mexp(b - a))


def kappa_up(eps0: float) -> float:
    """``tanh(ε0/2)`` rounded *up* (at most 1): the evidence ``κ`` of a certificate's clone
    system.

    Rounded to nearest, ``1 − κ = 2/(e^{ε0} + 1)`` carries a relative error of up to
    ``1e-16 · e^{ε0}/2`` (2.7e-8 at ε0 = 20), so a system built on it describes a slightly
    smaller ε0 and its δ can fall below the truth near ε = ε0. A larger κ is safe: the
    three-point system with κ is a garbling of the one with any larger κ (flip every ±
    report with the same probability), so its δ is never larger.

    Examples
    --------
    >>> kappa_up(1.0) >= math.tanh(0.5)
    True
    >>> kappa_up(40.0)
    1.0
    """
    return min(1.0, math.nextafter(math.nextafter(math.tanh(eps0 / 2.0), 2.0), 2.0))


def rate_down(rate: float, *, ulps: int = 8) -> float:
    """A clone (or blanket) rate computed in floating point, lowered by ``ulps`` ulps (8 by
    default; at least 0).

    A clone system claims that each other user's report law contains ``ρ π`` (a clone of
    the target's mixture). Any smaller ``ρ' <= ρ`` is also a valid decomposition, ``R(v) =
    ρ' π + (1 − ρ') R''(v)`` with ``R'' >= 0``, and its δ is no smaller; a rate a few ulps
    *above* the true one claims clones that do not exist. Rates such as ``2/(e^{ε0} + 1)``
    or ``k/(e^{ε0} − 1 + k)`` carry at most about 3 ulps of rounding (``exp``/``expm1``, one
    sum, one quotient), which the 8 ulps cover; ``tests/accounting/test_logmath.py``
    checks them against 40-digit values. The effect on δ is about ``n ρ · 1e-15``
    relative (1e-6 at n = 10^9), so it matters only at the largest n.

    Examples
    --------
    >>> rate_down(0.5) < 0.5, rate_down(0.0)
    (True, 0.0)
    """
    return max(0.0, rate * (1.0 - ulps * MACHINE_EPSILON))


def rate_up(rate: float, *, ulps: int = 8) -> float:
    """A probability computed in floating point, raised by ``ulps`` ulps (8 by default; at
    most 1): for parameters whose δ is non-decreasing in them, such as the probability that
    *every* unit's report (the target's and each clone's alike) is informative — garbling
    every report alike is a post-processing of the shuffled output, so a larger probability
    describes a less private system (see :func:`rate_down`). The target's own probability
    qualifies only with the other users' laws held fixed: then the pair at a smaller one is
    a mixture of the larger one's and a report independent of the target's value, and the
    hockey-stick divergence is jointly convex.

    Examples
    --------
    >>> rate_up(0.5) > 0.5, rate_up(1.0)
    (True, 1.0)
    """
    return min(1.0, rate * (1.0 + ulps * MACHINE_EPSILON))


def product_up(a: float, b: float) -> float:
    """``a·b`` rounded up: the float product, or the next float above it when rounding to
    nearest went below the exact product (checked in exact rational arithmetic). Used for
    basic-composition caps ``R·ε0``: ``3 × 0.3`` rounds to ``0.8999999999999999``, below
    the exact ``0.9000000000000000222…`` of the float 0.3 times 3.

    Examples
    --------
    >>> product_up(3, 0.3) > 3 * 0.3, product_up(3, 1.0)
    (True, 3.0)
    """
    from fractions import Fraction  # only here: it loads decimal, ~3 ms of every start-up

    value = a * b
    if math.isfinite(value) and Fraction(value) < Fraction(a) * Fraction(b):
        return math.nextafter(value, math.inf)
    return value


def sum_up(values: Iterable[float]) -> float:
    """The sum of floats rounded up: ``math.fsum`` (correctly rounded, so at most half an ulp
    off), or the next float above it when that went below the exact sum (checked in exact
    rational arithmetic). Sums of ε's and δ's (basic composition) are certificates: a plain
    float sum can land an ulp below the exact one, ``0.1 + 0.2 + 0.3`` for one.

    Examples
    --------
    >>> sum_up([0.1, 0.2, 0.3]) > 0.6, sum_up([1.0, 1.0, 1.0]), sum_up([])
    (True, 3.0, 0.0)
    """
    from fractions import Fraction  # only here: it loads decimal, ~3 ms of every start-up

    parts = list(values)
    total = math.fsum(parts)
    if math.isfinite(total) and Fraction(total) < sum(map(Fraction, parts), Fraction(0)):
        return math.nextafter(total, math.inf)
    return total


def relative_up(value: float, *, ulps: int) -> float:
    """A non-negative value computed in floating point with a relative error of at most
    ``ulps`` units of ``2^-52`` (the caller's error model), raised past every value it can
    stand for: ``value (1 + ulps 2^-52)``, then one float further for that product's own
    rounding. Unlike :func:`rate_up` it is not capped at 1 (for ε's).

    Examples
    --------
    >>> relative_up(1.0, ulps=4) == 1.0 + 5 * 2.0**-52, relative_up(0.0, ulps=4)
    (True, 0.0)
    """
    if not math.isfinite(value) or value == 0.0:
        return value
    return math.nextafter(value * (1.0 + ulps * MACHINE_EPSILON), math.inf)


def pure_cap_up(value: float, *, ulps: int = 16) -> float:
    """A pure ε computed in floating point (``R·ε0``, ``log1p(x)`` of a rounded ``x``), raised
    so that it is at least the exact value: used where a curve reports δ = 0 from that ε on,
    so a cap one ulp low would certify δ = 0 where the true δ is positive (issue 28's
    review: ``3 × 0.3`` rounds to ``0.8999999999999999``). ``ulps`` units of
    ``ulp(max(value, 1))`` cover a handful of roundings of the inputs (a relative error
    ``r`` of ``x`` moves ``log1p(x)`` by at most ``r`` absolutely) and of the result.

    Examples
    --------
    >>> pure_cap_up(3 * 0.3) >= 0.9, pure_cap_up(math.inf)
    (True, inf)
    """
    if not math.isfinite(value):
        return value
    return value + ulps * math.ulp(max(abs(value), 1.0))


def loss_allowance(eps0: float) -> float:
    """Absolute allowance on ε for the rounding of privacy-loss thresholds computed from
    ``e^ε``, ``e^{ε0}`` and counts: ``16 θ`` with ``θ = (16 + 4 ε0) ε`` (ε = 2^-52) the clone
    pair's relative threshold error (``_shuffle_pairs``: a few roundings, each amplified by
    at most the size of the exponent, ``ε <= ε0``).

    A threshold such as ``(n e^ε − w)/(e^{ε0} − 1)`` is computed to within ``θ`` of its
    largest part, ``n e^ε/(e^{ε0} − 1)``, which is also its derivative in ε: it is the exact
    threshold at an ε off by at most ``θ`` — whatever ε0, so the allowance does not shrink
    with ε0. The factor 16 covers the incomplete-beta tails of the k-RR evaluators, whose
    thresholds enter as differences of two tails (measured need: 90 ulps at ε0 = 1, n = 5,
    k = 4). See :class:`~crowdhide.accounting.curves.RoundedCurve` for how such an allowance
    is applied; ``tests/accounting/test_near_eps0.py`` checks every registry against
    50-digit values at ``ε0 − ε`` down to 1e-14.

    Examples
    --------
    >>> 1e-14 < loss_allowance(1.0) < 1e-12
    True
    """
    return 16.0 * (16.0 + 4.0 * abs(eps0)) * MACHINE_EPSILON


def probability_loss_allowance(relative: float) -> float:
    """Absolute allowance on ε for losses ``ln P − ln Q`` of probabilities computed with a
    relative error of at most ``relative`` each (plus one rounding of each ``log``): the loss
    is off by at most ``2 (relative + ε)``, and the terms ``P − e^ε Q`` by ``relative (P +
    e^ε Q)``, which the shift covers again: ``4 (relative + ε)``, ε = 2^-52.

    Examples
    --------
    >>> probability_loss_allowance(0.0) == 4 * MACHINE_EPSILON
    True
    """
    return 4.0 * (relative + MACHINE_EPSILON)


def log_terms_error(*terms: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Bound on the absolute rounding error of ``Σ ± terms`` in floating point, where each term
    is a ``gammaln`` value or a product ``k · log(p)``: ``4 ε Σ |term| + 64 ε``, ε = 2^-52.

    A log-pmf built from log-gamma values, such as ``log C(r, j) = gammaln(r + 1) −
    gammaln(j + 1) − gammaln(r − j + 1)``, cancels two values of size ``r ln r`` down to a
    result of size ``j ln r``: its absolute error follows the *terms*, not the result
    (2.5e-8 at r = 10^7 and 5e-6 at r = 10^9, far beyond a fixed 1e-9 margin). Measured
    against 40-digit values for r = 10^3 … 10^9, the error stayed below ``0.71 ε Σ |term|``
    (``tests/accounting/test_logmath.py`` repeats the measurement), so the bound has a
    factor 5 to spare. Add it to a log-weight to make the weight an upper bound.

    Examples
    --------
    >>> from scipy.special import gammaln
    >>> r, j = 10.0**9, 3.0
    >>> terms = (gammaln(r + 1), gammaln(j + 1), gammaln(r - j + 1))
    >>> err = float(log_terms_error(*terms))
    >>> 1e-6 < err < 1e-4
    True
    """
    total = np.zeros(())
    for term in terms:
        total = total + np.abs(np.asarray(term, dtype=np.float64))
    return np.asarray(4.0 * MACHINE_EPSILON * total + 64.0 * MACHINE_EPSILON, dtype=np.float64)
