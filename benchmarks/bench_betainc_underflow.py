"""Where SciPy's ``betainc`` stops being accurate in deep tails (``BETAINC_TRUSTED``).

Usage::

    python benchmarks/bench_betainc_underflow.py [--random 2000]

Compares ``scipy.special.betainc(a, b, x)`` with a 40-digit continued fraction (mpmath) in the
region where it fails: ``x^a`` just below the double range (``a ln x`` in [−720, −700]),
``b = 1 … 45``, ``a`` = 1e3 … 1e9, then ``--random`` random binomial tails (n log-uniform in
[10, 1e9], p logit-uniform, depth e^-100 … e^-742). Prints the largest true value SciPy got
wrong by more than 1e-6 relative (measured: 4.3e-243, a = 3000, b = 39; none for b >= 40 and
none above 1e-200 in the random scan).
"""

from __future__ import annotations

import argparse
import math

import mpmath as mp
import numpy as np
from scipy.special import betainc

mp.mp.dps = 40


def _betacf(a: mp.mpf, b: mp.mpf, x: mp.mpf) -> mp.mpf:
    """The incomplete beta's continued fraction (modified Lentz, Numerical Recipes 6.4)."""
    tiny = mp.mpf(10) ** -300

    def guard(v: mp.mpf) -> mp.mpf:
        return v if abs(v) > tiny else tiny

    c, d = mp.mpf(1), 1 / guard(1 - (a + b) * x / (a + 1))
    h = d
    for m in range(1, 10**7):
        aa = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m))
        d, c = 1 / guard(1 + aa * d), guard(1 + aa / c)
        h *= d * c
        aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))
        d, c = 1 / guard(1 + aa * d), guard(1 + aa / c)
        h *= d * c
        if abs(d * c - 1) < mp.mpf(10) ** -38:
            return h
    raise RuntimeError("no convergence")


def ibeta(a: float, b: float, x: float) -> mp.mpf:
    """Regularized ``I_x(a, b)`` to 40 digits."""
    am, bm, xm = mp.mpf(a), mp.mpf(b), mp.mpf(x)
    log_front = (
        mp.loggamma(am + bm) - mp.loggamma(am) - mp.loggamma(bm)
        + am * mp.log(xm) + bm * mp.log(1 - xm)
    )  # fmt: skip
    if xm < (am + 1) / (am + bm + 2):
        return mp.exp(log_front) * _betacf(am, bm, xm) / am
    return 1 - mp.exp(log_front) * _betacf(bm, am, 1 - xm) / bm


def _worst(points: list[tuple[float, float, float]]) -> tuple[float, tuple[float, float, float]]:
    """The largest true value among the points SciPy gets wrong (> 1e-6 relative)."""
    worst: tuple[float, tuple[float, float, float]] = (0.0, (0.0, 0.0, 0.0))
    for a, b, x in points:
        ref = ibeta(a, b, x)
        if ref == 0 or ref > 1e-150:
            continue
        if abs(mp.mpf(float(betainc(a, b, x))) - ref) > 1e-6 * ref and ref > worst[0]:
            worst = (float(ref), (a, b, x))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--random", type=int, default=2000)
    args = parser.parse_args()
    targeted = [
        (float(a), float(b), math.exp(-t / a))
        for a in (1000, 3000, 18261, 10**5, 10**7, 10**9)
        for b in range(1, 46)
        for t in np.arange(700.0, 720.0, 1.0)
    ]
    print("targeted (x^a at underflow): worst true value returned wrong", _worst(targeted))
    rng = np.random.default_rng(1)
    rand = []
    for _ in range(args.random):
        n = int(10 ** rng.uniform(1, 9))
        p = 1 / (1 + math.exp(-rng.uniform(-12, 12)))
        k = int(rng.uniform(0, n))
        rand.append((float(max(k, 1)), float(n - max(k, 1) + 1), p))
    print("random tails: worst true value returned wrong", _worst(rand))


if __name__ == "__main__":
    main()
