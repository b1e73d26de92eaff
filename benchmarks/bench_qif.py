"""Benchmark: exact uninformed single-target vulnerability of k-RR + shuffle vs n.

For k in {2, 5, 10, 100} and growing n, times ``uninformed_vulnerability`` (binary: closed
form of Thm 19; k > 2: max-load FFT, eq. 13/17) and, where they still fit, two independent
references computed in the same run:

* ``brute``: the explicit channel ``N S^r`` (k^n rows) with the uniform prior and the
  single-target gain (``crowdhide.qif.core.posterior_vulnerability``);
* ``hist-sum``: the multinomial sum over all C(n+k-1, k-1) histograms (eq. 11, log space).

Targets (issue 7): k = 10, n = 1e4 in <= 1 s; k = 100, n = 1e3 in <= 5 s; binary up to
n = 1e9 without overflow. Run: ``PYTHONPATH=src python benchmarks/bench_qif.py [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from crowdhide.qif.channels import shuffled_krr_channel
from crowdhide.qif.combinatorics import histograms, log_multinomial, n_histograms
from crowdhide.qif.core import Gain, Prior, posterior_vulnerability
from crowdhide.qif.shuffle import informed_vulnerability, uninformed_vulnerability

EPS0 = 1.0
BRUTE_LIMIT = 4096  # k^n rows of the explicit channel
HIST_LIMIT = 2_000_000  # histograms for the eq. (11) sum


def _timed(func: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    best = math.inf
    value = None
    for _ in range(repeat):
        start = time.perf_counter()
        value = func()
        best = min(best, time.perf_counter() - start)
    return value, best


def _brute(n: int, k: int) -> float:
    ns = shuffled_krr_channel(n=n, k=k, eps0=EPS0, reduced=True)
    labels = ns.inputs
    return float(posterior_vulnerability(Prior.uniform(labels), ns, Gain.single_target(labels)))


def _hist_sum(n: int, k: int) -> float:
    p = 1.0 / (1.0 + (k - 1) * math.exp(-EPS0))
    q = (1.0 - p) / (k - 1)
    h = histograms(n=n, k=k)
    weights = np.exp(log_multinomial(n, h) - n * math.log(k))
    v_s = float(np.sum(weights * h.max(axis=1)) / n)
    return q + (p - q) * v_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller grid (seconds)")
    args = parser.parse_args()
    if args.quick:
        grid = {
            2: [10, 10**3, 10**6, 10**9],
            5: [10, 100, 10**3],
            10: [10, 10**3, 10**4],
            100: [10, 100, 10**3],
        }
    else:
        grid = {
            2: [2, 10, 12, 100, 10**3, 10**4, 10**5, 10**6, 10**7, 10**9],
            5: [3, 5, 10, 30, 100, 10**3, 10**4, 10**5, 10**6],
            10: [3, 10, 30, 100, 10**3, 10**4, 10**5, 10**6],
            100: [1, 2, 3, 10, 100, 10**3, 10**4, 10**5],
        }
    header = (
        f"{'k':>4} {'n':>11} {'V[NS] (eps0=1)':>16} {'fast s':>9} {'brute s':>9} "
        f"{'hist-sum s':>10} {'max |diff|':>10}  method"
    )
    print(header)
    print("-" * len(header))
    timings: dict[tuple[int, int], float] = {}
    finite = True
    for k, ns in grid.items():
        for n in ns:
            result, fast = _timed(
                lambda n=n, k=k: uninformed_vulnerability(n=n, k=k, eps0=EPS0),
                repeat=3 if n <= 10**4 else 1,
            )
            value = float(result.vulnerability)
            finite &= math.isfinite(value) and 1 / k <= value <= 1
            timings[(k, n)] = fast
            diffs = []
            brute_t = hist_t = "-"
            if k**n <= BRUTE_LIMIT:
                ref, t = _timed(lambda n=n, k=k: _brute(n, k))
                diffs.append(abs(ref - value))
                brute_t = f"{t:.4f}"
            if n_histograms(n=n, k=k) <= HIST_LIMIT:
                ref, t = _timed(lambda n=n, k=k: _hist_sum(n, k))
                diffs.append(abs(ref - value))
                hist_t = f"{t:.4f}"
            diff = f"{max(diffs):.1e}" if diffs else "-"
            print(
                f"{k:>4} {n:>11} {value:>16.10f} {fast:>9.4f} {brute_t:>9} {hist_t:>10} "
                f"{diff:>10}  {result.method}"
            )
    print()
    print("informed (all-but-one) adversary, others all equal, eps0=1:")
    for k, n in (
        [(2, 10**6), (10, 10**4), (100, 10**3)] if not args.quick else [(2, 10**4), (10, 10**3)]
    ):
        result, t = _timed(lambda n=n, k=k: informed_vulnerability(n=n, k=k, eps0=EPS0))
        print(
            f"  k={k:<4} n={n:<8} V={float(result.vulnerability):.10f}  {t:.4f} s  "
            f"({result.method})"
        )
    print()
    targets = [((10, 10**4), 1.0), ((100, 10**3), 5.0)]
    for (k, n), limit in targets:
        if (k, n) in timings:
            status = "PASS" if timings[(k, n)] <= limit else "FAIL"
            print(f"target k={k}, n={n}: {timings[(k, n)]:.4f} s <= {limit} s  [{status}]")
    if (2, 10**9) in timings:
        print(f"binary n=1e9 finite and in [1/2, 1]: {'PASS' if finite else 'FAIL'}")


if __name__ == "__main__":
    main()
