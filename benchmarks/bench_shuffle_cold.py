"""First-query time of the shuffle accountant: each case in a fresh process (cold caches).

``bench_shuffle.py`` times queries inside one long process, where the ε-independent layouts
of earlier queries are cached; a command-line user pays the first query. This script runs
every case (``shuffle_epsilon(..., lower=False)`` at δ = 1e-6: the generic randomizer and
k-RR with k = 3, 10) in its own process, ``--repeat`` times, and prints the fastest time
(import excluded) and the certificate's ε. With ``--baseline SRC`` it does the same with
another checkout's ``src`` directory, in alternation, and prints both, their ratio and the
relative change of ε::

    PYTHONPATH=src python benchmarks/bench_shuffle_cold.py
    git worktree add /tmp/before <commit>
    PYTHONPATH=src python benchmarks/bench_shuffle_cold.py --baseline /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from _fresh_process import run_fresh

CASES: list[dict[str, Any]] = [
    {"eps0": e, "n": n} for e in (0.5, 1.0, 4.0) for n in (100, 1000, 10**4, 10**6, 10**9)
] + [
    {"eps0": e, "n": n, "k": k}
    for e in (1.0, 4.0)
    for n in (100, 1000, 10**5, 10**9)
    for k in (3, 10)
]


def _one(case: dict[str, Any]) -> None:
    from crowdhide.accounting.shuffle.generic import shuffle_epsilon

    began = time.perf_counter()
    answer = shuffle_epsilon(delta=1e-6, lower=False, **case)
    spent = time.perf_counter() - began
    print(json.dumps([answer.epsilon, answer.source, spent]))


def _measure(src: str, case: dict[str, Any], repeat: int) -> tuple[float, str, float]:
    runs = run_fresh(__file__, src, case, repeat)
    return runs[0][0], runs[0][1], min(r[2] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="another checkout's src directory to compare with")
    parser.add_argument("--repeat", type=int, default=2, help="processes per case (fastest)")
    parser.add_argument("--quick", action="store_true", help="a few cases only")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(json.loads(args.one))
        return
    here = str(Path(__file__).resolve().parents[1] / "src")
    head = f"{'case':<34} {'certificate':<16} {'eps':>13} {'ms':>7}"
    if args.baseline:
        head += f" {'ms before':>10} {'speed-up':>9} {'eps change':>11}"
    print(head)
    total = total_before = 0.0
    cases = [c for c in CASES if c["n"] in (1000, 10**9)][:6] if args.quick else CASES
    for case in cases:
        eps, source, spent = _measure(here, case, args.repeat)
        total += spent
        label = ", ".join(f"{k}={v:g}" for k, v in case.items())
        line = f"{label:<34} {source:<16} {eps:>13.8g} {spent * 1e3:>7.0f}"
        if args.baseline:
            eps_b, _, spent_b = _measure(args.baseline, case, args.repeat)
            total_before += spent_b
            line += f" {spent_b * 1e3:>10.0f} {spent_b / spent:>8.1f}x {eps / eps_b - 1:>+11.1e}"
        print(line, flush=True)
    summary = f"total {total:.2f} s"
    if args.baseline:
        summary += f" (before {total_before:.2f} s, {total_before / total:.1f}x)"
    print(summary)


if __name__ == "__main__":
    main()
