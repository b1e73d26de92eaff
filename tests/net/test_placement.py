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


def test_the_default_block_size_spreads_every_scrambler_group_over_every_host() -> None:
    from crowdhide.backends.tls.placement import SMALLEST_BLOCK, default_block_size

    for hosts in (2, 3, 8):
        plan = _plan()  # 600 sources, scramblers of 100: 6 scramblers
        size = default_block_size(plan, hosts)
        assert size == SMALLEST_BLOCK  # 6 scramblers: the floor, one block
        rows = 100 * SMALLEST_BLOCK * hosts
        rng = np.random.default_rng(hosts)
        table = {"decade": rng.integers(2, 8, rows), "bmi": rng.normal(27, 4, rows)}
        query = AggregateQuery.from_sql("SELECT decade, COUNT(*) FROM t GROUP BY decade")
        big = protect(aggregate_plan(table, query, compute_nodes=3).plan, per_scrambler=100)
        size = default_block_size(big, hosts)
        groups = Placement(hosts=hosts).groups(Job(plan=big, seed=0, block_size=size))
        scramblers = [g.name for g in big.groups if g.role == "scrambler"]
        assert scramblers
        assert all(groups[g] == list(range(hosts)) for g in scramblers), groups


def test_a_tls_run_takes_the_default_block_size_only_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Spawned hosts with no ``--block-size`` and no ``[run] block_size``: the plan's
    :func:`default_block_size`; a given one is used as given (and echoed by the report)."""
    import tomllib

    from crowdhide.backends.tls.placement import default_block_size
    from crowdhide.plans import runner
    from crowdhide.plans.examples import example_path
    from crowdhide.plans.spec import parse_spec

    class ChosenError(Exception):
        pass

    def capture(plan: Any, seed: int, tick: Any, *, network: Any, options: Any) -> Any:
        raise ChosenError(options["block_size"], default_block_size(plan, 8))

    monkeypatch.setattr(runner, "_execute", capture)
    path = example_path("diabetes")
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    raw["data"]["rows"] = 100_000
    chosen = []
    for table, given, network in [
        ({}, None, {"hosts": 8}),
        ({"block_size": 500}, None, {"hosts": 8}),
        ({}, 300, {"hosts": 8}),
        ({}, None, None),
    ]:
        raw["run"] = {"plots": False, **table}
        spec = parse_spec(raw, base=path.parent)
        with pytest.raises(ChosenError) as caught:
            runner.run_spec(spec, tmp_path, network=network, block_size=given)
        chosen.append(caught.value.args)
    assert chosen == [(64, 64), (500, 64), (300, 64), (1 << 14, 64)]
