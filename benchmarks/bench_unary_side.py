"""Which side of OUE's and RAPPOR's certificate/lower-bound gap is loose (issue 32, item 2).

Usage::

    PYTHONPATH=src python benchmarks/bench_unary_side.py [--small] [--ns 1e3] [--eps0 0.5,1,2,4,8]

Two exact references, neither a product bound:

* ``--small``: the exact worst case over *every* dataset at d = 3 (inputs x, x', z; the
  shuffled multiset of 3-bit reports enumerated), n = 3 … 9, against the certificate and
  the lower bound at the same n (δ = 1e-2, 1e-3, 1e-4 from a grid of 801 ε).
* the dataset "all other users on a third value z" through its *full* likelihood, at
  n = 1e3 (δ = 1e-6): ``δ(ε) = (1/n) E[(Σ_i g(Y_i))_+]`` with ``Y_i`` i.i.d. from z's law and
  ``g = (P_x − e^ε P_x')/P_z`` (the target is one of n exchangeable reports). For OUE and
  RAPPOR ``P_x/P_z`` is ``e^{b_x − b_z}``-like in the bits of x and z, so given the count m
  of reports with z's bit unset the sum is ``K(m) + (e − 1)(X − e^ε Y)`` with X, Y i.i.d.
  copies of ``A + C/e``, ``A ~ Bin(m, p)``, ``C ~ Bin(n − m, p)``; it is summed exactly
  (pmfs below 1e-17 dropped: a lower estimate). By convexity of ``Σ Δ²/R`` in the others'
  law, single-value datasets are the worst at large n; the brute force finds a single-value
  dataset worst at every n <= 9 measured. So cert/that splits the gap into the
  certificate's share and the lower bound's.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import binom

from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_lower_curve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "accounting"))
import _mechanism_matrices as mm

Law = dict[tuple[int, ...], float]


def _laws(r: np.ndarray) -> functools._lru_cache_wrapper[Law]:
    """The multiset law of (a users on x, b on x', c on z), built one user at a time."""
    m = r.shape[1]

    @functools.cache
    def law(a: int, b: int, c: int) -> Law:
        if a + b + c == 0:
            return {(0,) * m: 1.0}
        prev, v = (
            (law(a, b, c - 1), 2) if c else (law(a, b - 1, c), 1) if b else (law(a - 1, b, c), 0)
        )
        nxt: defaultdict[tuple[int, ...], float] = defaultdict(float)
        for counts, p in prev.items():
            for y in range(m):
                cc = list(counts)
                cc[y] += 1
                nxt[tuple(cc)] += p * float(r[v, y])
        return dict(nxt)

    return law


def worst_small(r: np.ndarray, n: int, grid: list[float]) -> np.ndarray:
    """Exact worst δ over every dataset of n − 1 others (d = 3), both directions."""
    law, best = _laws(r), np.zeros(len(grid))
    for a in range(n):
        for b in range(n - a):
            pa, pb = law(a + 1, b, n - 1 - a - b), law(a, b + 1, n - 1 - a - b)
            keys = list(set(pa) | set(pb))
            x = np.array([pa.get(k, 0.0) for k in keys])
            y = np.array([pb.get(k, 0.0) for k in keys])
            for i, eps in enumerate(grid):
                big = math.exp(eps)
                best[i] = max(
                    best[i], np.maximum(x - big * y, 0).sum(), np.maximum(y - big * x, 0).sum()
                )
    return best


def _window(n: int, p: float, cut: float) -> tuple[np.ndarray, np.ndarray]:
    sd = math.sqrt(n * p * (1 - p)) + 1.0
    k = np.arange(max(0, int(n * p - 12 * sd)), min(n, int(n * p + 12 * sd)) + 1)
    pm = binom.pmf(k, n, p)
    return k[pm > cut].astype(float), pm[pm > cut]


def single_z_delta(name: str, eps0: float, n: int, eps: float) -> float:
    """δ(ε) of "all others on z" through its full likelihood (module docstring)."""
    e, big = math.exp(eps0), math.exp(eps)
    if name == "oue":
        p_m, p_bit = 0.5, 1.0 / (e + 1.0)
    else:
        p_m = p_bit = 1.0 / (math.exp(eps0 / 2.0) + 1.0)
    total = 0.0
    for m, pm in zip(*_window(n, p_m, 1e-15), strict=True):
        a, pa = _window(int(m), p_bit, 1e-17)
        c, pc = _window(n - int(m), p_bit, 1e-17)
        xv, xp = (a[:, None] + c[None, :] / e).ravel(), (pa[:, None] * pc[None, :]).ravel()
        order = np.argsort(xv)
        xv, xp = xv[order], xp[order]
        cum_p, cum_py = np.cumsum(xp), np.cumsum(xp * xv)
        k = (1 - big) * (n - (n - m) * (e - 1) / e)
        idx = np.searchsorted(xv, (k / (e - 1) + xv) / big, side="left")
        sp = np.where(idx > 0, cum_p[np.maximum(idx - 1, 0)], 0.0)
        spy = np.where(idx > 0, cum_py[np.maximum(idx - 1, 0)], 0.0)
        inner = (k + (e - 1) * xv) * sp - (e - 1) * big * spy
        total += pm * float(np.dot(xp, np.maximum(inner, 0.0)))
    return total / n


def single_z_epsilon(name: str, eps0: float, n: int, delta: float, lo: float, hi: float) -> float:
    """ε where :func:`single_z_delta` meets δ (bisection to 1e-4 relative in [lo, hi])."""
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if single_z_delta(name, eps0, n, mid) > delta else (lo, mid)
    return hi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--ns", default="1e3")
    parser.add_argument("--eps0", default="0.5,1,2,4,8")
    args = parser.parse_args()
    for name in ("oue", "rappor"):
        for eps0 in (float(v) for v in args.eps0.split(",")):
            if args.small:
                r = mm.oue(eps0, 3) if name == "oue" else mm.rappor(eps0, 3)
                grid = list(np.linspace(0.0, eps0, 801))
                for n in (3, 5, 7, 9):
                    worst = worst_small(r, n, grid)
                    for delta in (1e-2, 1e-3, 1e-4):
                        exact = next(
                            (g for g, w in zip(grid, worst, strict=True) if w <= delta), eps0
                        )
                        cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=3).epsilon(delta)
                        low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=3).epsilon(
                            delta
                        )
                        print(
                            f"{name} eps0={eps0:g} n={n} delta={delta:g} cert {cert:.4f} "
                            f"exact {exact:.4f} lower {low:.4f} cert/exact {cert / exact:.3f} "
                            f"exact/lower {exact / low:.3f}"
                        )
                continue
            for n in (int(float(v)) for v in args.ns.split(",")):
                cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=8).epsilon(1e-6)
                low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=8).epsilon(1e-6)
                z = single_z_epsilon(name, eps0, n, 1e-6, low * 0.999, cert * 1.001)
                print(
                    f"{name} eps0={eps0:g} n={n:.0e} cert {cert:.6g} single-z {z:.6g} "
                    f"lower {low:.6g} cert/z {cert / z:.4f} z/lower {z / low:.4f} "
                    f"cert/lower {cert / low:.4f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
