"""Split clone cells for the Laplace mechanism (internal; docs/proofs/mechanism-certificates.md,
section 1c).

Laplace noise of scale ``2/ε0`` on an input in [−1, 1]; ``s = ε0/2``, a pair x < x' at
distance ``Δ = x' − x`` and ``u = e^{−sΔ/2}``. The pair's loss is bounded by
``κ_Δ = tanh(sΔ/2) = (1 − u²)/(1 + u²)``, its total variation is ``β = 1 − u`` and
``μ = β/κ_Δ = (1 + u²)/(1 + u)``. Every input's density is at least ``θ_Δ · min(f_x, f_x')``
with ``θ_Δ = e^{−s(2 − Δ)}`` (distances to the farthest input exceed those to the farther of
x, x' by at most ``2 − Δ``), and ``min(f_x, f_x') = π (1 − |D|)`` equals
``(c_inf/2)(A + B) + c_zero M`` of the pair's three-point kernel exactly when

    c_inf = θ_Δ μ (1 − κ_Δ) = 2 e^{−ε0}/(1 + u),
    c_zero = θ_Δ (1 − μ) = e^{−ε0} (1 − u)/(u (1 + u)).

So each pair is bounded by the split clone system ``(κ_Δ, μ, c_inf, c_zero)``. In Δ, κ_Δ
and both rates grow and μ falls then rises (least at ``u = √2 − 1``); δ of the split system
is non-decreasing in κ and μ and non-increasing in the rates, so the pairs with Δ in a cell
``[lo, hi]`` are bounded by ``(κ(hi), max(μ(lo), μ(hi)), c_inf(lo), c_zero(lo))``. Pairs with
``Δ <= lo`` of the first cell are ``(lo·s)``-DP: δ = 0 beyond that ε.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle._krr_fast import clone_noise_log_delta
from crowdhide.accounting.shuffle._split_clone import split_clone_log_delta

__all__ = ["laplace_split_cell", "laplace_split_cells", "laplace_split_members"]

#: Cell edges as fractions of Δ = 2: halvings from 2^-LAPLACE_SPLIT_HALVINGS to 1/8, then a
#: geometric grid of ratio LAPLACE_SPLIT_RATIO up to 1.
LAPLACE_SPLIT_HALVINGS = 16
LAPLACE_SPLIT_RATIO = 1.15

#: Largest ``n e^{−ε0}`` at which the cells join the certificate: beyond it they were never
#: the smaller (measured at ε0 = 4 … 8, load 55 … 100: 0.6-1.5 % above the one-rate cells)
#: and cost 0.3-0.5 s of CPU per query; at load 25-34 they gain 1-2 % (ε0 = 6, n = 1e4;
#: ε0 = 8, n = 1e5).
LAPLACE_SPLIT_MAX_LOAD = 40.0

#: Relative allowance on the cell parameters (each the result of a few roundings, well below
#: 1e-13 relative): μ raised, the rates lowered (both to the safe side).
_RTOL = 1e-12

#: One split-system cell: ``(kappa, mu, c_inf, c_zero)``.
SplitCell = tuple[float, float, float, float]


def laplace_split_cell(eps0: float, lo: float, hi: float) -> SplitCell:
    """``(κ(hi), max μ, c_inf(lo), c_zero(lo))`` bounding every Laplace pair with distance Δ
    in ``[lo, hi]`` (module docstring; ``lo = hi``: one pair's own parameters, with κ rounded
    up). Needs ``0 < lo <= hi <= 2``.

    Examples
    --------
    >>> kappa, mu, c_inf, c_zero = laplace_split_cell(8.0, 2.0, 2.0)
    >>> round(mu, 4), round(c_zero, 6) == round(1.0 - mu, 6)  # (−1, 1): 1 − μ hidden at ratio 1
    (0.9823, True)
    """
    s = eps0 / 2.0
    u_lo, u_hi = math.exp(-s * lo / 2.0), math.exp(-s * hi / 2.0)  # u falls as Δ grows

    def mu(u: float) -> float:
        return (1.0 + u * u) / (1.0 + u)

    kappa = kappa_up(s * hi)  # tanh(sΔ/2) at Δ = hi, rounded up
    mu_max = min(max(mu(u_lo), mu(u_hi)) * (1.0 + _RTOL), 1.0)
    c_inf = 2.0 * math.exp(-eps0) / (1.0 + u_lo)
    # 1 − u without cancellation
    c_zero = math.exp(-eps0) * -math.expm1(-s * lo / 2.0) / (u_lo * (1.0 + u_lo))
    return kappa, mu_max, c_inf * (1.0 - _RTOL), c_zero * (1.0 - _RTOL)


def laplace_split_cells(eps0: float) -> tuple[tuple[float, ...], tuple[SplitCell, ...]]:
    """``(edges, cells)``: the split cells over ``Δ in [edges[0], 2]``, one per pair of
    consecutive edges (pairs closer than ``edges[0]`` are ``(edges[0] ε0/2)``-DP).

    Examples
    --------
    >>> edges, cells = laplace_split_cells(4.0)
    >>> edges[0] < 1e-4 and len(cells) == len(edges) - 1
    True
    """
    fracs = [2.0**-k for k in range(LAPLACE_SPLIT_HALVINGS, 3, -1)]
    while fracs[-1] * LAPLACE_SPLIT_RATIO < 1.0:
        fracs.append(fracs[-1] * LAPLACE_SPLIT_RATIO)
    edges = (*(2.0 * f for f in fracs), 2.0)
    cells = tuple(laplace_split_cell(eps0, lo, hi) for lo, hi in itertools.pairwise(edges))
    return edges, cells


def _close_pairs_member(eps_pure: float, eps: float, tail: float) -> float:
    """Pairs closer than the first cell: ``eps_pure``-DP, so δ = 0 from there on (and at
    most 1 below)."""
    return -math.inf if eps >= eps_pure else 0.0


def _cell_member(n: int, cell: SplitCell, eps: float, tail: float) -> float:
    kappa, mu, c_inf, c_zero = cell
    if mu >= 1.0:  # the target always informative: the zero clones are dropped (fewer is safe)
        return clone_noise_log_delta(n, kappa, 1.0, c_inf, eps, tail)
    return split_clone_log_delta(n, kappa, mu, c_inf, c_zero, eps, tail)


def laplace_split_members(n: int, eps0: float) -> list[Callable[[float, float], float]]:
    """The cell certificate's ``log δ`` members (the largest over them certifies every pair):
    the close pairs, then one split clone system per cell. Empty where ``n e^{−ε0}`` exceeds
    :data:`LAPLACE_SPLIT_MAX_LOAD` (a performance choice: the one-rate cells are smaller)."""
    if n * math.exp(-eps0) > LAPLACE_SPLIT_MAX_LOAD:
        return []
    edges, cells = laplace_split_cells(eps0)
    members: list[Callable[[float, float], float]] = [
        functools.partial(_close_pairs_member, edges[0] * eps0 / 2.0)
    ]
    members.extend(functools.partial(_cell_member, n, cell) for cell in cells)
    return members
