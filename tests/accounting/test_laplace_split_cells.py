"""The Laplace mechanism's split clone cells (issue 32 item 2;
docs/proofs/mechanism-certificates.md, section 1c).

``laplace_split_cell(eps0, Δ, Δ)`` must give rates that every input's density dominates
through the pair's own three-point kernel, ``f_v >= (c_inf/2)(A + B) + c_zero M`` at every
report, and tightly: the tails (``M = 0``) and the midpoint (``A + B = 0``) of a pair that
touches an end of [−1, 1] meet it with equality, so either rate 1 % larger fails. The cells
must cover every pair with dominating parameters, and both a pair's own system and the
certificate must lie above the exact δ of binned outputs (a post-processing, so below the
true δ) at n = 2, 3.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.shuffle._laplace_split import (
    _cell_member,
    laplace_split_cell,
    laplace_split_cells,
)
from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_lower_curve
from tests.accounting import _mechanism_matrices as mm

FloatArray = npt.NDArray[np.float64]
PAIRS = [(-1.0, 1.0), (-1.0, 0.0), (-1.0, -0.7), (0.0, 1.0), (-0.5, 0.5), (-0.3, 0.2)]
INPUTS = np.linspace(-1.0, 1.0, 41)


def _density(eps0: float, v: float, y: FloatArray) -> FloatArray:
    return np.asarray(eps0 / 4.0 * np.exp(-eps0 / 2.0 * np.abs(y - v)))


def _slack(eps0: float, x: float, x2: float, scale: tuple[float, float]) -> float:
    """``min over v, y`` of ``f_v / ((c_inf/2)(A + B) + c_zero M)`` with the rates times
    ``scale``, on a grid of reports that holds the tails, the inputs and the midpoint."""
    delta = x2 - x
    y = np.unique(np.concatenate([np.linspace(-6.0, 6.0, 4801), [x, x2, (x + x2) / 2.0]]))
    p0, p1 = _density(eps0, x, y), _density(eps0, x2, y)
    pi, d = (p0 + p1) / 2.0, (p0 - p1) / (p0 + p1)
    kappa = math.tanh(eps0 * delta / 4.0)
    beta = -math.expm1(-eps0 * delta / 4.0)
    mu = beta / kappa
    _, _, c_inf, c_zero = laplace_split_cell(eps0, delta, delta)
    rhs = scale[0] * c_inf / 2.0 * np.abs(p0 - p1) / beta
    rhs = rhs + scale[1] * c_zero * pi * np.maximum(1.0 - np.abs(d) / kappa, 0.0) / (1.0 - mu)
    floor = np.min([_density(eps0, v, y) for v in INPUTS], axis=0)
    positive = rhs > 0.0
    return float((floor[positive] / rhs[positive]).min())


@pytest.mark.parametrize("eps0", [0.7, 3.0, 8.0])
def test_every_input_dominates_the_clone_components(eps0: float) -> None:
    for x, x2 in PAIRS:
        assert _slack(eps0, x, x2, (1.0, 1.0)) >= 1.0 - 1e-9, (eps0, x, x2)


@pytest.mark.parametrize("eps0", [0.7, 3.0, 8.0])
@pytest.mark.parametrize("pair", [(-1.0, 1.0), (-1.0, 0.0), (0.0, 1.0), (-1.0, -0.7)])
def test_rates_are_tight_for_pairs_at_an_end(eps0: float, pair: tuple[float, float]) -> None:
    """Equality at the tails (only c_inf counts) and at the midpoint (only c_zero): a rate
    1 % larger than the module's is not dominated."""
    assert _slack(eps0, *pair, (1.0, 1.0)) == pytest.approx(1.0, rel=1e-6)
    assert _slack(eps0, *pair, (1.01, 0.0)) < 0.995
    assert _slack(eps0, *pair, (0.0, 1.01)) < 0.995


@pytest.mark.parametrize("eps0", [0.7, 3.0, 8.0])
def test_cells_cover_every_pair_with_dominating_parameters(eps0: float) -> None:
    edges, cells = laplace_split_cells(eps0)
    for delta in np.concatenate([np.linspace(edges[0], 2.0, 3001), 2.0 ** -np.arange(1.0, 16.0)]):
        own = laplace_split_cell(eps0, float(delta), float(delta))
        hits = [
            cell
            for (lo, hi), cell in zip(itertools.pairwise(edges), cells, strict=True)
            if lo <= delta <= hi
        ]
        assert hits, (eps0, delta)
        kappa, mu, c_inf, c_zero = hits[0]
        assert kappa >= own[0], (eps0, delta)
        assert mu >= own[1] * (1 - 1e-12), (eps0, delta)
        assert c_inf <= own[2], (eps0, delta)
        assert c_zero <= own[3], (eps0, delta)


def _binned(eps0: float, inputs: list[float]) -> mm.Matrix:
    b = 2.0 / eps0
    edges = [-1.0 - 2 * b, -1.0 - b / 2, -1.0, -0.6, -0.2, 0.2, 0.6, 1.0, 1.0 + b / 2, 1.0 + 2 * b]
    return mm.laplace_binned(eps0, inputs, edges)


@pytest.mark.parametrize("eps0", [1.0, 3.0, 6.0])
def test_each_pairs_system_above_the_exact_delta(eps0: float) -> None:
    """A pair's own split system against every dataset of the others on a grid, n = 2, 3."""
    inputs = [-1.0, -0.5, 0.0, 0.4, 1.0]

    def own(i: int, j: int) -> Callable[[int, float], float]:
        cell = laplace_split_cell(eps0, inputs[j] - inputs[i], inputs[j] - inputs[i])
        return lambda n, eps: _cell_member(n, cell, eps, -60.0)

    mm.assert_pairs_below(_binned(eps0, inputs), [0.0, 0.1 * eps0, 0.3 * eps0, 0.6 * eps0], own)


@pytest.mark.parametrize("eps0", [4.0, 8.0])
def test_certificate_above_the_exact_worst_case_small_n(eps0: float) -> None:
    r = _binned(eps0, [-1.0, -0.6, 0.0, 0.7, 1.0])
    mm.assert_certificate_above(r, "laplace", eps0, [0.0, 0.2 * eps0, 0.4 * eps0])


def test_cells_tighten_the_certificate_where_clones_are_few() -> None:
    """Measured: ε0 = 8, n = 1e4, δ = 1e-6: 7.99997 -> 5.3026 (lower bound 2.4133)."""
    cert = mechanism_curve(mechanism="laplace", eps0=8.0, n=10**4).epsilon(1e-6)
    lower = mechanism_lower_curve(mechanism="laplace", eps0=8.0, n=10**4).epsilon(1e-6)
    assert lower <= cert < 5.35
