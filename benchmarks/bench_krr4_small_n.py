"""The exact 4-RR worst case at small n (issue 32 item 4): certificate / lower bound and time.

Usage::

    PYTHONPATH=src python benchmarks/bench_krr4_small_n.py [--quick]

For every (n, ε0) of the grid it asks ε at δ = 1e-6 (k = 4) from ``best`` (which uses
``exact``, the pruned search of ``accounting/shuffle/_krr4_small.py``, for
n <= SMALL4_EXACT_BEST_MAX_N), from ``exact`` itself where it applies (n <= SMALL4_EXACT_MAX_N),
from the best certificate without it (``krr_clone``, ``krr_blanket``) and from ``krr_lower``,
and prints best's source, best / lower (the truth lies between), previous / lower, and the
CPU seconds (time.process_time: the machine is shared) of the best and exact queries.
"""

from __future__ import annotations

import argparse
import time

from crowdhide.accounting.shuffle._krr4_small import SMALL4_EXACT_BEST_MAX_N, SMALL4_EXACT_MAX_N
from crowdhide.accounting.shuffle.generic import shuffle_epsilon

NS = (15, 20, 30, 50, 100)
EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
DELTA = 1e-6


def _eps(bound: str, eps0: float, n: int) -> float:
    return shuffle_epsilon(eps0=eps0, n=n, delta=DELTA, k=4, bound=bound, lower=False).epsilon


def _timed(bound: str | None, eps0: float, n: int) -> tuple[float, str, float]:
    start = time.process_time()
    if bound is None:
        s = shuffle_epsilon(eps0=eps0, n=n, delta=DELTA, k=4, lower=False)
    else:
        s = shuffle_epsilon(eps0=eps0, n=n, delta=DELTA, k=4, bound=bound, lower=False)
    return s.epsilon, s.source, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 15, 20 only")
    args = parser.parse_args()
    print(
        f"delta={DELTA:g}, k=4, exact for n <= {SMALL4_EXACT_MAX_N}, "
        f"in best for n <= {SMALL4_EXACT_BEST_MAX_N}"
    )
    print(f"{'n':>4} {'eps0':>4} {'best':>10} {'source':>11} {'lower':>10} {'best/low':>9} "
          f"{'prev/low':>9} {'exact/low':>9} {'best s':>7} {'exact s':>7}")  # fmt: skip
    for n in NS[:2] if args.quick else NS:
        for eps0 in EPS0S:
            best, source, best_s = _timed(None, eps0, n)
            lower = _eps("krr_lower", eps0, n)
            previous = min(_eps("krr_clone", eps0, n), _eps("krr_blanket", eps0, n))
            exact, exact_s = float("nan"), float("nan")
            if n <= SMALL4_EXACT_MAX_N:
                exact, _, exact_s = _timed("exact", eps0, n)
            print(
                f"{n:>4} {eps0:>4g} {best:>10.6f} {source:>11} {lower:>10.6f} "
                f"{best / lower:>9.5f} {previous / lower:>9.5f} {exact / lower:>9.5f} "
                f"{best_s:>7.3f} {exact_s:>7.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
