"""The one countermeasure calibrator: certified, within constraints, cheapest on the grid."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.scrambler.accountant import scrambler_epsilon
from crowdhide.accounting.scrambler.local import local_randomizer_epsilon
from crowdhide.plans.countermeasure_calibration import (
    CountermeasureCalibration,
    ScramblerCertifier,
    calibrate_countermeasures,
    search_countermeasures,
)
from crowdhide.plans.countermeasure_costs import Constraints, cost_rank, route_costs


def test_calibration_meets_target_and_constraints() -> None:
    cal = calibrate_countermeasures(
        targets=20, epsilon=1.0, delta=1e-4, max_channels=620, max_overhead=5.0
    )
    assert cal.feasible
    assert cal.costs is not None
    assert cal.privacy.is_certificate
    assert cal.privacy.meets_target
    assert cal.privacy.epsilon <= 1.0
    assert cal.costs.device_channels <= 620
    assert cal.costs.overhead <= 5.0
    assert cal.n is not None
    assert cal.sigma is not None
    check = scrambler_epsilon(
        targets=20, sigma=cal.sigma, n=cal.n, dummies=cal.dummies, delta=1e-4,
        method="lemma2-exact",
    )  # fmt: skip
    assert check.epsilon <= 1.0
    # One dummy fewer does not certify the target: d is the smallest sufficient one.
    fewer = ScramblerCertifier(targets=20, epsilon=1.0, delta=1e-4)
    assert fewer.delta_at(cal.sigma, cal.n, cal.dummies - 1) > 1e-4
    assert cal.to_dict()["meets_target"] is True


def test_calibration_explains_impossibility() -> None:
    cal = calibrate_countermeasures(
        targets=20, epsilon=0.5, delta=1e-4, max_channels=40, max_overhead=1.5
    )
    assert not cal.feasible
    assert "180" in cal.reason
    assert cal.privacy.meets_target is False
    assert not cal.privacy.conditions_met


def test_calibration_is_cheapest_on_a_small_grid() -> None:
    # Exhaustive check of the branch and bound: every configuration of the grid that fits
    # and is certified costs at least as much as the one chosen.
    sigmas, ns, ds = (0.1, 0.3, 0.5), (20, 50, 100), tuple(range(0, 201, 10))
    T, S, eps, dlt = 10, 2000, 1.2, 1e-5
    limits = Constraints(max_overhead=3.5)
    cert = ScramblerCertifier(targets=T, epsilon=eps, delta=dlt)
    cal = search_countermeasures(
        sources=S, targets=T, epsilon=eps, delta=dlt, delta_at=cert.delta_at,
        certify=cert.certify, constraints=limits, sigmas=sigmas, ns=ns, dummies=ds,
    )  # fmt: skip
    assert cal.feasible
    assert cal.costs is not None
    best = math.inf
    for s in sigmas:
        for dl in range(T):
            if local_randomizer_epsilon(targets=T, sigma=s, dummies=dl) <= eps:
                c = route_costs(sources=S, targets=T, sigma=s, local_dummies=dl)
                if limits.fits(c):
                    best = min(best, cost_rank(c)[0])
        for n in ns:
            for d in ds:
                c = route_costs(sources=S, targets=T, sigma=s, n=n, dummies=d)
                if limits.fits(c) and cert.delta_at(s, n, d) <= dlt:
                    best = min(best, cost_rank(c)[0])
    assert cost_rank(cal.costs)[0] == pytest.approx(best)


def test_single_target_and_validation() -> None:
    one = calibrate_countermeasures(targets=1, epsilon=0.1, delta=1e-6)
    assert isinstance(one, CountermeasureCalibration)
    assert one.feasible
    assert one.scheme == "none"
    assert one.privacy.epsilon == 0.0
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_countermeasures(targets=5, epsilon=0.0, delta=1e-3)
    with pytest.raises(ValueError, match="max_channels"):
        calibrate_countermeasures(targets=5, epsilon=1.0, delta=1e-3, max_channels=0)
    with pytest.raises(ValueError, match="max_overhead must be >= 1"):
        calibrate_countermeasures(targets=5, epsilon=1.0, delta=1e-3, max_overhead=0.5)
    with pytest.raises(TypeError):
        CountermeasureCalibration(None, True)  # type: ignore[misc]
