"""50-digit ground truth for δ(ε) near ε0 (mpmath), independent of crowdhide's evaluators.

Every law is built by adding one report (message) at a time to a dictionary of outcomes,
with probabilities from the mechanism's definition at 50 digits; δ(ε) is the hockey-stick
divergence ``max(Σ (P − e^ε Q)_+, Σ (Q − e^ε P)_+)`` summed directly. Only small instances
(tens to a few thousand outcomes) are meant for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import mpmath as mp

mp.mp.dps = 50

Law = dict[tuple[int, ...], mp.mpf]
Matrix = list[list[mp.mpf]]


def _add(law: Law, row: Sequence[mp.mpf]) -> Law:
    """Add one report with output probabilities ``row`` to a law of output histograms."""
    out: Law = {}
    for hist, weight in law.items():
        for y, prob in enumerate(row):
            if prob == 0:
                continue
            h = list(hist)
            h[y] += 1
            key = tuple(h)
            out[key] = out.get(key, mp.mpf(0)) + weight * prob
    return out


def histogram_law(matrix: Matrix, values: Iterable[int]) -> Law:
    """Law of the histogram of one report per value, each drawn from ``matrix[value]``."""
    law: Law = {(0,) * len(matrix[0]): mp.mpf(1)}
    for v in values:
        law = _add(law, matrix[v])
    return law


def hockey_stick(p: Law, q: Law, eps: float) -> mp.mpf:
    """``max(H_{e^ε}(P||Q), H_{e^ε}(Q||P))`` at the float ε exactly."""
    big = mp.exp(mp.mpf(eps))
    keys = set(p) | set(q)
    zero = mp.mpf(0)
    fwd = sum((max(zero, p.get(o, zero) - big * q.get(o, zero)) for o in keys), zero)
    bwd = sum((max(zero, q.get(o, zero) - big * p.get(o, zero)) for o in keys), zero)
    return max(fwd, bwd)


def krr_matrix(eps0: float, k: int) -> Matrix:
    """k-RR's report probabilities at the float ε0 exactly."""
    e = mp.exp(mp.mpf(eps0))
    keep, other = e / (e + k - 1), 1 / (e + k - 1)
    return [[keep if y == x else other for y in range(k)] for x in range(k)]


def worst_delta(matrix: Matrix, n: int, eps: float, *, values: int | None = None) -> mp.mpf:
    """Worst case over every dataset of the other n − 1 users and every pair (x, x') of
    δ(ε) of n shuffled reports; ``values`` limits the inputs enumerated (symmetric
    mechanisms: 3 values cover k-RR of every k)."""
    inputs = range(len(matrix) if values is None else values)
    worst = mp.mpf(0)
    for x, x2 in itertools.combinations(inputs, 2):
        for others in itertools.combinations_with_replacement(inputs, n - 1):
            p = histogram_law(matrix, (*others, x))
            q = histogram_law(matrix, (*others, x2))
            worst = max(worst, hockey_stick(p, q, eps))
    return worst


def krr_worst_delta(n: int, k: int, eps0: float, eps: float) -> mp.mpf:
    """Worst-case δ(ε) of n shuffled k-RR reports (x, x' and one third value suffice)."""
    return worst_delta(krr_matrix(eps0, k), n, eps, values=min(k, 3))


def clone_pair(n: int, eps0: float, beta: mp.mpf) -> tuple[Law, Law]:
    """The FMT clone pair: ``C ~ Bin(n−1, β)``, ``A | C ~ Bin(C, 1/2)``, ``P = α (A+1, C−A)
    + (1−α) (A, C−A+1)``, ``Q`` with α and 1 − α swapped, ``α = e^ε0/(e^ε0 + 1)``."""
    e = mp.exp(mp.mpf(eps0))
    alpha = e / (e + 1)
    p: Law = {}
    q: Law = {}
    for c in range(n):
        wc = mp.binomial(n - 1, c) * beta**c * (1 - beta) ** (n - 1 - c)
        for a in range(c + 1):
            w = wc * mp.binomial(c, a) / mp.mpf(2) ** c
            for key, fp, fq in (
                ((a + 1, c - a), alpha, 1 - alpha),
                ((a, c - a + 1), 1 - alpha, alpha),
            ):
                p[key] = p.get(key, mp.mpf(0)) + w * fp
                q[key] = q.get(key, mp.mpf(0)) + w * fq
    return p, q


def clone_pair_delta(n: int, eps0: float, beta: mp.mpf, eps: float) -> mp.mpf:
    return hockey_stick(*clone_pair(n, eps0, beta), eps)


def approximate_dp_pair(eps: float, delta: float) -> tuple[Law, Law]:
    """The dominating pair of (ε, δ)-DP: ``P = (δ, (1−δ) e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0)``
    and ``Q`` its mirror image (Kairouz, Oh, Viswanath)."""
    e, d = mp.exp(mp.mpf(eps)), mp.mpf(delta)
    p = [d, (1 - d) * e / (1 + e), (1 - d) / (1 + e), mp.mpf(0)]
    return (
        {(i,): v for i, v in enumerate(p)},
        {(i,): v for i, v in enumerate(reversed(p))},
    )


def compose(*pairs: tuple[Law, Law]) -> tuple[Law, Law]:
    """The product of pairs (outcomes concatenated)."""
    p: Law = {(): mp.mpf(1)}
    q: Law = {(): mp.mpf(1)}
    for pp, qq in pairs:
        p = {a + b: wa * wb for a, wa in p.items() for b, wb in pp.items()}
        q = {a + b: wa * wb for a, wa in q.items() for b, wb in qq.items()}
    return p, q


def _scrambler_law(
    targets: int, sigma: float, inputs: Sequence[int], dummies: int, cap: int | None
) -> Law:
    s = mp.mpf(sigma)
    law: Law = {(0,) * targets: mp.mpf(1)}
    for t in inputs:
        law = _add(law, [s / targets + (1 - s if j == t else 0) for j in range(targets)])
    for _ in range(dummies):
        if cap is None:
            law = _add(law, [mp.mpf(1) / targets] * targets)
            continue
        out: Law = {}
        for hist, weight in law.items():
            open_ = [j for j in range(targets) if hist[j] < cap]
            for j in open_:
                h = list(hist)
                h[j] += 1
                out[tuple(h)] = out.get(tuple(h), mp.mpf(0)) + weight / len(open_)
        law = out
    return law


def scrambler_pairs(
    targets: int, sigma: float, n: int, dummies: int, *, capped: bool
) -> list[tuple[Law, Law]]:
    """Every neighbouring pair of the scrambler (common inputs, target 0 vs 1)."""
    cap = n if capped else None
    out = []
    for common in itertools.combinations_with_replacement(range(targets), n - 1):
        p = _scrambler_law(targets, sigma, (*common, 0), dummies, cap)
        q = _scrambler_law(targets, sigma, (*common, 1), dummies, cap)
        out.append((p, q))
    return out


def max_loss(pairs: Sequence[tuple[Law, Law]]) -> mp.mpf:
    """Largest |ln P/Q| over the pairs' common support."""
    return max(abs(mp.log(p[o]) - mp.log(q[o])) for p, q in pairs for o in p if o in q)


def pairs_delta(pairs: Sequence[tuple[Law, Law]], eps: float) -> mp.mpf:
    return max(hockey_stick(p, q, eps) for p, q in pairs)
