"""The clone-system floors of ``benchmarks/bench_clone_floor.py`` (docs/proofs/
mechanism-certificates.md, section 1f): why k-subset's certificate at ε0 = 8, n = 1e4 cannot
come down within the clone systems.

* ``c_tot = ∫ inf_v R(v)`` and the split rates equal the values read off the report matrices
  (so a constant 1 % off fails);
* the split floor is at most the exact split system (an unblocked sum at small n) and at most
  the product certificate, and it meets the certificate at ε0 = 8, n = 1e4, δ = 1e-6 (a rate
  1 % lower puts it above the certificate).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting.shuffle.mechanisms import mechanism_epsilon

from . import _mechanism_matrices as mm

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_clone_floor", ROOT / "benchmarks" / "bench_clone_floor.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_clone_floor"] = module
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def _least_mass(r: np.ndarray) -> float:
    """``∫ inf_v R(v)``: the most any one clone law common to every input can take."""
    return float(r.min(axis=0).sum())


def _assert_classes(r: np.ndarray, c: dict[str, Any]) -> None:
    """Class masses (+, −, hidden, revealed) of the target's law under x (row 0; x' is row 1)
    and of ``inf_v R(v)``, read off the matrix. Revealed: uninformative with weight e."""
    x, x2, least = r[0], r[1], r.min(axis=0)
    informative = ~np.isclose(x, x2, rtol=1e-12, atol=0.0)
    heavy = x > x.min() * (1 + 1e-9)
    masks = (
        informative & (x > x2),
        informative & (x < x2),
        ~informative & ~heavy,
        ~informative & heavy,
    )
    for mask, want_t, want_c in zip(masks, c["target"], c["clone"], strict=True):
        assert float(x[mask].sum()) == pytest.approx(want_t, rel=1e-12)
        assert float(least[mask].sum()) == pytest.approx(want_c, rel=1e-12)


def _assert_pair_constants(
    r: np.ndarray, c: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``c_tot``, ``m_plus`` and ``mu`` against the report matrix ``r`` (rows: inputs; the
    pair is rows 0 and 1); returns the pair's rows and its informative reports."""
    assert c["c_tot"] == pytest.approx(_least_mass(r), rel=1e-12)
    x, x2 = r[0], r[1]
    informative = ~np.isclose(x, x2, rtol=1e-12, atol=0.0)
    plus = informative & (x > x2)
    assert c["m_plus"] == pytest.approx(float(r.min(axis=0)[plus].sum()), rel=1e-12)
    assert c["mu"] == pytest.approx(float((x + x2)[informative].sum() / 2), rel=1e-12)
    return x, x2, informative


@pytest.mark.parametrize("eps0", [0.7, 3.0, 8.0])
@pytest.mark.parametrize(("d", "k"), [(4, 2), (5, 2), (5, 3)])
def test_subset_constants_match_the_matrix(eps0: float, d: int, k: int) -> None:
    r = mm.subset(eps0, d, k)
    c = BENCH.subset_constants(eps0, d, k)
    x, _, informative = _assert_pair_constants(r, c)
    # informative clones: the least weight of every input on the informative reports, both sides
    assert c["c_inf"] == pytest.approx(float(r.min(axis=0)[informative].sum()), rel=1e-12)
    # hidden class: the uninformative reports where every input is at least the pair's weight
    hidden = ~informative & (r.min(axis=0) >= x * (1 - 1e-12))
    assert c["gamma"] == pytest.approx(float(x[hidden].sum()), rel=1e-12)
    _assert_classes(r, c)


@pytest.mark.parametrize("eps0", [0.7, 3.0, 8.0])
@pytest.mark.parametrize("g", [2, 3])
def test_olh_constants_match_the_matrix(eps0: float, g: int) -> None:
    r = mm.olh(eps0, g)  # every hash function of three inputs
    c = BENCH.olh_constants(eps0, g, 0, inputs=3)
    _assert_pair_constants(r, c)
    _assert_classes(r, c)


def _split_system_delta(n: int, kappa: float, mu: float, ci: float, cz: float, eps: float) -> float:
    """Exact δ of the split clone system (target ± w.p. μ, clones ± at ci, 0 at cz, the
    number of clones told), summed over every clone count."""
    big_e, total, mu_c = math.exp(eps), 0.0, ci / (ci + cz)
    for clones in range(n):
        p_c = binom.pmf(clones, n - 1, ci + cz)
        for inf in range(clones + 1):
            s = inf + 1  # outcomes with s informative units, the target among them or not
            a = np.arange(s + 1)
            p_t = p_c * binom.pmf(inf, clones, mu_c) * mu
            plus, minus = binom.pmf(a - 1, s - 1, 0.5), binom.pmf(a, s - 1, 0.5)
            p0 = p_t * ((1 + kappa) / 2 * plus + (1 - kappa) / 2 * minus)
            p1 = p_t * ((1 - kappa) / 2 * plus + (1 + kappa) / 2 * minus)
            if s <= clones:  # the target uninformative, s informative clones
                q = p_c * binom.pmf(s, clones, mu_c) * (1 - mu) * binom.pmf(a, s, 0.5)
                p0, p1 = p0 + q, p1 + q
            total += float(np.maximum(p0 - big_e * p1, 0.0).sum())
    return total


@pytest.mark.parametrize("n", [5, 12, 30])
@pytest.mark.parametrize("eps", [1.0, 2.5, 2.9])
def test_split_floor_below_the_exact_system(n: int, eps: float) -> None:
    eps0, (d, k) = 3.0, (6, 2)
    c = BENCH.subset_constants(eps0, d, k)
    exact = _split_system_delta(n, math.tanh(eps0 / 2), c["mu"], c["c_inf"], c["gamma"], eps)
    e = math.exp(eps0)
    rate = c["c_inf"] / 2 + c["gamma"]
    floor = (1 - rate) ** (n - 1) * c["mu"] * e / (e + 1) * (1 - math.exp(eps - eps0))
    assert floor <= exact * (1 + 1e-9)


def test_certificate_sits_on_the_split_floor() -> None:
    eps0, n, delta = 8.0, 10_000, 1e-6
    c = BENCH.subset_constants(eps0, 16, 4)
    cert = mechanism_epsilon(mechanism="subset", eps0=eps0, n=n, delta=delta, d=16, k=4).epsilon
    rate = c["c_inf"] / 2 + c["gamma"]
    floor = BENCH.floor_epsilon(eps0, n, delta, c["mu"], rate)
    any_floor = BENCH.floor_epsilon(eps0, n, delta, c["mu"], c["c_tot"] - c["m_plus"])
    assert any_floor <= floor <= cert
    assert cert - floor < 1e-4
    # the floor is sharp: 1 % fewer clones put it above the certificate
    assert BENCH.floor_epsilon(eps0, n, delta, c["mu"], 0.99 * rate) > cert
    assert any_floor > 7.94  # no common-clone system below 7.94 (lower bound 2.71)


def _common_clone_delta(r: np.ndarray, n: int, eps: float) -> float:
    """Exact δ of the best common-clone system from the matrix: each other user a clone from
    ``inf_v R(v)`` (normalized) with probability its mass, the number of clones told, the
    multiset of the target's and the clones' reports seen (rows 0, 1: x, x')."""
    least = r.min(axis=0)
    c_tot = float(least.sum())
    laws = np.vstack([r[0], r[1], least / c_tot])
    total = 0.0
    for clones in range(n):
        law0 = mm.shuffled_law(laws, (0,) + (2,) * clones)
        law1 = mm.shuffled_law(laws, (1,) + (2,) * clones)
        excess = sum(max(p - math.exp(eps) * law1.get(m, 0.0), 0.0) for m, p in law0.items())
        total += float(binom.pmf(clones, n - 1, c_tot)) * excess
    return total


@pytest.mark.parametrize("eps", [0.5, 1.5, 2.8])
@pytest.mark.parametrize("case", ["subset", "olh"])
def test_best_system_equals_its_multiset_law(case: str, eps: float) -> None:
    eps0, n = 3.0, 4
    if case == "subset":
        r, c = mm.subset(eps0, 5, 2), BENCH.subset_constants(eps0, 5, 2)
    else:
        r, c = mm.olh(eps0, 2), BENCH.olh_constants(eps0, 2, 0, inputs=3)
    w0, w1 = BENCH.best_terms(c, n)
    summed = float(np.maximum(w0 - math.exp(eps) * w1, 0.0).sum())
    exact = _common_clone_delta(r, n, eps)
    if case == "subset":  # within each class target and clones are uniform: counts suffice
        assert summed == pytest.approx(exact, rel=1e-9, abs=1e-15)
    else:  # a constant hash (1/4 of them here) weighs e for every input, so the revealed
        # class's shapes differ and the counts are a strict projection: δ only errs low
        assert exact * 0.5 <= summed <= exact * (1 + 1e-12)


def test_olh_certificate_is_near_the_best_common_clone_system() -> None:
    eps0, n, delta = 8.0, 10_000, 1e-6
    c = BENCH.olh_constants(eps0, 8, 0)
    best = BENCH.best_epsilon(BENCH.best_terms(c, n), eps0, delta)
    cert = mechanism_epsilon(mechanism="olh", eps0=eps0, n=n, delta=delta, d=8).epsilon
    assert best <= cert < best * 1.005
