"""Time per query of the generic certificate ``variation_ratio`` alone (issue 32).

Usage::

    PYTHONPATH=src python benchmarks/bench_shuffle_vratio.py [--quick] [--tiny] [--no-floor]
        [--baseline OTHER/src] [--json FILE]

For every ε0 in {0.5, 1, 2, 4, 6, 8}, n in {1e3, 1e4, 1e6, 1e9} and δ in {1e-6, 1e-10,
1e-300} it asks ``shuffle_epsilon(bound="variation_ratio", lower=False)`` (ε at δ, the root
search included) and prints per cell (ε0, n, δ): the CPU ms of the query cold (every
``functools`` cache of the modules it uses emptied first: a command-line user's first query)
and warm (the caches the queries of the row's previous δ left, asked in order, as a curve or
a calibration asks one (ε0, n) several times; the first δ of a row is as cold), the
certificate's ε and its ratio to the FMT23 clone pair's ε (issue 32: within 1.001; computed
untimed), and the split-system cell evaluations of the cold query (both refinements of its
root search). Then ``cells > 100 ms: X of Y`` (cold). Until s36-deep the certificate declared
itself not applicable below δ = 1e-280 (``VARIATION_RATIO_MIN_DELTA``, now 0): a baseline
from before times the refusal there and shows ε as nan.

``--tiny`` takes the tiny-δ grid instead (issue 32, s34-tiny): ε0 in {0.5, 1, 2, 4, 8},
n in {1e3, 1e4, 1e6, 1e9}, δ in {1e-20, 1e-50, 1e-100, 1e-200, 1e-250, 1e-300}.
``--no-floor`` lifts the floor in the measured processes (``VARIATION_RATIO_MIN_DELTA`` set to
0 wherever it is bound), so the cells below it time what the certificate itself would cost.
``refinements`` counts the suprema over μ the cold query computed (its ε search's steps:
each is a refinement of up to ``MAX_EVALUATIONS`` cell evaluations).

``--baseline SRC`` runs the same grid with another checkout's ``src`` in subprocesses,
alternating with this one per ε0 (so both see the same machine load), and adds its cold
time, the speed-up, the relative change of ε and its cell evaluations per cell. Target
(issue 32): every query <= 100 ms. CPU time is quoted because the benchmark machine is
shared (and so is noisy: compare runs taken side by side with ``--baseline``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EPS0S = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0)
NS = (10**3, 10**4, 10**6, 10**9)
DELTAS = (1e-6, 1e-10, 1e-300)
TINY_EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
TINY_DELTAS = (1e-20, 1e-50, 1e-100, 1e-200, 1e-250, 1e-300)
TARGET_MS = 100.0
_CACHED_MODULES = (
    "crowdhide.accounting.shuffle.variation_ratio",
    "crowdhide.accounting.shuffle._split_clone",
    "crowdhide.accounting.shuffle._krr_fast",
    "crowdhide.accounting.shuffle._pairs",
    "crowdhide.accounting.binomial_tails",
)


def _clear_caches() -> None:
    """Empty every cache (anything with ``cache_clear``: the ``functools`` caches, the tail
    memo) of the modules the certificate uses, whatever they are called in the checkout."""
    import importlib

    for name in _CACHED_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for value in list(vars(module).values()):
            clear = None if isinstance(value, type) else getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def _counted(module: Any) -> list[int]:
    """Count the split-system cell evaluations of the refinement from now on: the cells
    asked of ``module._cells_log_delta`` (the batched evaluator, which the one-cell
    ``_cell_log_delta`` calls), or in a checkout without it the calls of
    ``module._cell_log_delta``: ``[count]``, updated in place."""
    count = [0]
    batched = hasattr(module, "_cells_log_delta")
    name = "_cells_log_delta" if batched else "_cell_log_delta"
    inner = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += len(args[2]) if batched else 1
        return inner(*args, **kwargs)

    setattr(module, name, counting)
    return count


def _counted_refinements(module: Any) -> list[int]:
    """Count the refinements (suprema over μ computed, not found in a cache) from now on: the
    calls of ``module._initial_cells``, which each refinement makes once: ``[count]``."""
    count = [0]
    inner = module._initial_cells

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return inner(*args, **kwargs)

    module._initial_cells = counting
    return count


def _lift_floor() -> None:
    """``VARIATION_RATIO_MIN_DELTA = 0`` in every loaded module of the checkout that binds
    it (``--no-floor``): the certificate is then solved at every δ."""
    import importlib

    for name in ("curves", "_bound_curves"):
        try:
            module = importlib.import_module(f"crowdhide.accounting.shuffle.{name}")
        except ImportError:
            continue
        if hasattr(module, "VARIATION_RATIO_MIN_DELTA"):
            module.VARIATION_RATIO_MIN_DELTA = 0.0


def _query(eps0: float, n: int, delta: float) -> tuple[float, float]:
    """``(ε or nan, CPU ms)`` of one ``variation_ratio`` ε query."""
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    began = time.process_time()
    res = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
    spent = time.process_time() - began
    return (res.epsilon if res.conditions_met else math.nan), spent * 1e3


def _run_cells(cells: list[tuple[float, int, float]], *, floor: bool = True) -> list[list[float]]:
    """``[eps, x FMT23, cold ms, warm ms, evaluations, refinements]`` per cell, in this
    process (``floor=False``: :func:`_lift_floor` first)."""
    from crowdhide.accounting.shuffle import variation_ratio
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    if not floor:
        _lift_floor()
    count = _counted(variation_ratio)
    refinements = _counted_refinements(variation_ratio)
    out = []
    for eps0, n, delta in cells:
        _clear_caches()
        count[0] = refinements[0] = 0
        eps, cold = _query(eps0, n, delta)
        out.append([eps, math.nan, cold, math.nan, float(count[0]), float(refinements[0])])
    last: tuple[float, int] | None = None
    for row, (eps0, n, delta) in zip(out, cells, strict=True):
        if last != (eps0, n):
            _clear_caches()
        last = (eps0, n)
        row[3] = _query(eps0, n, delta)[1]
        pair = shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=2, bound="feldman2023", lower=False)
        row[1] = row[0] / pair.epsilon if pair.epsilon > 0 else math.nan
    return out


def _run_in(
    src: str, cells: list[tuple[float, int, float]], *, floor: bool = True
) -> list[list[float]]:
    """:func:`_run_cells` in a fresh process importing ``src``."""
    env = dict(os.environ, PYTHONPATH=src)
    argv = [sys.executable, __file__, "--cells", json.dumps(cells)]
    argv += [] if floor else ["--no-floor"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    result: list[list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _summary(label: str, ms: list[float]) -> str:
    slow = sum(1 for m in ms if m > TARGET_MS)
    return (
        f"{label}: cells > {TARGET_MS:g} ms: {slow} of {len(ms)} (max {max(ms):.0f} ms, "
        f"mean {sum(ms) / len(ms):.0f} ms, total {sum(ms) / 1e3:.1f} s CPU)"
    )


def _line(record: dict[str, Any]) -> str:
    n = f"1e{round(math.log10(record['n']))}"
    line = f"{record['eps0']:>5g} {n:>5} {record['delta']:>7.0e} {record['eps']:>12.7g}"
    line += f" {record['x_fmt23']:>8.5f} {record['ms']:>7.0f} {record['warm_ms']:>7.0f}"
    line += f" {record['evaluations']:>6.0f} {record['refinements']:>5.0f}"
    if "ms_before" in record:
        eps_b, ms_b = record["eps_before"], record["ms_before"]
        change = record["eps"] / eps_b - 1.0 if eps_b > 0 else math.nan
        line += f" {ms_b:>10.0f} {ms_b / max(record['ms'], 1e-3):>8.1f}x {change:>+11.1e}"
        line += f" {record['evaluations_before']:>7.0f}"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ε0 in {1, 4}, n in {1e3, 1e9}")
    parser.add_argument("--tiny", action="store_true", help="the tiny-δ grid (module doc)")
    parser.add_argument("--no-floor", action="store_true", help="solve below the 1e-280 floor")
    parser.add_argument("--baseline", help="another checkout's src directory to compare with")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--cells", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cells:
        cells = [(float(e), int(n), float(d)) for e, n, d in json.loads(args.cells)]
        print(json.dumps(_run_cells(cells, floor=not args.no_floor)))
        return
    here = str(Path(__file__).resolve().parents[1] / "src")
    eps0s, ns = ((1.0, 4.0), (10**3, 10**9)) if args.quick else (EPS0S, NS)
    deltas = TINY_DELTAS if args.tiny else DELTAS
    eps0s = TINY_EPS0S if args.tiny and not args.quick else eps0s
    floor = not args.no_floor
    head = f"{'eps0':>5} {'n':>5} {'delta':>7} {'eps':>12} {'x FMT23':>8} {'cold ms':>7}"
    head += f" {'warm ms':>7} {'evals':>6} {'refin':>5}"
    if args.baseline:
        head += f" {'ms before':>10} {'speed-up':>9} {'eps change':>11} {'before':>7}"
    print(head, flush=True)
    records: list[dict[str, Any]] = []
    for eps0 in eps0s:
        cells = [(eps0, n, d) for n in ns for d in deltas]
        now = _run_in(here, cells, floor=floor)
        before = _run_in(args.baseline, cells, floor=floor) if args.baseline else None
        for i, (e0, n, delta) in enumerate(cells):
            eps, ratio, ms, warm, evaluations, refinements = now[i]
            record = {"eps0": e0, "n": n, "delta": delta, "eps": eps, "x_fmt23": ratio}
            record.update(ms=ms, warm_ms=warm, evaluations=evaluations, refinements=refinements)
            if before is not None:
                record.update(eps_before=before[i][0], ms_before=before[i][2])
                record.update(evaluations_before=before[i][4])
            print(_line(record), flush=True)
            records.append(record)
    print(_summary("now", [r["ms"] for r in records]))
    if args.baseline:
        print(_summary("before", [r["ms_before"] for r in records]))
    finite = [r["x_fmt23"] for r in records if math.isfinite(r["x_fmt23"])]
    print(f"x FMT23: {min(finite):.5f} ... {max(finite):.5f}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=0), encoding="utf-8")


if __name__ == "__main__":
    main()
