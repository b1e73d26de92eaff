"""Shortcuts of the mechanism certificates (issue 32, s22-lap): a Laplace query skips the
generic ``variation_ratio`` certificate where the start of its search is not below the
mechanism's own answer; the restricted search at δ = 1e-300 takes its first slope at the
members' own tail; Laplace's one-rate cells are screened by a coarse blocking of each.

The skip must give the floats of evaluating the bound: the query's answer equals the best
of the mechanism's statements and the generic bound solved in full, at a cell where the
bound is skipped (ε0 = 8.3, n = 1e6) and at one where it wins by 0.5 % (ε0 = 8.4, n = 1e6,
where a start claimed 1 % higher would skip the winner: the test fails then).
"""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.registry import best_of
from crowdhide.accounting.shuffle import generic, query
from crowdhide.accounting.shuffle._member_curve import MemberCurve
from crowdhide.accounting.shuffle.mechanisms import (
    MECHANISM_REGISTRY,
    MechanismParams,
    _capped_curve,
    _certificate_members,
    _certificate_screens,
    _coarse_clone_screen,
)
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, _laplace_cells
from crowdhide.accounting.shuffle.variation_ratio import VariationRatio
from tests.accounting.test_shuffle_mechanisms import split_reference_delta


def asked_bounds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The generic bounds a query asks for from now on (``generic.shuffle_epsilon`` counted;
    ``monkeypatch.undo()`` stops counting)."""
    asked: list[str] = []
    real = generic.shuffle_epsilon

    def counting(**kw: object) -> object:
        asked.append(str(kw["bound"]))
        return real(**kw)  # type: ignore[arg-type]

    monkeypatch.setattr(generic, "shuffle_epsilon", counting)
    return asked


def _full(eps0: float, n: int, delta: float) -> tuple[float, str]:
    """The mechanism's statements and ``variation_ratio`` solved in full, the best taken."""
    mp = MechanismParams(eps0=eps0, n=n)
    rows = list(
        MECHANISM_REGISTRY.all(
            mp, names=("mechanism:laplace", "mechanism_lower:laplace"), delta=delta
        )
    )
    rows.append(
        generic.shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
    )
    best = best_of(rows, by="epsilon")
    return best.epsilon, best.source


def _start(eps0: float, n: int, delta: float) -> float:
    return query._variation_start_epsilon(eps0, n, delta)


@pytest.mark.parametrize(("eps0", "skipped"), [(8.3, True), (8.4, False)])
def test_skip_gives_the_full_answer(
    eps0: float, skipped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    n, delta = 10**6, 1e-6
    asked = asked_bounds(monkeypatch)
    answer = query.shuffle_epsilon(eps0=eps0, n=n, delta=delta, mechanism="laplace")
    monkeypatch.undo()
    assert ("variation_ratio" not in asked) == skipped
    assert (answer.epsilon, answer.source) == _full(eps0, n, delta)
    if not skipped:  # the generic bound wins here, by less than 1 % over its start
        own = MECHANISM_REGISTRY.statement(
            "mechanism:laplace", MechanismParams(eps0=eps0, n=n), delta=delta
        ).epsilon
        assert answer.source == "variation_ratio"
        assert _start(eps0, n, delta) < own < 1.01 * _start(eps0, n, delta)


def test_start_is_never_above_the_bound() -> None:
    """The start's rounded ε is at most the bound's, cell by cell (what the skip relies on)."""
    for eps0, n, delta in [(0.5, 10**3, 1e-6), (2.0, 10**4, 1e-10), (8.0, 10**9, 1e-6)]:
        full = generic.shuffle_epsilon(
            eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False
        ).epsilon
        assert _start(eps0, n, delta) <= full


def test_start_at_one_percent_more_skips_the_winner(monkeypatch: pytest.MonkeyPatch) -> None:
    """A start 1 % above the true one (an unsound claim) skips the winning generic bound:
    the answer then differs from the full one (the comparison above would fail)."""
    eps0, n, delta = 8.4, 10**6, 1e-6
    real = query._variation_start_epsilon
    monkeypatch.setattr(query, "_variation_start_epsilon", lambda *a: 1.01 * real(*a))
    answer = query.shuffle_epsilon(eps0=eps0, n=n, delta=delta, mechanism="laplace")
    assert answer.source == "mechanism:laplace"
    monkeypatch.undo()
    assert (answer.epsilon, answer.source) != _full(eps0, n, delta)


def test_deep_slope_is_the_members_own() -> None:
    """At δ = 1e-300 the restricted search's floor gives a slope while solving (with the
    default tail, e^-60, log δ sits at the tail and the slope is lost)."""
    eps0, n, delta = 1.0, 10**6, 1e-300
    capped = _capped_curve(n, eps0, MECHANISMS["piecewise"].params(eps0, 0, 1)[1])
    floor: MemberCurve = capped._floor  # type: ignore[assignment]
    eps = floor.epsilon(delta)
    step = 1e-4 * eps

    def slope() -> float:
        return (floor.log_delta(eps + step) - floor.log_delta(eps)) / step

    assert abs(slope()) < 1e-3 * 20_000.0  # flat at the default tail
    with floor.tail_for(delta):
        assert slope() < -10_000.0  # about -2.3e4 per unit of ε there
        assert abs(floor.log_delta(eps) - math.log(delta)) < 0.1
    assert floor.log_tail == -60.0


@pytest.mark.parametrize("eps0", [1.0, 4.0])
def test_coarse_cell_screen_bounds_the_exact_cell(eps0: float) -> None:
    """Each Laplace one-rate cell's coarse screen is at least the cell's exact δ (the
    one-rate system is the split one with equal shares, summed unblocked), and equal to it
    where every count is its own block (n = 40, ε0 = 4): a 1 % larger clone rate in the
    screen falls below the exact δ there, so the bound is caught."""
    kappa = kappa_up(eps0)
    caught = False
    for n in (40, 150):
        for eps in (0.05 * eps0, 0.2 * eps0):
            for mu2, rho in _laplace_cells(eps0)[::3]:  # 4 of the 12 (the sums are slow)
                exact = split_reference_delta(n, kappa, mu2, rho * mu2, rho * (1.0 - mu2), eps)
                screen = math.exp(_coarse_clone_screen(n, kappa, mu2, rho, eps, -60.0))
                assert exact * (1.0 - 1e-12) <= screen <= 10.0 * exact
                wrong = math.exp(_coarse_clone_screen(n, kappa, mu2, 1.01 * rho, eps, -60.0))
                caught |= wrong < exact * (1.0 - 1e-9)
    assert caught == (eps0 == 4.0)


@pytest.mark.parametrize(
    ("eps0", "n", "delta"), [(1.0, 1_000, 1e-6), (4.0, 10**6, 1e-10), (8.0, 10**6, 1e-6)]
)
def test_screened_cells_give_the_unscreened_answer(eps0: float, n: int, delta: float) -> None:
    """The Laplace one-rate cells with their coarse screens give the floats of the cells
    solved one by one without them."""
    laplace = MECHANISMS["laplace"]
    members = _certificate_members(laplace, n, eps0, 0, 1)
    screens = _certificate_screens(laplace, n, eps0, 0, 1)
    assert screens is not None
    assert len(screens) == len(members) == 12
    screened = MemberCurve(members, eps0, lower=False, screens=screens).epsilon(delta)
    assert screened == MemberCurve(members, eps0, lower=False).epsilon(delta)


def test_deep_search_passes_in_fewer_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """At δ = 1e-300 (ε0 = 1, n = 1e6) the restricted search returns a point where its own
    bound meets the target, after at most 7 evaluations (11 with the default tail's slope)."""
    eps0, n, delta = 1.0, 10**6, 1e-300
    calls: list[float] = []
    real = VariationRatio.__call__

    def counting(self: VariationRatio, eps: float, log_tail: float) -> float:
        calls.append(eps)
        return real(self, eps, log_tail)

    monkeypatch.setattr(VariationRatio, "__call__", counting)
    mu_max = MECHANISMS["piecewise"].params(eps0, 0, 1)[1]
    eps = _capped_curve(n, eps0, mu_max).epsilon(delta)
    assert len(calls) <= 7
    tail = min(-40.0, math.log(delta) - 40.0)
    assert VariationRatio(n, eps0, mu_max=mu_max)(eps, tail) <= math.log(delta)
