"""The exact 3-RR worst case at small n (issue 32 item 4): time per query and the gap it closes.

Usage::

    PYTHONPATH=src python benchmarks/bench_krr_small_n.py [--quick]

For every (ε0, n) of the grid it asks ε at δ = 1e-6 (k = 3) from ``exact`` (the enumeration
of every dataset class, ``accounting/shuffle/_krr_small.py``), from the best certificate
without it (``krr_clone``, ``krr_blanket``) and from ``krr_lower``, and prints n, ε0, the
three values, previous best / exact, the exact certificate over its own lower bound (the
truth lies between), the CPU seconds of the exact query (the pruned search of
``_krr_small``; target 0.1 s; CPU time is quoted because the machine is shared) and of a
``best`` query (which uses exact for n <= SMALL_EXACT_BEST_MAX_N).
"""

from __future__ import annotations

import argparse
import time

from crowdhide.accounting.shuffle._krr_small import SMALL_EXACT_BEST_MAX_N, SMALL_EXACT_MAX_N
from crowdhide.accounting.shuffle.generic import shuffle_epsilon

GRID = (
    (1.0, 30), (1.0, 60), (1.0, 100), (2.0, 50), (2.0, 100), (4.0, 100), (1.0, 150), (2.0, 150),
    (4.0, 150), (0.5, 300), (1.0, 200), (4.0, 200), (1.0, 300), (2.0, 300), (4.0, 300),
)  # fmt: skip
QUICK = ((1.0, 30), (2.0, 50))
DELTA = 1e-6


def _eps(bound: str, eps0: float, n: int) -> float:
    return shuffle_epsilon(eps0=eps0, n=n, delta=DELTA, k=3, bound=bound, lower=False).epsilon


def _exact_with_lower(eps0: float, n: int) -> tuple[float, float]:
    """The exact certificate's ε and its own lower bound's (the truth lies between)."""
    s = shuffle_epsilon(eps0=eps0, n=n, delta=DELTA, k=3, bound="exact")
    assert s.lower is not None
    return s.epsilon, s.lower.epsilon


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small cells only")
    args = parser.parse_args()
    print(
        f"delta={DELTA:g}, k=3, exact computed for n <= {SMALL_EXACT_MAX_N}, "
        f"in best for n <= {SMALL_EXACT_BEST_MAX_N}"
    )
    print(f"{'n':>5} {'eps0':>5} {'exact':>10} {'prev best':>10} {'krr_lower':>10} "
          f"{'prev/exact':>10} {'cert/low':>12} {'cpu s':>7} {'best s':>7}")  # fmt: skip
    for eps0, n in QUICK if args.quick else GRID:
        start = time.process_time()
        exact = _eps("exact", eps0, n)
        seconds = time.process_time() - start
        start = time.process_time()
        shuffle_epsilon(eps0=eps0, n=n, delta=DELTA, k=3)
        best_seconds = time.process_time() - start
        previous = min(_eps("krr_clone", eps0, n), _eps("krr_blanket", eps0, n))
        lower = _eps("krr_lower", eps0, n)
        certificate, own_lower = _exact_with_lower(eps0, n)
        print(
            f"{n:>5} {eps0:>5g} {exact:>10.6f} {previous:>10.6f} {lower:>10.6f} "
            f"{previous / exact:>10.4f} {certificate / own_lower:>12.10f} {seconds:>7.2f} "
            f"{best_seconds:>7.2f}"
        )


if __name__ == "__main__":
    main()
