"""Log-space helpers shared by the accountants (internal)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp

__all__ = ["kappa_up", "log1mexp", "log_add", "log_sub", "logsumexp"]

_LN2 = float(np.log(2.0))


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


def log_add(a: float, b: float) -> float:
    """Return ``log(exp(a) + exp(b))``."""
    return float(np.logaddexp(a, b))


def log_sub(a: float, b: float) -> float:
    """Return ``log(exp(a) - exp(b))`` for ``a >= b`` (``-inf`` when equal)."""
    if b > a:
        raise ValueError(f"log_sub needs a >= b, got a={a!r}, b={b!r}")
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
