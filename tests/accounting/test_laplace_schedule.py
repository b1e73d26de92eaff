"""Three schedules of the Laplace query (issue 32, s32-lap; docs/proofs/mechanism-certificates.md
section 1v): its one-rate cells solved largest ``μ/ρ`` first, a stepped cell's bracket
searched up from a failing end next to the root, and the generic variation-ratio skip told by
one evaluation.

None changes a bound: each answer is checked against an independent evaluation of every
one-rate cell at the answer (the certificate passes there and fails a little below it), and
against the former schedule's answer (the same cells, list order, the bracketed search), within
the search tolerance. Each check is shown able to fail.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle import _krr_fast, _member_curve, mechanisms, query
from crowdhide.accounting.shuffle._member_curve import MemberCurve, _up_from, upper_root
from crowdhide.accounting.shuffle.curves import BRACKET_RTOL
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, certificate_cells

Member = Callable[[float, float], float]
Member1 = Callable[[float], float]

#: (ε0, n, δ): the cells of the issue's table where the one-rate cells answer and the order
#: matters (ε0 = 1, 2: the 11th cell of Δ binds), and one where it does not (ε0 = 0.5).
CELLS = [
    (1.0, 10**4, 1e-6),
    (2.0, 10**6, 1e-10),
    (1.0, 10**4, 1e-300),
    (2.0, 10**4, 1e-300),
    (0.5, 10**6, 1e-300),
    (0.5, 10**4, 1e-6),
]


def _one_rate(n: int, eps0: float) -> list[Member]:
    """Every one-rate cell's member, in the cells' own order (Δ increasing)."""
    kappa = kappa_up(eps0)
    return [
        functools.partial(_krr_fast.clone_noise_log_delta, n, kappa, mu2, rho)
        for mu2, rho in certificate_cells(MECHANISMS["laplace"], eps0, 0, 1)
    ]


def _largest(members: list[Member], eps: float, delta: float) -> float:
    """The largest member's ``log δ`` at ε (windows at the solving tail)."""
    target = math.log(delta)
    return max(fn(eps, min(-40.0, target - 40.0)) for fn in members)


def test_solve_order_puts_the_largest_mu_over_rho_last() -> None:
    cells = certificate_cells(MECHANISMS["laplace"], 1.0, 0, 1)
    order = mechanisms._solve_order(cells)
    ratios = [mu2 / rho for mu2, rho in order]
    assert sorted(order) == sorted(cells)
    assert ratios == sorted(ratios)
    # ε0 = 1: the 11th cell of Δ has the largest μ/ρ (not the 12th, the last of the list)
    assert order[-1] == cells[10]


@pytest.mark.parametrize(("eps0", "n", "delta"), CELLS)
def test_one_rate_certificate_passes_and_matches_the_former_order(
    eps0: float, n: int, delta: float
) -> None:
    members = _one_rate(n, eps0)
    screens = [None] * len(members)
    new = MemberCurve(
        [members[i] for i in _order_indices(eps0)], eps0, lower=False, screens=screens,
        stepped=True,
    ).epsilon(delta)  # fmt: skip
    former = MemberCurve(members, eps0, lower=False).epsilon(delta)
    target = math.log(delta)
    assert _largest(members, new, delta) <= target  # every cell passes at the answer
    # within the searches' tolerance of the former answer (both pass; each has a failing
    # point within 4 BRACKET_RTOL, the former within 1e-10 of its last member's root)
    assert former * (1.0 - 5.0 * BRACKET_RTOL) <= new <= former * (1.0 + 5.0 * BRACKET_RTOL)
    # the check can fail: well below the answer some cell fails
    assert _largest(members, new * (1.0 - 1e-3), delta) > target


def _order_indices(eps0: float) -> list[int]:
    cells = certificate_cells(MECHANISMS["laplace"], eps0, 0, 1)
    return sorted(range(len(cells)), key=lambda i: cells[i][0] / cells[i][1])


def _step_curve(root: float, counter: list[int], flat: float = 3.4e-4) -> Member1:
    """A stepped ``log δ`` as at δ = 1e-300 (Laplace, ε0 = 2, n = 1e4): 0.0139 above the
    target (0) on a stretch ``flat`` (relative) wide below ``root``, a drop of 0.46 there,
    and a slope of 300 per unit of ε on either side."""
    start = root * (1.0 - flat)

    def curve(x: float) -> float:
        counter.append(1)
        if x >= root:
            return -0.45 - 300.0 * (x - root)
        return 0.0139 + 300.0 * max(0.0, start - x)

    return curve


@pytest.mark.parametrize("offset", [3e-6, 8.6e-6, 3.4e-4, 1e-2])
def test_up_from_returns_a_passing_point_next_to_the_step(offset: float) -> None:
    left = 1.2051706
    root = left * (1.0 + offset)
    counter: list[int] = []
    curve = _step_curve(root, counter)
    got = _up_from(curve, 0.0, left, 1.2202785)
    assert curve(got) <= 0.0
    assert root <= got <= root * (1.0 + 4.0 * BRACKET_RTOL)
    # the check can fail: a point 4 BRACKET_RTOL below the step fails
    assert curve(root * (1.0 - 4.0 * BRACKET_RTOL)) > 0.0


@pytest.mark.parametrize(("eps0", "n", "cell"), [(2.0, 10**4, 10), (0.5, 10**6, 11)])
def test_stepped_upper_root_takes_fewer_evaluations_on_a_laplace_cell(
    eps0: float, n: int, cell: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The binding one-rate cell at δ = 1e-300 from the lower bound's ε (its search in the
    table): the stepped search passes, within its tolerance of the former one (both rules
    off: ``STEP_GAP = −1``), in fewer evaluations (measured 29 -> 21 and 23 -> 9)."""
    member = _one_rate(n, eps0)[cell]
    target = math.log(1e-300)
    start = {2.0: 0.8483073273482626, 0.5: 0.017152039246305133}[eps0]
    counts, answers = {}, {}
    for stepped in (False, True):
        monkeypatch.setattr(_member_curve, "STEP_GAP", 0.1 if stepped else -1.0)
        calls: list[float] = []

        def curve(eps: float, calls: list[float] = calls) -> float:
            calls.append(eps)
            return min(member(eps, target - 40.0), 0.0)

        answers[stepped] = upper_root(curve, target, start, eps0, 1e-10 * eps0, stepped=stepped)
        counts[stepped] = len(calls)
    assert counts[True] < counts[False]
    assert member(answers[True], target - 40.0) <= target
    assert answers[False] * (1.0 - BRACKET_RTOL) <= answers[True]
    assert answers[True] <= answers[False] * (1.0 + 5.0 * BRACKET_RTOL)


@pytest.mark.parametrize(
    ("eps0", "n", "delta"), [(1.0, 10**4, 1e-6), (2.0, 10**6, 1e-10), (8.0, 10**9, 1e-6)]
)
def test_variation_start_above_agrees_with_its_search(eps0: float, n: int, delta: float) -> None:
    start = query._variation_start_epsilon(eps0, n, delta)
    for factor in (0.5, 0.99, 0.999999, 1.0, 1.01, 2.0):
        eps = start * factor
        if query._variation_start_above(eps0, n, delta, eps):
            assert start > eps  # "certainly above" is never wrong
    # and it can tell: well below the start it answers True, at or above it never
    assert query._variation_start_above(eps0, n, delta, 0.5 * start)
    assert not query._variation_start_above(eps0, n, delta, start)
    assert not query._variation_start_above(eps0, n, delta, math.inf)


@pytest.mark.parametrize(("eps0", "n", "delta"), [(1.0, 10**4, 1e-6), (4.0, 10**6, 1e-10)])
def test_laplace_query_answers_a_passing_certificate(eps0: float, n: int, delta: float) -> None:
    got = query.shuffle_epsilon(eps0=eps0, n=n, delta=delta, mechanism="laplace")
    members = _one_rate(n, eps0)
    assert got.source == "mechanism:laplace"
    assert _largest(members, got.epsilon, delta) <= math.log(delta)
    assert got.lower is not None
    assert got.lower.epsilon <= got.epsilon
