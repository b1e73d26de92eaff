"""Time per query of the generic certificate ``variation_ratio`` alone (issue 32).

Usage::

    PYTHONPATH=src python benchmarks/bench_shuffle_vratio.py [--quick] [--warm]
        [--baseline OTHER/src] [--json FILE]

For every ε0 in {0.5, 1, 2, 4, 6, 8}, n in {1e3, 1e4, 1e6, 1e9} and δ in {1e-6, 1e-10,
1e-300} it asks ``shuffle_epsilon(bound="variation_ratio", lower=False)`` (ε at δ, the root
search included) and prints the CPU ms of the query, the certificate's ε and its ratio to
the FMT23 clone pair's ε (issue 32: within 1.001; computed untimed), then the largest and
the mean time. Every query is cold: the accountant's caches (every ``functools`` cache of
the modules it uses) are emptied first. ``--warm`` keeps them across the δ of one (ε0, n)
instead (a curve or a calibration asks one (ε0, n) several times). Below δ = 1e-280 the
certificate declares itself not applicable (``VARIATION_RATIO_MIN_DELTA``): those cells
time the refusal and show ε as nan.

``--baseline SRC`` runs the same grid with another checkout's ``src`` in subprocesses,
alternating with this one per ε0 (so both see the same machine load), and prints both
times, their ratio and the relative change of ε per cell. Target (issue 32): every query
<= 100 ms. CPU time is quoted because the benchmark machine is shared.
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


def _run_cells(cells: list[tuple[float, int, float]], warm: bool) -> list[list[float]]:
    """``[eps, x FMT23, CPU ms]`` per cell, in this process."""
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    out = []
    last: tuple[float, int] | None = None
    for eps0, n, delta in cells:
        if not warm or last != (eps0, n):
            _clear_caches()
        last = (eps0, n)
        began = time.process_time()
        res = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
        spent = time.process_time() - began
        eps = res.epsilon if res.conditions_met else math.nan
        pair = shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=2, bound="feldman2023", lower=False)
        ratio = eps / pair.epsilon if pair.epsilon > 0 else math.nan
        out.append([eps, ratio, spent * 1e3])
    return out


def _run_in(src: str, cells: list[tuple[float, int, float]], warm: bool) -> list[list[float]]:
    """:func:`_run_cells` in a fresh process importing ``src``."""
    env = dict(os.environ, PYTHONPATH=src)
    argv = [sys.executable, __file__, "--cells", json.dumps(cells)] + (["--warm"] if warm else [])
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    result: list[list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _summary(label: str, ms: list[float]) -> str:
    slow = sum(1 for m in ms if m > TARGET_MS)
    return (
        f"{label}: max {max(ms):.0f} ms, mean {sum(ms) / len(ms):.0f} ms, "
        f"{slow} of {len(ms)} above {TARGET_MS:g} ms, total {sum(ms) / 1e3:.1f} s CPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ε0 in {1, 4}, n in {1e3, 1e9}")
    parser.add_argument("--warm", action="store_true", help="caches kept per (ε0, n)")
    parser.add_argument("--baseline", help="another checkout's src directory to compare with")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--cells", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cells:
        cells = [(float(e), int(n), float(d)) for e, n, d in json.loads(args.cells)]
        print(json.dumps(_run_cells(cells, args.warm)))
        return
    here = str(Path(__file__).resolve().parents[1] / "src")
    eps0s, ns = ((1.0, 4.0), (10**3, 10**9)) if args.quick else (EPS0S, NS)
    head = f"{'eps0':>5} {'n':>5} {'delta':>7} {'eps':>12} {'x FMT23':>8} {'ms':>7}"
    if args.baseline:
        head += f" {'ms before':>10} {'speed-up':>9} {'eps change':>11}"
    print(head, flush=True)
    records: list[dict[str, Any]] = []
    for eps0 in eps0s:
        cells = [(eps0, n, d) for n in ns for d in DELTAS]
        now = _run_in(here, cells, args.warm)
        before = _run_in(args.baseline, cells, args.warm) if args.baseline else None
        for i, (e0, n, delta) in enumerate(cells):
            eps, ratio, ms = now[i]
            line = f"{e0:>5g} {f'1e{round(math.log10(n))}':>5} {delta:>7.0e} {eps:>12.7g}"
            line += f" {ratio:>8.5f} {ms:>7.0f}"
            record = {"eps0": e0, "n": n, "delta": delta, "eps": eps, "x_fmt23": ratio, "ms": ms}
            if before is not None:
                eps_b, _, ms_b = before[i]
                change = eps / eps_b - 1.0 if eps_b > 0 else math.nan
                line += f" {ms_b:>10.0f} {ms_b / max(ms, 1e-3):>8.1f}x {change:>+11.1e}"
                record.update(eps_before=eps_b, ms_before=ms_b)
            print(line, flush=True)
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
