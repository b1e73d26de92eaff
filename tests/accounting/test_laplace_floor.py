"""The large-n floor of common-clone certificates for Laplace (``bench_shuffle.
laplace_family_floor``; docs/proofs/mechanism-certificates.md, section 1h): why no
certificate built from clones common to every input reaches certificate/lower <= 1.01.

* ``inf_v f_v = min(f_{−1}, f_{+1})`` pointwise (the best clone law), checked over a grid of v;
* both closed-form signals equal numerical integrals (a 1 % change to a constant fails);
* "all others on +1" has the largest single-value signal over pairs and values on a grid;
* the measured ratios at n = 1e9 sit above the floor, which is above 1.01 at every ε0.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.integrate import quad

from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_lower_curve

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_shuffle_floor", ROOT / "benchmarks" / "bench_shuffle.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_shuffle_floor"] = module
    spec.loader.exec_module(module)
    return module


BENCH = _bench()
EPS0 = (0.5, 1.0, 2.0, 4.0, 8.0)


def _f(v: float, y: float, s: float) -> float:
    return 0.5 * s * math.exp(-s * abs(y - v))


def _signal(x: float, x2: float, law: Callable[[float], float], s: float) -> float:
    """``∫ (f_x − f_x')²/law`` split at the kinks."""
    knots = sorted({x, x2, -1.0, 0.0, 1.0, -80.0 / s, 80.0 / s})
    return sum(
        quad(lambda y: (_f(x, y, s) - _f(x2, y, s)) ** 2 / law(y), a, b, epsrel=1e-12)[0]
        for a, b in itertools.pairwise(knots)
    )


@pytest.mark.parametrize("eps0", EPS0)
def test_closed_forms_equal_the_integrals(eps0: float) -> None:
    s, e = eps0 / 2.0, math.exp(eps0)
    s_u = _signal(-1.0, 1.0, lambda y: min(_f(-1.0, y, s), _f(1.0, y, s)), s)
    s_same = _signal(-1.0, 1.0, lambda y: _f(1.0, y, s), s)
    assert BENCH.laplace_family_floor(eps0) == pytest.approx(math.sqrt(s_u / s_same), rel=1e-8)
    closed_u = 4.0 / 3.0 * e + 8.0 / 3.0 * math.exp(-s) - 4.0
    assert closed_u == pytest.approx(s_u, rel=1e-8)


def test_the_least_density_is_at_an_end() -> None:
    """``inf_{v ∈ [−1, 1]} f_v(y) = min(f_{−1}, f_{+1})(y)``: the clone law every input covers."""
    s = 1.5
    vs = np.linspace(-1.0, 1.0, 201)
    for y in np.linspace(-6.0, 6.0, 241):
        least = min(_f(float(v), float(y), s) for v in vs)
        assert least == pytest.approx(min(_f(-1.0, y, s), _f(1.0, y, s)), rel=1e-12)


@pytest.mark.parametrize("eps0", [1.0, 4.0])
def test_others_on_the_second_input_have_the_largest_signal(eps0: float) -> None:
    s = eps0 / 2.0
    best = _signal(-1.0, 1.0, lambda y: _f(1.0, y, s), s)
    for a in (0.25, 0.5, 1.0):
        for x2 in (-1.0 + a, 1.0):
            for z in np.linspace(-1.0, 1.0, 9):
                if x2 > -1.0:
                    other = _signal(-1.0, x2, lambda y, z=float(z): _f(z, y, s), s)
                    assert other <= best * (1.0 + 1e-9), (a, x2, z)


@pytest.mark.parametrize(("eps0", "floor"), [(1.0, 1.2035), (4.0, 1.3977)])
def test_the_measured_ratio_at_large_n_is_above_the_family_floor(eps0: float, floor: float) -> None:
    assert BENCH.laplace_family_floor(eps0) == pytest.approx(floor, abs=1e-4)
    n, delta = 10**9, 1e-10
    cert = mechanism_curve(mechanism="laplace", eps0=eps0, n=n).epsilon(delta)
    low = mechanism_lower_curve(mechanism="laplace", eps0=eps0, n=n).epsilon(delta)
    assert cert / low > floor > 1.01
