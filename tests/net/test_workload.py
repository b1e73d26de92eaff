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


def _actual(plan: ExecutionPlan, placement: Placement, seed: int) -> list[dict[int, int]]:
    """Most work one host did in each round of a local run (transcript round ``r``: the
    frames of the ``r``-th sending group), in unit costs: frames sealed plus opened on
    links; inner bodies sealed (onions sent); inner bodies opened (forwards received)."""
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
    out = []
    for d in (link, onions, forwards):
        most: dict[int, int] = defaultdict(int)
        for (r, _), n in d.items():
            most[r] = max(most[r], n)
        out.append(dict(most))
    return out


@pytest.mark.parametrize("protected", [False, True])
@pytest.mark.parametrize(("hosts", "rule"), [(1, "spread"), (2, "spread"), (3, "modulo")])
def test_each_round_bounds_its_work_in_every_run_even_when_all_reals_go_to_one_node(
    monkeypatch: pytest.MonkeyPatch, protected: bool, hosts: int, rule: str
) -> None:
    """Per round, not only the busiest: round ``r``'s send phase bounds the link work and
    the forwards opened in it; the onions are sealed by the sources' program, which runs
    before the first round (nothing of the schedule waits for it)."""
    monkeypatch.setattr(workload, "ALLOWANCE", 0.0)
    placement = Placement(hosts=hosts, rule=rule)
    rng = np.random.default_rng(5)
    for data in (np.zeros(200, dtype=int), rng.integers(0, 4, 200), np.arange(200) % 4):
        plan = _plan(data, protected=protected)
        job = Job(plan=plan, seed=0, block_size=BLOCK)
        link_bound = [send for send, _ in workload.round_work(job, placement, LINK)]
        unwrap_bound = [send for send, _ in workload.round_work(job, placement, INNER)]
        assert len(link_bound) == (2 if protected else 1)
        for seed in range(3):
            link, onions, forwards = _actual(plan, placement, seed)
            assert sorted(link) == list(range(len(link_bound)))
            assert all(link[r] <= link_bound[r] for r in link)
            assert all(forwards[r] <= unwrap_bound[r] for r in forwards)
            assert set(onions) <= {0}  # sealed by the first group, before any round
            if protected:  # the forward round alone opens inner bodies: it is the longer
                assert unwrap_bound[0] == 0 < unwrap_bound[1]


def test_the_schedule_does_not_depend_on_the_data() -> None:
    """Datasets with the same public plan (sizes, routes, countermeasures, placement) get
    the same schedule, round by round, including one where every real goes to one node."""
    placement = Placement(hosts=3, rule="spread")
    costs = {"link": (1e-5, 2e-5), "inner": (2e-4, 1e-4)}
    schedules = {
        workload.round_schedule(
            Job(plan=_plan(data, protected=True), seed=0, block_size=BLOCK), placement, costs=costs
        )
        for data in (np.zeros(200, dtype=int), np.arange(200) % 4, np.full(200, 3))
    }
    assert len(schedules) == 1
    (rounds, _), *_ = schedules
    assert len(rounds) == 2  # sources -> scramblers, scramblers -> compute
    assert rounds[0].ack < rounds[1].ack  # the forwards' send phase opens inner bodies
    assert rounds[0].reply - rounds[0].run > rounds[1].reply - rounds[1].run  # dummies sealed


def test_measured_costs_are_positive() -> None:
    costs = workload.frame_costs(256, budget=0.02, batch=16)
    assert set(costs) == {"link", "inner"}
    assert all(seal > 0 and open_ > 0 for seal, open_ in costs.values())


def _received(
    plan: ExecutionPlan, placement: Placement, seed: int, block: int
) -> dict[tuple[str, str, int], int]:
    """Frames each host received per hop in a local run: ``(sender group, receiver group,
    host of the receiving node) -> count``."""
    job = Job(plan=plan, seed=seed, block_size=block)
    t = execute(plan, rng=seed, block_size=block).transcript
    group = np.empty(sum(size for _, size in t.groups.values()), dtype=object)
    where = np.zeros(len(group), dtype=np.int64)
    for name, (first, size) in t.groups.items():
        group[first : first + size] = name
        for b in job.blocks(name):
            where[first + b.start : first + b.stop] = placement.host(job, name, b.index)
    out: dict[tuple[str, str, int], int] = defaultdict(int)
    for a, b in zip(t.source.tolist(), t.target.tolist(), strict=True):
        out[(group[a], group[b], int(where[b]))] += 1
    return dict(out)


def _protected(data: np.ndarray, **countermeasures: object) -> ExecutionPlan:
    return protect(_plan(data, protected=False), **countermeasures)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "countermeasures",
    [
        {"sigma": 0.5, "per_scrambler": 10, "dummies": 3},
        {"sigma": 0.5, "per_scrambler": 7, "dummies": 2, "cap": True},
        {"sigma": 0.3, "local_dummies": 2},
    ],
)
@pytest.mark.parametrize(("hosts", "block"), [(2, 5), (3, 4), (4, 40), (3, 1)])
def test_each_host_receives_at_most_its_nodes_caps_and_exactly_them_where_the_plan_fixes_them(
    countermeasures: dict[str, object], hosts: int, block: int
) -> None:
    """Sound: no run sends a host more frames of a hop than :func:`workload.received` says,
    whatever the data (all to one target, or spread). Tight where the plan fixes the counts:
    a scrambler gets exactly its ``n`` sources' onions (when ``n`` divides the sources), so a
    host of scramblers gets exactly its scramblers' share (the old bound charged it the whole
    hop: this fails on it, and on any cap smaller than the plan's)."""
    placement = Placement(hosts=hosts)
    rng = np.random.default_rng(3)
    for data in (np.zeros(200, dtype=int), rng.integers(0, 4, 200), np.arange(200) % 4):
        plan = _protected(data, **countermeasures)
        caps = workload.received(Job(plan=plan, seed=0, block_size=block), placement)
        for seed in range(3):
            got = _received(plan, placement, seed, block)
            assert set(got) <= set(caps)
            for key, count in got.items():
                assert count <= caps[key], (key, count, caps[key])
            onions = {k: v for k, v in caps.items() if k[1].endswith("#scramblers")}
            exact = {k: v for k, v in got.items() if k[1].endswith("#scramblers")}
            if 200 % int(countermeasures.get("per_scrambler", 1)) == 0:  # type: ignore[call-overload]
                assert onions == exact
            # (with a remainder the last scrambler gets fewer than n: the cap stays sound)


def test_the_caps_shorten_the_round_when_scramblers_span_hosts() -> None:
    """Scramblers over 4 hosts: each host receives a quarter of the onions, not all of them
    (the processing half, where receivers decode, is shorter; nothing else changes)."""
    plan = _plan(np.zeros(200, dtype=int), protected=True)
    job = Job(plan=plan, seed=0, block_size=5)
    placement = Placement(hosts=4)
    caps = workload.received(job, placement)
    assert [caps[("S", "S->C#scramblers", h)] for h in range(4)] == [50.0] * 4
    hop = sum(caps[("S", "S->C#scramblers", h)] for h in range(4))
    assert hop == 200.0  # every source sends one onion: the caps add up to the hop
