"""Benchmark: time of ε(δ = 1e-4) per scrambler evaluator (T = 20).

Run from the repository root::

    PYTHONPATH=src python benchmarks/bench_scrambler.py [--quick]

Targets (issue 3): ``lemma2-exact`` and ``exact`` <= 1 s at n = 600, d = 1000; ``best``
<= 2 s. ``exact`` is exhaustive enumeration and is only available for tiny instances (it
reports "n/a" here: T = 20 is far beyond it).
"""

from __future__ import annotations

import argparse
import math
import time

from crowdhide.accounting.scrambler.accountant import scrambler_epsilon

METHODS = (
    "exact",
    "lemma2-exact",
    "bennett",
    "hoeffding",
    "montecarlo",
    "bennett-published",
    "lower-bound",
    "best",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small grid only")
    parser.add_argument("--sigma", type=float, default=0.2)
    args = parser.parse_args()
    ns = (10, 100, 600) if args.quick else (10, 100, 600, 10_000)
    ds = (0, 50, 1000) if not args.quick else (0, 1000)
    methods = METHODS if not args.quick else ("lemma2-exact", "lower-bound", "best")
    header = f"{'n':>6} {'d':>5} " + " ".join(f"{m:>18}" for m in methods)
    print(f"T=20, sigma={args.sigma}, delta=1e-4: seconds (epsilon)")
    print(header)
    for n in ns:
        for d in ds:
            cells = []
            for m in methods:
                start = time.perf_counter()
                r = scrambler_epsilon(
                    targets=20, sigma=args.sigma, n=n, dummies=d, delta=1e-4, method=m
                )
                elapsed = time.perf_counter() - start
                if m == "exact" and not r.conditions_met:
                    cells.append(f"{'n/a':>18}")
                    continue
                eps = "inf" if math.isinf(r.epsilon) else f"{r.epsilon:.4f}"
                cells.append(f"{elapsed:8.3f}s ({eps:>6})")
            print(f"{n:>6} {d:>5} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
