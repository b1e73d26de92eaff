"""Node programs: a compute group with ``combine`` folds its inbox one part at a time, with
the same result, counters and transcript as a program that sees the whole inbox."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import LocalBackend, execute
from crowdhide.engine import Execution, Inbox
from crowdhide.engine.plan import ExecutionPlan, NodeGroup, PlanBuilder
from crowdhide.plans.semantics import protect

SOURCES = 5000
BLOCK = 500
NODES = 3


def _plan(calls: list[int] | None, *, fold: bool) -> ExecutionPlan:
    """Sources with integer values; C sums them per node (``calls`` records each call's
    number of real messages)."""
    values = (np.arange(SOURCES) * 7919) % 101

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, Any]:
        delivery = inbox.only("S->C")
        if calls is not None:
            calls.append(len(delivery))
        return {
            "total": np.bincount(delivery.target, weights=delivery.gather("x"), minlength=NODES),
            "count": np.bincount(delivery.target, minlength=NODES),
        }

    def combine(partials: Any) -> dict[str, Any]:
        return {k: np.sum([p[k] for p in partials], axis=0) for k in partials[0]}

    b = PlanBuilder().sources("S", {"x": values, "g": np.arange(SOURCES) % NODES})
    _ = b.compute("C", size=NODES, process=process, combine=combine if fold else None)
    _ = b.result("R", process=lambda inbox, rng: {"total": inbox.only("C->R").gather("total")})
    _ = b.route("S", "C", by=lambda s: s["g"], columns=("x",))
    _ = b.route("C", "R", kind="fixed")
    return b.build()


COUNTERMEASURES = [
    {},
    {"sigma": 0.3, "local_dummies": 1},
    {"sigma": 0.2, "per_scrambler": 40, "dummies": 15},
]


def _same(a: Execution, b: Execution) -> None:
    np.testing.assert_array_equal(a.states["C"]["total"], b.states["C"]["total"])
    np.testing.assert_array_equal(a.states["C"]["count"], b.states["C"]["count"])
    np.testing.assert_array_equal(a.used["S->C"], b.used["S->C"])
    assert a.routes == b.routes
    for column in ("round", "source", "target", "order", "size"):
        np.testing.assert_array_equal(getattr(a.transcript, column), getattr(b.transcript, column))


@pytest.mark.parametrize("countermeasures", COUNTERMEASURES)
def test_folding_block_sees_one_sender_block_at_a_time(countermeasures: dict[str, Any]) -> None:
    calls: list[int] = []
    folded = _plan(calls, fold=True)
    whole = _plan(None, fold=False)
    if countermeasures:
        folded, whole = protect(folded, **countermeasures), protect(whole, **countermeasures)
    run = execute(folded, rng=4, block_size=BLOCK)
    _same(run, execute(whole, rng=4, block_size=BLOCK))
    # One call per sender block that sent to C (the sources, or the scrambler blocks).
    if "per_scrambler" in countermeasures:
        scramblers = SOURCES // countermeasures["per_scrambler"]
        assert len(calls) == -(-scramblers // BLOCK)
    else:
        assert len(calls) == SOURCES // BLOCK
        assert max(calls) <= BLOCK
    assert sum(calls) == run.routes["S->C"].real_delivered == int(run.used["S->C"].sum())


def test_folding_is_the_same_for_any_shards_and_spilled_mail() -> None:
    plan = protect(_plan(None, fold=True), sigma=0.2, per_scrambler=40, dummies=15)
    one = execute(plan, rng=9, block_size=BLOCK)
    three = execute(plan, rng=9, block_size=BLOCK, shards=3)
    spilled = execute(plan, rng=9, block_size=BLOCK, backend=LocalBackend(memory_budget=0))
    _same(one, three)
    _same(one, spilled)


def test_combine_only_on_compute_groups() -> None:
    with pytest.raises(ValueError, match=r"groups\[R\]\.combine applies to compute groups"):
        NodeGroup(
            name="R",
            size=1,
            role="result",
            process=lambda inbox, rng: {},
            combine=lambda partials: partials[0],
        )
    plan = _plan(None, fold=True)
    assert replace(plan.group("C"), combine=None).combine is None
