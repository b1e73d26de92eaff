"""The batched certificate member of the mechanisms with a revealed-class system (issue 32,
speed): ``_clone_or_revealed`` evaluates the cell's split system and the revealed-class one
in one ``split_clone_log_deltas`` call and must give, bit for bit, the value of the former
member ``min(_clone_member, _reveal_member)`` (so every root search and every answer is
unchanged).

The check can fail: the grid has points where each side of the min is the smaller (a
batched member that dropped either side would differ there), and a revealed-class fraction
``w`` 1 % off changes the value.
"""

from __future__ import annotations

import functools
import math

import pytest

from crowdhide.accounting.shuffle import mechanisms as mech
from crowdhide.accounting.shuffle.randomizers import MECHANISMS

#: (mechanism, d, k) of the benchmark's rows with a revealed-class system.
CASES = [("subset", 16, 4), ("olh", 8, None), ("oue", 8, None), ("rappor", 8, None)]
#: ε as fractions of ε0, tails of a δ = 1e-6 search and of a δ = 1e-300 one.
FRACTIONS = (1e-4, 0.003, 0.03, 0.2, 0.6)
TAILS = (-53.8, -730.8)


def _batched(name: str, d: int, k: int | None, eps0: float, n: int) -> functools.partial[float]:
    (member,) = mech._certificate_members(MECHANISMS[name], n, eps0, d, k or 1)
    assert member.func is mech._clone_or_revealed
    return member


def _former(member: functools.partial[float], w_scale: float = 1.0) -> functools.partial[float]:
    """The member as it was: the smaller of the one-cell clone member and the revealed one."""
    n, kappa, (mu2, rho), rates, (w, gamma) = member.args
    clone = functools.partial(mech._clone_member, n, kappa, mu2, rho, rates)
    reveal = functools.partial(mech._reveal_member, n, kappa, mu2, rates[0], (w * w_scale, gamma))
    return functools.partial(mech._smaller, clone, reveal)


@pytest.mark.parametrize(("name", "d", "k"), CASES)
@pytest.mark.parametrize("eps0", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("n", [10**3, 10**6])
def test_batched_member_is_the_former_bit_for_bit(
    name: str, d: int, k: int | None, eps0: float, n: int
) -> None:
    member = _batched(name, d, k, eps0, n)
    former = _former(member)
    for tail in TAILS:
        for fraction in FRACTIONS:
            eps = fraction * eps0
            assert member(eps, tail) == former(eps, tail), (name, eps0, n, tail, eps)


def test_grid_has_both_sides_of_the_min_and_w_matters() -> None:
    """Each side of the min is the smaller somewhere on the grid (so dropping either would
    be caught), and a 1 % larger ``w`` moves the value where the revealed side is chosen."""
    sides, moved = set(), 0
    for name, d, k in CASES[:2]:
        for eps0 in (0.5, 2.0, 8.0):
            member = _batched(name, d, k, eps0, 10**6)
            n, kappa, (mu2, rho), rates, reveal = member.args
            for eps in (0.003 * eps0, 0.2 * eps0):
                clone = mech._clone_member(n, kappa, mu2, rho, rates, eps, -53.8)
                revealed = mech._reveal_member(n, kappa, mu2, rates[0], reveal, eps, -53.8)
                sides.add("clone" if clone < revealed else "reveal")
                value = member(eps, -53.8)
                if math.isfinite(value) and revealed < clone:
                    moved += value != _former(member, w_scale=1.01)(eps, -53.8)
    assert sides == {"clone", "reveal"}
    assert moved > 0
