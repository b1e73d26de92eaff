"""Log-space helpers shared by the accountants (internal)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp

__all__ = ["log1mexp", "log_add", "log_sub", "logsumexp"]

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
