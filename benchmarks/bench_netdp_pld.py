"""Benchmark: per-observer PLD composition, dp_accounting against the batched-FFT accelerator.

Run: ``PYTHONPATH=src python benchmarks/bench_netdp_pld.py [--quick]``.

Both paths compose the *same* per-cycle ``dp_accounting`` PLDs of a sampled walk (T = 100 n,
Gaussian sums, ε0 = 0.1 classic-calibrated, δ = 1e-7, seed 0, cycle lengths binned at
``group_ratio``): ``observer_epsilons(..., accelerated=False)`` (``dp_accounting``'s
``compose``/``self_compose``, observers with equal cycle counts share a composition) and the
default accelerated path. The reference path is timed on the first ``--observers`` distinct
observers and extrapolated linearly (its cost is per distinct observer). Prints seconds, the
ratio measured in the same run, and the largest ε difference on the timed observers (the
accelerator rounds ε up to the lattice, so it is never below).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import sparse

from crowdhide.netdp.cycle_privacy import CycleMechanism
from crowdhide.netdp.noise import classic_gaussian_sigma
from crowdhide.netdp.walk_accounting import _grouped_specs, _observer_cycles
from crowdhide.netdp.walk_pld import cycle_plds, observer_epsilons
from crowdhide.netdp.walks import complete_walk, visit_index


def _one(n: int, ratio: float, observers: int) -> dict[str, float]:
    delta = 1e-7
    mech = CycleMechanism(
        kind="gaussian", noise_multiplier=classic_gaussian_sigma(epsilon=0.1, delta=delta)
    )
    walk = complete_walk(n=n, steps=100 * n, rng=0)
    owner, m = _observer_cycles(visit_index(walk, n=n), n, 1)
    group, specs = _grouped_specs(m - 1, ratio)
    weights = np.bincount(group, minlength=len(specs)).astype(np.float64)
    t0 = time.perf_counter()
    _, plds = cycle_plds(specs, weights, p=1.0 / (n - 1), mechanism=mech, resolution=4)
    t_plds = time.perf_counter() - t0
    counts = sparse.csr_matrix((np.ones(owner.size), (owner, group)), (n, len(specs)))
    t0 = time.perf_counter()
    fast = observer_epsilons(counts, plds, delta=delta)
    t_fast = time.perf_counter() - t0
    rows = np.unique(counts.toarray(), axis=0)
    k = min(observers, rows.shape[0])
    t0 = time.perf_counter()
    ref = observer_epsilons(rows[:k], plds, delta=delta, accelerated=False)
    t_ref = (time.perf_counter() - t0) * rows.shape[0] / k
    fast_rows = observer_epsilons(rows[:k], plds, delta=delta)
    return {
        "n": n,
        "distinct_observers": rows.shape[0],
        "plds_s": t_plds,
        "accelerated_s": t_fast,
        "dp_accounting_s": t_ref,
        "ratio": t_ref / t_fast,
        "max_diff": float(np.max(fast_rows - ref)),
        "min_diff": float(np.min(fast_rows - ref)),
        "mean_eps": float(np.mean(fast)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n = 50 only")
    parser.add_argument("--observers", type=int, default=20, help="reference observers timed")
    args = parser.parse_args()
    cases = [(50, 0.0)] if args.quick else [(50, 0.0), (1000, 0.003)]
    print("| n | distinct observers | PLDs (s) | accelerated (s) | dp_accounting (s) | ratio |"
          " ε diff (min, max) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for n, ratio in cases:
        r = _one(n, ratio, args.observers)
        print(
            f"| {n} | {r['distinct_observers']} | {r['plds_s']:.2f} | {r['accelerated_s']:.2f} "
            f"| {r['dp_accounting_s']:.1f} | {r['ratio']:.0f}× | "
            f"{r['min_diff']:.2e}, {r['max_diff']:.2e} |"
        )


if __name__ == "__main__":
    main()
