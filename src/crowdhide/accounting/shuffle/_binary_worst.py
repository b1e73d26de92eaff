"""Shuffled binary RR: the exact worst case over all O(n) datasets (internal).

Split out of :mod:`crowdhide.accounting.shuffle._krr_fast` (which re-exports these names), as
it shares nothing with the α-pair blocks there but the pmf rounding bound :func:`_pmf_rtol`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.binomial_rows import gammaln_table, row_windows
from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.errors import InvalidParameterError

__all__ = ["BINARY_EXACT_MAX_N", "binary_core_rows", "binary_rr_worst_log_delta"]

FloatArray = npt.NDArray[np.float64]


#: Largest n for the exact binary-RR worst case over datasets (O(n · √n²) set-up).
BINARY_EXACT_MAX_N = 2500
#: Rounding budget per probability (convolution and pmf recurrences, relative) at small n.
_ETA_PMF = 1e-10


def _pmf_rtol(n: int, q: float) -> float:
    """Relative error bound of a ``gammaln``-table binomial pmf with up to n trials: each of
    the five log terms is at most ``(n + 1)(ln(n + 1) + |ln q| + 1)`` in size and carries a
    few ulps; 2e-15 per unit of that size is generous, plus ``_ETA_PMF`` for the rest."""
    return _ETA_PMF + 2e-15 * (n + 1.0) * (math.log(n + 1.0) + abs(math.log(q)) + 1.0)


def binary_core_rows(n: int, width: int) -> tuple[tuple[int, int], ...]:
    """The "cores" ``(a, b)`` (a others on x, b on x') evaluated for blocks of ``width``
    datasets: block ``[a, a + width − 1]`` of the count of others on x is covered by the core
    without its ``width − 1`` block users, and its mirror ``(b, a)`` covers the backward
    direction (module :mod:`crowdhide.accounting.shuffle.binary_rr`). ``width = 1``: every dataset.

    Examples
    --------
    >>> binary_core_rows(5, 1)
    ((0, 4), (1, 3), (2, 2), (3, 1), (4, 0))
    >>> binary_core_rows(9, 3)
    ((0, 6), (3, 3), (6, 0))
    """
    if width < 1 or width > (n + 1) // 2:
        raise InvalidParameterError(
            f"width must be in [1, (n + 1) // 2], got {width!r} for n={n!r}",
            parameter="width",
            value=width,
        )
    drop = width - 1
    rows = set()
    for a in range(0, (n - 1) // 2 + 1, width):
        b = n - 1 - drop - a
        rows.update({(a, b), (b, a)})
    return tuple(sorted(rows))


@functools.lru_cache(maxsize=8)
def _binary_layout(
    n: int, eps0: float, log_tail: float, width: int = 1
) -> tuple[FloatArray, FloatArray, FloatArray, float, float]:
    """For every row ``(a, b)`` of :func:`binary_core_rows`, suffix sums of the law
    ``R = Bin(a, p) ⊛ Bin(b, q)`` of the others' count of x-reports:
    ``S_prev[r, i] = Σ_{t >= t_i} R(t − 1)`` and ``S_cur[r, i] = Σ_{t >= t_i} R(t)``, in
    linear space relative to a per-row scale (``log_scale``), the log of a bound on the mass
    outside the windows, and the relative error bound of each probability. Convolutions of
    positive arrays (scaled to their maxima) keep every probability within that bound."""
    e = math.exp(eps0)
    p, q = e / (e + 1.0), 1.0 / (e + 1.0)
    rows = np.array(binary_core_rows(n, width), dtype=np.float64)
    table = gammaln_table(n + 3)
    wa = row_windows(rows[:, 0], p, log_tail, table)  # Bin(a, p), one row per core
    wb = row_windows(rows[:, 1], q, log_tail, table)  # Bin(b, q)
    sa, sb = wa.log_pmf.max(axis=1), wb.log_pmf.max(axis=1)
    lin_a, lin_b = np.exp(wa.log_pmf - sa[:, None]), np.exp(wb.log_pmf - sb[:, None])
    conv = [np.convolve(lin_a[j], lin_b[j]) for j in range(rows.shape[0])]
    tails = np.logaddexp(wa.log_tail, wb.log_tail)
    cur = np.zeros((len(conv), max(r.size for r in conv) + 1))
    for j, r in enumerate(conv):
        cur[j, : r.size] = r
    prev = np.concatenate([np.zeros((len(conv), 1)), cur[:, :-1]], axis=1)  # R(t − 1) at t
    s_prev = np.flip(np.cumsum(np.flip(prev, axis=1), axis=1), axis=1)
    s_cur = np.flip(np.cumsum(np.flip(cur, axis=1), axis=1), axis=1)
    return s_prev, s_cur, sa + sb, float(np.max(tails)), _pmf_rtol(n, q)


def binary_rr_worst_log_delta(
    n: int, eps0: float, eps: float, log_tail: float, *, width: int = 1
) -> float:
    """Worst case over every dataset of shuffled binary RR, as an upper bound (``width = 1``:
    exact up to the rounding bounds; wider blocks: see
    :mod:`crowdhide.accounting.shuffle.binary_rr`).

    The released statistic is the count of x-reports; with ``R`` the law of the others'
    count for a dataset (or a block's core), ``P_x(t) = p R(t−1) + (1−p) R(t)`` and
    ``P_x'(t) = q R(t−1) + (1−q) R(t)``. ``R`` is log-concave (a convolution of binomials),
    so the likelihood ratio is increasing in t and the set where ``P_x > e^ε P_x'`` is a
    suffix: δ is the largest suffix sum of ``(p − Eq) R(t−1) + (1 − p − E(1−q)) R(t)``.
    Dataset ``(b, a)`` is dataset ``(a, b)`` with x and x' swapped, so the forward divergence
    over all rows covers both directions. Errors: a relative bound per probability
    (:func:`_pmf_rtol`), 4 ulps per suffix difference, underflow of the per-row scaling, and
    the mass outside the windows — all added. O(rows · window) per ε after an
    O(rows · window²) cached set-up (rows = n for ``width = 1``).

    Examples
    --------
    >>> f'{math.exp(binary_rr_worst_log_delta(2500, 0.45, 0.05, -60.0)):.3g}'
    '4.81e-11'
    """
    if eps >= eps0:
        return -math.inf
    s_prev, s_cur, log_scale, tail, rtol = _binary_layout(n, eps0, log_tail, width)
    big, q = math.exp(eps), 1.0 / (math.exp(eps0) + 1.0)
    # a = p − e^ε q and b = (1 − p) − e^ε (1 − q) without cancellation (issue 28: near ε0,
    # p − e^ε q lost ~1e-16/(ε0 − ε) relative): a = q e^ε (e^{ε0−ε} − 1), b = −q (e^{ε0+ε} − 1).
    a, b = q * big * math.expm1(eps0 - eps), -q * math.expm1(eps0 + eps)
    # value + error bound = a S_prev + b S_cur + η (|a| S_prev + |b| S_cur), one pass; a and
    # b carry a few roundings, each amplified by at most the size of the exponent.
    eta = rtol + (8.0 + 2.0 * (eps + eps0)) * MACHINE_EPSILON
    value = (a + eta * abs(a)) * s_prev + (b + eta * abs(b)) * s_cur
    best = np.maximum(value.max(axis=1) + s_prev.shape[1] * 1e-300, 0.0)
    with np.errstate(divide="ignore"):
        worst = float(np.max(np.log(best) + log_scale))
    return float(np.logaddexp(worst, tail + math.log(2.0)))
