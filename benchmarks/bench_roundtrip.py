"""Round trip of the two shuffle queries over the cells of ``bench_shuffle.py --table``.

For each cell (row, ε0, n, δ) it asks ε* = ``shuffle_epsilon(δ)`` and then
``shuffle_delta(ε*)`` with the same other inputs, and prints δ_query / δ: a ratio above 1
means a user who checks one query with the other sees a contradiction (both answers are
valid upper bounds, but the δ query did not find the bound the ε search certified with).
``--reverse`` also asks the other way round where it is cheap: ε' = ``shuffle_epsilon(δ =
shuffle_delta(ε).delta)`` and prints ε' / ε (a ratio above ``1 + --tolerance`` is reported).

Rows are those of ``bench_shuffle.TABLE_ROWS`` and are asked as that table asks them: the
generic randomizer and k-RR through :func:`crowdhide.accounting.shuffle.query.shuffle_epsilon`
(``k=``), the mechanisms with ``bench_shuffle.MECHANISM_DOMAIN``'s d (subset: k = 4), and
the rows ``R=...`` through :func:`crowdhide.accounting.shuffle.composition.composed_shuffle`
(the composition path even at R = 1). Finite answers only: a cell whose ε* is infinite or
not a certificate is listed as skipped.

``--baseline SRC`` times the δ queries instead: the ε answers are computed here first
(untimed), then two worker processes, one on ``SRC`` (e.g. /tmp/s33-start/src, main at
session start) and one on this checkout's ``src``, ask δ at each ε answer alternately, cell by
cell (the order of the two alternating), and the CPU seconds of each are printed per row.

Command::

    PYTHONPATH=src python benchmarks/bench_roundtrip.py [--rows generic,k=3,oue,R=10]
        [--delta 1e-6,1e-300] [--eps0 1,8] [--ns 1e3,1e9] [--reverse] [--json FILE]
        [--baseline /tmp/s33-start/src]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _line_worker import ask_worker, start_worker
from bench_shuffle import MECHANISM_DOMAIN, TABLE_ROWS

EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NS = (10**3, 10**4, 10**6, 10**9)
DELTAS = (1e-6, 1e-10, 1e-300)


def row_queries(row: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(ε at δ, δ at ε)`` of one table row, each taking ``eps0, n`` and the asked value
    (``delta=`` or ``epsilon=``) and returning a statement."""
    from crowdhide.accounting.shuffle.composition import composed_shuffle
    from crowdhide.accounting.shuffle.query import shuffle_delta, shuffle_epsilon
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS

    if row.startswith("R="):
        rounds = int(row[2:])

        def composed(**kw: Any) -> Any:
            return composed_shuffle(rounds=rounds, **kw)

        return composed, composed
    extra: dict[str, Any] = {}
    if row == "generic":
        pass
    elif row.startswith("k="):
        extra["k"] = int(row[2:])
    else:
        extra = {"mechanism": row, "d": MECHANISM_DOMAIN[row]}
        if MECHANISMS[row].needs_k:
            extra["k"] = 4

    def eps_at(**kw: Any) -> Any:
        return shuffle_epsilon(**kw, **extra)

    def delta_at(**kw: Any) -> Any:
        return shuffle_delta(**kw, **extra)

    return eps_at, delta_at


def round_trip(row: str, eps0: float, n: int, delta: float) -> dict[str, Any]:
    """One cell: ε* at δ, δ at ε*, their ratio and the CPU seconds of each query."""
    eps_at, delta_at = row_queries(row)
    start = time.process_time()
    first = eps_at(eps0=eps0, n=n, delta=delta)
    mid = time.process_time()
    cell: dict[str, Any] = {"row": row, "eps0": eps0, "n": n, "delta": delta}
    cell |= {"eps": first.epsilon, "source": first.source, "eps_ms": (mid - start) * 1e3}
    if not (first.is_certificate and math.isfinite(first.epsilon)):
        return cell | {"back": math.nan, "ratio": math.nan, "delta_ms": 0.0}
    back = delta_at(eps0=eps0, n=n, epsilon=first.epsilon)
    end = time.process_time()
    cell |= {"back": back.delta, "back_source": back.source, "delta_ms": (end - mid) * 1e3}
    return cell | {"ratio": back.delta / delta}


def reverse_trip(row: str, eps0: float, n: int, epsilon: float) -> float:
    """ε' / ε for ε' = ε at (δ at ε): at most 1 + the ε search's tolerance when consistent."""
    eps_at, delta_at = row_queries(row)
    back = delta_at(eps0=eps0, n=n, epsilon=epsilon).delta
    if not 0.0 < back < 1.0:
        return math.nan
    return float(eps_at(eps0=eps0, n=n, delta=back).epsilon) / epsilon


_WORKER = f"""
import json, sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import bench_roundtrip as b
b.row_queries("R=2")[0](eps0=1.0, n=1000, delta=1e-6)  # imports and dp_accounting, untimed
for line in sys.stdin:
    row, eps0, n, eps = json.loads(line)
    start = time.process_time()
    value = b.row_queries(row)[1](eps0=eps0, n=n, epsilon=eps).delta
    print(json.dumps([value, time.process_time() - start]), flush=True)
"""


def time_delta_queries(cells: list[dict[str, Any]], baseline: str) -> None:
    """δ at each cell's ε answer asked of ``baseline`` and of this checkout alternately."""
    here = str(Path(__file__).resolve().parent.parent / "src")
    procs = {"base": start_worker(baseline, _WORKER), "new": start_worker(here, _WORKER)}
    totals: dict[str, dict[str, float]] = {}
    try:
        for i, cell in enumerate(c for c in cells if math.isfinite(c["ratio"])):
            ask = [cell["row"], cell["eps0"], cell["n"], cell["eps"]]
            order = ("base", "new") if i % 2 == 0 else ("new", "base")
            got = {name: ask_worker(procs[name], ask) for name in order}
            row = totals.setdefault(cell["row"], {"base": 0.0, "new": 0.0})
            for name in order:
                row[name] += got[name][1]
            ms = f"{got['base'][1] * 1e3:.0f} / {got['new'][1] * 1e3:.0f}"
            where = f"{cell['row']:>10} {cell['eps0']:>4g} {cell['n']:>10} {cell['delta']:>7.0e}"
            deltas = f"δ base {got['base'][0]:.6g} new {got['new'][0]:.6g}"
            print(f"{where} {deltas}  ms {ms}", flush=True)
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    base = sum(t["base"] for t in totals.values())
    new = sum(t["new"] for t in totals.values())
    for row, t in totals.items():
        print(
            f"{row:>10} δ-query CPU s: base {t['base']:.2f} new {t['new']:.2f} "
            f"ratio {t['new'] / t['base']:.3f}"
        )
    print(f"all rows: base {base:.2f} s, new {new:.2f} s, ratio {new / base:.3f}")


def _floats(text: str, default: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v) or default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", default="", help="comma-separated table rows")
    parser.add_argument("--delta", default="", help="comma-separated δ (default 1e-6,1e-10,1e-300)")
    parser.add_argument("--eps0", default="", help="comma-separated ε0")
    parser.add_argument("--ns", default="", help="comma-separated n")
    parser.add_argument("--reverse", action="store_true", help="also ε at (δ at ε*)")
    parser.add_argument("--tolerance", type=float, default=1e-6, help="--reverse: allowed ε'/ε - 1")
    parser.add_argument("--json", default=None, help="also write the cells here")
    parser.add_argument("--baseline", default=None, help="time δ queries against this src")
    args = parser.parse_args()
    rows = [r for r in args.rows.split(",") if r] or list(TABLE_ROWS)
    unknown = sorted(set(rows) - set(TABLE_ROWS))
    if unknown:
        parser.error(f"--rows: unknown {', '.join(unknown)}")
    deltas = _floats(args.delta, DELTAS)
    eps0s = _floats(args.eps0, EPS0S)
    ns = tuple(round(v) for v in _floats(args.ns, tuple(float(n) for n in NS)))
    print(f"{'row':>10} {'eps0':>4} {'n':>5} {'delta':>7} {'eps*':>14} {'d(eps*)/d':>12} "
          f"{'ms eps':>7} {'ms d':>7}  sources" + ("  eps'/eps" if args.reverse else ""),
          flush=True)  # fmt: skip
    cells = []
    for row in rows:
        for eps0 in eps0s:
            for n in ns:
                for delta in deltas:
                    cell = round_trip(row, eps0, n, delta)
                    line = (
                        f"{row:>10} {eps0:>4g} {f'1e{round(math.log10(n))}':>5} {delta:>7.0e} "
                        f"{cell['eps']:>14.9g} {cell['ratio']:>12.6g} {cell['eps_ms']:>7.0f} "
                        f"{cell['delta_ms']:>7.0f}  {cell['source']}->{cell.get('back_source')}"
                    )
                    if cell["ratio"] > 1.0:
                        line += "  ABOVE"
                    if args.reverse and math.isfinite(cell["ratio"]):
                        cell["reverse"] = reverse_trip(row, eps0, n, cell["eps"])
                        line += f"  {cell['reverse']:.9g}"
                        if cell["reverse"] > 1.0 + args.tolerance:
                            line += " REV"
                    print(line, flush=True)
                    cells.append(cell)
    _summary(cells, args.reverse, args.tolerance)
    if args.baseline:
        time_delta_queries(cells, args.baseline)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(cells, fh, indent=0)


def _summary(cells: list[dict[str, Any]], reverse: bool, tolerance: float) -> None:
    """Per row: cells asked, skipped, above (δ query > δ), the worst ratio, CPU of both."""
    print(f"{'row':>10} {'cells':>5} {'skip':>4} {'above':>5} {'max ratio':>12} "
          f"{'eps s':>7} {'delta s':>7}" + ("  rev>tol" if reverse else ""))  # fmt: skip
    for row in dict.fromkeys(c["row"] for c in cells):
        mine = [c for c in cells if c["row"] == row]
        ratios = [c["ratio"] for c in mine if math.isfinite(c["ratio"])]
        above = sum(r > 1.0 for r in ratios)
        worst = max(ratios, default=math.nan)
        line = (
            f"{row:>10} {len(mine):>5} {len(mine) - len(ratios):>4} {above:>5} {worst:>12.6g} "
            f"{sum(c['eps_ms'] for c in mine) / 1e3:>7.2f} "
            f"{sum(c['delta_ms'] for c in mine) / 1e3:>7.2f}"
        )
        if reverse:
            line += f"  {sum(c.get('reverse', 0.0) > 1.0 + tolerance for c in mine):>7}"
        print(line)
    total = sum(math.isfinite(c["ratio"]) and c["ratio"] > 1.0 for c in cells)
    print(f"{total} of {len(cells)} cells: the δ query at ε* is above δ")


if __name__ == "__main__":
    main()
