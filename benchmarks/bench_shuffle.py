"""Benchmark of the shuffle accountant: tightness and time per query against n.

Usage::

    PYTHONPATH=src python benchmarks/bench_shuffle.py [--quick] [--delta 1e-6] [--mechanisms a,b]
        [--krr 4,10] [--dispatch]

For every randomizer class (k-RR with k = 2, 4, 10, a generic ε0-LDP randomizer and each
mechanism of :mod:`crowdhide.accounting.shuffle_mechanisms`; their ms columns time the
mechanism certificate and lower bound alone), every
ε0 in {0.5, 1, 4} and n = 1e2 … 1e9 it prints the ε of the best certificate at δ, the ε of
the lower bound (``krr_lower`` / ``ldp_lower``), their ratio (how far the truth can be from
the certificate), the certificate's name, and the CPU time of one query (``shuffle_epsilon``
with root finding; the lower bound's query timed separately). For k = 2 the certificate
beyond n = 2500 is ``binary_rr_blocks`` (blocks of datasets, cores evaluated by contour
integrals; each row's query is cold: its set-up is included). For the generic randomizer the
column "x FMT23" is the certificate's ε over that of the FMT23 clone pair, the value Wang et
al. give for every ε0-LDP randomizer. Targets (issue 15): k-RR ratio <= 1.01 and <= 100 ms
per certificate query at n = 1e9; generic within 1.01x of the FMT23 value. CPU time of
this process is quoted because the benchmark machine is shared.

``--dispatch dispatcher|former`` (issue 28) times ten ``--mechanism`` questions (each
mechanism at n = 1e4, OUE and k-RR also at n = 1e6, each at its own ε0 in 0.5 … 2.75)
through the dispatcher :func:`crowdhide.accounting.shuffle_query.shuffle_epsilon` (the
mechanism's certificate and lower bound; Laplace also the generic variation-ratio bound) or
the former CLI path ``mechanism_epsilon`` (which also evaluated every generic bound). Run
each in its own process and compare the totals and the ε columns (they must be equal).
"""

from __future__ import annotations

import argparse
import functools
import math
import resource
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from crowdhide.accounting.shuffle import shuffle_epsilon
from crowdhide.accounting.shuffle_mechanisms import (
    MECHANISMS,
    mechanism_curve,
    mechanism_lower_curve,
)

#: Domain sizes used for the mechanism rows (subset: k = 4 of d = 16; olh: g = 8 buckets;
#: piecewise and laplace: input in [-1, 1], no d).
MECHANISM_DOMAIN: dict[str, int | None] = {
    "krr": 16,
    "oue": 16,
    "rappor": 16,
    "subset": 16,
    "olh": 8,
    "hadamard": 16,
    "piecewise": None,
    "laplace": None,
}


def _time(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}" if seconds >= 0.01 else f"{seconds * 1e3:.1f}"


def _row(k: int | None, eps0: float, n: int, delta: float) -> list[str]:
    t_cert, cert = _time(lambda: shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, lower=False))
    lower_name = "krr_lower" if k is not None else "ldp_lower"
    t_low, low = _time(
        lambda: shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound=lower_name, lower=False)
    )
    ratio = cert.epsilon / low.epsilon if low.epsilon > 0 else math.inf
    fmt23 = ""
    if k is None:  # the value Wang et al. give for every eps0-LDP randomizer (the FMT23 pair)
        pair = shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=2, bound="feldman2023", lower=False)
        fmt23 = f"{cert.epsilon / pair.epsilon:.4f}" if pair.epsilon > 0 else "-"
    return [
        "generic" if k is None else f"k={k}",
        f"{eps0:g}",
        f"1e{round(math.log10(n))}",
        f"{cert.epsilon:.6g}",
        f"{low.epsilon:.6g}",
        f"{ratio:.4f}",
        fmt23,
        cert.source,
        _ms(t_cert),
        _ms(t_low),
    ]


def _mechanism_row(name: str, eps0: float, n: int, delta: float) -> list[str]:
    d = MECHANISM_DOMAIN[name]
    k = 4 if MECHANISMS[name].needs_k else None
    t_cert, cert = _time(
        lambda: mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d, k=k).epsilon(delta)
    )
    t_low, low = _time(
        lambda: mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=d, k=k).epsilon(delta)
    )
    generic = shuffle_epsilon(eps0=eps0, n=n, delta=delta, lower=False).epsilon
    best = min(cert, generic, eps0)
    label = f"mechanism:{name}" if cert <= generic else "generic"
    ratio = best / low if low > 0 else math.inf
    return [
        name if d is None else f"{name} (d={d})",
        f"{eps0:g}",
        f"1e{round(math.log10(n))}",
        f"{best:.6g}",
        f"{low:.6g}",
        f"{ratio:.4f}",
        "",
        label,
        _ms(t_cert),
        _ms(t_low),
    ]


def _dispatch_table(delta: float, path: str) -> Table:
    """Ten mechanism questions through one path (module docstring); each path in its own
    process, so that neither warms the other's caches."""
    from crowdhide.accounting.shuffle_mechanisms import mechanism_epsilon
    from crowdhide.accounting.shuffle_query import shuffle_epsilon as ask

    call = ask if path == "dispatcher" else mechanism_epsilon
    cases = [(m, 10**4) for m in MECHANISMS] + [("oue", 10**6), ("krr", 10**6)]
    table = Table(title=f"ten --mechanism questions, {path} path, delta={delta:g} (CPU ms)")
    for col in ("mechanism", "eps0", "n", "eps", "ms"):
        table.add_column(col, justify="right")
    total = 0.0
    for i, (name, n) in enumerate(cases):
        eps0 = 0.5 + 0.25 * i  # a different eps0 per question: no cached generic answer
        kw: dict[str, Any] = {"mechanism": name, "eps0": eps0, "n": n, "delta": delta}
        kw |= {"d": MECHANISM_DOMAIN[name], "k": 4 if name == "subset" else None}
        seconds, result = _time(functools.partial(call, **kw))
        total += seconds
        table.add_row(name, f"{eps0:g}", f"{n:.0e}", f"{result.epsilon:.6g}", _ms(seconds))
    table.add_row("total", "", "", "", _ms(total))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n in {1e2, 1e4, 1e6, 1e9}, eps0=1")
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument(
        "--mechanisms", default="", help="comma-separated mechanism rows only (e.g. laplace,olh)"
    )
    parser.add_argument(
        "--krr", default="", help="comma-separated k-RR rows only (e.g. 4,10; 0 for generic)"
    )
    parser.add_argument(
        "--dispatch",
        choices=("dispatcher", "former"),
        help="only the ten --mechanism questions through one path (issue 28)",
    )
    args = parser.parse_args()
    if args.dispatch:
        Console(width=160).print(_dispatch_table(args.delta, args.dispatch))
        return
    ns = [10**2, 10**4, 10**6, 10**9] if args.quick else [10**e for e in range(2, 10)]
    eps0s = [1.0] if args.quick else [0.5, 1.0, 4.0]
    console = Console(width=160)
    table = Table(title=f"shuffled eps at delta={args.delta:g}: certificate vs lower bound")
    for col in ("randomizer", "eps0", "n", "eps cert", "eps lower", "ratio", "x FMT23"):
        table.add_column(col, justify="right")
    table.add_column("certificate", justify="right")
    table.add_column("ms/query", justify="right")
    table.add_column("ms lower", justify="right")
    mechanisms = [m for m in args.mechanisms.split(",") if m]
    unknown = sorted(set(mechanisms) - set(MECHANISMS))
    if unknown:
        parser.error(f"--mechanisms: unknown {', '.join(unknown)} (known: {', '.join(MECHANISMS)})")
    ks: tuple[int | None, ...] = tuple(int(k) or None for k in args.krr.split(",") if k)
    if not mechanisms and not ks:  # everything
        ks, mechanisms = (2, 4, 10, None), list(MECHANISMS)
    for k in ks:
        for eps0 in eps0s:
            for n in ns:
                table.add_row(*_row(k, eps0, n, args.delta))
    for name in mechanisms:
        for eps0 in eps0s:
            for n in ns:
                table.add_row(*_mechanism_row(name, eps0, n, args.delta))
    console.print(table)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(f"peak resident memory of this benchmark process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
