"""Composed generic shuffles: the FMT21 clone pair against the profile pair (issue 32 item 3).

Usage::

    PYTHONPATH=src python benchmarks/bench_profile_pair.py [--quick] [--json FILE]
        [--rounds 1 10 100 10000] [--no-fmt21]

For every ε0 in {0.5, 1, 2, 4, 8}, n in {1e3, 1e4, 1e6} and rounds R it prints ε at
δ = 1e-6 of R adaptively composed shuffles of n reports of any ε0-LDP randomizer, from the
FMT21 clone pair's PLD and from the profile pair of the single-round certificate
(``accounting.shuffle.profile_pair``), with the CPU seconds of each: for the profile pair
the single-round profile (once per (ε0, n), cached after) and the composition apart.
``composed_shuffle`` reports the smaller of the two. Target (issue 32): R = 1e4 in <= 1 s.
CPU time is quoted because the benchmark machine is shared. Every cell starts cold (the
profile pair's caches and the certificate's layouts, tables and tail memo emptied), so
"profile s + compose s" is what a first query in a fresh process pays besides imports
(those a composition imports lazily are imported before the first cell).
One round is the single-round certificate itself (no profile is built).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from crowdhide.accounting.shuffle import _profile_grid as pg
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle.composition import (
    CLONE_PAIR_REGISTRY,
    ComposedShuffleParams,
    _interval_for,
    _log_tail_for,
)

EPS0S = (0.5, 1.0, 2.0, 4.0, 8.0)
NS = (10**3, 10**4, 10**6)
ROUNDS = (1, 10, 100, 10**4)
DELTA = 1e-6


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.process_time()
    value = fn()
    return value, time.process_time() - start


def _params(eps0: float, n: int, rounds: int) -> ComposedShuffleParams:
    return ComposedShuffleParams(
        eps0=eps0,
        n=n,
        rounds=rounds,
        discretization=_interval_for(rounds, None),
        log_tail=_log_tail_for(DELTA),
    )


def _cold() -> None:
    """Empty the caches a first query in a fresh process would find empty."""
    from crowdhide.accounting import binomial_tails
    from crowdhide.accounting.shuffle import (
        _krr_fast,
        _profile_batch,
        _split_clone,
        variation_ratio,
    )

    pp.certified_profile.cache_clear()
    pg._placement.cache_clear()
    # other modules' caches, where they have them (their layout may change; the per-point
    # cache of older versions, so the same file times both)
    for owner, name in (
        (pp, "_composed"),
        (pp, "_pair_items"),
        (pp, "_certified_at"),
        (pg, "_certified_values"),
        (pg, "_others_at"),
        (pg, "_member_at"),
        (pg, "_fmt21_atoms"),
        (_krr_fast, "_clone_layout"),
        (_split_clone, "_layout"),
        (variation_ratio, "_supremum"),
        (variation_ratio, "_top_log_delta"),
        (binomial_tails, "_TAIL_MEMO"),
        (_profile_batch, "_POINT_MEMO"),
    ):
        clear = getattr(getattr(owner, name, None), "cache_clear", None)
        if clear is not None:
            clear()


def _warm_imports() -> None:
    """Import what the first composition imports lazily (dp_accounting's PLD, SciPy's
    signal and FFT modules: about 1.5 s CPU here), so the first cell is not charged for it."""
    import dp_accounting.pld.pld_pmf
    import dp_accounting.pld.privacy_loss_distribution
    import scipy.fft
    import scipy.signal

    del dp_accounting, scipy


def row(eps0: float, n: int, rounds: int, fmt21: bool) -> dict[str, Any]:
    """One cell, cold: both values (nan where not computed) and their CPU seconds."""
    params = _params(eps0, n, rounds)
    _cold()
    fine = rounds < pp.FINE_BELOW_ROUNDS
    _, t_profile = _timed(lambda: rounds > 1 and pp.certified_profile(eps0, n, fine))
    statement, t_pair = _timed(
        lambda: pp.PROFILE_PAIR_REGISTRY.statement("profile_pair", params, delta=DELTA)
    )
    out = {
        "eps0": eps0,
        "n": n,
        "rounds": rounds,
        "profile_pair": statement.epsilon if statement.conditions_met else float("nan"),
        "profile_s": t_profile,
        "compose_s": t_pair,
        "fmt21": float("nan"),
        "fmt21_s": float("nan"),
    }
    if fmt21:
        fmt, t_fmt = _timed(
            lambda: CLONE_PAIR_REGISTRY.statement("feldman2021", params, delta=DELTA)
        )
        out |= {"fmt21": fmt.epsilon, "fmt21_s": t_fmt}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="eps0 in {1, 4}, n = 1e4 only")
    parser.add_argument("--rounds", type=int, nargs="+", default=list(ROUNDS))
    parser.add_argument("--no-fmt21", action="store_true", help="skip the FMT21 pair")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    eps0s, ns = ((1.0, 4.0), (10**4,)) if args.quick else (EPS0S, NS)
    _warm_imports()
    rows = []
    print("eps0      n  rounds   FMT21 eps  (CPU s)   profile eps  (profile s + compose s)")
    for eps0 in eps0s:
        for n in ns:
            for rounds in args.rounds:
                r = row(eps0, n, rounds, not args.no_fmt21)
                rows.append(r)
                print(
                    f"{eps0:4g} {n:8.0e} {rounds:6d}  {r['fmt21']:10.4g} ({r['fmt21_s']:6.2f})"
                    f"   {r['profile_pair']:10.4g}  ({r['profile_s']:5.2f} + "
                    f"{r['compose_s']:5.2f})",
                    flush=True,
                )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
