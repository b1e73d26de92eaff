"""Tests of crowdhide.netdp.walk_pld: per-cycle PLDs are dp_accounting PLDs that dominate the
profile, and the accelerated composition never undercuts dp_accounting's own composition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.composition import PldCurve
from crowdhide.accounting.gaussian import gaussian_epsilon, gaussian_log_delta
from crowdhide.netdp.cycle_privacy import CycleMechanism, cycle_profile
from crowdhide.netdp.walk_pld import cycle_plds, observer_epsilons, pld_from_profile

MECH = CycleMechanism(kind="gaussian", noise_multiplier=6.0)


def _profile(r: int, step: float, size: int = 512) -> np.ndarray:
    return cycle_profile(np.arange(size + 1) * step, intermediates=r, p=1 / 19, mechanism=MECH)


@pytest.mark.parametrize(("r", "step"), [(3, 2e-3), (20, 1e-3), (60, 5e-4)])
def test_pld_from_profile_dominates_and_matches_dp_accounting_connect_dots(
    r: int, step: float
) -> None:
    from dp_accounting.pld import pld_pmf

    prof = _profile(r, step)
    curve = pld_from_profile(prof, step=step)
    assert isinstance(curve, PldCurve)
    grid = np.arange(prof.size) * step
    achieved = np.array([curve.delta(float(e)) for e in grid[::16]])
    assert np.all(achieved >= prof[::16])
    assert np.allclose(achieved, prof[::16], rtol=1e-9, atol=1e-15)
    # the same masses as dp_accounting's connect-the-dots on the symmetric extension
    k = np.arange(prof.size)
    neg = -np.expm1(-k * step) + np.exp(-k * step) * prof
    deltas = np.concatenate([neg[:0:-1], prof])
    ref = pld_pmf.create_pmf_pessimistic_connect_dots(
        step, np.arange(-k[-1], k[-1] + 1), deltas
    ).to_dense_pmf()
    for e in (0.0, 0.01, 0.05):
        assert curve.delta(e) == pytest.approx(ref.get_delta_for_epsilon(e), rel=1e-6, abs=1e-12)


def test_gaussian_composition_matches_exact() -> None:
    step = 0.005
    prof = np.exp(gaussian_log_delta(np.arange(0, 1200) * step, mu=0.2))
    pld = pld_from_profile(prof, step=step)
    ours = observer_epsilons([[50], [10]], [pld], delta=1e-6)
    for count, value in zip((50, 10), ours, strict=True):
        exact = gaussian_epsilon(mu=0.2 * math.sqrt(count), delta=1e-6)
        assert exact - 1e-9 <= value <= exact + 0.03


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_accelerated_composition_never_below_dp_accounting(seed: int) -> None:
    rng = np.random.default_rng(seed)
    step = 1e-3
    plds = [pld_from_profile(_profile(r, step), step=step) for r in (2, 9, 25, 70)]
    counts = rng.integers(0, 12, size=(6, 4))
    counts[0] = 0  # an observer without cycles
    for delta in (1e-3, 1e-6, 1e-9):
        fast = observer_epsilons(counts, plds, delta=delta)
        ref = observer_epsilons(counts, plds, delta=delta, accelerated=False)
        assert fast[0] == ref[0] == 0.0
        assert np.all(fast >= ref - 1e-12)
        assert np.all(fast <= ref + 3 * step)


def test_observer_epsilons_checks_shape() -> None:
    pld = pld_from_profile(_profile(3, 1e-3, 64), step=1e-3)
    with pytest.raises(ValueError, match="counts must have shape"):
        observer_epsilons([[1, 2]], [pld], delta=1e-6)


def test_cycle_plds_share_one_lattice_and_dominate() -> None:
    specs = [{"intermediates": 4}, None, {"intermediates": 40, "noise_terms": 30}]
    step, plds = cycle_plds(
        specs, np.array([3.0, 1.0, 2.0]), p=1 / 19, mechanism=MECH, resolution=4
    )
    assert len(plds) == 3
    assert plds[1].delta(0.0) == 0.0  # no loss
    for spec, pld in zip(specs, plds, strict=True):
        if spec is None:
            continue
        grid = np.arange(0, 40) * step
        prof = cycle_profile(grid, p=1 / 19, mechanism=MECH, **spec)
        assert all(pld.delta(float(e)) >= v * (1 - 1e-12) for e, v in zip(grid, prof, strict=True))
