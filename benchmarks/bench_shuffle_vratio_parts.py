"""Where a cold ``variation_ratio`` ε query spends its CPU (issue 32).

Usage::

    PYTHONPATH=src python benchmarks/bench_shuffle_vratio_parts.py [--quick] [EPS0,N,DELTA ...]

Per cell (default: the grid's slowest kinds, ε0 in {2, 4, 6}, n in {1e3, 1e4, 1e6},
δ = 1e-10; ``--quick``: the first and the sixth of them) one cold query (every cache of the
modules it uses emptied first, as ``bench_shuffle_vratio.py`` does), split into: the
split-system layouts (``_split_clone._build_layouts`` and, where it exists, ``_heavy_parts``:
ε-independent, built once per query and reused by its later ε evaluations), the ε-dependent
blocked sums
(``_split_clone._blocks_log_deltas``), and the rest (the one-rate top and bottom systems,
the reference, the refinement's own work). It also prints the ε evaluations of the root
search (``_supremum`` calls) with their CPU ms, the first one holding every layout build of
the initial cells, and the layout rows x blocks per resolution
(:data:`~crowdhide.accounting.shuffle.variation_ratio.SPLIT_TIERS`).
CPU time (``time.process_time``): the machine is shared. The timers nest no other timer
(layout builds run inside ``_supremum``, so its ms include them).
"""

from __future__ import annotations

import argparse
import collections
import functools
import math
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_shuffle_vratio import _clear_caches  # the benchmark's own cold start

DEFAULT_CELLS = tuple((eps0, n, 1e-10) for eps0 in (2.0, 4.0, 6.0) for n in (10**3, 10**4, 10**6))


_Parts = tuple[collections.Counter[str], list[str], collections.Counter[int]]


def _timed(
    owner: Any, name: str, spent: collections.Counter[str], record: Callable[..., None] | None
) -> None:
    """Replace ``owner.name`` by a wrapper adding its CPU seconds to ``spent[name]`` (and
    calling ``record(args, result, seconds)``)."""
    inner = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        result = inner(*args, **kwargs)
        seconds = time.process_time() - began
        spent[name] += seconds
        if record is not None:
            record(args, result, seconds)
        return result

    setattr(owner, name, wrapper)


def _instrument() -> _Parts:
    """Timers on the layout builds, the blocked sums and the refinement (``_supremum``, an
    ``lru_cache``: its wrapped function is timed, the cache kept): the CPU seconds per part,
    one line per ε evaluation, the layout elements (rows x blocks) per clone-count tier."""
    from crowdhide.accounting.shuffle import _split_clone, variation_ratio

    spent: collections.Counter[str] = collections.Counter()
    evaluations: list[str] = []
    elements: collections.Counter[int] = collections.Counter()

    def on_layouts(args: Any, result: Any, _: float) -> None:
        for system, layout in zip(args[1], result, strict=True):
            elements[system[3]] += int(layout[1].size)

    def on_supremum(args: Any, result: Any, seconds: float) -> None:
        evaluations.append(f"ε = {args[3]:.10g}: log δ <= {result[0]:.6f}, {seconds * 1e3:.0f} ms")

    _timed(_split_clone, "_build_layouts", spent, on_layouts)
    _timed(_split_clone, "_blocks_log_deltas", spent, None)
    if hasattr(_split_clone, "_heavy_parts"):  # s27-gen: a layout's sum inputs, once per layout
        _timed(_split_clone, "_heavy_parts", spent, None)
    holder = types.SimpleNamespace(fn=variation_ratio._supremum.__wrapped__)
    _timed(holder, "fn", spent, on_supremum)
    cached = functools.lru_cache(maxsize=variation_ratio._SUPREMUM_CACHE)
    variation_ratio._supremum = cached(holder.fn)
    return spent, evaluations, elements


def _cell(parts: _Parts, eps0: float, n: int, delta: float) -> None:
    """One cold query and its parts (``parts``: :func:`_instrument`'s records)."""
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    spent, evaluations, elements = parts
    _clear_caches()
    spent.clear(), evaluations.clear(), elements.clear()
    began = time.process_time()
    res = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
    total = (time.process_time() - began) * 1e3
    layouts = (spent["_build_layouts"] + spent["_heavy_parts"]) * 1e3
    sums = spent["_blocks_log_deltas"] * 1e3
    print(
        f"ε0 = {eps0:g}, n = 1e{round(math.log10(n))}, δ = {delta:g}: ε = {res.epsilon:.7g}, "
        f"{total:.0f} ms = layouts {layouts:.0f} + sums {sums:.0f} + "
        f"rest {total - layouts - sums:.0f}"
    )
    for line in evaluations:
        print(f"    {line}")
    tiers = ", ".join(f"{c} clone blocks: {e}" for c, e in sorted(elements.items()))
    print(f"    layout elements (rows x blocks) by tier: {tiers}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("cells", nargs="*", help="EPS0,N,DELTA (default: a slow subset)")
    parser.add_argument("--quick", action="store_true", help="two cells of the default")
    args = parser.parse_args()
    default = [DEFAULT_CELLS[0], DEFAULT_CELLS[5]] if args.quick else list(DEFAULT_CELLS)
    cells = [
        (float(e), int(float(n)), float(d)) for e, n, d in (cell.split(",") for cell in args.cells)
    ] or default
    parts = _instrument()
    for eps0, n, delta in cells:
        _cell(parts, eps0, n, delta)


if __name__ == "__main__":
    main()
