"""The half excess's deep elements settled without incomplete betas (internal; issue 32).

``_krr_fast._half_excess_terms`` bounds ``E[(A − θ)_+]``, ``A ~ Bin(s, 1/2)``, from above by
two incomplete-beta tails and, where the first is below ``BETAINC_TRUSTED``, by the smaller
of that value and a deep value computed from two rigorous tail bounds alone
(``_krr_fast._deep_excess``). At δ = 1e-300 most of a mechanism's heavy blocks are that deep
and the minimum is certainly the deep value; :func:`settled_deep` finds them from the tail
bounds and gives that value, the same floats, so their three incomplete betas (and their
memo look-ups) are not paid (docs/proofs/mechanism-certificates.md, section 1k).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting._tail_upper import KL_ATOL, KL_RTOL, _log_tail_vec
from crowdhide.accounting.binomial_tails import trusted_tail

__all__ = ["SETTLED_TAIL", "SETTLED_VALUE", "settled_deep"]

FloatArray = npt.NDArray[np.float64]

#: An element is settled where the bound on its first tail is at most this (SciPy's tail is
#: then below ``BETAINC_TRUSTED``, and so is the second's) ...
SETTLED_TAIL = 1e-250
#: ... and its deep value is at most this times s: a fifth of the ``UNTRUSTED_ATOL · s/2``
#: the incomplete-beta value carries at least, so the minimum is the deep value.
SETTLED_VALUE = 1e-241


def settled_deep(
    s: FloatArray, theta: FloatArray, theta_rtol: float
) -> tuple[npt.NDArray[np.intp], FloatArray]:
    """``(where, values)``: the elements of ``_half_excess_terms`` rounded up (1-D ``s`` and
    ``θ``, θ's relative allowance ``theta_rtol``) whose answer is their deep value, and that
    value, the same floats as through the incomplete betas.

    With ``T1 = P(Bin(s − 1, ½) >= a* − 1) >= T2 = P(Bin(s, ½) >= a*)`` (``a* = ⌊θ⌋ + 1``),
    ``_deep_excess`` returns ``min(deep, value)`` where SciPy's ``t1`` is below
    ``BETAINC_TRUSTED``, ``deep = (s/2)·bound + shift·slope`` from the two tail bounds. Where
    ``bound >= T1`` is at most :data:`SETTLED_TAIL`, ``t1`` and ``t2`` are below
    ``BETAINC_TRUSTED`` (within their relative error of ``T1 >= T2``, or, where SciPy is
    wrong, below 1.001 · 4.3e-243: docs/proofs/betainc-underflow.md), so both are untrusted:
    ``value = (s/2) t1 − θ t2 + err`` with ``err >= UNTRUSTED_ATOL (s/2 + θ)`` and
    ``θ t2 <= 4.4e-243 θ``, hence ``value > UNTRUSTED_ATOL · s/2 = 5e-241 s``. Where also
    ``deep <= SETTLED_VALUE · s`` the minimum is ``deep``. Were the premise on SciPy's values
    ever wrong, the answer would be the deep value, itself an upper bound and never below
    the former minimum: only up. Candidates come from the cheap Chernoff exponent of ``T1``
    (the bound is at most it, raised as ``log_tail_upper`` raises it)."""
    a_star = np.floor(theta) + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        exponent = _log_tail_vec(s - 1.0, 0.5, a_star - 1.0, upper=True)
        chernoff = exponent * (1.0 - KL_RTOL) + KL_ATOL
        candidate = (chernoff <= math.log(SETTLED_TAIL)) & (s >= 2.0) & (a_star >= 2.0)
    where = np.flatnonzero(candidate & (s == np.floor(s)))  # integral counts only
    if not where.size:
        return where, np.zeros(0)
    sc, ac = s[where], a_star[where]
    marks = np.zeros(where.size)  # 0 asks trusted_tail for the bounds, as _deep_excess does
    bound = trusted_tail(marks, sc - 1.0, 0.5, ac - 1.0, upper=True)
    slope = trusted_tail(marks, sc, 0.5, ac - 1.0, upper=True)
    # the same operations, in the same order, as _deep_excess's deep value
    deep = np.abs(0.5 * sc) * bound + (theta_rtol * np.abs(theta[where])) * slope
    settled = (bound <= SETTLED_TAIL) & (deep <= SETTLED_VALUE * sc)
    return where[settled], np.asarray(deep[settled], dtype=np.float64)
