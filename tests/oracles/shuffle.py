"""Brute-force ground truth for shuffled k-RR: every output histogram, every dataset.

Independent of crowdhide's shuffle code: the law of the full k-bin histogram of n k-RR
reports is built by convolving one user at a time on a dense k-dimensional count array, and
the privacy curve of a neighbouring pair is the hockey-stick divergence of the two laws
(``DiscretePairCurve``, itself tested against naive sums in ``test_curves.py``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

from crowdhide.accounting import DiscretePairCurve


def _rr_probabilities(k: int, eps0: float) -> tuple[float, float]:
    """(probability of reporting the true value, of each other value) of k-RR."""
    e = math.exp(eps0)
    return e / (e + k - 1), 1.0 / (e + k - 1)


def _add_user(law: np.ndarray, v: int, k: int, eps0: float) -> np.ndarray:
    """The law after one more user holding ``v`` reports (dense, counts up to the shape)."""
    p, q = _rr_probabilities(k, eps0)
    n = law.shape[0] - 1
    new = np.zeros_like(law)
    for y in range(k):
        src = [slice(None)] * k
        dst = [slice(None)] * k
        src[y] = slice(0, n)
        dst[y] = slice(1, n + 1)
        new[tuple(dst)] += law[tuple(src)] * (p if y == v else q)
    return new


def _dense_law(values: Sequence[int], k: int, eps0: float, n: int) -> np.ndarray:
    """Law of the histogram of ``values``' reports on the dense array of shape (n+1,)*k."""
    law = np.zeros((n + 1,) * k)
    law[(0,) * k] = 1.0
    for v in values:
        law = _add_user(law, v, k, eps0)
    return law


def histogram_law(values: Sequence[int], k: int, eps0: float) -> np.ndarray:
    """Probability of every histogram (dense array of shape (n+1,)*k) of k-RR reports."""
    return _dense_law(values, k, eps0, len(values)).ravel()


def pair_curve(others: Sequence[int], k: int, eps0: float) -> DiscretePairCurve:
    """Curve of the neighbouring pair: target user holds 0 vs 1, others fixed."""
    # the others' law is shared by both sides (the target reports last; convolution commutes)
    base = _dense_law(others, k, eps0, len(others) + 1)
    law_x = _add_user(base, 0, k, eps0).ravel()
    law_y = _add_user(base, 1, k, eps0).ravel()
    keep = (law_x > 0) | (law_y > 0)
    return DiscretePairCurve.from_probabilities(law_x[keep], law_y[keep])


def all_datasets(n: int, k: int) -> list[tuple[int, ...]]:
    """Every multiset of the other n − 1 users' values (values 0 and 1 are x and x')."""
    return list(itertools.combinations_with_replacement(range(k), n - 1))


@functools.lru_cache(maxsize=4)
def all_pair_curves(n: int, k: int, eps0: float) -> tuple[DiscretePairCurve, ...]:
    """:func:`pair_curve` of every dataset of :func:`all_datasets`, in that order.

    Cached (the curves are read-only): tests ask :func:`worst_case_delta` at many ε for the
    same (n, k, ε0), and rebuilding every law per ε was most of their time. A few entries
    only, so large n do not pile up.
    """
    return tuple(pair_curve(others, k, eps0) for others in all_datasets(n, k))


def worst_case_delta(n: int, k: int, eps0: float, eps: float) -> tuple[float, tuple[int, ...]]:
    """Max over every dataset of the other users of δ(ε), and a maximising dataset."""
    best, arg = -1.0, ()
    for others, curve in zip(all_datasets(n, k), all_pair_curves(n, k, eps0), strict=True):
        d = curve.delta(eps)
        if d > best:
            best, arg = d, others
    return best, arg


def blanket_delta(n: int, k: int, eps0: float, eps: float, *, gamma: float | None = None) -> float:
    """The k-RR privacy-blanket value by direct summation: the average over the number m of
    uniform reports (``Bin(n − 1, γ)``) of δ between "target on x" and "target on x'" shuffled
    with m uniform reports, each from the full table of counts (a, b) of x and x'.

    ``gamma`` overrides the blanket probability ``k/(e^ε0 + k − 1)`` (tests use a too large
    one to show that a wrong blanket is caught).
    """
    from scipy.special import gammaln
    from scipy.stats import binom

    e = math.exp(eps0)
    p, q = e / (e + k - 1.0), 1.0 / (e + k - 1.0)
    g = k * q if gamma is None else gamma
    total = 0.0
    for m in range(n):
        weight = float(binom.pmf(m, n - 1, g))
        if weight < 1e-300:
            continue
        a = np.arange(m + 1)[:, None]
        b = np.arange(m + 1)[None, :]
        rest = m - a - b
        ok = rest >= 0
        r = np.where(ok, rest, 0)
        log_mult = gammaln(m + 1) - gammaln(a + 1) - gammaln(b + 1) - gammaln(r + 1)
        log_mult = log_mult + (a + b) * math.log(1.0 / k)
        if k > 2:
            log_mult = log_mult + r * math.log(1.0 - 2.0 / k)
        noise = np.where(ok & ((k > 2) | (rest == 0)), np.exp(log_mult), 0.0)
        shifted = np.zeros((m + 2, m + 2, 3))
        shifted[1:, :-1, 0] = noise  # target reports x
        shifted[:-1, 1:, 1] = noise  # target reports x'
        shifted[:-1, :-1, 2] = noise  # target reports another value
        other = 1.0 - p - q
        on_x = p * shifted[..., 0] + q * shifted[..., 1] + other * shifted[..., 2]
        on_y = q * shifted[..., 0] + p * shifted[..., 1] + other * shifted[..., 2]
        total += weight * float(np.maximum(on_x - math.exp(eps) * on_y, 0.0).sum())
    return total
