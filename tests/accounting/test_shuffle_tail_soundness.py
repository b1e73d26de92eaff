"""Far-tail soundness of the k-RR bounds against an independent full enumeration.

With p, q the k-RR keep/other probabilities and e = e^ε0, the likelihood of an output
histogram depends only on a few counts, so the two canonical datasets can be enumerated in
full with no windows or tail bounds:

* all other users on one third value z — counts (a, b, c) of x, x', z, m = n − a − b − c:
  ``P(a, b, c | x) = (n−1)!/(a! b! c! m!) (k−3)^m p^c q^(n−c) (e a + n − a − c + c/e)``
  (x' swaps a and b);
* all other users on x' — counts (a, b) of x, x', m = n − a − b:
  ``P(a, b | x) = (n−1)!/(a! b! m!) (k−2)^m p^b q^(n−b) (e a + n − a − b + b/e)`` and
  ``P(a, b | x') = (n−1)!/(a! b! m!) (k−2)^m p^b q^(n−b) n``.

Summing max(0, P − e^ε P') in log space gives each dataset's exact δ(ε) down to
δ ≈ 1e-560: an independent ground truth. Certificates must stay above both, and `krr_lower`
(the max over the two datasets) below the larger one — far in the tail, where underflow floors
once made `krr_lower` exceed the truth by 267 orders of magnitude.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from crowdhide.accounting.shuffle.generic import shuffle_delta


def _rows_that_can_keep(levels: np.ndarray, eps: float, top: int) -> tuple[np.ndarray, ...]:
    """``(a, b)`` in row-major order: for each a, the b in ``[0, top − a]`` whose level is
    below ``levels[a] − ε`` plus a 1e-6 margin. ``levels`` is non-decreasing, so each row is
    a prefix; the margin (rounding of ``gap`` is ~1e-12 at these sizes) makes it a superset
    of the pairs with ``gap < 0``, which the caller still selects exactly as before."""
    rows = np.arange(top + 1)
    lengths = np.minimum(top - rows + 1, np.searchsorted(levels, levels - eps + 1e-6))
    a = np.repeat(rows, lengths)
    starts = np.cumsum(lengths) - lengths
    b = np.arange(a.size) - np.repeat(starts, lengths)
    return a, b


def third_value_log_delta(n: int, k: int, eps0: float, eps: float) -> float:
    # Only the pairs that can have gap < 0 are built (a quarter of the (a, b) square; the
    # full square took 10 s at n = 1000): the same terms in the same row-major order as the
    # whole square masked by ``feasible & (gap < 0)``, so the same floats.
    e0 = math.exp(eps0)
    p, q = e0 / (e0 + k - 1), 1.0 / (e0 + k - 1)
    counts = np.arange(n + 1)
    log_fact = gammaln(counts + 1.0)
    pieces = []
    for c in range(n + 1):
        # the level log(e0 x + n − x − c + c/e0) of x = a (log_x) or b (log_x'): increasing
        levels = np.log(e0 * counts[: n - c + 1] + (n - counts[: n - c + 1] - c) + c / e0)
        a, b = _rows_that_can_keep(levels, eps, n - c)
        m = n - a - b - c
        base = (
            gammaln(n)
            - log_fact[a]
            - log_fact[b]
            - log_fact[c]
            - log_fact[m]
            + m * math.log(k - 3)
            + c * math.log(p)
            + (n - c) * math.log(q)
        )
        log_x = base + levels[a]
        log_x_prime = base + levels[b]
        gap = eps + log_x_prime - log_x
        keep = gap < 0.0
        if keep.any():
            pieces.append(float(logsumexp(log_x[keep] + np.log(-np.expm1(gap[keep])))))
    return float(logsumexp(pieces)) if pieces else -math.inf


def same_value_log_delta(n: int, k: int, eps0: float, eps: float) -> float:
    e0 = math.exp(eps0)
    p, q = e0 / (e0 + k - 1), 1.0 / (e0 + k - 1)
    counts = np.arange(n + 1)
    log_fact = gammaln(counts + 1.0)
    a, b = counts[:, None], counts[None, :]
    m = n - a - b
    feasible = m >= 0
    m_safe = np.where(feasible, m, 0)
    with np.errstate(divide="ignore"):
        log_k = math.log(k - 2) if k > 2 else -math.inf
        rest = np.where(m_safe > 0, m_safe * log_k, 0.0)
    base = (
        gammaln(n)
        - log_fact[a]
        - log_fact[np.minimum(b, n)]
        - log_fact[m_safe]
        + rest
        + b * math.log(p)
        + (n - b) * math.log(q)
    )
    log_x = base + np.log(e0 * a + (n - a - b) + b / e0)
    log_x_prime = base + math.log(n)
    worst = -math.inf
    for first, second in ((log_x, log_x_prime), (log_x_prime, log_x)):
        gap = np.where(feasible, eps + second - first, 0.0)
        keep = feasible & (gap < 0.0)
        if keep.any():
            worst = max(worst, float(logsumexp(first[keep] + np.log(-np.expm1(gap[keep])))))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize(("n", "eps"), [(300, 0.1), (300, 0.4), (1000, 0.2), (1000, 0.4)])
def test_certificate_above_and_lower_bound_below_exact_far_tail(n: int, eps: float) -> None:
    k, eps0 = 10, 0.49
    truth = max(third_value_log_delta(n, k, eps0, eps), same_value_log_delta(n, k, eps0, eps))
    certificate = shuffle_delta(eps0=eps0, n=n, epsilon=eps, k=k, bound="krr_clone").delta
    lower = shuffle_delta(eps0=eps0, n=n, epsilon=eps, k=k, bound="krr_lower").delta
    assert math.log(certificate) >= truth
    assert lower == 0.0 or math.log(lower) <= truth


def test_independent_enumeration_matches_small_case() -> None:
    # n = 60 is cheap; the `krr_lower` value there is far above the floor and must agree.
    truth = max(third_value_log_delta(60, 5, 1.0, 0.3), same_value_log_delta(60, 5, 1.0, 0.3))
    lower = shuffle_delta(eps0=1.0, n=60, epsilon=0.3, k=5, bound="krr_lower").delta
    assert lower <= math.exp(truth)
    assert lower == pytest.approx(math.exp(truth), rel=1e-4)
