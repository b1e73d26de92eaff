"""Throughput of the shuffle-model protocols for n = 10^3 … 10^7 users.

Run: ``PYTHONPATH=src python benchmarks/bench_protocols.py [--quick]``.

For each protocol and n the table shows the wall time of the data path (users' randomizers →
CSPRNG shuffler → analyzer/estimator), the same data path run as the plan users → shuffler →
analyzer on the engine (``crowdhide.protocols.engine_plan.run_on_engine``: transcript of both
hops included), and, separately, the one-off ε0 calibration and
certificate with the tight shuffle accountant. Target (issue 6): 10^7 users
through shuffled k-RR (k = 100) with the inversion estimator in <= 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from crowdhide.mechanisms import KaryRandomizedResponse, project_to_simplex
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.bitsum import BitSumRandomizer, bitsum_estimate
from crowdhide.protocols.engine_plan import run_on_engine
from crowdhide.protocols.realsum import simulate_real_sum, simulate_single_message_sum
from crowdhide.protocols.shuffler import Shuffler


def _timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def bench_histogram(n: int, rng: np.random.Generator, k: int = 100) -> dict[str, Any]:
    values = rng.integers(0, k, size=n)
    calib, eps0 = _timed(
        lambda: krr_accounting.calibrate_krr_eps0(epsilon=1.0, delta=1e-6, n=n, k=k)
    )
    krr = KaryRandomizedResponse(k=k, eps0=eps0)

    def pipeline() -> np.ndarray:
        shuffler = Shuffler()
        shuffler.submit(krr.randomize(values, rng=rng))
        counts = np.bincount(shuffler.release().messages, minlength=k)
        return project_to_simplex(krr.estimate_frequencies(counts))

    def on_engine() -> Any:
        return run_on_engine(
            {"category": values},
            randomize=lambda users: krr.randomize(users["category"], rng=rng),
            analyze=lambda reports: {
                "estimate": project_to_simplex(
                    krr.estimate_frequencies(np.bincount(reports, minlength=k))
                )
            },
        )

    elapsed, _ = _timed(pipeline)
    engine_s, _ = _timed(on_engine)
    return {
        "protocol": f"histogram k-RR k={k} +inversion",
        "n": n,
        "data_s": elapsed,
        "engine_s": engine_s,
        "calibration_s": calib,
        "eps0": eps0,
    }


def bench_bits(n: int, rng: np.random.Generator) -> dict[str, Any]:
    bits = (rng.random(n) < 0.3).astype(np.int64)
    lam = min(1000.0, n / 3)

    def pipeline() -> float:
        shuffler = Shuffler()
        shuffler.submit(BitSumRandomizer(n=n, lam=lam).randomize(bits, rng=rng))
        batch = shuffler.release()
        return bitsum_estimate(
            ones=float(np.count_nonzero(batch.messages)), messages=batch.count, n=n, lam=lam
        )

    def on_engine() -> Any:
        randomizer = BitSumRandomizer(n=n, lam=lam)
        return run_on_engine(
            {"bit": bits},
            randomize=lambda users: randomizer.randomize(users["bit"], rng=rng),
            analyze=lambda reports: {
                "estimate": np.array(
                    [
                        bitsum_estimate(
                            ones=float(np.count_nonzero(reports)),
                            messages=int(reports.shape[0]),
                            n=n,
                            lam=lam,
                        )
                    ]
                )
            },
        )

    elapsed, _ = _timed(pipeline)
    engine_s, _ = _timed(on_engine)
    return {
        "protocol": "bit sum",
        "n": n,
        "data_s": elapsed,
        "engine_s": engine_s,
        "calibration_s": math.nan,
        "eps0": math.log(2 * n / lam - 1),
    }


def bench_real(n: int, rng: np.random.Generator, r: int = 4) -> dict[str, Any]:
    u = rng.random(n)
    lam = min(4000.0, n / 3)
    elapsed, _ = _timed(lambda: simulate_real_sum(u, r=r, lam=lam, rng=rng))
    engine_s, _ = _timed(lambda: simulate_real_sum(u, r=r, lam=lam, rng=rng, engine=True))
    return {
        "protocol": f"real sum, {r} msgs/user",
        "n": n,
        "data_s": elapsed,
        "engine_s": engine_s,
        "calibration_s": math.nan,
        "eps0": math.nan,
    }


def bench_single(n: int, rng: np.random.Generator, m: int = 16) -> dict[str, Any]:
    u = rng.random(n)
    elapsed, _ = _timed(lambda: simulate_single_message_sum(u, levels=m, eps0=3.0, rng=rng))
    engine_s, _ = _timed(
        lambda: simulate_single_message_sum(u, levels=m, eps0=3.0, rng=rng, engine=True)
    )
    return {
        "protocol": f"single-message sum, m={m}",
        "n": n,
        "data_s": elapsed,
        "engine_s": engine_s,
        "calibration_s": math.nan,
        "eps0": 3.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n up to 1e5 only")
    args = parser.parse_args()
    ns = [10**3, 10**4, 10**5] if args.quick else [10**3, 10**4, 10**5, 10**6, 10**7]
    rng = np.random.default_rng(0)
    rows = []
    for bench in (bench_histogram, bench_bits, bench_real, bench_single):
        for n in ns:
            rows.append(bench(n, rng))
    print(
        f"{'protocol':<34} {'n':>10} {'data path [s]':>14} {'users/s':>12} "
        f"{'engine [s]':>11} {'calibration [s]':>16}"
    )
    for row in rows:
        rate = row["n"] / row["data_s"]
        calib = "n/a" if math.isnan(row["calibration_s"]) else f"{row['calibration_s']:.3f}"
        engine = "n/a" if math.isnan(row["engine_s"]) else f"{row['engine_s']:.3f}"
        print(
            f"{row['protocol']:<34} {row['n']:>10.0e} {row['data_s']:>14.3f} {rate:>12.3g} "
            f"{engine:>11} {calib:>16}"
        )
    target = [r for r in rows if r["n"] == 10**7 and r["protocol"].startswith("histogram")]
    if target:
        calib = 0.0 if math.isnan(target[0]["calibration_s"]) else target[0]["calibration_s"]
        for label, key in (("direct", "data_s"), ("engine", "engine_s")):
            total = target[0][key] + calib
            status = "met" if total <= 10.0 else "NOT met"
            print(
                f"target ({label}): 1e7 users, shuffled k-RR k=100 + inversion <= 10 s: "
                f"{total:.2f} s (data path {target[0][key]:.2f} s + calibration) -> {status}"
            )


if __name__ == "__main__":
    main()
