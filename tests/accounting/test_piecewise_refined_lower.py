"""The piecewise mechanism's refined "others on z" lower-bound member (issue 32 item 2).

Pair (−1, 1), all other users on z = 0, regions ``+ = [−C, −half)`` and its mirror
``− = (half, C]``: the informative sets of the pair without z's high interval
``[−half, half]`` (only where it reaches past ±1, ε0 < ln 4). The member must be the exact
law of those region counts: its parameters are read off the binned mechanism, and at n = 2, 3
its value is the enumerated δ of the three-bin output (a post-processing of the reports, so
also at most the dataset's true δ, checked against a finer binning)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle._krr_fast import third_marginal_lower_log_delta
from crowdhide.accounting.shuffle.mechanisms import mechanism_lower_curve
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, LowerMember
from tests.accounting import _mechanism_matrices as mm


def _geometry(eps0: float) -> tuple[float, float]:
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    return big_c, (big_c - 1.0) / 2.0


def _refined(eps0: float) -> LowerMember:
    lowers = MECHANISMS["piecewise"].lowers
    assert lowers is not None
    members = lowers(eps0, 0, 1)
    assert len(members) == 5  # four plain pairs (−a, a) and the refined one
    return members[-1]


@pytest.mark.parametrize("eps0", [0.5, 1.0, 1.3])
def test_refined_member_is_the_exact_region_count(eps0: float) -> None:
    big_c, half = _geometry(eps0)
    assert half > 1.0
    # inputs −1 (x), 1 (x'), 0 (z); bins [−C, −half), [−half, half), [half, C]
    r = mm.piecewise_binned(eps0, [-1.0, 1.0, 0.0], [-half, half])
    assert np.allclose(r.sum(axis=1), 1.0)
    p_plus, p_minus, nu = float(r[0, 0]), float(r[0, 2]), float(r[2, 0] + r[2, 2])
    assert math.isclose(float(r[1, 2]), p_plus, rel_tol=1e-12)  # mirror
    t = math.exp(eps0 / 2.0)  # the high density on the region, of length C − half
    assert math.isclose(p_plus, t * (t - 1.0) / (2.0 * (t + 1.0)) * (big_c - half), rel_tol=1e-12)
    assert math.isclose(float(r[2, 0]), float(r[2, 2]), rel_tol=1e-12)
    refined = _refined(eps0)
    for n in (2, 3, 400, 10**6):
        for eps in (0.0, 0.1 * eps0, 0.3 * eps0):
            direct = third_marginal_lower_log_delta(n, p_plus, p_minus, nu, eps0, eps)
            assert math.isclose(refined(n, eps), direct, rel_tol=1e-9, abs_tol=1e-12)
    # a finer binning of the same outputs (a refinement of the three bins)
    fine = mm.piecewise_binned(eps0, [-1.0, 1.0, 0.0], [-half, -1.0, 0.0, 1.0, half])
    for n in (2, 3):
        eps_grid = [0.0, 0.1 * eps0, 0.3 * eps0]
        exact = mm.pair_deltas(r, 0, 1, (2,) * (n - 1), eps_grid)
        finer = mm.pair_deltas(fine, 0, 1, (2,) * (n - 1), eps_grid)
        for eps, value, better in zip(eps_grid, exact, finer, strict=True):
            ours = math.exp(refined(n, eps))
            assert ours <= value * (1 + 1e-9) + 1e-300
            assert ours >= value * (1 - 1e-6)  # it is that count's δ, not a looser one
            assert value <= better * (1 + 1e-12)


@pytest.mark.parametrize("eps0", [0.5, 1.0])
def test_a_region_one_percent_longer_is_caught(eps0: float) -> None:
    """The same member with the region 1 % longer (into z's high interval, the weakness it
    removes) is no longer the enumerated δ of any region: the exact check above fails."""
    _, half = _geometry(eps0)
    r = mm.piecewise_binned(eps0, [-1.0, 1.0, 0.0], [-half, half])
    p_plus, p_minus, nu = float(r[0, 0]), float(r[0, 2]), float(r[2, 0] + r[2, 2])
    wrong = third_marginal_lower_log_delta(3, 1.01 * p_plus, 1.01 * p_minus, 1.01 * nu, eps0, 0.0)
    exact = mm.pair_deltas(r, 0, 1, (2, 2), [0.0])[0]
    assert not math.isclose(math.exp(wrong), exact, rel_tol=1e-6)


def test_refined_member_only_below_ln4() -> None:
    """At ε0 >= ln 4 z's high interval lies within (−1, 1): no refinement, the four pairs'
    members, of which those with the same counts are one (s26-lapw: at ε0 = 2 two of the
    pairs' informative sets are capped at C − 1 with the same overlap: three members)."""
    lowers = MECHANISMS["piecewise"].lowers
    assert lowers is not None
    assert len(lowers(2.0, 0, 1)) == 3
    assert len(lowers(math.log(4.0) - 1e-3, 0, 1)) == 5


def test_refined_member_tightens_the_lower_bound_at_eps0_1() -> None:
    """Measured: ε of the lower bound at ε0 = 1, n = 1e6, δ = 1e-6 rises from 0.0027761
    (plain regions) to 0.0028871 (refined), 4 % closer to the certificate's 0.0032163."""
    low = mechanism_lower_curve(mechanism="piecewise", eps0=1.0, n=10**6).epsilon(1e-6)
    assert low > 0.00288
