"""Which side of the OLH / k-subset certificate-lower gap is loose (issue 32, item 2).

Usage::

    PYTHONPATH=src python benchmarks/bench_mech_side.py [--ns 1e3,1e4] [--eps0 4,8]

For the two canonical datasets of the lower bound, seen through their *full* likelihood
(not the region counts the lower bound projects them to):

* "all others on x'": every report's ``g_x = P_x/P_x'`` is ``e``, ``1/e`` or 1 for these
  mechanisms, so ``δ(ε) = (1/n) E[(e N+ + N−/e + (n − N+ − N−) − e^ε n)_+]`` over the
  trinomial counts of the two informative classes under ``P_x'``; summed **exactly** (pmf
  terms below 1e-40 of the mode dropped, so the value is a lower estimate), in log space.
* "all others on z": ``δ(ε) = (1/n) E[(Σ g_x(Y_i) − e^ε Σ g_x'(Y_i))_+]`` over n i.i.d.
  reports of z (seven classes of ``(g_x, g_x')``); **Monte Carlo** (``--samples`` draws of the
  class counts, a multinomial), so only at δ >= 1e-4 and marked "mc": a diagnostic, not a
  bound.

Each is printed beside the certificate and the lower bound at the same (ε0, n, δ). Where
the full likelihood is close to the lower bound and both far below the certificate, the
gap is the certificate's (as far as these datasets go). OLH with g = 8 buckets, k-subset
k = 4 of d = 16 (the bench_shuffle rows).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.special import gammaln

from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_lower_curve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "accounting"))
import _mechanism_matrices as mm

DOMAIN = {"olh": 8, "subset": 16}


def laws(name: str, eps0: float) -> np.ndarray:
    """Report laws of inputs x = 0, x' = 1, z = 2 (rows)."""
    if name == "olh":
        return np.asarray(mm.olh(eps0, DOMAIN[name]), dtype=np.float64)
    return np.asarray(mm.subset(eps0, DOMAIN[name], 4), dtype=np.float64)


def classes(r: np.ndarray, z: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``(g_x, g_x')`` of reports under z's law and their probabilities."""
    gx, gx2, pz = r[0] / r[z], r[1] / r[z], r[z]
    keys = np.round(np.stack([np.log(gx), np.log(gx2)], axis=1), 9)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    probs = np.bincount(inv.ravel(), weights=pz, minlength=len(uniq))
    return np.exp(uniq[:, 0]), np.exp(uniq[:, 1]), probs


def same_log_delta(name: str, eps0: float, n: int, eps: float) -> float:
    """log δ(ε) of "all others on x'" through its full likelihood, summed exactly."""
    gx, _, probs = classes(laws(name, eps0), 1)
    e = math.exp(eps0)
    plus = float(probs[np.isclose(gx, e)].sum())
    minus = float(probs[np.isclose(gx, 1.0 / e)].sum())
    rest = 1.0 - plus - minus
    a = np.arange(0, min(n, int(n * plus + 40.0 * math.sqrt(n * plus + 1.0) + 60)) + 1)
    mid, sd = n * minus, math.sqrt(n * minus * (1.0 - minus)) + 1.0
    b = np.arange(max(0, int(mid - 40.0 * sd)), min(n, int(mid + 40.0 * sd)) + 1)
    aa, bb = np.meshgrid(a, b, indexing="ij")
    ok = aa + bb <= n
    aa, bb = aa[ok], bb[ok]
    cc = n - aa - bb
    logp = (
        gammaln(n + 1.0)
        - gammaln(aa + 1.0)
        - gammaln(bb + 1.0)
        - gammaln(cc + 1.0)
        + aa * math.log(plus)
        + bb * math.log(minus)
        + cc * math.log(rest)
    )
    w = e * aa + bb / e + cc - math.exp(eps) * n
    pos = w > 0
    if not pos.any():
        return -math.inf
    terms = logp[pos] + np.log(w[pos])
    top = terms.max()
    return float(top + math.log(np.exp(terms - top).sum()) - math.log(n))


def third_mc_delta(name: str, eps0: float, n: int, eps: float, samples: int, seed: int) -> float:
    """δ(ε) of "all others on z" through its full likelihood, Monte Carlo (diagnostic)."""
    gx, gx2, probs = classes(laws(name, eps0), 2)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, probs / probs.sum(), size=samples)
    w = counts @ (gx - math.exp(eps) * gx2)
    return float(np.maximum(w, 0.0).mean() / n)


def solve(fn: Callable[[float], float], delta: float, hi: float) -> float:
    """Smallest ε in [0, hi] with fn(ε) <= delta (fn non-increasing), by bisection."""
    lo = 0.0
    if fn(hi) > delta:
        return hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fn(mid) > delta else (lo, mid)
    return hi


def row(name: str, eps0: float, n: int, delta: float, samples: int) -> str:
    d, k = DOMAIN[name], (4 if name == "subset" else None)
    cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d, k=k).epsilon(delta)
    low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=d, k=k).epsilon(delta)
    same = solve(lambda t: math.exp(same_log_delta(name, eps0, n, t)), delta, eps0)
    third = "-"
    if delta >= 1e-4:
        mc = solve(lambda t: third_mc_delta(name, eps0, n, t, samples, 1), delta, eps0)
        third = f"{mc:.4g} mc"
    return (
        f"{name:7s} {eps0:4g} {n:8.0e} {delta:7.0e} cert {cert:.5g} lower {low:.5g} "
        f"same-full {same:.5g} third-full {third} cert/lower {cert / low:.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ns", default="1e3,1e4")
    ap.add_argument("--eps0", default="4,8")
    ap.add_argument("--deltas", default="1e-3,1e-4,1e-6,1e-10")
    ap.add_argument("--samples", type=int, default=400_000)
    args = ap.parse_args()
    for name in ("olh", "subset"):
        for eps0 in (float(v) for v in args.eps0.split(",")):
            for n in (int(float(v)) for v in args.ns.split(",")):
                for delta in (float(v) for v in args.deltas.split(",")):
                    print(row(name, eps0, n, delta, args.samples), flush=True)


if __name__ == "__main__":
    main()
