"""One round's privacy-loss PMFs of two explicit datasets, masses and losses rounded down
(internal; issue 32: the lower bound of composed rounds, :mod:`.composed_lower`).

Both datasets are ε0-LDP randomizers with every other user on one value, seen through counts
of reports (a post-processing of the shuffled reports, so their δ is at most the truth):

* **3-RR, others on a third value z** (``ldp_lower``'s 3-RR member, whose dataset binds at
  δ = 1e-6 from ε0 = 1 up). Each other user reports x or x' with probability q each (z with
  ``1 − 2q``); the target, holding x, reports x with ``1 − 2q``. The counts (a, b) of x and
  x' among all n reports have, under x, ``P_x(a, b) = M(a, b) (q/r)(r + e² a + e b)`` and,
  under x', the same with a and b swapped in the bracket, where ``M`` is the others'
  multinomial, ``r = n − a − b`` and ``e = 1/q − 2 <= e^ε0``. With ``s = a + b`` and
  ``d = a − b`` the loss is ``L = log(N/D)``, ``N = e² a + e b + r``, ``D = e a + e² b + r``
  (sums of non-negative terms, so no cancellation at any ε0 <= 50), and
  ``M(a, b) = Bin(n − 1, 2q)(s) Bin(s, 1/2)(a)``.
  At large n the s of a block (one parity) share one mass per d: the least over the block of
  the loss (monotone in s at every d), of ``Bin(s, 1/2)((s + d)/2)`` (unimodal in s: the
  ratio from s to s + 2 is ``(s + 2)(s + 1)/((s + 2)² − d²)``, so the least of the two
  ends) and of the weights ``q N/r``, ``q D/r`` (increasing in s), times the block's
  binomial mass of s. Each term is a lower bound, so their product is.
* **Binary randomized response, others on x'** (``ldp_lower``'s binary member, which binds
  at ε0 = 0.5): the count c of reports x is ``Bin(n, q)`` under x' (``q = 1/(e + 1)``) and
  ``P(c | x)/P(c | x') = a + s c``, ``a = q/(1 − q)``, ``s = ((1 − q)/q − a)/n``.

Masses are proven lower bounds on the binomial point probabilities
(:func:`~crowdhide.accounting._pmf_lower.binomial_pmf_lower`, or a window's log-pmf less its
rounding bound and scaled by its inside mass), windows drop only mass, products are lowered
by their relative rounding (1e-9 covers the few u of each weight), and every loss is
lowered by :data:`LOSS_SLACK` before it goes down to its grid point.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.logmath import MACHINE_EPSILON
from crowdhide.accounting.pld_pmf import DensePmf

__all__ = ["DATASETS", "LOSS_SLACK", "Held", "round_pmfs"]

FloatArray = npt.NDArray[np.float64]

#: The datasets, by name: :func:`round_pmfs` builds either.
DATASETS = ("3-RR third value", "binary RR same value")
#: Tail mass of each binomial left out of its window (each side): only lowers δ.
_WINDOW_LOG_TAIL = -45.0
#: Absolute allowance on a computed loss ``log N − log D`` (:func:`_sums`: under 1e-13).
LOSS_SLACK = 1e-10
#: Relative spread allowed over a block of s of the point probabilities it is bounded by
#: (about ``13 w/s`` for a block of w; the block's mass lost, about a tenth of this, moves
#: the ε lower bound by under 1e-4 relative).
_BLOCK_SPREAD = 5e-3
_U = MACHINE_EPSILON / 2.0

Held = tuple[DensePmf, float]  # a PMF and a bound on its ℓ1 distance from the exact one


def round_pmfs(eps0: float, n: int, points: int, dataset: str) -> tuple[Held, Held]:
    """One round's PMFs of ``dataset`` (one of :data:`DATASETS`): forward (masses under x,
    losses ``log P_x/P_x'``) and backward (masses under x', the negated losses), each on a
    grid of ``points`` steps over its losses."""
    if dataset == DATASETS[1]:
        return _binary_round_pmfs(eps0, n, points)
    return _third_round_pmfs(eps0, n, points)


def _binary_round_pmfs(eps0: float, n: int, points: int) -> tuple[Held, Held]:
    """Binary randomized response, every other user on x' (module docstring)."""
    from crowdhide.accounting._pmf_lower import binomial_pmf_lower
    from crowdhide.accounting.binomial_tails import window_edges

    q = 1.0 / (math.exp(eps0) * (1.0 - 2.0 * MACHINE_EPSILON) + 1.0)  # (1 − q)/q <= e^ε0
    keep = 1.0 - q
    a = q / keep
    slope = (keep / q - a) / n
    lo, hi, _ = window_edges(n, q, _WINDOW_LOG_TAIL)
    counts = np.arange(lo, hi + 1, dtype=np.float64)
    ratio = a + slope * counts
    loss = np.log(ratio)
    slack = LOSS_SLACK + 4.0 * _U * np.abs(loss)
    under_x_prime = binomial_pmf_lower(float(n), q, counts)
    under_x = under_x_prime * ratio * (1.0 - 1e-9)
    return _on_grid(loss - slack, under_x, points), _on_grid(-loss - slack, under_x_prime, points)


def _third_round_pmfs(eps0: float, n: int, points: int) -> tuple[Held, Held]:
    """3-RR, every other user on a third value (module docstring), over blocks of s."""
    from crowdhide.accounting._pmf_lower import binomial_pmf_lower
    from crowdhide.accounting.binomial_tails import window_edges

    # the randomizer is 3-RR with q = P(each other value) as a float; its ratio 1/q − 2 is
    # at most e^ε0 (the 4 u taken off exp's value cover exp's and the quotient's roundings)
    q = 1.0 / (math.exp(eps0) * (1.0 - 2.0 * MACHINE_EPSILON) + 2.0)
    big = 1.0 / q - 2.0
    lo, hi, _ = window_edges(n - 1, 2.0 * q, _WINDOW_LOG_TAIL)
    informative = np.arange(lo, hi + 1, dtype=np.float64)
    masses = binomial_pmf_lower(float(n - 1), 2.0 * q, informative)
    width = int(_BLOCK_SPREAD * max(lo, 1) / 13.0)
    if width <= 1:  # s up to ~1e4: every s on its own, in one vectorized pass
        return _exact_round_pmfs(n, big, q, informative, masses, points)
    parts: list[tuple[FloatArray, FloatArray, FloatArray, FloatArray]] = []
    for start in range(0, informative.size, width):  # bounded: one pass over the window
        for parity in (0, 1):
            block = informative[start : start + width]
            chosen = (block % 2) == parity
            if chosen.any():
                ends = (float(block[chosen][0]), float(block[chosen][-1]))
                mass = float(np.sum(masses[start : start + width][chosen]))
                parts.append(_block_terms(n, big, q, ends, mass * (1.0 - 2.0 * width * _U)))
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)]
    forward, backward, under_x, under_x_prime = columns
    return _on_grid(forward, under_x, points), _on_grid(backward, under_x_prime, points)


def _exact_round_pmfs(
    n: int, big: float, q: float, informative: FloatArray, masses: FloatArray, points: int
) -> tuple[Held, Held]:
    """:func:`_round_pmfs` without blocks: every (s, d) of the window, d = a − b of the
    parity of s and ``|d|`` up to the largest s's window (beyond s the point probability
    is 0)."""
    from crowdhide.accounting._pmf_lower import binomial_pmf_lower
    from crowdhide.accounting.binomial_tails import window_edges

    top = informative[-1]
    _, high, _ = window_edges(int(top), 0.5, _WINDOW_LOG_TAIL)
    reach = 2.0 * high - top + 1.0
    s = informative[:, None]
    d = np.arange(-reach - 1.0, reach + 2.0)[None, :]
    keep = ((d + s) % 2 == 0) & (np.abs(d) <= s)
    s, d = np.broadcast_to(s, keep.shape)[keep], np.broadcast_to(d, keep.shape)[keep]
    split = binomial_pmf_lower(s, 0.5, (s + d) / 2.0)
    weight = np.broadcast_to(masses[:, None], keep.shape)[keep] * split * (1.0 - 1e-9)
    num, den = _sums(n, big, s, d)
    loss = np.log(num) - np.log(den)
    slack = LOSS_SLACK + 4.0 * _U * np.abs(loss)
    rest = n - s
    forward = weight * (q * num / rest)
    backward = weight * (q * den / rest)
    return _on_grid(loss - slack, forward, points), _on_grid(-loss - slack, backward, points)


def _block_terms(
    n: int, big: float, q: float, ends: tuple[float, float], mass: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """For one block of informative counts s (one parity, first and last ``ends``, total
    probability ``mass`` rounded down): per difference d, the lowest forward and backward
    losses over the block, lowered by their rounding, and the forward and backward masses'
    lower bounds."""
    first, last = ends  # every s of the block lies between them, with their parity
    d, split = _least_split(int(first), int(last))
    num, den = _sums(n, big, first, d)
    at_first = np.log(num) - np.log(den)
    at_last = np.subtract(*(np.log(x) for x in _sums(n, big, last, d)))
    least = np.minimum(at_first, at_last)  # the loss is monotone in s at every d
    least_back = -np.maximum(at_first, at_last)
    # the weights q N/r and q D/r, r = n − s, grow with s at every d: least at the first
    rest = n - first
    forward = q * num / rest
    backward = q * den / rest
    shrink = mass * (1.0 - 1e-9)  # the weights' and q's roundings, a few u each
    return (
        least - (LOSS_SLACK + 4.0 * _U * np.abs(least)),
        least_back - (LOSS_SLACK + 4.0 * _U * np.abs(least_back)),
        split * forward * shrink,
        split * backward * shrink,
    )


def _least_split(first: int, last: int) -> tuple[FloatArray, FloatArray]:
    """The differences d = a − b (parity of ``first``) inside both windows, and a lower bound
    on ``min_s P(Bin(s, 1/2) = (s + d)/2)`` over the s of that parity from ``first`` to
    ``last``: the minimum of the two ends', the point probability being unimodal in s at
    every d (its ratio from s to s + 2 is ``(s + 2)(s + 1)/((s + 2)² − d²)``). Each end's
    window log-pmf (normalized inside the window, so above the truth by at most its outside
    mass) is lowered by its rounding bound and scaled by ``1 − outside``."""
    from crowdhide.accounting.binomial_tails import binom_window, window_log_pmf_error

    ends = [binom_window(s, 0.5, _WINDOW_LOG_TAIL) for s in (first, last)]
    lowest = max(2 * win.lo - win.n for win in ends)
    highest = min(2 * win.hi - win.n for win in ends)
    d = np.arange(lowest, highest + 1, 2, dtype=np.float64)
    least = np.full(d.size, np.inf)
    for win in ends:
        index = ((d + win.n) / 2.0 - win.lo).astype(np.int64)
        scale = -math.expm1(win.log_tail) * (1.0 - 8.0 * _U)
        value = np.exp(win.log_pmf[index] - window_log_pmf_error(win)) * scale
        least = np.minimum(least, value)
    return d, least


def _sums(
    n: int, big: float, s: float | FloatArray, d: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``(N, D) = (e² a + e b + r, e a + e² b + r)`` for the counts ``(a, b) = ((s + d)/2,
    (s − d)/2)`` of reports x and x' and ``r = n − s`` (module docstring): positive terms
    only, each within a few u, so ``log N − log D`` is within about ``(4 + |log N| +
    |log D|) u`` of the loss (under 1e-13 at ε0 <= 50, n <= 1e9)."""
    a, b = (s + d) / 2.0, (s - d) / 2.0
    rest = n - s
    return big * big * a + big * b + rest, big * a + big * big * b + rest


def _on_grid(losses: FloatArray, masses: FloatArray, points: int) -> Held:
    """Masses moved down to the grid ``i · step`` at or below their losses (``points`` steps
    over their range); the sums' rounding (relative ``(m − 1) u`` for m masses in a point)
    is the ℓ1 error carried."""
    step = max(float(np.max(losses) - np.min(losses)) / points, 1e-12)
    index = np.floor(losses / step)
    index = index - (index * step > losses)  # the quotient may round up to an integer
    keys = index.astype(np.int64)
    low = int(keys.min())
    probs = np.bincount(keys - low, weights=masses).astype(np.float64)
    most = int(np.max(np.bincount(keys - low)))  # masses summed into one point
    error = 2.0 * _U * most * float(np.sum(masses))
    return DensePmf(step, low, probs, 0.0, pessimistic=False), error
