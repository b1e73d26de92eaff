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

``--rounds R`` times instead the first *composed* query of a process
(``composed_shuffle(eps0, n, delta, rounds=R)``, the generic randomizer) over the issue-32
table's ε0 ∈ {0.5 … 8} × n ∈ {1e3, 1e4, 1e6, 1e9}: what the first cell of an (ε0, n) of
``bench_shuffle.py --table --rows R=10`` pays (the certificate's fine profile, the pair, the
composition). The modules that query imports lazily, and dp_accounting's PLD, are imported
before the clock (as the table's process has them after its first cell); the time is CPU
(``process_time``, as the table's)::

    PYTHONPATH=src python benchmarks/bench_shuffle_cold.py --rounds 10 --baseline /tmp/before/src
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


#: The table's grid for ``--rounds`` (``bench_shuffle_alternate.EPS0S``, ``NS``).
COMPOSED_CASES: list[dict[str, Any]] = [
    {"eps0": e, "n": n} for e in (0.5, 1.0, 2.0, 4.0, 8.0) for n in (10**3, 10**4, 10**6, 10**9)
]


def _one_composed(case: dict[str, Any]) -> None:
    import importlib

    import dp_accounting.pld.privacy_loss_distribution  # noqa: F401

    from crowdhide.accounting.shuffle.composition import composed_shuffle

    for name in ("_profile_grid", "_profile_batch", "_tilted_pld", "_fmt21_floor", "certificate"):
        importlib.import_module(f"crowdhide.accounting.shuffle.{name}")
    query = dict(case)
    rounds, delta = query.pop("rounds"), query.pop("delta")
    began = time.process_time()
    answer = composed_shuffle(delta=delta, rounds=rounds, **query)
    spent = time.process_time() - began
    print(json.dumps([answer.epsilon, answer.source, spent]))


def _measure(src: str, case: dict[str, Any], repeat: int) -> tuple[float, str, float]:
    runs = run_fresh(__file__, src, case, repeat)
    return runs[0][0], runs[0][1], min(r[2] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="another checkout's src directory to compare with")
    parser.add_argument("--repeat", type=int, default=2, help="processes per case (fastest)")
    parser.add_argument("--quick", action="store_true", help="a few cases only")
    parser.add_argument("--rounds", type=int, help="time composed_shuffle(rounds=R) instead")
    parser.add_argument("--delta", type=float, default=1e-6, help="δ of --rounds (1e-6)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        case = json.loads(args.one)
        if "rounds" in case:
            _one_composed(case)
        else:
            _one(case)
        return
    here = str(Path(__file__).resolve().parents[1] / "src")
    width = 42 if args.rounds else 34
    head = f"{'case':<{width}} {'certificate':<16} {'eps':>13} {'ms':>7}"
    if args.baseline:
        head += f" {'ms before':>10} {'speed-up':>9} {'eps change':>11}"
    print(head)
    total = total_before = 0.0
    slow = 0
    cases = [c for c in CASES if c["n"] in (1000, 10**9)][:6] if args.quick else CASES
    if args.rounds:
        cases = [dict(c, rounds=args.rounds, delta=args.delta) for c in COMPOSED_CASES]
        cases = cases[:4] if args.quick else cases
    for case in cases:
        eps, source, spent = _measure(here, case, args.repeat)
        total += spent
        slow += spent > 0.1
        label = ", ".join(f"{k}={v:g}" for k, v in case.items())
        line = f"{label:<{width}} {source:<16} {eps:>13.8g} {spent * 1e3:>7.0f}"
        if args.baseline:
            eps_b, _, spent_b = _measure(args.baseline, case, args.repeat)
            total_before += spent_b
            line += f" {spent_b * 1e3:>10.0f} {spent_b / spent:>8.1f}x {eps / eps_b - 1:>+11.1e}"
        print(line, flush=True)
    summary = f"total {total:.2f} s, {slow} of {len(cases)} above 100 ms"
    if args.baseline:
        summary += f" (before {total_before:.2f} s, {total_before / total:.1f}x)"
    print(summary)


if __name__ == "__main__":
    main()
