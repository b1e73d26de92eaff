"""The one cost model of the countermeasures (routes, overhead, channels, consents)."""

from __future__ import annotations

import math
import re

import pytest

from crowdhide.plans.countermeasure_costs import Constraints, cost_rank, route_costs


def test_route_costs_follow_the_paper_formulas() -> None:
    c = route_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=50)
    keep = 1 - 0.1 + 0.1 / 20
    assert c.scheme == "scrambler"
    assert c.real_fraction == pytest.approx(keep)
    assert c.messages == 2 * 10_000 + 100 * 50
    assert c.overhead == pytest.approx(c.messages / 10_000)
    assert c.scramblers == 100
    assert c.channels_per_scrambler == 120
    assert c.channels_per_target == 100
    assert c.device_channels == 120
    assert c.extra_consents == math.ceil(10_000 / keep) - 10_000
    assert c.extra_consents_relative == pytest.approx(c.extra_consents / 10_000)
    assert c.load_at_fixed_utility == pytest.approx(c.messages / (10_000 * keep))
    local = route_costs(sources=1000, targets=20, sigma=0.5, local_dummies=3)
    assert (local.scheme, local.messages, local.overhead, local.scramblers) == (
        "local",
        4000,
        4.0,
        0,
    )
    assert local.device_channels == 4
    plain = route_costs(sources=10, targets=3)
    assert (plain.scheme, plain.overhead) == ("unprotected", 1.0)
    with pytest.raises(ValueError, match="local_dummies must be <= 19"):
        route_costs(sources=1000, targets=20, local_dummies=20)
    with pytest.raises(ValueError, match=re.escape("sigma must be < 1.0")):
        route_costs(sources=10, targets=2, sigma=1.0)


def test_overhead_is_at_least_one_and_grows_with_dummies() -> None:
    previous = 0.0
    for d in (0, 1, 10, 100):
        c = route_costs(sources=5000, targets=20, sigma=0.2, n=50, dummies=d)
        assert c.overhead >= 1.0
        assert c.overhead > previous
        previous = c.overhead


def test_constraints_fit_and_rank() -> None:
    cheap = route_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=50)
    dear = route_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=500)
    assert Constraints(max_overhead=2.5, max_channels=120).fits(cheap)
    assert not Constraints(max_overhead=2.4).fits(cheap)
    assert not Constraints(max_channels=119).fits(cheap)
    assert not Constraints(max_consents=0.01).fits(cheap)
    assert cost_rank(cheap) < cost_rank(dear)
    with pytest.raises(ValueError, match=re.escape("constraints.max_overhead must be >= 1.0")):
        Constraints(max_overhead=0.5)
