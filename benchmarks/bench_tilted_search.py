"""The composed rows' tilted ε searches replayed: the former search against ``probed_root``.

Each cell of a ``bench_shuffle.py --table`` R row (``--row``, default ``R=10000``; ε0 ∈
{0.5, 1, 2, 4, 8}, n ∈ {1e3, 1e4, 1e6, 1e9}, δ ∈ {1e-6, 1e-10, 1e-300}, in table order in
one process) is asked as the table asks it; every search of a tilted pass or far mixture
it runs (``TiltedPld.epsilon``, ``FarMixture.epsilon``) is then replayed on the same built
pass with the former search (the bracket ``[0, cap]``, ``safe_root`` to ``1e-9·max(1,
cap)``) and with this tree's (``_tilted_pld.probed_root``, docs/proofs/profile-pair.md
§16), alternately, best of ``--repeat``. Prints per cell the CPU ms of each and the
evaluations, then the totals and their ratio (issue 32; CHANGELOG s32-rounds).

Command: ``PYTHONPATH=src python benchmarks/bench_tilted_search.py [--row R=10000]
[--repeat 3]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_shuffle as bench
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _far_mixture, _tilted_pld

EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NS = (10**3, 10**4, 10**6, 10**9)
DELTAS = (1e-6, 1e-10, 1e-300)


def _former(log_delta: Callable[[float], float], delta: float, cap: float) -> float:
    """The search before s32-rounds."""
    target = math.log(delta)
    if log_delta(cap) > target:
        return cap
    return safe_root(log_delta, target, 0.0, cap, xtol=1e-9 * max(cap, 1.0))


#: The searches of this tree, kept before :func:`_recorded` wraps them.
_SEARCHES: dict[type, Callable[..., float]] = {}


def _recorded() -> list[tuple[Any, float, float, dict[str, Any]]]:
    """Wrap both searches so that each call is kept (the pass, δ, cap, keywords)."""
    calls: list[tuple[Any, float, float, dict[str, Any]]] = []
    for cls in (_tilted_pld.TiltedPld, _far_mixture.FarMixture):
        search = _SEARCHES[cls] = cls.epsilon

        def kept(self: Any, delta: float, cap: float, _search: Any = search, **kw: Any) -> float:
            calls.append((self, delta, cap, kw))
            return float(_search(self, delta, cap, **kw))

        cls.epsilon = kept  # type: ignore[method-assign]
    return calls


def _timed(run: Callable[[], object], cls: Any) -> tuple[float, int]:
    """CPU seconds of ``run()`` and the ``log_delta`` evaluations of ``cls`` it made."""
    curve, count = cls.log_delta, [0]

    def counted(self: Any, x: float) -> float:
        count[0] += 1
        return float(curve(self, x))

    cls.log_delta = counted
    try:
        start = time.process_time()
        run()
        return time.process_time() - start, count[0]
    finally:
        cls.log_delta = curve


def _replay(call: tuple[Any, float, float, dict[str, Any]], repeat: int) -> list[float]:
    """``[former ms, new ms, former evaluations, new evaluations]`` of one search, the two
    run alternately, best of ``repeat``."""
    tilted, delta, cap, kw = call
    cls = type(tilted)
    runs = (
        lambda: _former(tilted.log_delta, delta, cap),
        lambda: _SEARCHES[cls](tilted, delta, cap, **kw),
    )
    best, counts = [math.inf, math.inf], [0, 0]
    for _ in range(repeat):
        for i, run in enumerate(runs):
            seconds, counts[i] = _timed(run, cls)
            best[i] = min(best[i], seconds)
    return [best[0] * 1e3, best[1] * 1e3, counts[0], counts[1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--row", default="R=10000", help="an R row of bench_shuffle --table")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bench._warm_imports()
    calls = _recorded()
    total = [0.0, 0.0, 0.0, 0.0]
    for eps0 in EPS0S:
        for n in NS:
            for delta in DELTAS:
                calls.clear()
                bench._table_query(args.row, eps0, n, delta)
                if not calls:
                    continue
                cell = [sum(x) for x in zip(*(_replay(c, args.repeat) for c in calls), strict=True)]
                total = [a + b for a, b in zip(total, cell, strict=True)]
                shown = f"{args.row} eps0={eps0:g} n={n:.0e} delta={delta:g}"
                print(
                    f"{shown}: searches {len(calls)}, ms {cell[0]:.1f} -> {cell[1]:.1f}, "
                    f"evaluations {cell[2]:.0f} -> {cell[3]:.0f}",
                    flush=True,
                )
    ratio = total[1] / total[0] if total[0] else math.nan
    print(
        f"{args.row}: search CPU {total[0]:.0f} -> {total[1]:.0f} ms (x{ratio:.3f}), "
        f"evaluations {total[2]:.0f} -> {total[3]:.0f}"
    )


if __name__ == "__main__":
    main()
