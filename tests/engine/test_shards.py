"""Sharding never changes a run: local 1 shard = local 3 shards (results, counters,
transcript), and node programs cannot read state outside their block."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.engine import Block, BlockState, OutOfBlockError, block_rng
from crowdhide.plans import PlanBuilder, protect
from tests.engine._workloads import WORKLOADS


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_local_three_shards_equal_one_shard(name: str, tmp_path: Path) -> None:
    one = WORKLOADS[name](tmp_path, shards=1)
    three = WORKLOADS[name](tmp_path, shards=3)
    assert one == three
    assert sum(one["round_target_counts"][-1]) > 0


def test_plan_certificate_is_independent_of_the_backend() -> None:
    # The certificate is a function of the plan only; the run echoes how it was executed.
    from crowdhide.plans import protect as _protect

    b = PlanBuilder().sources("S", {"g": np.arange(50) % 5})
    b.compute("C", size=5, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["g"])
    run = execute(_protect(b.build(), sigma=0.2), rng=1, shards=2, block_size=7)
    assert (run.backend, run.shards, run.block_size, run.seed) == ("local", 2, 7, 1)


def test_block_rng_is_keyed_by_seed_round_group_block() -> None:
    x = block_rng(1, 0, "S", 0).random(4)
    assert np.array_equal(x, block_rng(1, 0, "S", 0).random(4))
    assert not np.array_equal(x, block_rng(1, 1, "S", 0).random(4))
    assert not np.array_equal(x, block_rng(1, 0, "T", 0).random(4))
    assert not np.array_equal(x, block_rng(2, 0, "S", 0).random(4))


def _reader_plan(read) -> PlanBuilder:  # type: ignore[no-untyped-def]
    b = PlanBuilder()
    b.sources("S", {"x": np.arange(30)}, process=read)
    b.compute("C", size=3, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["x"] % 3)
    return b


def test_a_program_reading_outside_its_block_fails() -> None:
    # A well-behaved program reads its own nodes (by index within the group).
    def own(inbox, rng):  # type: ignore[no-untyped-def]
        nodes = np.arange(inbox.block.start, inbox.block.stop)
        return {"y": inbox.state.at("x", nodes) * 2}

    run = execute(_reader_plan(own).build(), rng=0, block_size=10, keep_sources=True)
    assert run.states["S"]["y"].tolist() == (np.arange(30) * 2).tolist()

    # A deliberately bad one reads node 0 of the group from every block.
    def peeks(inbox, rng):  # type: ignore[no-untyped-def]
        first = inbox.state.at("x", np.zeros(inbox.block.size, dtype=np.int64))
        return {"y": first}

    execute(_reader_plan(peeks).build(), rng=0, block_size=30)  # one block: allowed
    with pytest.raises(OutOfBlockError, match=r"block 1 holds nodes \[10, 20\).*\[0\]"):
        execute(_reader_plan(peeks).build(), rng=0, block_size=10)


def test_block_state_is_read_only_and_sliced() -> None:
    state = BlockState({"x": np.arange(10)[3:6]}, Block("S", 1, 3, 6))
    assert state["x"].tolist() == [3, 4, 5]
    with pytest.raises(ValueError, match="read-only"):
        state["x"][0] = 1


def test_deliveries_carry_declared_columns_only() -> None:
    seen: dict[str, list[str]] = {}

    def record(inbox, rng):  # type: ignore[no-untyped-def]
        seen["columns"] = sorted(inbox.only("S->C").columns)
        return {}

    b = PlanBuilder().sources("S", {"g": np.arange(20) % 2, "secret": np.arange(20)})
    b.compute("C", size=2, process=record)
    b.route("S", "C", by=lambda s: s["g"], columns=("g",))
    execute(protect(b.build(), sigma=0.5, per_scrambler=5, dummies=2), rng=0, block_size=6)
    assert seen["columns"] == ["@origin", "g"]


def test_spilled_mail_and_transcript_change_nothing() -> None:
    from crowdhide.backends import LocalBackend
    from crowdhide.engine.executor import TrafficSink

    b = PlanBuilder().sources("S", {"g": np.arange(3000) % 7, "v": np.arange(3000) * 0.5})
    b.compute(
        "C",
        size=7,
        process=lambda inbox, rng: {
            "sum": np.bincount(
                inbox.only("S->C").target, weights=inbox.only("S->C").gather("v"), minlength=7
            )
        },
    )
    b.route("S", "C", by=lambda s: s["g"])
    plan = protect(b.build(), sigma=0.3, per_scrambler=50, dummies=5)
    memory = execute(plan, rng=3, block_size=400)
    disk = execute(plan, rng=3, block_size=400, backend=LocalBackend(memory_budget=0))
    assert np.array_equal(memory.states["C"]["sum"], disk.states["C"]["sum"])
    sink = TrafficSink(limit=100)
    t = memory.transcript
    for start in range(0, len(t), 700):
        stop = start + 700
        sink.add([(1, 64, t.source[start:stop], t.target[start:stop], t.order[start:stop])])
    mapped = sink.transcript(t.groups)
    assert isinstance(mapped.source, np.memmap)
    assert np.array_equal(mapped.source, t.source)
    assert np.array_equal(mapped.order, t.order)
    assert len(mapped) == len(t)


def test_transcript_writer_failure_is_raised_and_the_thread_stops() -> None:
    import threading

    from crowdhide.engine.executor import TrafficSink

    sink = TrafficSink(limit=0)  # every add is handed to the writer thread
    ids = np.arange(5, dtype=np.int32)
    sink.add([(1, 64, ids, ids, ids)])
    sink.add([(1, 64, np.array(["not an id"] * 5), ids, ids)])  # the writer fails on it
    sink.add([(1, 64, ids, ids, ids)])
    with pytest.raises(ValueError, match="not an id"):
        sink.transcript({"S": (0, 5)})
    assert not any(t.name == "crowdhide-transcript" for t in threading.enumerate())


@pytest.mark.parametrize(
    ("size", "block_size", "shards"),
    [(100_000, 16_384, 2), (10**7, 16_384, 2), (10**6, 16_384, 3), (5, 2, 2), (8, 1, 3)],
)
def test_shard_ranges_are_contiguous_and_balanced_by_nodes(
    size: int, block_size: int, shards: int
) -> None:
    from crowdhide.engine import Job

    b = PlanBuilder().sources("S", {"x": np.zeros(size, dtype=np.int8)})
    b.result("R", process=lambda inbox, rng: {})
    b.route("S", "R", kind="fixed")
    job = Job(plan=b.build(), seed=0, block_size=block_size, shards=shards)
    owners = [job.shard_of(block.index, "S") for block in job.blocks("S")]
    assert owners == sorted(owners)  # contiguous ranges, in shard order
    assert set(owners) == set(range(shards))
    nodes = np.bincount(owners, weights=[block.size for block in job.blocks("S")])
    # e.g. 1e5 scramblers = 6 full blocks + 1696: a 4 + 3 block cut would hold 65536 vs 34464
    assert nodes.max() - nodes.min() <= block_size
