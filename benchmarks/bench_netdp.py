"""Benchmark: walk simulation and certified all-pairs per-pair accounting (T = 100 n).

Run: ``PYTHONPATH=src python benchmarks/bench_netdp.py [--quick] [--exact] [--ratio R ...]``.
Target (issues 5 and 15): certified all-pairs accounting for n = 1e4, T = 1e6 in <= 30 s
(and <= 4 GB).

Every timed mode is a certificate. ``--ratio R ...`` (default 0.003 and 0.01) groups cycle
lengths above 64 in geometric bins of relative width R, each bin certified by a profile that
dominates every length in it (participation of the longest, noise of the shortest);
``--exact`` also times
``group_ratio=0`` (one certificate per distinct cycle length, ~50 000 lengths at n = 1e4 —
minutes, and several GB) and prints the grouped ε relative to it. Peak memory is
``ru_maxrss`` of this process; for a clean figure per mode run one mode per process or use
``/usr/bin/time -v``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from crowdhide.netdp.cycle_privacy import CycleMechanism
from crowdhide.netdp.noise import classic_gaussian_sigma
from crowdhide.netdp.protocols import complete_sum
from crowdhide.netdp.walk_accounting import account_walk
from crowdhide.netdp.walks import complete_walk, visit_index

TARGET_N, TARGET_S = 10**4, 30.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n = 1e3 and 1e4 only")
    parser.add_argument(
        "--exact", action="store_true", help="also time one certificate per cycle length"
    )
    parser.add_argument(
        "--ratio", type=float, nargs="+", default=[0.003, 0.01], help="group ratios to time"
    )
    args = parser.parse_args()
    ratios = [*args.ratio, *([0.0] if args.exact else [])]
    sizes = [10**3, 10**4] if args.quick else [10**3, 10**4, 10**5]
    eps0, delta = 0.1, 1e-7
    mech = CycleMechanism(
        kind="gaussian", noise_multiplier=classic_gaussian_sigma(epsilon=eps0, delta=delta)
    )
    print(
        f"{'n':>7} {'T':>9} {'grouping':>10} {'bins':>6} {'walk s':>7} {'Alg.3 s':>8}"
        f" {'account s':>10} {'peak MB':>8} {'mean eps':>10} {'worst eps':>10} {'vs exact':>9}"
    )
    for n in sizes:
        steps = 100 * n
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        walk = complete_walk(n=n, steps=steps, rng=rng)
        visit_index(walk, n=n)
        t_walk = time.perf_counter() - t0
        t0 = time.perf_counter()
        complete_sum(values=np.ones(n), steps=steps, sigma=1.0, rng=rng, record=False)
        t_run = time.perf_counter() - t0
        rows = []
        for ratio in ratios:
            if ratio == 0.0 and n > TARGET_N:
                continue  # per-length mode: too slow and too large beyond n = 1e4
            t0 = time.perf_counter()
            res = account_walk(walk, n=n, mechanism=mech, delta=delta, group_ratio=ratio)
            rows.append((ratio, time.perf_counter() - t0, res))
        exact = {r: res for r, _, res in rows}.get(0.0)
        for ratio, t_acc, res in rows:
            s = res.summary
            rel = (
                f"{s['network_mean'] / exact.summary['network_mean'] - 1:+9.2%}"
                if exact is not None
                else f"{'-':>9}"
            )
            label = "per-length" if ratio == 0.0 else f"bins {ratio:g}"
            print(
                f"{n:>7} {steps:>9} {label:>10} {res.details['curve_groups']:>6}"
                f" {t_walk:>7.2f} {t_run:>8.2f} {t_acc:>10.2f} {_peak_mb():>8.0f}"
                f" {s['network_mean']:>10.5g} {s['network_worst']:>10.5g} {rel}",
                flush=True,
            )
            if n == TARGET_N:
                verdict = "met" if t_acc <= TARGET_S else "NOT met"
                print(f"  -> target {TARGET_S:g} s at n = 1e4, T = 1e6 ({label}): {verdict}")


if __name__ == "__main__":
    main()
