"""The round length model: the worst-case wire work per host and round bounds the work of
every actual run (brute force over the engine's transcripts) and never depends on the data."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import workload
from crowdhide.backends.tls.placement import Placement
from crowdhide.engine.backend import Job
from crowdhide.engine.library import named
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.model import ExecutionPlan

LINK = {"link": (1.0, 1.0), "inner": (0.0, 0.0)}
INNER = {"link": (0.0, 0.0), "inner": (1.0, 1.0)}
BLOCK = 40


def _plan(groups: np.ndarray, *, protected: bool) -> ExecutionPlan:
    b = PlanBuilder()
    b.sources("S", {"g": groups})
    b.compute("C", size=4, process=named("compute.count", route="S->C", size=4))
    b.route("S", "C", by=named("route.column", column="g"))
    plan = b.build()
    return protect(plan, sigma=0.5, per_scrambler=10, dummies=3) if protected else plan


def _actual(plan: ExecutionPlan, placement: Placement, seed: int) -> list[int]:
    """Most work one host did in one half round of a local run, in unit costs: frames sealed
    plus opened on links; inner bodies sealed (onions sent); inner bodies opened (forwards
    received)."""
    job = Job(plan=plan, seed=seed, block_size=BLOCK)
    t = execute(plan, rng=seed, block_size=BLOCK).transcript
    where = np.zeros(sum(size for _, size in t.groups.values()), dtype=np.int64)
    scramblers = np.zeros_like(where, dtype=bool)
    for name, (first, size) in t.groups.items():
        scramblers[first : first + size] = name.endswith("#scramblers")
        for block in job.blocks(name):
            where[first + block.start : first + block.stop] = placement.host(job, name, block.index)
    link: dict[tuple[int, int], int] = defaultdict(int)
    onions: dict[tuple[int, int], int] = defaultdict(int)
    forwards: dict[tuple[int, int], int] = defaultdict(int)
    rows = zip(t.round.tolist(), t.source.tolist(), t.target.tolist(), strict=True)
    for r, a, b in rows:
        link[(r, int(where[a]))] += 1  # sealed by the sending node's host
        link[(r, int(where[b]))] += 1  # opened by the receiving node's host
        if scramblers[b]:
            onions[(r, int(where[a]))] += 1
        if scramblers[a]:
            forwards[(r, int(where[b]))] += 1
    return [max(d.values(), default=0) for d in (link, onions, forwards)]


@pytest.mark.parametrize("protected", [False, True])
@pytest.mark.parametrize(("hosts", "rule"), [(1, "spread"), (2, "spread"), (3, "modulo")])
def test_the_model_bounds_every_run_even_when_all_reals_go_to_one_node(
    monkeypatch: pytest.MonkeyPatch, protected: bool, hosts: int, rule: str
) -> None:
    monkeypatch.setattr(workload, "ALLOWANCE", 0.0)
    placement = Placement(hosts=hosts, rule=rule)
    rng = np.random.default_rng(5)
    for data in (np.zeros(200, dtype=int), rng.integers(0, 4, 200), np.arange(200) % 4):
        plan = _plan(data, protected=protected)
        job = Job(plan=plan, seed=0, block_size=BLOCK)
        link_bound = workload.host_work(job, placement, LINK)
        unwrap_bound, inner_seal_bound = workload.half_work(job, placement, INNER)
        for seed in range(3):
            link, onions, forwards = _actual(plan, placement, seed)
            assert link <= link_bound
            assert onions <= inner_seal_bound  # processing half: inner bodies sealed
            assert forwards <= unwrap_bound  # send half: opened on arrival


def test_the_round_length_does_not_depend_on_the_data() -> None:
    placement = Placement(hosts=3, rule="spread")
    lengths = {
        workload.round_seconds(
            Job(plan=_plan(data, protected=True), seed=0, block_size=BLOCK), placement, costs=LINK
        )
        for data in (np.zeros(200, dtype=int), np.arange(200) % 4, np.full(200, 3))
    }
    assert len(lengths) == 1


def test_measured_costs_are_positive() -> None:
    costs = workload.frame_costs(256, budget=0.02, batch=16)
    assert set(costs) == {"link", "inner"}
    assert all(seal > 0 and open_ > 0 for seal, open_ in costs.values())
