"""How far any clone certificate can go for k-subset and local hashing (issue 32, item 2).

Usage::

    PYTHONPATH=src python benchmarks/bench_clone_floor.py [--json ROWS.json] [--ns 1e4,1e6,1e9]

``ROWS.json`` is the output of ``bench_shuffle.py --table --rows subset,olh --json ROWS.json``
(certificate and lower bound per cell); without it both are computed here (slower).

For each cell it prints, beside the certificate and the lower bound, three floors
(docs/proofs/mechanism-certificates.md, section 1f). They are lower bounds on what a class
of certificates can answer, not privacy bounds:

* ``any``: every *common-clone* system (each other user, whatever its input, is a clone
  from one law ``ν`` with ``c·ν <= inf_v R(v)``, or a residual, and the adversary is told
  which; clone kinds, symbols and revealed classes are free). On the event that the target's
  report and every clone's lie in the region A where ``P_x = e P_x'``, every outcome is e
  times likelier under x than under x' (the clones' law is the same under both). A user
  is a clone reporting outside A with probability ``c ν(A^c) <= c_tot − m_A``
  (``c_tot = ∫ inf_v R(v)``, ``m_A = ∫_A inf_v R(v)``), so
  ``δ(ε) >= (1 − c_tot + m_A)^{n−1} · μ e/(e + 1) · (1 − e^{ε−ε0})``;
* ``split``: the revealed-class split system at its (maximal) rates: the target's report is
  informative and every clone is an informative one showing the target's sign,
  ``δ(ε) >= (1 − c_inf/2 − γ)^{n−1} · μ e/(e + 1) · (1 − e^{ε−ε0})``; the other members
  of the certificate have smaller rates, so this floors the certificate itself;
* ``best``: the exact ε of the *best* common-clone system (``c ν = inf_v R(v)``: every
  other common-clone system's view post-processes to its view by adding fresh draws of the
  rest of ``inf_v R(v)``), where its clone count is small enough to sum (n·c_tot <= 60):
  the target among ``Bin(n − 1, c_tot)`` clones, seen through the class counts
  (``+``, ``−``, hidden, revealed; within a class target and clones have the same shape),
  terms beyond the window dropped (so its δ errs low and this ε too);
* ``sig``: the large-n ratio ``sqrt(S_cert / S_z)`` that no common-clone system can beat as
  n grows (data processing of the χ² signal; "all others on z" has signal ``S_z``).

``-`` marks a floor that does not bind (its δ coefficient is below the cell's δ). k-subset
k = 4 of d = 16, OLH g = 8 buckets (the bench_shuffle rows).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom

DOMAIN = {"subset": (16, 4), "olh": (8, 0)}

#: Input domain size of local hashing for the floors: the certificate holds for every
#: domain of at least 3 values, so a floor for any one domain is a floor for it.
OLH_INPUTS = 16


def subset_constants(eps0: float, d: int, k: int) -> dict[str, Any]:
    """μ, c_inf, γ (hidden class), c_tot and S_cert/S_z of k-subset selection."""
    e, c = math.exp(eps0), math.comb
    z = c(d - 1, k - 1) * e + c(d - 1, k)
    plus, both, neither = c(d - 2, k - 1), c(d - 2, k - 2), c(d - 2, k)
    return {
        # classes (+, −, hidden, revealed): the target's law under x, and inf_v R(v)
        "target": np.array([plus * e, plus, neither, both * e]) / z,
        "clone": np.array([plus, plus, neither, both]) / z,
        "mu": c(d - 2, k - 1) * (e + 1) / z,
        "c_inf": 2 * c(d - 2, k - 1) / z,
        "gamma": c(d - 2, k) / z,
        # every k-subset misses some input v (k < d), where its weight is 1
        "c_tot": c(d, k) / z,
        "m_plus": c(d - 2, k - 1) / z,  # S holds x, not x': weight 1 for an input outside S
        "signal": c(d - 2, k - 1) / (c(d - 3, k - 1) + c(d - 3, k - 2) / e),
    }


def olh_constants(eps0: float, g: int, _k: int, inputs: int = OLH_INPUTS) -> dict[str, Any]:
    """The same for local hashing into g buckets, the hash a uniformly random function of
    ``inputs`` values (hash values of distinct inputs independent and uniform; ``γ`` as
    ``randomizers._olh_reveal``). A report (h, y) has the least weight 1 unless h sends
    every input to y (probability ``g^{1 − inputs}`` per h, weight e): that part of
    ``inf_v R(v)`` lies in the revealed class."""
    e = math.exp(eps0)
    split, hidden = 1 - 1 / g, (g - 1) / g**2 + (1 - 1 / g) * (g - 2) / g
    norm, constant = (e + g - 1) / g, float(g) ** (1 - inputs)
    revealed_floor = (1 / g - constant) / g + constant * e / g
    return {
        "target": np.array([split * e / g, split / g, hidden, e / g**2]) / norm,
        "clone": np.array([split / g, split / g, hidden, revealed_floor]) / norm,
        "mu": (1 - 1 / g) * (e + 1) / (e + g - 1),
        "c_inf": 2 * (1 - 1 / g) / (e + g - 1),
        "gamma": ((g - 1) / g + (1 - 1 / g) * (g - 2)) / (e + g - 1),
        "c_tot": (1 + (e - 1) * constant / g) * g / (e + g - 1),
        "m_plus": (1 - 1 / g) / (e + g - 1),  # h(x) != h(x'), y = h(x)
        "signal": 1 / ((1 / g) / e + 1 - 1 / g),
    }


CONSTANTS: dict[str, Callable[[float, int, int], dict[str, Any]]] = {
    "subset": subset_constants,
    "olh": olh_constants,
}


def floor_epsilon(eps0: float, n: int, delta: float, mu: float, rate: float) -> float:
    """The least ε with ``(1 − rate)^{n−1} μ e/(e+1) (1 − e^{ε−ε0}) <= δ``; NaN where the
    coefficient is already below δ (no floor above 0 from this event)."""
    e = math.exp(eps0)
    log_coef = (n - 1) * math.log1p(-rate) + math.log(mu * e / (e + 1))
    ratio = math.exp(math.log(delta) - log_coef) if math.log(delta) < log_coef else 1.0
    return math.nan if ratio >= 1.0 else eps0 + math.log1p(-ratio)


def best_terms(c: dict[str, Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per outcome (clone count C, class counts of the C + 1 units) its probability times
    the target's likelihood factor under x and under x' (the ± classes swapped)."""
    t0, u = np.asarray(c["target"]), np.asarray(c["clone"])
    c_tot, q = float(u.sum()), u / u.sum()
    t1 = t0[[1, 0, 2, 3]]
    top = int(binom.isf(1e-16, n - 1, c_tot)) + 1
    w0, w1 = [], []
    for clones in range(top + 1):
        units = clones + 1
        grid = np.array(
            [
                (a, b, h, units - a - b - h)
                for a in range(units + 1)
                for b in range(units + 1 - a)
                for h in range(units + 1 - a - b)
            ],
            dtype=np.float64,
        )
        log_mult = (
            gammaln(units + 1) - gammaln(grid + 1).sum(axis=1) + (grid * np.log(q)).sum(axis=1)
        )
        weight = binom.pmf(clones, n - 1, c_tot) * np.exp(log_mult)
        share = grid / (units * q)  # n_cls / ((C + 1) q_cls): the target in class cls
        w0.append(weight * (share @ t0))
        w1.append(weight * (share @ t1))
    return np.concatenate(w0), np.concatenate(w1)


def best_epsilon(terms: tuple[np.ndarray, np.ndarray], eps0: float, delta: float) -> float:
    """The least ε in [0, ε0] (bisection, 1e-9) with the summed δ at most δ."""
    w0, w1 = terms
    if float(np.maximum(w0 - w1, 0.0).sum()) <= delta:
        return 0.0
    lo, hi = 0.0, eps0
    while hi - lo > 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (
            (lo, mid)
            if float(np.maximum(w0 - math.exp(mid) * w1, 0.0).sum()) <= delta
            else (mid, hi)
        )
    return hi


def cells(path: str | None, ns: list[int]) -> list[dict[str, float | str]]:
    """Cells with certificate and lower bound, read from ``path`` or computed here."""
    if path is not None:
        with open(path, encoding="utf-8") as fh:
            rows: list[dict[str, float | str]] = json.load(fh)
        return [r for r in rows if int(r["n"]) in ns]
    from crowdhide.accounting.shuffle.mechanisms import mechanism_epsilon

    out: list[dict[str, float | str]] = []
    for row, (d, k) in DOMAIN.items():
        for eps0 in (0.5, 1.0, 2.0, 4.0, 8.0):
            for n in ns:
                for delta in (1e-6, 1e-10, 1e-300):
                    kw = {"d": d} | ({"k": k} if row == "subset" else {})
                    r = mechanism_epsilon(mechanism=row, eps0=eps0, n=n, delta=delta, **kw)
                    out.append(
                        {
                            "row": row,
                            "eps0": eps0,
                            "n": n,
                            "delta": delta,
                            "eps": r.epsilon,
                            "lower": r.lower.epsilon,
                        }
                    )
    return out


def _show(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.6g}"


def _ratio(v: float, lower: float) -> str:
    return "-" if math.isnan(v) else f"{v / lower:.3f}"


def report(rows: list[dict[str, float | str]]) -> None:
    """One line per cell: ε and ratio to the lower bound of the certificate and the floors."""
    print(
        f"{'row':>6} {'eps0':>4} {'n':>5} {'delta':>6} {'cert':>9} {'lower':>9} "
        f"{'c/l':>6} {'any':>9} {'any/l':>6} {'split':>9} {'spl/l':>6} {'best':>9} "
        f"{'bst/l':>6} {'sig':>6}"
    )
    for r in rows:
        name, eps0, n, delta = str(r["row"]), float(r["eps0"]), int(r["n"]), float(r["delta"])
        d, k = DOMAIN[name]
        c = CONSTANTS[name](eps0, d, k)
        cert, lower = float(r["eps"]), float(r["lower"])
        f_any = floor_epsilon(eps0, n, delta, c["mu"], c["c_tot"] - c["m_plus"])
        f_split = floor_epsilon(eps0, n, delta, c["mu"], c["c_inf"] / 2 + c["gamma"])
        best = math.nan
        if n * c["c_tot"] <= 60:
            best = best_epsilon(best_terms(c, n), eps0, delta)
        show, ratio = _show, functools.partial(_ratio, lower=lower)
        print(
            f"{name:>6} {eps0:>4g} {n:>5.0e} {delta:>6.0e} {cert:>9.6g} {lower:>9.6g} "
            f"{cert / lower:>6.3f} {show(f_any):>9} {ratio(f_any):>6} {show(f_split):>9} "
            f"{ratio(f_split):>6} {show(best):>9} {ratio(best):>6} "
            f"{math.sqrt(c['signal']):>6.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=None, help="bench_shuffle --table --json output")
    parser.add_argument("--ns", default="1e4,1e6,1e9", help="comma-separated n")
    args = parser.parse_args()
    ns = [int(float(v)) for v in args.ns.split(",")]
    report(cells(args.json, ns))


if __name__ == "__main__":
    main()
