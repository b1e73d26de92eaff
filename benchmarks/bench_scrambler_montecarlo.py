"""Cost model of the scrambler's Monte-Carlo estimate (Algorithm 2): seconds per draw.

``MonteCarloLemma2`` draws ``samples`` multinomials per mixture component; the draws
dominate (each ε afterwards costs O(distinct (A, B) pairs)). The measured seconds per draw
justify ``scrambler_bounds.MAX_MONTECARLO_DRAWS`` (3e7 draws: ~25 s at 0.8 µs per draw on a
loaded 2-core machine, well inside the 60 s bound of every documented value).

    python benchmarks/bench_scrambler_montecarlo.py
"""

from __future__ import annotations

import json
import time

import numpy as np

from crowdhide.accounting.scrambler.bounds import MAX_MONTECARLO_DRAWS, MonteCarloLemma2


def main() -> None:
    rows = []
    for samples in (20_000, 100_000):
        start = time.perf_counter()
        mc = MonteCarloLemma2(
            targets=20, sigma=0.2, n=100, dummies=50, samples=samples, rng=np.random.default_rng(1)
        )
        built = time.perf_counter() - start
        draws = samples * mc._N.size
        start = time.perf_counter()
        for eps in np.linspace(0.1, 3.0, 50):
            mc.delta(float(eps))
        rows.append(
            {
                "samples": samples,
                "components": int(mc._N.size),
                "draws": draws,
                "build_s": round(built, 3),
                "us_per_draw": round(1e6 * built / draws, 3),
                "delta_50_s": round(time.perf_counter() - start, 3),
                "cap_draws": MAX_MONTECARLO_DRAWS,
                "cap_s_estimate": round(built / draws * MAX_MONTECARLO_DRAWS, 1),
            }
        )
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
