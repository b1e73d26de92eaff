"""CPU time (time.process_time) of `crowdhide shuffle epsilon` for k-RR, in-process, per cell.

Runs the CLI's own entry point with ``--json`` over ε0 x n x δ and prints one line per cell:
the process CPU seconds of the query, the certificate, the lower bound and their ratio.
Compare two checkouts in one run by pointing PYTHONPATH at each (issue 32), e.g.

    PYTHONPATH=src python benchmarks/bench_krr_lower_grid.py --mechanism --k 4
    PYTHONPATH=src python benchmarks/bench_krr_lower_grid.py --k 4 --n 1000 --delta 1e-300
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time

from crowdhide.cli import main


def cell(eps0: str, n: str, delta: str, k: str, mechanism: bool) -> tuple[float, str]:
    """CPU seconds of one query and its JSON answer."""
    which = ["--mechanism", "krr", "--d", k] if mechanism else ["--k", k]
    args = ["shuffle", "epsilon", "--eps0", eps0, "--n", n, "--delta", delta, *which, "--json"]
    out = io.StringIO()
    start = time.process_time()
    with contextlib.redirect_stdout(out):
        main(args)
    return time.process_time() - start, out.getvalue()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", default="4")
    parser.add_argument("--mechanism", action="store_true", help="--mechanism krr --d K")
    parser.add_argument("--eps0", nargs="+", default=["0.5", "1", "2", "4", "8"])
    parser.add_argument("--n", nargs="+", default=["1000", "10000", "1000000", "1000000000"])
    parser.add_argument("--delta", nargs="+", default=["1e-6", "1e-10", "1e-300"])
    opts = parser.parse_args()
    cell("1", "1000", "1e-6", opts.k, opts.mechanism)  # warm-up: lazy imports, not a cell
    for n in opts.n:
        for delta in opts.delta:
            for eps0 in opts.eps0:
                cpu, text = cell(eps0, n, delta, opts.k, opts.mechanism)
                answer = json.loads(text)
                upper, lower = answer["epsilon"], (answer.get("lower") or {}).get("epsilon")
                ratio = f"{upper / lower:.5f}" if lower else "-"
                print(f"{eps0} {n} {delta} cpu={cpu:.3f}s eps={upper!r} lower={lower!r} {ratio}")


if __name__ == "__main__":
    run()
