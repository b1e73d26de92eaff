"""Benchmark of the local engine: messages per second and peak memory.

Workload: the Aggregate query of seed 000 with G = 4 grouping sets of 20 intervals each
(C = 20 compute nodes per set), S sources, with and without countermeasures (sampling
σ = 0.1 and scramblers n = 100, d = 50). Each configuration runs in a fresh subprocess so
the peak resident memory (ru_maxrss) is its own; the time is that of ``execute`` (data
generation and plan building excluded, reported separately).

    python benchmarks/bench_engine.py            # S = 1e4 ... 1e7
    python benchmarks/bench_engine.py --quick    # S = 1e4, 1e5

Target (issue 4): 1e6 sources x 4 grouping sets with scramblers in <= 20 s and <= 4 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

SQL = "SELECT g1, g2, g3, g4, AVG(v) FROM D GROUP BY GROUPING SETS ((g1), (g2), (g3), (g4))"


def one(sources: int, protected: bool) -> dict[str, float]:
    """Run one configuration in this process and return its measurements."""
    from crowdhide.engine import execute
    from crowdhide.plans import protect
    from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
    from crowdhide.plans.data import synth_aggregate

    t0 = time.perf_counter()
    table = synth_aggregate(rows=sources, attributes=4, intervals=20, rng=0)
    setup = aggregate_plan(table, AggregateQuery.from_sql(SQL), compute_nodes=20)
    plan = (
        protect(setup.plan, sigma=0.1, per_scrambler=100, dummies=50) if protected else setup.plan
    )
    t1 = time.perf_counter()
    run = execute(plan, rng=1)
    t2 = time.perf_counter()
    messages = len(run.transcript)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "sources": sources,
        "scramblers": protected,
        "setup_s": t1 - t0,
        "execute_s": t2 - t1,
        "messages": messages,
        "messages_per_s": messages / (t2 - t1),
        "peak_rss_mb": rss_kb / 1024.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="S = 1e4 and 1e5 only")
    parser.add_argument("--max-sources", type=float, default=1e7, help="largest S (default 1e7)")
    parser.add_argument("--one", nargs=2, metavar=("S", "PROTECTED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(int(float(args.one[0])), args.one[1] == "1")))
        return
    sizes = (
        [10**4, 10**5]
        if args.quick
        else [s for s in (10**4, 10**5, 10**6, 10**7) if s <= args.max_sources]
    )
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    print(
        f"{'S':>10} {'scramblers':>10} {'messages':>12} {'execute s':>10} "
        f"{'msg/s':>12} {'peak MB':>9}"
    )
    for size in sizes:
        for protected in (False, True):
            out = subprocess.run(
                [sys.executable, __file__, "--one", str(size), "1" if protected else "0"],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if out.returncode != 0:
                print(
                    f"{size:>10} {protected!s:>10} failed: {out.stderr.strip().splitlines()[-1:]}"
                )
                continue
            r = json.loads(out.stdout)
            rows.append(r)
            print(
                f"{r['sources']:>10} {r['scramblers']!s:>10} {r['messages']:>12,} "
                f"{r['execute_s']:>10.2f} {r['messages_per_s']:>12,.0f} {r['peak_rss_mb']:>9.0f}"
            )
    target = [r for r in rows if r["sources"] == 10**6 and r["scramblers"]]
    if target:
        r = target[0]
        ok = r["execute_s"] <= 20 and r["peak_rss_mb"] <= 4096
        print(
            f"target 1e6 x 4 grouping sets with scramblers: {r['execute_s']:.2f} s, "
            f"{r['peak_rss_mb']:.0f} MB -> {'met' if ok else 'NOT met'} (<= 20 s, <= 4096 MB)"
        )
    prot = sorted((r for r in rows if r["scramblers"]), key=lambda r: r["sources"])
    if len(prot) >= 2:
        a, b = prot[0], prot[-1]
        growth = (b["execute_s"] / a["execute_s"]) / (b["sources"] / a["sources"])
        print(
            f"time growth / source growth from S={a['sources']:.0e} to {b['sources']:.0e}: "
            f"{growth:.2f} (1 = linear)"
        )


if __name__ == "__main__":
    main()
