"""The backend contract: what every backend of :mod:`crowdhide.backends` implements.

The driver (:func:`crowdhide.engine.execute`) walks the plan's groups in round order and asks
the backend to run each group: ``run_group(group)`` executes the group's program on every
block of its nodes (:func:`crowdhide.engine.program.step`), moves the emitted batches to
the shards owning their receiver blocks (:func:`crowdhide.engine.program.split`) and
returns one :class:`BlockReport` per block — the observer's view of what the block sent,
message counters and (if asked) the block's state. The contract is three methods:

* ``open(job)`` — a :class:`Job`: plan, seed, block size, number of shards, states to keep;
* ``run_group(group)`` — run every block of ``group``; return their reports (a list, or an
  iterator yielding them as blocks finish: the driver folds each report as it arrives);
* ``close()`` — release workers (idempotent).

A backend owns where blocks live and how batches travel; it never changes what a block
computes, so every backend gives the same result and transcript for the same seed and
block size. Which shard owns which block is :meth:`Job.shard_of` (contiguous ranges of a
group's blocks, so that most parts stay on their shard).

A backend may also offer ``run_groups(groups)``: run several groups of the same round (they
exchange no messages with each other) at once; the driver uses it when present.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int
from crowdhide.engine.blocks import BlockRows, block_rows
from crowdhide.engine.messages import Block, MessageBatch
from crowdhide.engine.plan import ExecutionPlan, State
from crowdhide.engine.program import BlockResult, split
from crowdhide.errors import InvalidParameterError

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "Backend",
    "BlockReport",
    "Job",
    "batch_nbytes",
    "deliver",
    "report_of",
]

#: Nodes per block: the unit of execution, of memory and of counter-based randomness.
DEFAULT_BLOCK_SIZE = 1 << 14


@dataclass(frozen=True)
class Job:
    """One run: the plan, its seed, the block size, shards and the groups whose state to keep.

    Parameters
    ----------
    plan
        The plan to run.
    seed
        The run's seed.
    block_size
        Nodes per block.
    shards
        Shards (Ray: actors); never changes the result.
    keep
        Groups whose final state to return.

    See Also
    --------
    Backend : Runs it.
    BlockReport : What each block reports back.
    """

    plan: ExecutionPlan = field(repr=False)
    seed: int
    block_size: int = DEFAULT_BLOCK_SIZE
    shards: int = 1
    keep: frozenset[str] = frozenset()

    def blocks(self, group: str) -> tuple[Block, ...]:
        """The blocks of ``group``."""
        return Block.cut(group, size=self.plan.group(group).size, block_size=self.block_size)

    def shard_of(self, block: int, group: str | None = None) -> int:
        """Shard owning block ``block`` of ``group``.

        A group with at least ``shards`` blocks is cut into contiguous ranges of blocks, one
        per shard, of about equal node counts (a block goes to the shard holding its middle
        node: a short last block does not tip the balance): the blocks a range sends to
        (e.g. the scramblers ``⌊i/n⌋`` of its sources) then form the same range of their own
        group, so most parts stay on their shard. A
        group with fewer blocks (a compute group, the result) puts block ``b`` on shard
        ``(b + g) mod shards`` with ``g`` the group's position in the plan, so that
        single-block groups of one round spread over the shards (``group=None``:
        ``block mod shards``).
        """
        if group is None:
            return block % self.shards
        size = self.plan.group(group).size
        count = -(-size // self.block_size)
        if count >= self.shards:
            middle2 = block * self.block_size + min((block + 1) * self.block_size, size)
            return min(middle2 * self.shards // (2 * size), self.shards - 1)
        offset = [g.name for g in self.plan.groups].index(group)
        return (block + offset) % self.shards

    def for_shard(self, owns: Callable[[str, int], bool]) -> Job:
        """This job as a worker serving the blocks ``owns(group, block)`` must receive it.

        Every group holding ``data`` (the sources: users' tuples) keeps only the rows of the
        owned blocks (:class:`~crowdhide.engine.blocks.BlockRows`, at their global positions,
        so node ids, the (seed, round, group, block) randomness and the results are
        unchanged). Groups without ``data`` — compute, result and scrambler groups, whose
        state is built from their inbox at run time — are kept whole: they hold no user
        data, only programs and routes (shipped as written; a program's closure is the
        plan author's to keep free of user data).

        Examples
        --------
        >>> import numpy as np
        >>> from crowdhide.engine.plan import PlanBuilder
        >>> b = PlanBuilder()
        >>> _ = b.sources("S", {"x": np.arange(5)})
        >>> _ = b.result("R", process=lambda inbox, rng: {})
        >>> _ = b.route("S", "R", kind="fixed")
        >>> job = Job(plan=b.build(), seed=0, block_size=2, shards=2)
        >>> mine = job.for_shard(lambda group, block: job.shard_of(block, group) == 1)
        >>> mine.plan.group("S").data["x"].tolist()
        [2, 3, 4]
        """
        groups = []
        for group in self.plan.groups:
            if group.data is not None:
                held = {
                    b.start: block_rows(group, b.start, b.stop)
                    for b in self.blocks(group.name)
                    if owns(group.name, b.index)
                }
                group = replace(group, data=BlockRows(held, tuple(group.data)))
            groups.append(group)
        return replace(self, plan=replace(self.plan, groups=tuple(groups)))

    def for_shard_index(self, shard: int) -> Job:
        """:meth:`for_shard` for shard ``shard`` of :meth:`shard_of`."""
        return self.for_shard(lambda group, block: self.shard_of(block, group) == shard)


@dataclass(frozen=True)
class BlockReport:
    """What the driver learns from one block: traffic, counters, and the kept state.

    ``traffic`` holds one tuple ``(round, size, source ids, target ids, order)`` per emitted
    batch, ids global (plan-wide), as the network observer sees them.

    Parameters
    ----------
    block
        The block that ran.
    traffic
        The emitted batches as the observer sees them (see above).
    stats
        Message counters by route.
    used
        By data route, the origin nodes of the real messages the block received.
    state
        The block's final state when its group is kept, else ``None``.

    See Also
    --------
    Job : What the driver asked for.
    """

    block: Block
    traffic: tuple[
        tuple[int, int, npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]], ...
    ] = field(repr=False)
    stats: Mapping[str, Mapping[str, int]]
    used: Mapping[str, npt.NDArray[Any]] = field(repr=False)
    state: State | None = field(default=None, repr=False)


def report_of(job: Job, result: BlockResult, offsets: Mapping[str, int]) -> BlockReport:
    """The :class:`BlockReport` of a block's :class:`~crowdhide.engine.program.BlockResult`."""
    traffic = tuple(
        (
            b.round,
            b.size,
            _global(b.src, offsets[b.sender]),
            _global(b.dst, offsets[b.receiver]),
            np.asarray(b.order, dtype=np.int32),
        )
        for b in result.batches
    )
    keep = result.block.group in job.keep
    return BlockReport(
        result.block, traffic, result.stats, result.used, result.state if keep else None
    )


def _global(ids: npt.NDArray[Any], offset: int) -> npt.NDArray[np.int32]:
    """Plan-wide int32 ids in one pass (no copy when the group starts at 0)."""
    out: npt.NDArray[np.int32] = (
        np.asarray(ids, dtype=np.int32)
        if offset == 0
        else np.add(ids, offset, dtype=np.int32, casting="unsafe")
    )
    return out


@runtime_checkable
class Backend(Protocol):
    """Executes blocks and moves batches (see the module docstring).

    See Also
    --------
    crowdhide.backends.local.LocalBackend : The in-process backend.
    crowdhide.backends.make_backend : A backend by name.
    """

    name: str

    def open(self, job: Job) -> None:
        """Start a run."""

    def run_group(self, group: str) -> Iterable[BlockReport]:
        """Run every block of ``group``; return (or yield) their reports, in any order."""

    def close(self) -> None:
        """Release resources; idempotent."""


def batch_nbytes(batch: MessageBatch) -> int:
    """Bytes of a batch's arrays (what holding it in memory costs, views counted in full)."""
    arrays = [batch.src, batch.dst, batch.order, batch.payload, batch.rows, batch.forward]
    arrays += list(batch.columns.values())
    return sum(int(np.asarray(a).nbytes) for a in arrays if a is not None)


def deliver(job: Job, batches: Sequence[MessageBatch], post: Any) -> None:
    """Split ``batches`` by receiver block and hand each part to ``post(group, block, part)``."""
    for batch in batches:
        size = job.plan.group(batch.receiver).size
        for index, part in split(batch, size, job.block_size):
            post(batch.receiver, index, part)


#: Ray actors per core when Ray is started on this machine: each actor is a process
#: (~150 MB); the fuzz audit's ``--shards 3842`` spawned processes until its 60 s limit.
ACTORS_PER_CORE = 4


def check_shards(shards: Any, *, backend: str, address: str | None = None) -> int:
    """A shard count (>= 1) the backend can honour, refused before any work otherwise.

    A Ray started here (no ``address``) runs one actor process per shard, so at most
    :data:`ACTORS_PER_CORE` per core; a cluster's limit is checked when joining it.

    Examples
    --------
    >>> check_shards(2, backend="local")
    2
    >>> check_shards(10**6, backend="ray")
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: shards must be <= ...
    """
    count = check_int("shards", shards, low=1)
    if backend == "ray" and address is None:
        largest = ACTORS_PER_CORE * (os.cpu_count() or 1)
        if count > largest:
            raise InvalidParameterError(
                f"shards must be <= {largest} for a Ray started on this machine "
                f"({ACTORS_PER_CORE} actor processes per core), got {count}; join a larger "
                "cluster with --address ([run] address)",
                parameter="shards",
                value=count,
            )
    return count
