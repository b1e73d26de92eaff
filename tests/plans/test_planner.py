"""Planner: certified choice within constraints; costs; accountant injection."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from crowdhide.engine import execute
from crowdhide.plans import protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from crowdhide.plans.certify import (
    CountermeasureCertificate,
    LocalBoundAccountant,
    ScramblerModuleAccountant,
    certify,
    default_accountant,
    local_sampling_epsilon,
)
from crowdhide.plans.data import synth_aggregate
from crowdhide.plans.planner import (
    Constraints,
    choose_countermeasures,
    plan_protection,
    route_costs,
)


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
    ) -> CountermeasureCertificate:
        eps = -10.0 * math.log(delta) / (sigma * n + dummies) if sigma * n + dummies else math.inf
        eps0 = local_sampling_epsilon(targets=targets, sigma=sigma)
        return CountermeasureCertificate(min(eps, eps0), delta if eps < eps0 else 0.0, "toy", True)


def test_route_costs_follow_the_paper_formulas() -> None:
    c = route_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=50)
    assert c.messages == 2 * 10_000 + 100 * 50
    assert c.channels_per_scrambler == 120
    assert c.channels_per_target == 100
    assert c.expected_used == pytest.approx(10_000 * (0.9 + 0.1 / 20))
    assert c.extra_consents == math.ceil(10_000 / 0.905) - 10_000
    local = route_costs(sources=1000, targets=20, sigma=0.5, local_dummies=3)
    assert local.messages == 4000
    assert local.overhead == 4.0
    with pytest.raises(ValueError, match="local_dummies must be <= 19"):
        route_costs(sources=1000, targets=20, local_dummies=20)
    with pytest.raises(ValueError, match=re.escape("sigma must be < 1.0")):
        route_costs(sources=10, targets=2, sigma=1.0)


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_local_choice_meets_the_target_and_is_cheapest(eps: float) -> None:
    c = choose_countermeasures(
        sources=5000, targets=20, epsilon=eps, delta=1e-4, accountant=LocalBoundAccountant()
    )
    assert c.epsilon_cluster <= eps
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
    assert c.epsilon_cluster <= 1.0
    assert c.delta_cluster <= 1e-4
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
    cert = certify(plan, delta=3e-4, accountant=acct)
    assert cert.epsilon <= 1.5 + 1e-9
    assert cert.delta <= 3e-4 * (1 + 1e-12)
    assert len(choices) == 3
    assert len({(c.sigma, c.n, c.d) for c in choices.values()}) == 1
    run = execute(plan, rng=0)
    assert len(run.transcript) > 20_000 * 3


def test_accountant_injection_and_default() -> None:
    acct = default_accountant()
    assert acct.name in ("scrambler", "local-bound")

    class Module:
        @staticmethod
        def scrambler_epsilon(**kw):  # type: ignore[no-untyped-def]
            class R:
                epsilon, delta, method, valid, note = 0.4, kw["delta"], "exact-lemma2", True, ""

            return R()

        @staticmethod
        def scrambler_delta(**kw):  # type: ignore[no-untyped-def]
            return 1e-9

        @staticmethod
        def local_randomizer_epsilon(**kw):  # type: ignore[no-untyped-def]
            return local_sampling_epsilon(**kw)

    wrapped = ScramblerModuleAccountant(Module())
    c = wrapped.scrambled(targets=20, sigma=0.2, n=100, dummies=50, delta=1e-4, capped=False)
    assert (c.epsilon, c.method) == (0.4, "exact-lemma2")
    # An invalid or worse answer falls back to the (valid) local-randomizer bound.
    Module.scrambler_epsilon = staticmethod(
        lambda **kw: type("R", (), {"epsilon": 9.0, "delta": 0.0, "method": "x", "valid": True})()
    )  # type: ignore[method-assign]
    c = wrapped.scrambled(targets=20, sigma=0.2, n=100, dummies=50, delta=1e-4, capped=False)
    assert c.method == "local-randomizer"
    assert c.epsilon == pytest.approx(math.log1p(0.8 * 20 / 0.2))
    assert wrapped.scrambled_delta(targets=20, sigma=0.2, n=100, dummies=5, epsilon=1.0) == 1e-9
    assert wrapped.local(targets=20, sigma=0.5, dummies=3).epsilon == pytest.approx(math.log(6))


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
            return CountermeasureCertificate(1.0 / kw["n"], 0.0, "spy", True)

    cert = certify(plan, delta=1e-4, accountant=Spy())
    assert sorted(seen) == [50, 100]
    assert cert.epsilon == pytest.approx(1 / 50)
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
