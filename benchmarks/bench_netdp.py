"""Benchmark: walk simulation and all-pairs per-pair accounting (T = 100 n).

Run: ``PYTHONPATH=src python benchmarks/bench_netdp.py [--quick]``.
Target (issue 5): all-pairs accounting for n = 1e4, T = 1e6 in <= 30 s and <= 4 GB.

The timed accounting groups cycle lengths above 64 in 5 % bins (``group_ratio=0.05``): a
numerical envelope, not a certificate. ``--exact`` times the certified default
(``group_ratio=0``, one certificate per cycle length), which is about 10x slower.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from crowdhide.netdp._noise import classic_gaussian_sigma
from crowdhide.netdp.audit import CycleMechanism, audit_walk
from crowdhide.netdp.protocols import complete_sum
from crowdhide.netdp.walks import complete_walk, visit_index

ENVELOPE_RATIO = 0.05


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n = 1e3 and 1e4 only")
    parser.add_argument(
        "--exact", action="store_true", help="time the certified per-length accounting"
    )
    args = parser.parse_args()
    ratio = 0.0 if args.exact else ENVELOPE_RATIO
    print(f"length grouping: {'exact (certificate)' if args.exact else 'envelope, 5 % bins'}")
    sizes = [10**3, 10**4] if args.quick else [10**3, 10**4, 10**5]
    eps0, delta = 0.1, 1e-7
    mech = CycleMechanism(
        kind="gaussian", noise_multiplier=classic_gaussian_sigma(epsilon=eps0, delta=delta)
    )
    print(
        f"{'n':>8} {'T':>10} {'walk+index s':>13} {'Alg.3 run s':>12} {'accounting s':>13}"
        f" {'peak MB':>8} {'network mean/worst':>20} {'local mean':>11}"
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
        t0 = time.perf_counter()
        res = audit_walk(walk, n=n, mechanism=mech, delta=delta, group_ratio=ratio)
        t_acc = time.perf_counter() - t0
        s = res.summary
        print(
            f"{n:>8} {steps:>10} {t_walk:>13.2f} {t_run:>12.2f} {t_acc:>13.2f} "
            f"{_peak_mb():>8.0f} {s['network_mean']:>9.4g}/{s['network_worst']:<10.4g}"
            f" {s['local_mean']:>11.4g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
