"""Placement: by default scramblers, compute nodes and the result node are spread over the
hosts, so data-dependent hops cross machines; the result equals the local one either way."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls.placement import Placement
from crowdhide.engine import Job
from crowdhide.plans import protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan

pytestmark = pytest.mark.net


def _plan() -> Any:
    rng = np.random.default_rng(3)
    table = {"decade": rng.integers(2, 8, 600), "bmi": rng.normal(27, 4, 600)}
    query = AggregateQuery.from_sql("SELECT decade, COUNT(*), AVG(bmi) FROM t GROUP BY decade")
    plan = aggregate_plan(table, query, compute_nodes=3).plan
    return protect(plan, sigma=0.3, per_scrambler=100, dummies=3)


def test_small_groups_are_spread_and_sources_stay_contiguous() -> None:
    job = Job(plan=_plan(), seed=0, block_size=200)
    spread = Placement(hosts=3).groups(job)
    modulo = Placement(hosts=3, rule="modulo").groups(job)
    assert spread["S"] == [0, 1, 2]
    small = [g for g in spread if g != "S"]
    assert len({spread[g][0] for g in small}) > 1  # one-block groups not all on one host
    assert all(modulo[g] == [0] for g in small)  # the old node map: all on host 0
    for route in job.plan.routes:  # the data-dependent hop leaves the scramblers' host
        if route.protection is not None and route.protection.scrambler is not None:
            scramblers = set(spread[route.protection.scrambler.group])
            assert scramblers.isdisjoint(spread[route.receiver]), route.name
    hosts = Placement(hosts=3).node_hosts(job)
    assert hosts.shape == (sum(g.size for g in job.plan.groups),)


@pytest.mark.parametrize("rule", ["spread", "modulo"])
def test_the_result_does_not_depend_on_placement(backends: Any, rule: str) -> None:
    plan = _plan()
    local = execute(plan, rng=8, block_size=200)
    backend = backends(hosts=3, placement=rule)
    run = execute(plan, rng=8, backend=backend, block_size=200)
    for name in ("count", "sum:bmi"):
        np.testing.assert_array_equal(run.states["C0"][name], local.states["C0"][name])
    assert not backend.missing
