"""Where a k-RR shuffle query at a tiny δ spends its CPU: per bound and per ε search.

Default: every ``shuffle_epsilon(k=K)`` query (``best``, with its lower bound) over
ε0 in {0.5, 1, 2, 4, 8} x n in {1e3, 1e4, 1e6, 1e9} at δ (default 1e-300), one line per
cell: its CPU ms, its ε and source, and per bound that ``best`` evaluated its CPU ms and
the number of log δ evaluations of its adaptive curves (``_AdaptiveCurve.log_delta``;
closed forms and ``binary_rr_blocks`` count 0); then the totals per bound and the cells
above 100 ms. ``--fmt23``: the FMT23 pair alone (``bound="feldman2023"``, k = 2, without
a lower bound) over the same grid instead (ε and CPU ms). ``--json F`` writes the rows.
Compare two checkouts by pointing PYTHONPATH at each, alternately (issue 32; the s26-tiny
entry of CHANGELOG.md):

    PYTHONPATH=src python benchmarks/bench_shuffle_tiny.py --k 2 3 4 10 100
    PYTHONPATH=src python benchmarks/bench_shuffle_tiny.py --fmt23
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from typing import Any

from crowdhide.accounting.shuffle import curves, generic
from crowdhide.accounting.shuffle.query import shuffle_epsilon

EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NS = (10**3, 10**4, 10**6, 10**9)
TARGET_MS = 100.0


def _instrument() -> dict[str, tuple[float, int]]:
    """Count log δ evaluations and time ``generic._evaluate`` per bound name (patched in
    place: this process only)."""
    count = [0]
    per: dict[str, tuple[float, int]] = {}
    log_delta = curves._AdaptiveCurve.log_delta
    evaluate: Callable[..., Any] = generic._evaluate

    def counted(self: curves._AdaptiveCurve, epsilon: float) -> float:
        count[0] += 1
        return log_delta(self, epsilon)

    def timed(name: str, params: Any, query: Any) -> Any:
        c0, t0 = count[0], time.process_time()
        try:
            return evaluate(name, params, query)
        finally:
            per[name] = (1e3 * (time.process_time() - t0), count[0] - c0)

    curves._AdaptiveCurve.log_delta = counted  # type: ignore[method-assign]
    generic._evaluate = timed
    return per


def _best_rows(ks: list[int], delta: float) -> list[dict[str, Any]]:
    per = _instrument()
    rows: list[dict[str, Any]] = []
    for k in ks:
        for eps0 in EPS0S:
            for n in NS:
                per.clear()
                t0 = time.process_time()
                res = shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k)
                ms = 1e3 * (time.process_time() - t0)
                parts = " ".join(f"{b}={t:.0f}ms/{c}" for b, (t, c) in per.items() if t >= 1)
                print(
                    f"k={k:<3} eps0={eps0:<3g} n=1e{round(math.log10(n))} {ms:6.0f} ms "
                    f"eps={res.epsilon:.10g} ({res.source.split()[0]}) | {parts}",
                    flush=True,
                )
                rows.append({"k": k, "eps0": eps0, "n": n, "ms": ms, "eps": res.epsilon,
                             "per": dict(per)})  # fmt: skip
    totals: dict[str, list[float]] = {}
    for row in rows:
        for name, (t, c) in row["per"].items():
            entry = totals.setdefault(name, [0.0, 0.0, 0.0])
            entry[0], entry[1], entry[2] = entry[0] + t, entry[1] + c, entry[2] + 1
    for name, (t, c, cells) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        print(f"{name:>20}: {t:8.0f} ms, {c:5.0f} evaluations, {cells:3.0f} cells")
    return rows


def _fmt23_rows(delta: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for eps0 in EPS0S:
        for n in NS:
            t0 = time.process_time()
            res = generic.shuffle_epsilon(
                eps0=eps0, n=n, delta=delta, k=2, bound="feldman2023", lower=False
            )
            ms = 1e3 * (time.process_time() - t0)
            print(f"eps0={eps0:<3g} n=1e{round(math.log10(n))} {ms:6.0f} ms eps={res.epsilon!r}")
            rows.append({"eps0": eps0, "n": n, "ms": ms, "eps": res.epsilon})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", nargs="+", type=int, default=[2, 3, 4, 10, 100])
    parser.add_argument("--delta", type=float, default=1e-300)
    parser.add_argument("--fmt23", action="store_true", help="feldman2023 (k = 2) alone")
    parser.add_argument("--json", default="", help="also write the rows here")
    opts = parser.parse_args()
    rows = _fmt23_rows(opts.delta) if opts.fmt23 else _best_rows(opts.k, opts.delta)
    slow = sum(row["ms"] > TARGET_MS for row in rows)
    total = sum(row["ms"] for row in rows) / 1e3
    print(f"{slow} of {len(rows)} queries above {TARGET_MS:g} ms; total {total:.2f} s CPU")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=0)


if __name__ == "__main__":
    main()
