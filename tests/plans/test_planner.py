"""Planner: certified choice within constraints; costs; accountant injection."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from crowdhide.accounting.scrambler.local import local_randomizer_epsilon as local_sampling_epsilon
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.backends import execute
from crowdhide.plans import protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from crowdhide.plans.certify import (
    LocalBoundAccountant,
    ScramblerAccountant,
    certify,
    default_accountant,
)
from crowdhide.plans.countermeasure_costs import Constraints, route_costs
from crowdhide.plans.data import synth_aggregate
from crowdhide.plans.planner import choose_countermeasures, plan_protection


class ToyScramblerAccountant(LocalBoundAccountant):
    """A fake amplification: δ(ε) = exp(−ε·(σn + d)/10) (monotone in d), for planner tests."""

    name = "toy"
    calls = 0

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        ToyScramblerAccountant.calls += 1
        if epsilon >= local_sampling_epsilon(targets=targets, sigma=sigma):
            return 0.0
        return math.exp(-epsilon * (sigma * n + dummies) / 10.0)

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> PrivacyStatement:
        eps = -10.0 * math.log(delta) / (sigma * n + dummies) if sigma * n + dummies else math.inf
        eps0 = local_sampling_epsilon(targets=targets, sigma=sigma)
        return PrivacyStatement(
            epsilon=min(eps, eps0), delta=delta if eps < eps0 else 0.0, source="toy"
        )


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_local_choice_meets_the_target_and_is_cheapest(eps: float) -> None:
    c = choose_countermeasures(
        sources=5000, targets=20, epsilon=eps, delta=1e-4, accountant=LocalBoundAccountant()
    )
    assert c.privacy.epsilon <= eps
    assert c.n is None
    # brute force over the same grid: nothing cheaper reaches eps
    for sigma in (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9):
        for d in range(20):
            if local_sampling_epsilon(targets=20, sigma=sigma, dummies=d) <= eps:
                costs = route_costs(sources=5000, targets=20, sigma=sigma, local_dummies=d)
                assert costs.load_at_fixed_utility >= c.costs.load_at_fixed_utility - 1e-9


def test_constraints_are_respected_or_reported() -> None:
    limits = Constraints(max_overhead=3.0, max_consents=0.5, max_channels=150)
    c = choose_countermeasures(
        sources=10_000,
        targets=20,
        epsilon=1.0,
        delta=1e-4,
        constraints=limits,
        accountant=ToyScramblerAccountant(),
    )
    assert c.costs.overhead <= 3.0
    assert c.costs.extra_consents <= 5000
    assert c.n is not None
    assert c.n + 20 <= 150
    assert c.privacy.epsilon <= 1.0
    assert c.privacy.delta <= 1e-4
    with pytest.raises(ValueError, match="no countermeasure reaches"):
        choose_countermeasures(
            sources=10_000,
            targets=20,
            epsilon=0.01,
            delta=1e-9,
            constraints=Constraints(max_overhead=1.0),
            accountant=LocalBoundAccountant(),
        )
    with pytest.raises(ValueError, match=re.escape("constraints.max_overhead must be >= 1.0")):
        Constraints(max_overhead=0.5)
    with pytest.raises(ValueError, match=re.escape("privacy.epsilon must be > 0.0")):
        choose_countermeasures(sources=10, targets=3, epsilon=0.0, delta=1e-4)


def test_plan_protection_certifies_the_whole_plan() -> None:
    table = synth_aggregate(rows=20_000, attributes=3, intervals=10, rng=0)
    q = AggregateQuery.from_sql(
        "SELECT g1, g2, g3, AVG(v) FROM D GROUP BY GROUPING SETS ((g1), (g2), (g3))"
    )
    setup = aggregate_plan(table, q, compute_nodes=10)
    acct = ToyScramblerAccountant()
    plan, choices = plan_protection(
        setup.plan,
        epsilon=1.5,
        delta=3e-4,
        accountant=acct,
        constraints=Constraints(max_channels=600),
    )
    cert = certify(plan, delta=3e-4, accountant=acct).privacy
    assert cert.epsilon <= 1.5 + 1e-9
    assert cert.delta <= 3e-4 * (1 + 1e-12)
    assert len(choices) == 3
    assert len({(c.sigma, c.n, c.d) for c in choices.values()}) == 1
    run = execute(plan, rng=0)
    assert len(run.transcript) > 20_000 * 3


def test_scrambler_accountant_is_the_default_and_never_worse_than_local() -> None:
    acct = default_accountant()
    assert acct.name == "scrambler"
    assert isinstance(acct, ScramblerAccountant)
    c = acct.scrambled(targets=20, sigma=0.2, n=100, dummies=50, delta=1e-4, capped=False)
    assert c.source == "lemma2-exact"
    assert c.epsilon == pytest.approx(2.3268, abs=1e-4)
    assert c.is_certificate
    # When the scrambler bound is no better, the (valid) local-randomizer bound is used.
    tiny = acct.scrambled(targets=20, sigma=0.2, n=1, dummies=0, delta=1e-12, capped=False)
    assert tiny.epsilon <= math.log1p(0.8 * 20 / 0.2) + 1e-12
    assert tiny.is_certificate
    delta = acct.scrambled_delta(targets=20, sigma=0.2, n=100, dummies=50, epsilon=2.5)
    assert 0.0 < delta <= 1e-4
    assert acct.scrambled_delta(targets=20, sigma=0.2, n=100, dummies=5, epsilon=10.0) == 0.0
    assert acct.local(targets=20, sigma=0.5, dummies=3).epsilon == pytest.approx(math.log(6))


def test_certify_uses_the_smallest_partition() -> None:
    table = {"g": np.arange(250) % 5}
    q = AggregateQuery.from_sql("SELECT g, COUNT(*) FROM D GROUP BY g")
    plan = protect(
        aggregate_plan(table, q, compute_nodes=5).plan, sigma=0.5, per_scrambler=100, dummies=10
    )
    seen: list[int] = []

    class Spy(LocalBoundAccountant):
        def scrambled(self, **kw):  # type: ignore[no-untyped-def,override]
            seen.append(kw["n"])
            return PrivacyStatement(epsilon=1.0 / kw["n"], delta=0.0, source="spy")

    cert = certify(plan, delta=1e-4, accountant=Spy())
    assert sorted(seen) == [50, 100]
    assert cert.privacy.epsilon == pytest.approx(1 / 50)
    with pytest.raises(ValueError, match=re.escape("delta must be <= 1.0")):
        certify(plan, delta=2.0)


@pytest.mark.parametrize("eps", [0.3, 0.8, 2.0])
def test_branch_and_bound_matches_exhaustive_search(eps: float) -> None:
    from crowdhide.plans.planner import DEFAULT_DS, DEFAULT_NS, DEFAULT_SIGMAS

    acct = ToyScramblerAccountant()
    limits = Constraints(max_channels=400, max_overhead=12.0)
    choice = choose_countermeasures(
        sources=8000, targets=20, epsilon=eps, delta=1e-5, constraints=limits, accountant=acct
    )
    best = math.inf
    for sigma in DEFAULT_SIGMAS:
        for d in range(20):
            if local_sampling_epsilon(targets=20, sigma=sigma, dummies=d) <= eps:
                c = route_costs(sources=8000, targets=20, sigma=sigma, local_dummies=d)
                if c.overhead <= 12.0:
                    best = min(best, c.load_at_fixed_utility)
        for n in DEFAULT_NS:
            for d in DEFAULT_DS:
                c = route_costs(sources=8000, targets=20, sigma=sigma, n=n, dummies=d)
                if n + 20 > 400 or c.overhead > 12.0:
                    continue
                if (
                    acct.scrambled_delta(targets=20, sigma=sigma, n=n, dummies=d, epsilon=eps)
                    <= 1e-5
                ):
                    best = min(best, c.load_at_fixed_utility)
    assert choice.costs.load_at_fixed_utility == pytest.approx(best)
