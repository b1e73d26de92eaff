"""Where a piecewise-mechanism query of the issue-32 table spends its CPU (s33-pw).

Usage::

    PYTHONPATH=src python benchmarks/bench_piecewise_parts.py [--betainc] [EPS0,N,DELTA ...]

Per cell (default: the row's slowest kind, δ = 1e-300 at ε0 in {0.5, 1, 2, 4}, n in {1e6,
1e9}, and four median-sized cells) the query ``bench_shuffle._table_query`` times, asked
after the table's earlier δ of the same (ε0, n) in the same process (as ``bench_shuffle.py
--table`` asks them), split into: the split-system layouts (``_split_clone._build_layouts``:
ε-independent, their incomplete betas), the blocked sums at ε below 1e-5 ε0 (the capped
search's floor starts at ε = 0 and 1e-6 ε0), the other blocked sums, and the rest; and the
``CoarseChildren.settle`` step (its layouts and sums are counted in those parts too). It
also prints the CPU of repeated ``split_clone_log_deltas`` calls (the same systems, ε and
tail asked again within the query: what a memo of them would save) and, with ``--betainc``,
how many of the query's incomplete-beta arguments ``(a, b, x)`` are distinct (what sharing
edges across cells, tiers or ε would save; the recording adds its own CPU to the parts).
CPU time (``time.process_time``): the machine is shared, so compare parts, not runs.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_shuffle as bench  # the table's own query

DEFAULT_CELLS = (
    *((eps0, n, 1e-300) for eps0 in (0.5, 1.0, 2.0, 4.0) for n in (10**6, 10**9)),
    *((eps0, 10**4, delta) for eps0 in (1.0, 2.0) for delta in (1e-6, 1e-10)),
)
#: The table's δ per (ε0, n), in its order.
TABLE_DELTAS = (1e-6, 1e-10, 1e-300)


def _timed(parts: dict[str, float], key: Callable[..., str], fn: Callable[..., Any]) -> Any:
    """``fn`` with its CPU added to ``parts[key(*args)]``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            name = key(*args, **kwargs)
            parts[name] = parts.get(name, 0.0) + time.process_time() - start

    return wrapper


def _instrument(parts: dict[str, float], seen: dict[tuple[Any, ...], list[float]]) -> None:
    """Time the layouts, the blocked sums (near ε = 0 apart), the settle step, and each
    ``split_clone_log_deltas`` call by its arguments (``seen``: their CPU per call)."""
    from crowdhide.accounting.shuffle import _coarse_children, _split_clone, variation_ratio

    sc: Any = _split_clone
    sc._build_layouts = _timed(parts, lambda *a, **k: "layouts", sc._build_layouts)

    def blocks_key(layouts: Any, kappa: float, eps: float, log_tail: float) -> str:
        eps0 = 2.0 * float(np.arctanh(kappa))  # kappa = tanh(ε0/2), raised by an ulp or so
        return "sums near eps 0" if eps < 1e-5 * eps0 else "other sums"

    sc._blocks_log_deltas = _timed(parts, blocks_key, sc._blocks_log_deltas)
    cc: Any = _coarse_children.CoarseChildren
    cc.settle = _timed(parts, lambda *a, **k: "settle", cc.settle)
    inner = sc.split_clone_log_deltas

    def recorded(n: int, kappa: float, systems: Any, eps: float, log_tail: float) -> Any:
        start = time.process_time()
        out = inner(n, kappa, systems, eps, log_tail)
        seen[(n, kappa, tuple(systems), eps, log_tail)].append(time.process_time() - start)
        return out

    sc.split_clone_log_deltas = recorded
    vr: Any = variation_ratio
    vr.split_clone_log_deltas = recorded  # imported by name there


def _count_betainc(arguments: list[np.ndarray[Any, Any]]) -> None:
    """Record the ``(a, b, x)`` of every incomplete beta of the binomial tails."""
    from crowdhide.accounting import binomial_tails

    bt: Any = binomial_tails
    inner = bt.betainc

    def recorded(a: Any, b: Any, x: Any) -> Any:
        a_, b_, x_ = np.broadcast_arrays(a, b, x)
        arguments.append(np.stack([a_.ravel(), b_.ravel(), x_.ravel()], axis=1))
        return inner(a, b, x)

    bt.betainc = recorded


def _cell(text: str) -> tuple[float, int, float]:
    eps0, n, delta = text.split(",")
    return float(eps0), int(float(n)), float(delta)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", nargs="*", type=_cell, help="EPS0,N,DELTA (default: see doc)")
    parser.add_argument("--betainc", action="store_true", help="count distinct betainc args")
    args = parser.parse_args()
    parts: dict[str, float] = {}
    seen: dict[tuple[Any, ...], list[float]] = collections.defaultdict(list)
    arguments: list[np.ndarray[Any, Any]] = []
    _instrument(parts, seen)
    if args.betainc:
        _count_betainc(arguments)
    asked: set[tuple[float, int, float]] = set()
    for eps0, n, delta in args.cells or DEFAULT_CELLS:
        for earlier in TABLE_DELTAS[: TABLE_DELTAS.index(delta)] if delta in TABLE_DELTAS else ():
            if (eps0, n, earlier) not in asked:  # the table asked them first, in this process
                bench._table_query("piecewise", eps0, n, earlier)
                asked.add((eps0, n, earlier))
        parts.clear()
        seen.clear()
        arguments.clear()
        cert, _, seconds = bench._table_query("piecewise", eps0, n, delta)
        asked.add((eps0, n, delta))
        measured = sum(v for k, v in parts.items() if k != "settle")
        shares = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in sorted(parts.items()))
        repeated = sum(sum(times[1:]) for times in seen.values())
        line = f"({eps0:g}, {n:.0e}, {delta:g}) eps {cert:.9g}: {seconds * 1e3:.0f} ms: {shares}"
        line += f", rest {(seconds - measured) * 1e3:.0f}; repeated calls {repeated * 1e3:.1f}"
        if arguments:
            every = np.concatenate(arguments)
            line += f"; betainc args {len(every)}, distinct {len(np.unique(every, axis=0))}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
