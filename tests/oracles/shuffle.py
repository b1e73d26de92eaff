"""Brute-force ground truth for shuffled k-RR: every output histogram, every dataset.

Independent of crowdhide's shuffle code: the law of the full k-bin histogram of n k-RR
reports is built by convolving one user at a time on a dense k-dimensional count array, and
the privacy curve of a neighbouring pair is the hockey-stick divergence of the two laws
(``DiscretePairCurve``, itself tested against naive sums in ``test_curves.py``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from crowdhide.accounting import DiscretePairCurve


def histogram_law(values: Sequence[int], k: int, eps0: float) -> np.ndarray:
    """Probability of every histogram (dense array of shape (n+1,)*k) of k-RR reports."""
    n = len(values)
    e = math.exp(eps0)
    p, q = e / (e + k - 1), 1.0 / (e + k - 1)
    law = np.zeros((n + 1,) * k)
    law[(0,) * k] = 1.0
    for v in values:
        new = np.zeros_like(law)
        for y in range(k):
            src = [slice(None)] * k
            dst = [slice(None)] * k
            src[y] = slice(0, n)
            dst[y] = slice(1, n + 1)
            new[tuple(dst)] += law[tuple(src)] * (p if y == v else q)
        law = new
    return law.ravel()


def pair_curve(others: Sequence[int], k: int, eps0: float) -> DiscretePairCurve:
    """Curve of the neighbouring pair: target user holds 0 vs 1, others fixed."""
    law_x = histogram_law([*others, 0], k, eps0)
    law_y = histogram_law([*others, 1], k, eps0)
    keep = (law_x > 0) | (law_y > 0)
    return DiscretePairCurve.from_probabilities(law_x[keep], law_y[keep])


def all_datasets(n: int, k: int) -> list[tuple[int, ...]]:
    """Every multiset of the other n − 1 users' values (values 0 and 1 are x and x')."""
    return list(itertools.combinations_with_replacement(range(k), n - 1))


def worst_case_delta(n: int, k: int, eps0: float, eps: float) -> tuple[float, tuple[int, ...]]:
    """Max over every dataset of the other users of δ(ε), and a maximising dataset."""
    best, arg = -1.0, ()
    for others in all_datasets(n, k):
        d = pair_curve(others, k, eps0).delta(eps)
        if d > best:
            best, arg = d, others
    return best, arg
