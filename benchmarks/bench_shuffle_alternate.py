"""Cells of ``bench_shuffle.py --table`` asked of two checkouts alternately (issue 32).

Two worker processes, one per source tree (``--baseline SRC`` and this checkout's ``src``),
each answer the same cells (``bench_shuffle._table_query``: the whole query, certificate and
lower bound) in table order, the order of the two alternating cell by cell, so that both see
the same load on a shared machine; each worker imports scipy.fft and dp_accounting's PLD
first (as ``bench_shuffle.py --table`` does: a checkout before s35-pmf composes with
dp_accounting), so no cell is charged for them. Prints per cell both
answers (marked ``DIFF`` where the certificate or lower bound differs) and CPU ms, then per
row and in all the cells above 100 ms and the total CPU seconds of each, and their ratio.

Command: ``PYTHONPATH=src python benchmarks/bench_shuffle_alternate.py --baseline
/tmp/main/src --rows oue,krr --delta 1e-300`` (a baseline from ``git archive main src``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from _line_worker import ask_worker, start_worker

HERE = Path(__file__).resolve().parent
EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NS = (10**3, 10**4, 10**6, 10**9)
TARGET_S = 0.1

_WORKER = f"""
import json, sys
sys.path.insert(0, {str(HERE)!r})
import bench_shuffle as b
b._warm_imports()  # dp_accounting's PLD: once per process, not charged to the first R cell
for line in sys.stdin:
    row, eps0, n, delta = json.loads(line)
    print(json.dumps(b._table_query(row, eps0, n, delta)), flush=True)
"""


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", required=True, help="the other checkout's src directory")
    parser.add_argument("--rows", required=True, help="comma-separated rows of --table")
    parser.add_argument("--delta", type=float, nargs="+", default=[1e-300])
    args = parser.parse_args()
    procs = {
        "baseline": start_worker(args.baseline, _WORKER),
        "this": start_worker(str(HERE.parent / "src"), _WORKER),
    }
    times: dict[tuple[str, str], list[float]] = {}
    diffs = 0
    for i, cell in enumerate(
        [row, e, n, d]
        for row in args.rows.split(",")
        for e in EPS0S
        for n in NS
        for d in args.delta
    ):
        order = ("baseline", "this") if i % 2 == 0 else ("this", "baseline")
        out = {name: ask_worker(procs[name], cell) for name in order}
        base, this = out["baseline"], out["this"]
        same = _same(base[0], this[0]) and _same(base[1], this[1])
        diffs += not same
        for name in out:
            times.setdefault((str(cell[0]), name), []).append(out[name][2])
        print(
            f"{cell[0]:>9} {cell[1]:>4g} {cell[2]:>6.0e} {cell[3]:>7.0e} cert {base[0]!r} -> "
            f"{this[0]!r} lower {base[1]!r} -> {this[1]!r} ms {base[2] * 1e3:.0f} -> "
            f"{this[2] * 1e3:.0f}{'' if same else '  DIFF'}",
            flush=True,
        )
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    for row in [*args.rows.split(","), "all"]:
        base, this = (
            [t for (r, nm), ts in times.items() if nm == name and row in (r, "all") for t in ts]
            for name in ("baseline", "this")
        )
        print(
            f"{row:>9}: above 100 ms {sum(t > TARGET_S for t in base)} -> "
            f"{sum(t > TARGET_S for t in this)} of {len(base)}; CPU {sum(base):.2f} -> "
            f"{sum(this):.2f} s (x{sum(this) / sum(base):.3f})"
        )
    print(f"{diffs} cells differ")


if __name__ == "__main__":
    main()
