"""Report laws of the mechanisms as explicit matrices (rows: inputs, columns: reports) and
the exact law of the shuffled multiset, for brute-force tests at small n and small domains.

The multiset's law is built by convolving count vectors one user at a time (the number of
count vectors, ``C(n + m − 1, m − 1)`` for m reports, stays small where the tests use it).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def unary(d: int, p_on: float, p_off: float) -> Matrix:
    """Unary encoding: bit x set w.p. ``p_on``, every other bit w.p. ``p_off``."""
    bits = np.array(list(itertools.product((0, 1), repeat=d)), dtype=np.float64)
    rows = []
    for x in range(d):
        on = np.full(d, p_off)
        on[x] = p_on
        rows.append(np.prod(np.where(bits == 1, on, 1.0 - on), axis=1))
    return np.array(rows)


def oue(eps0: float, d: int) -> Matrix:
    return unary(d, 0.5, 1.0 / (math.exp(eps0) + 1.0))


def rappor(eps0: float, d: int) -> Matrix:
    t = math.exp(eps0 / 2.0)
    return unary(d, t / (t + 1.0), 1.0 / (t + 1.0))


def subset(eps0: float, d: int, k: int) -> Matrix:
    sets = list(itertools.combinations(range(d), k))
    r = np.array([[math.exp(eps0) if x in s else 1.0 for s in sets] for x in range(d)])
    return np.asarray(r / r.sum(axis=1, keepdims=True), dtype=np.float64)


def olh(eps0: float, g: int, inputs: int = 3) -> Matrix:
    """Local hashing with every function of ``inputs`` values into g buckets (collision
    probability 1/g); reports (h, y)."""
    e = math.exp(eps0)
    hashes = list(itertools.product(range(g), repeat=inputs))
    norm = (e + g - 1.0) * len(hashes)
    reports = [(h, y) for h in hashes for y in range(g)]
    return np.array([[(e if y == h[x] else 1.0) / norm for h, y in reports] for x in range(inputs)])


def hadamard(eps0: float, d: int) -> Matrix:
    big_k = 2 ** d.bit_length()
    signs = np.array([[bin(i & j).count("1") % 2 for j in range(big_k)] for i in range(big_k)])
    e = math.exp(eps0)
    return np.asarray(np.where(signs[1 : d + 1] == 0, 2.0 * e, 2.0) / ((e + 1.0) * big_k))


def shuffled_law(r: Matrix, values: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    """Exact law of the multiset (as count vectors) of one report per value."""
    m = r.shape[1]
    law: dict[tuple[int, ...], float] = {(0,) * m: 1.0}
    for v in values:
        nxt: dict[tuple[int, ...], float] = defaultdict(float)
        for counts, prob in law.items():
            for y in range(m):
                if r[v, y] > 0.0:
                    c = list(counts)
                    c[y] += 1
                    nxt[tuple(c)] += prob * r[v, y]
        law = nxt
    return law


def pair_deltas(
    r: Matrix, x: int, x2: int, others: tuple[int, ...], eps_grid: list[float]
) -> list[float]:
    """Exact δ(ε) (both directions) of the shuffled reports of ``(x, *others)`` against
    ``(x2, *others)`` on a grid of ε."""
    a, b = shuffled_law(r, (x, *others)), shuffled_law(r, (x2, *others))
    keys = list(set(a) | set(b))
    pa = np.array([a.get(key, 0.0) for key in keys])
    pb = np.array([b.get(key, 0.0) for key in keys])
    out = []
    for eps in eps_grid:
        e = math.exp(eps)
        out.append(
            float(max(np.maximum(pa - e * pb, 0.0).sum(), np.maximum(pb - e * pa, 0.0).sum()))
        )
    return out


def pair_delta(r: Matrix, x: int, x2: int, others: tuple[int, ...], eps: float) -> float:
    return pair_deltas(r, x, x2, others, [eps])[0]


def worst_deltas(r: Matrix, n: int, eps_grid: list[float]) -> list[float]:
    """The largest exact δ(ε) over neighbouring pairs and every dataset of the n − 1 others."""
    worst = [0.0] * len(eps_grid)
    for x, x2 in itertools.combinations(range(r.shape[0]), 2):
        worst = [max(w, v) for w, v in zip(worst, pair_worst(r, x, x2, n, eps_grid), strict=True)]
    return worst


def pair_worst(r: Matrix, x: int, x2: int, n: int, eps_grid: list[float]) -> list[float]:
    """The largest exact δ(ε) of the pair (x, x2) over every dataset of the n − 1 others."""
    worst = [0.0] * len(eps_grid)
    for others in itertools.combinations_with_replacement(range(r.shape[0]), n - 1):
        deltas = pair_deltas(r, x, x2, others, eps_grid)
        worst = [max(w, v) for w, v in zip(worst, deltas, strict=True)]
    return worst


#: A pair's own bound: ``(x, x2) ↦ ((n, ε) ↦ log δ)``, its parameters computed once a pair.
PairBound = Callable[[int, int], Callable[[int, float], float]]


def assert_pairs_below(r: Matrix, eps_grid: list[float], log_bound: PairBound) -> None:
    """Every pair's own bound lies above its exact δ: for each pair (x, x2) of ``r``'s
    inputs, n = 2, 3 and ε on ``eps_grid``, the largest exact δ(ε) over every dataset of the
    n − 1 others is at most ``exp(log_bound(x, x2)(n, ε))`` (relative slack 1e-9)."""
    for x, x2 in itertools.combinations(range(r.shape[0]), 2):
        member = log_bound(x, x2)
        for n in (2, 3):
            worst = pair_worst(r, x, x2, n, eps_grid)
            for eps, value in zip(eps_grid, worst, strict=True):
                assert value <= math.exp(member(n, eps)) * (1 + 1e-9), (x, x2, n, eps)


def assert_certificate_above(r: Matrix, mechanism: str, eps0: float, eps_grid: list[float]) -> None:
    """The mechanism's certificate at n = 2, 3 lies above the exact worst δ(ε) of ``r`` (its
    report law on a grid of inputs, binned: a post-processing, so below the true δ)."""
    from crowdhide.accounting.shuffle.mechanisms import mechanism_curve

    for n in (2, 3):
        cert = mechanism_curve(mechanism=mechanism, eps0=eps0, n=n)
        for eps, value in zip(eps_grid, worst_deltas(r, n, eps_grid), strict=True):
            assert value <= cert.delta(eps) * (1 + 1e-9), (mechanism, eps0, n, eps)


def olh_marks(eps0: float, g: int, inputs: int = 3) -> Matrix:
    """Local hashing seen through the mark set ``{x : h(x) = y}`` of a report (h, y) (a
    post-processing of it): hash values of distinct inputs independent and uniform."""
    e = math.exp(eps0)
    marks = list(itertools.product((0, 1), repeat=inputs))
    rows = []
    for v in range(inputs):
        row = []
        for s in marks:
            own = e / (e + g - 1.0) if s[v] else (g - 1.0) / (e + g - 1.0)
            rest = math.prod(
                (1.0 / g) if s[x] else (1.0 - 1.0 / g) for x in range(inputs) if x != v
            )
            row.append(own * rest)
        rows.append(row)
    return np.array(rows)


def _binned(cdf: Callable[[float], float], edges: list[float]) -> list[float]:
    points = [0.0, *(cdf(t) for t in edges), 1.0]
    return [points[i + 1] - points[i] for i in range(len(points) - 1)]


def laplace_binned(eps0: float, inputs: list[float], edges: list[float]) -> Matrix:
    """Laplace noise of scale 2/ε0, the output seen through the bins between ``edges``."""
    b = 2.0 / eps0

    def cdf(x: float) -> Callable[[float], float]:
        return lambda y: 0.5 * math.exp((y - x) / b) if y < x else 1.0 - 0.5 * math.exp((x - y) / b)

    return np.array([_binned(cdf(x), edges) for x in inputs])


def piecewise_binned(eps0: float, inputs: list[float], edges: list[float]) -> Matrix:
    """The piecewise mechanism, the output seen through the bins between ``edges``."""
    t = math.exp(eps0 / 2.0)
    big_c, high = (t + 1.0) / (t - 1.0), t * (t - 1.0) / (2.0 * (t + 1.0))
    low = high / (t * t)

    def cdf(x: float) -> Callable[[float], float]:
        left = (big_c + 1.0) * x / 2.0 - (big_c - 1.0) / 2.0

        def at(y: float) -> float:
            y = min(max(y, -big_c), big_c)
            inside = max(0.0, min(y, left + big_c - 1.0) - left)
            return low * (y + big_c - inside) + high * inside

        return at

    return np.array([_binned(cdf(x), edges) for x in inputs])
