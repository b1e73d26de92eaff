"""Time of the shuffle calibrations, each case in a fresh process.

``calibrate_eps0`` (largest ε0 for a target (ε, δ) and n) and ``calibrate_n`` (fewest users
for a target (ε, δ) and ε0), for the generic ε0-LDP randomizer and k-RR. Prints the answer,
the achieved ε and the fastest time of ``--repeat`` processes (import excluded). With
``--baseline SRC`` it runs another checkout's ``src`` directory in alternation and prints
both times, their ratio and the baseline's answer::

    PYTHONPATH=src python benchmarks/bench_calibration.py
    git worktree add /tmp/before <commit>
    PYTHONPATH=src python benchmarks/bench_calibration.py --baseline /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from _fresh_process import run_fresh

CASES: list[tuple[str, dict[str, Any]]] = [
    ("eps0", {"epsilon": 0.5, "delta": 1e-6, "n": 10**4}),
    ("eps0", {"epsilon": 1.0, "delta": 1e-6, "n": 10**6}),
    ("eps0", {"epsilon": 0.1, "delta": 1e-6, "n": 10**5, "k": 4}),
    ("eps0", {"epsilon": 0.3, "delta": 1e-8, "n": 10**3, "k": 10}),
    ("n", {"epsilon": 0.5, "delta": 1e-6, "eps0": 2.0}),
    ("n", {"epsilon": 0.3, "delta": 1e-6, "eps0": 1.5}),
    ("n", {"epsilon": 0.5, "delta": 1e-6, "eps0": 2.0, "k": 4}),
]


def _one(kind: str, case: dict[str, Any]) -> None:
    from crowdhide.accounting.shuffle.calibration import calibrate_eps0, calibrate_n

    began = time.perf_counter()
    answer = (calibrate_eps0 if kind == "eps0" else calibrate_n)(**case)
    spent = time.perf_counter() - began
    print(json.dumps([answer.inputs[kind], answer.epsilon, spent]))


def _measure(src: str, kind: str, case: dict[str, Any], repeat: int) -> tuple[float, float, float]:
    runs = run_fresh(__file__, src, [kind, case], repeat)
    return runs[0][0], runs[0][1], min(r[2] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="another checkout's src directory to compare with")
    parser.add_argument("--repeat", type=int, default=1, help="processes per case (fastest)")
    parser.add_argument("--quick", action="store_true", help="a few cases only")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        kind, case = json.loads(args.one)
        _one(kind, case)
        return
    here = str(Path(__file__).resolve().parents[1] / "src")
    head = f"{'calibrate':<10} {'case':<40} {'answer':>12} {'achieved eps':>13} {'s':>6}"
    if args.baseline:
        head += f" {'answer before':>14} {'s before':>9} {'speed-up':>9}"
    print(head)
    for kind, case in [c for c in CASES if "k" in c[1]] if args.quick else CASES:
        answer, eps, spent = _measure(here, kind, case, args.repeat)
        label = ", ".join(f"{k}={v:g}" for k, v in case.items())
        line = f"{kind:<10} {label:<40} {answer:>12.7g} {eps:>13.9f} {spent:>6.2f}"
        if args.baseline:
            answer_b, _, spent_b = _measure(args.baseline, kind, case, args.repeat)
            line += f" {answer_b:>14.7g} {spent_b:>9.2f} {spent_b / spent:>8.1f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
