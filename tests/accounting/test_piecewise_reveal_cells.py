"""The piecewise mechanism's revealed-class cell certificate (issue 32 item 2).

``piecewise_reveal_cell(eps0, L, L)`` must be each pair's own revealed-class parameters,
read off the mechanism (reports reduced to the cells between all interval ends, an exact
reduction): μ the informative mass, ``c_inf = 2β · min R(v)/|P0 − P1|`` on informative
reports, ``w`` the uninformative mass some input makes less likely, ``γ`` the rest (ratio
>= 1 to every input). A constant 1 % off fails these equalities. The cells must cover every
pair with dominating parameters, and the certificate must lie above the exact δ of every
dataset at n = 2, 3.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle.mechanisms import _reveal_member, mechanism_curve
from crowdhide.accounting.shuffle.randomizers import (
    piecewise_reveal_cell,
    piecewise_reveal_cells,
)
from tests.accounting import _mechanism_matrices as mm

GRID = [-1.0, -0.9, -0.5, -0.2, 0.0, 0.3, 0.95, 1.0]


def _exact(eps0: float, inputs: list[float]) -> mm.Matrix:
    """Reports reduced to the cells between every input's interval ends (exact)."""
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    left = [(big_c + 1.0) * x / 2.0 - (big_c - 1.0) / 2.0 for x in inputs]
    edges = sorted({e for a in left for e in (a, a + big_c - 1.0)} - {-big_c, big_c})
    return mm.piecewise_binned(eps0, inputs, edges)


def _informative_length(eps0: float, x: float, x2: float) -> float:
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    return min(big_c - 1.0, (big_c + 1.0) * abs(x2 - x) / 2.0)


@pytest.mark.parametrize("eps0", [0.7, 3.0, 8.0])
def test_cell_parameters_read_off_the_matrix(eps0: float) -> None:
    r = _exact(eps0, GRID)
    assert np.allclose(r.sum(axis=1), 1.0)
    kappa = math.tanh(eps0 / 2.0)
    for i, j in itertools.combinations(range(len(GRID)), 2):
        p0, p1 = r[i], r[j]
        pi = (p0 + p1) / 2.0
        informative = ~np.isclose(p0, p1, rtol=1e-9, atol=0.0)
        ratio = r.min(axis=0) / pi  # the lowest input's mass over π, report by report
        revealed = ~informative & (ratio < 1.0 - 1e-9)
        beta = 0.5 * float(np.abs(p0 - p1).sum())
        gap = np.abs(p0 - p1)[informative]
        c_inf = 2.0 * beta * float((r.min(axis=0)[informative] / gap).min())
        mu, c_ours, w, gamma = piecewise_reveal_cell(
            eps0, *[_informative_length(eps0, GRID[i], GRID[j])] * 2
        )
        assert math.isclose(mu, float(pi[informative].sum()), rel_tol=1e-9)
        assert math.isclose(mu, beta / kappa, rel_tol=1e-9)
        assert math.isclose(c_ours, c_inf, rel_tol=1e-9)
        assert math.isclose(w, float(pi[revealed].sum()), rel_tol=1e-9, abs_tol=1e-15)
        assert math.isclose(gamma, float(pi[~informative & ~revealed].sum()), rel_tol=1e-9)
        hidden = ~informative & ~revealed
        assert float(ratio[hidden].min()) >= 1.0 - 1e-9  # γ = π(H)·1


@pytest.mark.parametrize("eps0", [0.7, 4.0, 8.0])
def test_cells_cover_every_pair_with_dominating_parameters(eps0: float) -> None:
    mu_floor, cells = piecewise_reveal_cells(eps0)
    t = math.exp(eps0 / 2.0)
    full = (t + 1.0) / (t - 1.0) - 1.0
    lengths = [full * 2.0**-k for k in range(45)] + list(np.linspace(0.0, full, 2001)[1:])
    for length in lengths:
        mu, c_inf, w, gamma = piecewise_reveal_cell(eps0, length, length)
        if mu <= mu_floor:
            continue
        covering = [
            cell
            for cell in cells
            if (1.0 - cell[2]) >= (1.0 - w) * (1 - 1e-12)
            and cell[0] / (1.0 - cell[2]) >= mu / (1.0 - w) * (1 - 1e-12)
            and cell[1] <= c_inf * (1 + 1e-12)
            and cell[3] <= gamma * (1 + 1e-12)
        ]
        assert covering, (eps0, length)


@pytest.mark.parametrize("eps0", [1.0, 3.0, 6.0])
def test_each_pairs_bound_above_the_exact_delta(eps0: float) -> None:
    """The revealed-class system at a pair's own parameters against every dataset of the
    others on the grid, n = 2 and 3 (exact multiset laws)."""
    inputs = [-1.0, -0.5, 0.0, 0.4, 1.0]
    kappa = kappa_up(eps0)

    def own(i: int, j: int) -> Callable[[int, float], float]:
        length = _informative_length(eps0, inputs[i], inputs[j])
        mu, c_inf, w, gamma = piecewise_reveal_cell(eps0, length, length)
        return lambda n, eps: _reveal_member(n, kappa, mu, c_inf, (w, gamma), eps, -60.0)

    mm.assert_pairs_below(_exact(eps0, inputs), [0.0, 0.2 * eps0, 0.5 * eps0], own)


@pytest.mark.parametrize("eps0", [4.0, 8.0])
def test_certificate_above_the_exact_worst_case_small_n(eps0: float) -> None:
    """The certificate (the cells join it at small ``n e^{−ε0}``) at n = 2, 3 against every
    pair and dataset on a grid."""
    r = _exact(eps0, [-1.0, -0.6, 0.0, 0.7, 1.0])
    mm.assert_certificate_above(r, "piecewise", eps0, [0.0, 0.3 * eps0, 0.6 * eps0])


def test_cells_tighten_the_certificate_where_clones_are_few() -> None:
    """Measured: ε0 = 8, n = 1e4, δ = 1e-6: 7.99998 -> 5.3500 (lower bound 5.2310)."""
    cert = mechanism_curve(mechanism="piecewise", eps0=8.0, n=10**4).epsilon(1e-6)
    assert 5.231 <= cert < 5.40
