"""Rounds shared by independent groups: a round closes only before a level of the plan that
needs the queued frames, so the two scrambler groups of a GROUP BY over two grouping sets
run in one program window and send their forwards in one send phase (and their compute
groups in the next round). The bound of every round stays above the work measured in every run, even
when every real message goes to one node of each group, and the schedule does not depend on
the data."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls import workload
from crowdhide.backends.tls.placement import Placement
from crowdhide.backends.tls.rounds import Ledger
from crowdhide.backends.tls.schedule import MIN_GAP, Round
from crowdhide.engine.backend import Job
from crowdhide.engine.library import named
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.model import ExecutionPlan

INNER = {"link": (0.0, 0.0), "inner": (1.0, 1.0)}
LINK = {"link": (1.0, 1.0), "inner": (0.0, 0.0)}
BLOCK = 20
SCR_C, SCR_D = "S->C#scramblers", "S->D#scramblers"


def _plan(g: np.ndarray, h: np.ndarray) -> ExecutionPlan:
    """Sources routed by ``g`` to 4 compute nodes ``C`` and by ``h`` to 3 nodes ``D`` (two
    protected routes, the shape of a GROUP BY over two grouping sets), both to a result."""
    b = PlanBuilder()
    b.sources("S", {"g": g, "h": h})
    b.compute("C", size=4, process=named("compute.count", route="S->C", size=4))
    b.compute("D", size=3, process=named("compute.count", route="S->D", size=3))
    b.result("R", process=named("compute.count", route="C->R", size=1))
    b.route("S", "C", by=named("route.column", column="g"))
    b.route("S", "D", by=named("route.column", column="h"))
    b.route("C", "R", kind="fixed")
    b.route("D", "R", kind="fixed")
    return protect(b.build(), sigma=0.5, per_scrambler=10, dummies=3)


def _datasets() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    zeros = np.zeros(200, dtype=int)
    return [
        (zeros, zeros),  # every real message to one node of each group
        (np.full(200, 3), np.full(200, 2)),
        (rng.integers(0, 4, 200), rng.integers(0, 3, 200)),
    ]


def test_independent_groups_share_send_phases() -> None:
    """Fails with one sending group per round (five rounds, the rule before): the two
    scrambler groups run in the first round and send together in the second, the two
    compute groups run in the second and send together in the third."""
    plan = _plan(*_datasets()[0])
    assert workload.windows_of(plan, (SCR_C, SCR_D)) == [(SCR_C, SCR_D)]  # one level
    assert workload.rounds_of(plan) == [
        (("S",), (SCR_C, SCR_D)),
        ((SCR_C, SCR_D), ("C", "D")),
        (("C", "D"), ("R",)),
    ]
    assert workload.closes_before(plan) == frozenset({SCR_C, SCR_D, "C", "D", "R"})


def _measured(plan: ExecutionPlan, placement: Placement, seed: int) -> tuple[Any, Any]:
    """Most work one host did in each tls round of a local run, in unit costs: frames
    sealed plus opened on links, and inner bodies opened (forwards received). A message is
    sent in the round whose senders include its sending group (:func:`workload.rounds_of`)."""
    job = Job(plan=plan, seed=seed, block_size=BLOCK)
    t = execute(plan, rng=seed, block_size=BLOCK).transcript
    sent_in = {g: k for k, (senders, _) in enumerate(workload.rounds_of(plan)) for g in senders}
    total = sum(size for _, size in t.groups.values())
    where, group = np.zeros(total, dtype=np.int64), np.empty(total, dtype=object)
    for name, (first, size) in t.groups.items():
        group[first : first + size] = name
        for block in job.blocks(name):
            where[first + block.start : first + block.stop] = placement.host(job, name, block.index)
    link: dict[tuple[int, int], int] = defaultdict(int)
    forwards: dict[tuple[int, int], int] = defaultdict(int)
    for a, b in zip(t.source.tolist(), t.target.tolist(), strict=True):
        k = sent_in[group[a]]
        link[(k, int(where[a]))] += 1  # sealed by the sending node's host
        link[(k, int(where[b]))] += 1  # opened by the receiving node's host
        if str(group[a]).endswith("#scramblers"):
            forwards[(k, int(where[b]))] += 1
    most = [defaultdict(int), defaultdict(int)]
    for out, counts in zip(most, (link, forwards), strict=True):
        for (k, _), n in counts.items():
            out[k] = max(out[k], n)
    return most[0], most[1]


@pytest.mark.parametrize(("hosts", "rule"), [(1, "spread"), (2, "spread"), (3, "spread")])
def test_each_shared_round_bounds_its_work_in_every_run(
    monkeypatch: pytest.MonkeyPatch, hosts: int, rule: str
) -> None:
    """Sound: in every run, whatever the data, each round's measured link work and
    forwards opened on the busiest host stay within the round's send-phase bound. Tight
    where the plan fixes the counts: all of ``C`` (or ``D``) on one host receives every
    forward of its hop, and that host's bound is exactly what it opened in the run where
    every real goes to one node (so a bound 1 % lower fails here)."""
    monkeypatch.setattr(workload, "ALLOWANCE", 0.0)
    placement = Placement(hosts=hosts, rule=rule)
    for g, h in _datasets():
        plan = _plan(g, h)
        job = Job(plan=plan, seed=0, block_size=BLOCK)
        link_bound = [s for s, _ in workload.round_detail(job, placement, LINK)]
        unwrap_bound = [s for s, _ in workload.round_detail(job, placement, INNER)]
        assert len(link_bound) == 3
        for seed in range(2):
            link, forwards = _measured(plan, placement, seed)
            assert sorted(link) == [0, 1, 2]
            assert all(link[k] <= link_bound[k] for k in link), (link, link_bound)
            assert all(forwards[k] <= unwrap_bound[k] for k in forwards), (forwards, unwrap_bound)
            # The forwards of both hops are opened in round 1, on their targets' hosts;
            # C and D are single blocks, so each host's count is fixed: the bound is exact.
            assert set(forwards) == {1}
            assert forwards[1] == unwrap_bound[1]


def test_the_shared_schedule_does_not_depend_on_the_data() -> None:
    placement = Placement(hosts=3, rule="spread")
    costs = {"link": (1e-5, 2e-5), "inner": (2e-4, 1e-4)}
    schedules = {
        workload.round_schedule(
            Job(plan=_plan(g, h), seed=0, block_size=BLOCK), placement, costs=costs
        )
        for g, h in _datasets()
    }
    assert len(schedules) == 1
    (rounds, _), *_ = schedules
    assert [len(r.windows) for r in rounds] == [1, 1, 1]  # one program window per level


def test_a_shared_send_phase_is_shorter_than_two_rounds() -> None:
    """The forwards of both scrambler groups in one send phase: shorter than the two send
    phases they had, longer than either alone (both are charged on the hosts they share)."""
    plan = _plan(*_datasets()[0])
    job = Job(plan=plan, seed=0, block_size=BLOCK)
    placement = Placement(hosts=3)
    costs = {"link": (1e-5, 2e-5), "inner": (2e-4, 1e-4)}
    shared = workload.round_detail(job, placement, costs)[1][0]
    alone = [
        workload.round_detail(job, placement, costs, rounds=[((g,), ())])[0][0]
        for g in (SCR_C, SCR_D)
    ]
    assert max(alone) <= shared < sum(alone)


def test_windows_of_a_round_follow_each_other() -> None:
    r = Round.sized(1.0, [2.0, 0.5, 1.0])
    assert r.run == r.windows[0][0]
    assert r.reply == r.windows[-1][1]
    for (a, b), (c, _) in zip(r.windows, r.windows[1:], strict=False):
        assert b - a > 0
        assert c - b == pytest.approx(MIN_GAP, abs=1e-3)
    assert r.length == pytest.approx(r.reply + 3.5 / 2, abs=1e-3)  # tail: half the work
    given = Round.given(8.0, groups=3)
    assert given.windows[0][0] == given.run
    assert given.windows[-1][1] == given.reply
    assert all(b <= c for (_, b), (c, _) in zip(given.windows, given.windows[1:], strict=False))
    with pytest.raises(ValueError, match="program windows"):
        Round(length=4.0, ack=1.0, run=1.5, reply=3.0, windows=((1.5, 2.5), (2.0, 3.0)))


def test_the_ledger_times_each_group_in_its_window() -> None:
    """Each ``Run`` of a round (here one per scrambler group, as two levels would) leaves
    at its window's start and is answered at its end; the round closes only before a level
    that needs the queued frames."""
    plan = _plan(*_datasets()[0])
    job = Job(plan=plan, seed=0, block_size=BLOCK)
    placement = Placement(hosts=1)
    ledger = Ledger(on_missing="report")
    ledger.rounds = (Round.sized(0.5, [0.3, 0.2]), Round.sized(0.5, [0.1, 0.1]))
    ledger.closes = workload.closes_before(plan)
    sent: list[ctl.Flush] = []

    def broadcast(flush: ctl.Flush, timeout: float) -> dict[int, Any]:
        sent.append(flush)
        return {}

    assert not ledger.closes_before(["S"])  # nothing queued yet
    ledger.ran_group(job, ["S"], placement, {0: ({}, {0: 200})})
    assert ledger.closes_before([SCR_C, SCR_D])
    ledger.close_round(broadcast, alive=[0], deadline=1.0)
    start = float(sent[0].start)  # type: ignore[arg-type]
    for k, group in enumerate((SCR_C, SCR_D)):
        assert ledger.run_at() == pytest.approx(start + ledger.rounds[0].windows[k][0])
        assert ledger.reply_at() == pytest.approx(start + ledger.rounds[0].windows[k][1])
        ledger.ran_group(job, [group], placement, {0: ({}, {0: 300 + k})})
        assert not ledger.closes_before(["S"])  # S needs nothing: it would run in the round
    assert ledger.closes_before(["C", "D"])
    ledger.close_round(broadcast, alive=[0], deadline=1.0)
    assert ledger.window == 0
    assert len(sent) == 2
