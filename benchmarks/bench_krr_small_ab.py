"""Same-run CPU comparison of the exact 3-RR search against an older copy of its module.

Usage::

    git show f1ff04e:src/crowdhide/accounting/shuffle/_krr_small.py > /tmp/krr_small_old.py
    PYTHONPATH=src python benchmarks/bench_krr_small_ab.py /tmp/krr_small_old.py

For each (ε0, n) it times ``SmallKrrExact.epsilon(1e-6)`` and ``.delta(ε0/2)`` of both
versions, alternating (the machine is shared: CPU seconds, best of ``--repeat``), and checks
that the answers agree to 1e-12 — to 1e-8 when a version trims (s20: each version as its
curve runs it, with the module's ``TRIM_RELATIVE`` when it has one; its answer is within
``(1 + e^ε)·TRIM_RELATIVE`` of δ, see ``_krr_small``).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from collections.abc import Callable
from typing import Any

from crowdhide.accounting.shuffle import _krr_small

GRID = ((1.0, 100), (4.0, 100), (1.0, 150), (1.0, 200), (4.0, 200), (0.5, 300), (1.0, 300),
        (2.0, 300), (4.0, 300), (8.0, 300))  # fmt: skip


def _load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("krr_small_old", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make(module: Any, eps0: float, n: int) -> Any:
    """The module's search as its curve configures it (trimmed where the module can trim)."""
    trim = getattr(module, "TRIM_RELATIVE", None)
    if trim is None:
        return module.SmallKrrExact(eps0=eps0, n=n)
    return module.SmallKrrExact(eps0=eps0, n=n, trim=trim)


def _cpu(call: Callable[[], float], repeat: int) -> tuple[float, float]:
    best, value = math.inf, math.nan
    for _ in range(repeat):
        start = time.process_time()
        value = call()
        best = min(best, time.process_time() - start)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="path of the older _krr_small.py")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    old = _load(args.old)
    print(f"{'n':>5} {'eps0':>5} {'eps old s':>9} {'eps new s':>9} {'delta old s':>11} "
          f"{'delta new s':>11} {'eps(1e-6)':>12}")  # fmt: skip
    for eps0, n in GRID:
        row = []
        for kind in ("epsilon", "delta"):
            answers = []
            for module in (old, _krr_small):
                ex = _make(module, eps0, n)
                call = (
                    (lambda ex=ex: ex.epsilon(1e-6, 1e-10))
                    if kind == "epsilon"
                    else (lambda ex=ex, eps=0.5 * eps0: ex.delta(eps))
                )
                seconds, value = _cpu(call, args.repeat)
                row.append(seconds)
                answers.append(value)
            trims = hasattr(old, "TRIM_RELATIVE") or hasattr(_krr_small, "TRIM_RELATIVE")
            tol = 1e-8 if trims else 1e-12
            assert math.isclose(answers[0], answers[1], rel_tol=tol), answers
            if kind == "epsilon":
                eps = answers[1]
        print(f"{n:>5} {eps0:>5g} {row[0]:>9.3f} {row[1]:>9.3f} {row[2]:>11.3f} {row[3]:>11.3f} "
              f"{eps:>12.8f}")  # fmt: skip


if __name__ == "__main__":
    main()
