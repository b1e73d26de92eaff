"""Benchmark of the shuffle accountant: time per query against n for every bound.

Usage::

    PYTHONPATH=src python benchmarks/bench_shuffle.py [--quick] [--eps0 1.0] [--k 4]

Prints two tables: (1) CPU time of one ``shuffle_epsilon`` query (ε at δ = 1e-6, root
finding included) and of one ``shuffle_delta`` query (δ at the ε found) per bound and n;
(2) time and peak traced memory of one exact k-RR δ(ε) evaluation (canonical-dataset pair,
``krr_lower``) at n = 1e6. Targets (issue 2): every bound other than the exact k-RR curve
<= 100 ms per query at n = 1e9; exact k-RR δ(ε) at n = 1e6 <= 5 s and <= 2 GB.
"""

from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc

from rich.console import Console
from rich.table import Table

from crowdhide.accounting import _shuffle_pairs as pairs
from crowdhide.accounting.shuffle import (
    EXHAUSTIVE_MAX_N,
    SHUFFLE_BOUNDS,
    shuffle_delta,
    shuffle_epsilon,
)

# eps(delta) of the O(n) k-RR curves is benchmarked up to this n (at 1e6 one eps query
# takes minutes; the single delta(eps) evaluation at 1e6 is in the second table).
KRR_LOWER_BENCH_MAX_N = 10**5


def _time(fn: object) -> tuple[float, object]:
    # CPU time of this process: the benchmark machine is shared, wall time is not stable.
    start = time.process_time()
    out = fn()  # type: ignore[operator]
    return time.process_time() - start, out


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer n, skip slow cells")
    parser.add_argument("--eps0", type=float, default=1.0)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    ns = [10**2, 10**4, 10**6, 10**9] if args.quick else [10**e for e in range(2, 10)]
    console = Console(width=170)

    table = Table(title=f"time per query (eps0={args.eps0}, k={args.k}, delta={args.delta:g})")
    table.add_column("bound")
    table.add_column("query")
    for n in ns:
        table.add_column(f"n=1e{round(math.log10(n))}", justify="right")
    for bound in SHUFFLE_BOUNDS:
        eps_cells, delta_cells = [], []
        for n in ns:
            skip = (bound == "exact" and n > EXHAUSTIVE_MAX_N) or (
                bound in ("krr_lower", "krr_clone")
                and n > (10**4 if args.quick else KRR_LOWER_BENCH_MAX_N)
            )
            if skip:
                eps_cells.append("n/a")
                delta_cells.append("n/a")
                continue
            t_eps, res = _time(
                lambda n=n, b=bound: shuffle_epsilon(
                    eps0=args.eps0, n=n, delta=args.delta, k=args.k, bound=b
                )
            )
            eps = res.epsilon  # type: ignore[attr-defined]
            if not res.valid or not math.isfinite(eps):  # type: ignore[attr-defined]
                eps_cells.append("invalid")
                delta_cells.append("invalid")
                continue
            t_delta, _ = _time(
                lambda n=n, b=bound, e=eps: shuffle_delta(
                    eps0=args.eps0, n=n, epsilon=e, k=args.k, bound=b
                )
            )
            eps_cells.append(_fmt(t_eps))
            delta_cells.append(_fmt(t_delta))
        table.add_row(bound, "eps(delta)", *eps_cells)
        table.add_row("", "delta(eps)", *delta_cells)
    console.print(table)

    # Exact k-RR δ(ε) at n = 1e6: both canonical datasets, one evaluation each.
    n = 10**5 if args.quick else 10**6
    eps = shuffle_epsilon(eps0=args.eps0, n=n, delta=args.delta, k=args.k, bound="feldman2023")
    mem = Table(title=f"exact k-RR delta(eps) at n={n:g}, eps={eps.epsilon:.5g}")
    for col in ("dataset pair", "delta", "time", "peak traced memory"):
        mem.add_column(col, justify="right")
    for name, fn in (
        ("exact: others on a third value", pairs.krr_third_log_delta),
        ("exact: others on x'", pairs.krr_same_log_delta),
        ("krr_clone certificate", pairs.krr_clone_log_delta),
    ):
        tracemalloc.start()
        t, value = _time(lambda fn=fn: fn(n, args.k, args.eps0, eps.epsilon, -40.0))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        mem.add_row(name, f"{math.exp(value):.4g}", _fmt(t), f"{peak / 2**20:.0f} MiB")  # type: ignore[arg-type]
    console.print(mem)

    # `exact` (exhaustive worst case over every dataset) exists only for n <= 14.
    ex = Table(title="exact (exhaustive worst case over all datasets)")
    for col in ("n", "k", "eps(delta) query", "epsilon"):
        ex.add_column(col, justify="right")
    for n_small in (8, EXHAUSTIVE_MAX_N):
        t, res = _time(
            lambda n_small=n_small: shuffle_epsilon(
                eps0=args.eps0, n=n_small, delta=1e-3, k=args.k, bound="exact"
            )
        )
        ex.add_row(str(n_small), str(args.k), _fmt(t), f"{res.epsilon:.6g}")  # type: ignore[attr-defined]
    console.print(ex)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(f"peak resident memory of this benchmark process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
