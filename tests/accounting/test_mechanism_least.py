"""The lazy least of a mechanism's certificates and the cell screens (issue 32: piecewise
queries where the revealed-class cells join took 0.4-2.3 s).

:class:`~crowdhide.accounting.shuffle.mechanisms._Least` must give the same floats as
solving every certificate in full and taking the least (the former ``SmallestCurve``), and
must not run the restricted variation-ratio search where the cells are the least. The
screen of a piecewise cell, one report's ``μ_hi δ_RR(ε)``, must be at least the exact δ of
one report of every pair in the cell: it equals that of the cell's widest pair, so a 1 %
smaller μ fails.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from crowdhide.accounting.curves import SmallestCurve
from crowdhide.accounting.shuffle import mechanisms as mech
from crowdhide.accounting.shuffle import variation_ratio
from crowdhide.accounting.shuffle._member_curve import MemberCurve
from crowdhide.accounting.shuffle.mechanisms import _one_report_screen, mechanism_curve
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, piecewise_reveal_cells
from tests.accounting import _mechanism_matrices as mm


def _full_least(eps0: float, n: int, delta: float) -> float:
    """Every piecewise certificate solved in full (fresh curves), the least taken."""
    pw = MECHANISMS["piecewise"]
    raw = MemberCurve(mech._certificate_members(pw, n, eps0, 0, 1), eps0, lower=False)
    parts: list[mech.PrivacyCurve] = [raw, mech._capped_curve(n, eps0, pw.params(eps0, 0, 1)[1])]
    cells = mech._reveal_cell_curve(piecewise_reveal_cells, n, eps0)
    if cells is not None:
        parts.append(cells)
    return SmallestCurve(parts).epsilon(delta)


@pytest.mark.parametrize(
    ("eps0", "n", "delta"),
    [(8.0, 10_000, 1e-6), (4.0, 1_000, 1e-6), (1.0, 10_000, 1e-6), (8.0, 1_000, 1e-300)],
)
def test_lazy_least_is_the_least_of_every_certificate(eps0: float, n: int, delta: float) -> None:
    least = mech._Least(
        [
            mech._capped_curve(n, eps0, MECHANISMS["piecewise"].params(eps0, 0, 1)[1]),
            *(
                [c]
                if (c := mech._reveal_cell_curve(piecewise_reveal_cells, n, eps0)) is not None
                else []
            ),
            MemberCurve(
                mech._certificate_members(MECHANISMS["piecewise"], n, eps0, 0, 1), eps0, lower=False
            ),
        ]
    )
    assert least.epsilon(delta) == _full_least(eps0, n, delta)


def test_cells_least_skips_the_variation_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """ε0 = 8, n = 1e4: the cells give 5.35, the capped search's floor is about ε0, so the
    search (a variation-ratio refinement per ε) is never run."""
    calls: list[float] = []
    original = variation_ratio.VariationRatio.__call__

    def counted(self: variation_ratio.VariationRatio, eps: float, tail: float) -> float:
        calls.append(eps)
        return original(self, eps, tail)

    monkeypatch.setattr(variation_ratio.VariationRatio, "__call__", counted)
    eps = mechanism_curve(mechanism="piecewise", eps0=8.0, n=10_000).epsilon(1e-6)
    assert 5.3 < eps < 5.4
    assert calls == []


def _one_report_delta(eps0: float, x: float, x2: float, eps: float) -> float:
    """Exact δ(ε) of one piecewise report for the pair (x, x'), on the binned reports."""
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    left = [(big_c + 1.0) * v / 2.0 - (big_c - 1.0) / 2.0 for v in (x, x2)]
    edges = sorted({e for a in left for e in (a, a + big_c - 1.0)} - {-big_c, big_c})
    r = mm.piecewise_binned(eps0, [x, x2], edges)
    return float(np.maximum(r[0] - math.exp(eps) * r[1], 0.0).sum())


@pytest.mark.parametrize("eps0", [1.0, 4.0, 8.0])
def test_cell_screen_bounds_one_report_of_its_pairs(eps0: float) -> None:
    """The screen of each cell is at least every pair's one-report δ (pairs x = −a, x' = a
    with their informative length at the cell's ends) and equals it at the widest pair."""
    t = math.exp(eps0 / 2.0)
    big_c = (t + 1.0) / (t - 1.0)
    _, cells = piecewise_reveal_cells(eps0)
    checked = 0
    for mu_hi, c_inf, _, _ in cells[-12:]:
        l_hi = mu_hi / ((t * (t - 1.0) / (2.0 * (t + 1.0))) * (1.0 + 1.0 / (t * t)))
        l_lo = c_inf / (2.0 * (t - 1.0) / (2.0 * t * (t + 1.0)))
        for eps in (0.1 * eps0, 0.5 * eps0):
            screen = math.exp(_one_report_screen(mu_hi, eps0, eps))
            widest = 0.0
            for length in (l_lo, 0.5 * (l_lo + l_hi), l_hi):
                a = min(length / (big_c + 1.0), 1.0)  # (C + 1) (2a)/2 = L
                exact = _one_report_delta(eps0, -a, a, eps)
                assert exact <= screen * (1.0 + 1e-9)
                widest = exact
            # tight at the widest pair: 1 % less μ would be below the exact δ
            assert widest > 0.99 * screen * (1.0 + 1e-9)
            checked += 1
    assert checked == 24


def _linear(eps: float, tail: float) -> float:
    """A member with ``log δ = −10 ε`` (root at ``ln(1e6)/10`` for δ = 1e-6)."""
    return -10.0 * eps


def test_probe_at_stop_keeps_the_floats() -> None:
    """``epsilon_until`` below the root returns ``stop`` after one evaluation, without
    recording progress: the full answer afterwards is the float of a fresh curve, and a
    second call at the same stop advances (no loop)."""
    calls: list[float] = []

    def counted(eps: float, tail: float) -> float:
        calls.append(eps)
        return _linear(eps, tail)

    fresh = MemberCurve([_linear], 8.0, lower=False).epsilon(1e-6)
    assert 1.38 < fresh < 1.39
    curve = MemberCurve([counted], 8.0, lower=False)
    assert curve.epsilon_until(1e-6, 1.0) == 1.0
    assert calls == [1.0]
    assert not curve.finished(1e-6)
    again = curve.epsilon_until(1e-6, 1.0)  # the same stop: a step, not another probe
    assert curve.finished(1e-6)
    assert again == fresh == curve.epsilon(1e-6)
    # above the root the probe passes and the member is solved as without it
    other = MemberCurve([_linear], 8.0, lower=False)
    assert other.epsilon_until(1e-6, 2.0) == fresh
    assert other.finished(1e-6)


def test_one_rate_curve_is_probed_not_solved(monkeypatch: pytest.MonkeyPatch) -> None:
    """ε0 = 2, n = 1e4: the capped search is the least; the one-rate curve (8 evaluations
    when solved) is evaluated at most twice, and the answer is the least of all solved."""
    calls: list[float] = []
    original = mech._krr_fast.clone_noise_log_delta

    def counted(*args: float, **kwargs: float) -> float:
        calls.append(args[4])
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mech._krr_fast, "clone_noise_log_delta", counted)
    eps = mechanism_curve(mechanism="piecewise", eps0=2.0, n=10_000).epsilon(1e-6)
    assert len(calls) <= 2
    monkeypatch.setattr(mech._krr_fast, "clone_noise_log_delta", original)
    assert math.isclose(eps, 0.10376361, rel_tol=1e-6)


@pytest.mark.parametrize(("eps0", "n", "delta"), [(0.5, 10_000, 1e-10), (2.0, 10_000, 1e-6)])
def test_split_floor_gives_the_former_answer(eps0: float, n: int, delta: float) -> None:
    """The capped search's floor is the split system alone (no min with the one-rate
    system). The floor only starts the search, so the answer is a point where the
    restricted variation-ratio certificate itself meets the target, within the root
    tolerance of the former answer (0.5, 1e4, 1e-10: 9e-12 relative above it)."""
    mu_max = MECHANISMS["piecewise"].params(eps0, 0, 1)[1]
    rates = variation_ratio.clone_rates(mu_max, eps0)
    old = MemberCurve(
        [
            functools.partial(
                mech._clone_member, n, mech.kappa_up(eps0), mu_max, math.exp(-eps0), rates
            )
        ],
        eps0,
        lower=False,
    )
    search = mech.BracketedCurve(variation_ratio.VariationRatio(n, eps0, mu_max=mu_max), eps0, old)
    former = mech._Capped(search, old, eps0).epsilon(delta)
    now = mech._capped_curve(n, eps0, mu_max).epsilon(delta)
    assert math.isclose(now, former, rel_tol=1e-9)
    target = math.log(delta)
    bound = variation_ratio.VariationRatio(n, eps0, mu_max=mu_max)
    assert bound(now, min(-40.0, target - 40.0)) <= target


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 4.0, 8.0])
def test_one_rate_is_never_below_the_capped_floor(eps0: float) -> None:
    """The one-rate curve starts its search at the capped floor's ε: the one-rate system
    at the same μ has fewer clones of each kind than the floor's split system (2/(e+1) >=
    1/e informative, the same uninformative up to the floor's ulps), so its log δ is never
    below the floor's."""
    mu = MECHANISMS["piecewise"].params(eps0, 0, 1)[1]
    rates = variation_ratio.clone_rates(mu, eps0)
    kappa = mech.kappa_up(eps0)
    checked = 0
    for n in (1_000, 10_000, 1_000_000):
        for frac in (0.001, 0.01, 0.05, 0.2, 0.5):
            eps = frac * eps0
            one = mech._clone_member(n, kappa, mu, math.exp(-eps0), None, eps, -400.0)
            split = mech._split_member(n, kappa, mu, rates, eps, -400.0)
            if split > -300.0:  # above the tail allowances (near them both are rounding)
                assert one >= split - 1e-9
                checked += 1
    assert checked >= 8


@pytest.mark.parametrize(
    ("eps0", "n", "delta"),
    [(2.0, 10_000, 1e-6), (1.0, 1_000, 1e-10), (8.0, 1_000, 1e-300), (8.0, 1_000, 1e-6)],
)
def test_curve_with_probe_and_start_is_the_least(eps0: float, n: int, delta: float) -> None:
    """The mechanism's curve (probe at stop, the one-rate search from the floor) against
    every certificate solved in full from 0: within the root tolerance, never above."""
    got = mechanism_curve(mechanism="piecewise", eps0=eps0, n=n).inner.epsilon(delta)
    full = _full_least(eps0, n, delta)
    assert got <= full * (1.0 + 1e-9)
    assert math.isclose(got, full, rel_tol=1e-8)
