"""Exact, brute-force privacy of the shuffle protocols for tiny n (independent of the code)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.stats import binom

from crowdhide.accounting import DiscretePairCurve


def bit_count_pmf(ones: int, zeros: int, flip: float) -> np.ndarray:
    """Law of Σy for `ones` users holding 1 and `zeros` holding 0 (each bit flipped w.p. flip)."""
    a = binom.pmf(np.arange(ones + 1), ones, 1.0 - flip)
    b = binom.pmf(np.arange(zeros + 1), zeros, flip)
    return np.convolve(a, b)


def bitsum_pair(n: int, lam: float, others_ones: int) -> DiscretePairCurve:
    """Exact pair of count laws: target holds 0 vs 1, `others_ones` of the n−1 others hold 1."""
    flip = lam / (2.0 * n)
    others = bit_count_pmf(others_ones, n - 1 - others_ones, flip)
    p = np.convolve(others, [1 - flip, flip])
    q = np.convolve(others, [flip, 1 - flip])
    return DiscretePairCurve.from_probabilities(p, q)


def bitsum_worst_delta(n: int, lam: float, eps: float) -> float:
    """Exact DP δ(ε) of the shuffled bit sum: max over the others' data and both directions."""
    return max(bitsum_pair(n, lam, j).delta(eps) for j in range(n))


def bitsum_worst_epsilon(n: int, lam: float, delta: float) -> float:
    return max(bitsum_pair(n, lam, j).epsilon(delta) for j in range(n))


def shuffled_view_pair(n: int, lam: float, data0: tuple[int, ...], data1: tuple[int, ...]):
    """Full shuffled view (every output sequence, averaged over all n! permutations)."""
    flip = lam / (2.0 * n)
    outputs = list(itertools.product((0, 1), repeat=n))
    perms = list(itertools.permutations(range(n)))

    def law(data: tuple[int, ...]) -> np.ndarray:
        raw = {}
        for y in outputs:
            raw[y] = math.prod(
                (1 - flip) if yi == xi else flip for yi, xi in zip(y, data, strict=True)
            )
        view = np.zeros(len(outputs))
        for idx, y in enumerate(outputs):
            view[idx] = sum(raw[tuple(y[p] for p in perm)] for perm in perms) / len(perms)
        return view

    return DiscretePairCurve.from_probabilities(law(data0), law(data1))


def realsum_count_pmf(levels: tuple[int, ...], r: int, flip: float) -> np.ndarray:
    """Law of the number of ones among all n·r unary-encoded, flipped bits."""
    pmf = np.array([1.0])
    for xbar in levels:
        pmf = np.convolve(pmf, bit_count_pmf(xbar, r - xbar, flip))
    return pmf


def realsum_worst_delta(n: int, r: int, lam: float, eps: float) -> float:
    """Exact δ(ε) of the multi-message real sum with deterministic x̄ ∈ {0..r} per user, worst
    case over the target's pair and all multisets of the others' levels."""
    flip = lam / (2.0 * n)
    worst = 0.0
    for others in itertools.combinations_with_replacement(range(r + 1), n - 1):
        for a in range(r + 1):
            for b in range(a + 1, r + 1):
                p = realsum_count_pmf((a, *others), r, flip)
                q = realsum_count_pmf((b, *others), r, flip)
                worst = max(worst, DiscretePairCurve.from_probabilities(p, q).delta(eps))
    return worst


def krr_histogram_worst_delta(n: int, k: int, eps0: float, eps: float) -> float:
    """Exact DP δ(ε) of shuffled k-RR (histogram view), worst case over the others' multisets;
    target value 0 vs 1 (k-RR is symmetric under relabelling)."""
    e = math.exp(eps0)
    p, q = e / (e + k - 1), 1 / (e + k - 1)
    outcomes = list(itertools.product(range(k), repeat=n))

    def law(data: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        out: dict[tuple[int, ...], float] = {}
        for y in outcomes:
            prob = math.prod(p if yi == xi else q for yi, xi in zip(y, data, strict=True))
            h = tuple(np.bincount(y, minlength=k).tolist())
            out[h] = out.get(h, 0.0) + prob
        return out

    worst = 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        l0, l1 = law((0, *others)), law((1, *others))
        keys = sorted(set(l0) | set(l1))
        curve = DiscretePairCurve.from_probabilities(
            [l0.get(h, 0.0) for h in keys], [l1.get(h, 0.0) for h in keys]
        )
        worst = max(worst, curve.delta(eps))
    return worst


def x0_count_pair(n: int, k: int, eps0: float, others: tuple[int, ...]) -> DiscretePairCurve:
    """One-directional pair of the laws of the count of x0 = 0 (target 0 vs 1), by enumeration."""
    e = math.exp(eps0)
    p, q = e / (e + k - 1), 1 / (e + k - 1)

    def law(data: tuple[int, ...]) -> np.ndarray:
        out = np.zeros(n + 1)
        for y in itertools.product(range(k), repeat=n):
            prob = math.prod(p if yi == xi else q for yi, xi in zip(y, data, strict=True))
            out[sum(1 for yi in y if yi == 0)] += prob
        return out

    return DiscretePairCurve.from_probabilities(
        law((0, *others)), law((1, *others)), symmetric=False
    )
