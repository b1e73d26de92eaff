"""The lower bound's share of the issue-32 table's cells (s35-lower, issue 32).

Asks the cells of ``bench_shuffle.py --table`` in table order in one process
(``bench_shuffle._table_query``, after ``_warm_imports``), and times apart, with
``time.process_time``, the part of each spent solving the lower bound: the outermost
``_LowerCurve.epsilon`` (``krr_lower``, the k rows) or ``MemberCurve._lower_epsilon`` (a
mechanism's lower members). Prints the cells above 100 ms with their lower-bound and
remaining ms, then the totals per (n, δ) and per row, and how many slow cells the rest
alone would keep above 100 ms. It changes no answer: the wrappers only read the clock.

Command: ``PYTHONPATH=src python benchmarks/bench_lower_share.py --rows krr,k=10 --delta
1e-300``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_shuffle as bench
from crowdhide.accounting.shuffle import _member_curve, curves

EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NS = (10**3, 10**4, 10**6, 10**9)
TARGET_MS = 100.0


class _LowerClock:
    """CPU seconds inside the outermost lower-bound solve since the last :meth:`take`."""

    def __init__(self) -> None:
        self.seconds, self._depth = 0.0, 0

    def wrap(self, owner: type, name: str) -> None:
        inner: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return inner(*args, **kwargs)
            self._depth += 1
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.process_time() - start
                self._depth -= 1

        setattr(owner, name, timed)

    def take(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", required=True, help="comma-separated rows of --table")
    parser.add_argument("--delta", type=float, nargs="+", default=[1e-6, 1e-10, 1e-300])
    args = parser.parse_args()
    clock = _LowerClock()
    clock.wrap(curves._LowerCurve, "epsilon")
    clock.wrap(_member_curve.MemberCurve, "_lower_epsilon")
    bench._warm_imports()
    cells: list[tuple[str, int, float, float, float]] = []
    for row in args.rows.split(","):
        for eps0 in EPS0S:
            for n in NS:
                for delta in args.delta:
                    clock.take()
                    start = time.process_time()
                    bench._table_query(row, eps0, n, delta)
                    total = (time.process_time() - start) * 1e3
                    lower = clock.take() * 1e3
                    cells.append((row, n, delta, total, lower))
                    if total > TARGET_MS:
                        print(
                            f"{row:>9} {eps0:>4g} {n:>6.0e} {delta:>7.0e} total {total:6.0f} "
                            f"lower {lower:6.0f} rest {total - lower:6.0f} ms",
                            flush=True,
                        )
    by_n_delta: dict[tuple[int, float], float] = collections.defaultdict(float)
    by_row: dict[str, float] = collections.defaultdict(float)
    for row, n, delta, _, lower in cells:
        by_n_delta[n, delta] += lower / 1e3
        by_row[row] += lower / 1e3
    slow = [c for c in cells if c[3] > TARGET_MS]
    print(
        f"lower bound {sum(c[4] for c in cells) / 1e3:.2f} of {sum(c[3] for c in cells) / 1e3:.2f}"
        f" s CPU; {len(slow)} cells above {TARGET_MS:g} ms, "
        f"{sum(c[3] - c[4] > TARGET_MS for c in slow)} of them above it without the lower bound"
    )
    for (n, delta), seconds in sorted(by_n_delta.items(), key=lambda kv: -kv[1]):
        print(f"  n = {n:.0e}, delta = {delta:.0e}: lower bound {seconds:.2f} s")
    for row, seconds in sorted(by_row.items(), key=lambda kv: -kv[1]):
        print(f"  {row}: lower bound {seconds:.2f} s")


if __name__ == "__main__":
    main()
