"""Each worker receives only the source rows of the blocks it serves.

``Job.for_shard`` keeps, per data-holding group, the rows of the owned blocks at their global
positions; the Ray backend creates each actor with its shard's job. The Ray test runs the
backend's own actor code in this process behind a stand-in for the ``ray`` module that
records what every actor is created with (the real-Ray equality runs are in test_ray.py).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import cloudpickle
import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.engine import Job
from tests.engine._marked import BLOCK, SOURCES, marked_plan, rows_in, rows_of


def test_markers_are_found_in_a_pickled_full_job() -> None:
    job = Job(plan=marked_plan(protected=False), seed=1, block_size=BLOCK, shards=3)
    assert rows_in(cloudpickle.dumps(job)) == set(range(SOURCES))  # the check has power


@pytest.mark.parametrize("protected", [False, True])
def test_for_shard_index_holds_only_the_shards_rows(protected: bool) -> None:
    from crowdhide.engine.blocks import BlockRows

    job = Job(plan=marked_plan(protected=protected), seed=1, block_size=BLOCK, shards=3)
    seen: set[int] = set()
    for shard in range(3):
        mine = job.for_shard_index(shard)
        owned = {b.index for b in job.blocks("S") if job.shard_of(b.index, "S") == shard}
        assert rows_in(cloudpickle.dumps(mine)) == rows_of(owned)
        seen |= rows_of(owned)
        assert isinstance(mine.plan.group("S").data, BlockRows)
        assert [g.name for g in mine.plan.groups] == [g.name for g in job.plan.groups]
        assert mine.plan.node_offsets() == job.plan.node_offsets()
    assert seen == set(range(SOURCES))


def test_a_block_not_held_cannot_be_read() -> None:
    from crowdhide.engine.blocks import BlockRows

    job = Job(plan=marked_plan(protected=False), seed=1, block_size=BLOCK, shards=3)
    rows = job.for_shard_index(0).plan.group("S").data
    assert isinstance(rows, BlockRows)
    other = next(b for b in job.blocks("S") if job.shard_of(b.index, "S") != 0)
    with pytest.raises(KeyError, match="not held here"):
        rows.rows(other.start, other.stop)  # a block of S that lives on another shard


class _Call:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        return self.fn(*args)


class _Handle:
    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def __getattr__(self, name: str) -> _Call:
        return _Call(getattr(self.actor, name))


def _stand_in(received: list[bytes]) -> Any:
    """Ray's API as the backend uses it; actor arguments are serialized as Ray does."""

    def remote(**options: Any) -> Callable[[type], _Call]:
        def actor_class(cls: type) -> _Call:
            def create(*args: Any) -> _Handle:
                blob = cloudpickle.dumps(args)
                received.append(blob)
                return _Handle(cls(*pickle.loads(blob)))

            return _Call(create)

        return actor_class

    return SimpleNamespace(
        is_initialized=lambda: True,
        put=lambda value: value,
        get=lambda refs: refs,
        remote=remote,
        kill=lambda actor: None,
        exceptions=SimpleNamespace(RayError=RuntimeError),
    )


@pytest.mark.parametrize("protected", [False, True])
def test_ray_actors_receive_only_their_blocks(
    monkeypatch: pytest.MonkeyPatch, protected: bool
) -> None:
    pytest.importorskip("ray")
    from crowdhide.backends import ray as ray_backend

    received: list[bytes] = []
    monkeypatch.setattr(ray_backend, "ray", _stand_in(received))
    plan = marked_plan(protected=protected)
    local = execute(plan, rng=3, block_size=BLOCK)
    run = execute(plan, rng=3, block_size=BLOCK, shards=3, backend=ray_backend.RayBackend())
    np.testing.assert_array_equal(run.states["C"]["total"], local.states["C"]["total"])
    assert run.routes == local.routes
    job = Job(plan=plan, seed=0, block_size=BLOCK, shards=3)
    assert len(received) == 3
    for shard, blob in enumerate(received):
        owned = {b.index for b in job.blocks("S") if job.shard_of(b.index, "S") == shard}
        assert rows_in(blob) == rows_of(owned), f"actor {shard}"
