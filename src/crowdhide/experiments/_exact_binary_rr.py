"""Exact local-DP ε of a user's K binary randomized responses, in closed form (internal).

Fig. 3's tight local series composes each user's ε0-RR outputs. The generic route (a PLD of
the k-RR pair, self-composed by FFT) took about 1.4 s per distinct contribution count, and a
walk at T = 100n has dozens of counts: 8-29 s per walk, most of ``cyffers-fig3``'s time. For
binary RR the composition has a closed form: under input x the K outputs agree with x in
A ~ Bin(K, p) places, p = e^ε0/(1 + e^ε0), the privacy loss is (2A − K) ε0, and

    δ(ε) = Σ_{a : (2a−K)ε0 > ε} C(K, a) p^a q^(K−a) (1 − e^(ε − (2a−K)ε0)),

the same in both directions (RR is symmetric; it has a single pair of inputs). It is exact,
not a bound: no discretisation, only floating-point rounding, which each term's allowance
covers, so the returned ε is never below the true one.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from crowdhide.accounting.logmath import log_terms_error
from crowdhide.netdp.cycle_privacy import CycleMechanism

__all__ = ["ExactBinaryRR", "binary_rr_composed_delta", "binary_rr_composed_epsilon"]

_ULP = 2.0**-52


def binary_rr_composed_delta(eps0: float, count: int, epsilon: float) -> float:
    """An upper bound (within rounding) on the exact δ(ε) of ``count`` composed ε0-RR."""
    a = np.arange(count + 1, dtype=np.float64)
    loss = (2.0 * a - count) * eps0
    keep = loss > epsilon
    if not keep.any():
        return 0.0
    a, loss = a[keep], loss[keep]
    log_p, log_q = -math.log1p(math.exp(-eps0)), -math.log1p(math.exp(eps0))
    terms = (
        np.full_like(a, special.gammaln(count + 1.0)),
        special.gammaln(a + 1.0),
        special.gammaln(count - a + 1.0),
        a * log_p,
        (count - a) * log_q,
    )
    # each log-weight raised by its rounding bound, so every weight is an upper bound
    log_w = terms[0] - terms[1] - terms[2] + terms[3] + terms[4] + log_terms_error(*terms)
    total = float(np.sum(np.exp(log_w) * -np.expm1(epsilon - loss)))
    return total * (1.0 + (count + 8) * _ULP)  # the sum's and expm1's rounding


@functools.lru_cache(maxsize=4096)
def binary_rr_composed_epsilon(eps0: float, count: int, delta: float) -> float:
    """Smallest ε (to 1e-12 relative, from above) whose δ(ε) above is at most ``delta``;
    ``count · ε0`` (δ = 0) at most. Cached: walks share their contribution counts."""
    if count == 0:
        return 0.0
    high = count * eps0
    if binary_rr_composed_delta(eps0, count, 0.0) <= delta:
        return 0.0
    low = 0.0
    while high - low > 1e-12 * high:
        mid = 0.5 * (low + high)
        if binary_rr_composed_delta(eps0, count, mid) <= delta:
            high = mid
        else:
            low = mid
    return high


class ExactBinaryRR(CycleMechanism):
    """Binary k-RR whose local ε is the closed form above (the cycles are accounted as for
    :class:`CycleMechanism`)."""

    def __init__(self, eps0: float) -> None:
        super().__init__(kind="krr", eps0=eps0, domain_size=2)

    def local_epsilon(self, *, contributions: int, delta: float) -> float:
        """Exact local ε of ``contributions`` composed ε0-RR at δ (closed form)."""
        return binary_rr_composed_epsilon(self.eps0, int(contributions), delta)
