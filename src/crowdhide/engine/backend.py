"""The backend contract, and the embedded streaming local backend.

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

import functools
import os
import pickle
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int
from crowdhide.engine.messages import Block, MessageBatch
from crowdhide.engine.plan import BlockRows, ExecutionPlan, State, block_rows
from crowdhide.engine.program import BlockResult, Parcel, split, step

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "Backend",
    "BlockReport",
    "Job",
    "LocalBackend",
    "report_of",
]

#: Nodes per block: the unit of execution, of memory and of counter-based randomness.
DEFAULT_BLOCK_SIZE = 1 << 14


@dataclass(frozen=True)
class Job:
    """One run: the plan, its seed, the block size, shards and the groups whose state to keep."""

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
        owned blocks (:class:`~crowdhide.engine.plan.BlockRows`, at their global positions,
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
    """Executes blocks and moves batches (see the module docstring)."""

    name: str

    def open(self, job: Job) -> None:
        """Start a run."""

    def run_group(self, group: str) -> Iterable[BlockReport]:
        """Run every block of ``group``; return (or yield) their reports, in any order."""

    def close(self) -> None:
        """Release resources; idempotent."""


class LocalBackend:
    """In-process streaming backend: one block in memory at a time, batches stay numpy.

    Shards are processed one after another (shard-major order), which changes nothing in
    the result; peak memory follows the block size and the inboxes of the group being run.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.plan import PlanBuilder
    >>> b = PlanBuilder().sources("S", {"g": np.arange(10) % 2})
    >>> _ = b.compute("C", size=2, process=lambda inbox, rng: {})
    >>> _ = b.route("S", "C", by=lambda s: s["g"])
    >>> backend = LocalBackend()
    >>> backend.open(Job(b.build(), seed=0, block_size=4, shards=2))
    >>> [r.block.index for r in backend.run_group("S")]
    [0, 1, 2]
    >>> [r.block.index for r in backend.run_group("C")]
    [0]
    >>> backend.close()
    """

    name = "local"

    def __init__(self, *, memory_budget: int = 1 << 29) -> None:
        self._job: Job | None = None
        self._mail: dict[tuple[str, int], list[MessageBatch | Parcel]] = defaultdict(list)
        self._offsets: dict[str, int] = {}
        #: Bytes of undelivered batches kept in memory; beyond, parts wait on disk.
        self.memory_budget = check_int("memory_budget", memory_budget, low=0)
        self._held = 0
        # One anonymous (already unlinked) file per receiving group: nothing is left on disk
        # whatever ends the process, and a group's file is released once the group has run.
        self._spill: dict[str, IO[bytes]] = {}

    def open(self, job: Job) -> None:
        self._job = job
        self._mail.clear()
        self._offsets = job.plan.node_offsets()

    def run_group(self, group: str) -> Iterator[BlockReport]:
        """Run the blocks of ``group`` shard by shard, yielding each block's report as soon as
        the block has run (so the driver never holds a whole group's traffic)."""
        job = self._job
        if job is None:
            raise RuntimeError("LocalBackend.run_group called before open()")
        return self._run(job, group)

    def _run(self, job: Job, group: str) -> Iterator[BlockReport]:
        blocks = job.blocks(group)
        for shard in range(job.shards):
            for block in (b for b in blocks if job.shard_of(b.index, group) == shard):
                inbox = self._mail.pop((group, block.index), [])
                self._held -= sum(batch_nbytes(p) for p in inbox if isinstance(p, MessageBatch))
                # spilled parts stay parcels: a folding block reads them one at a time
                result = step(job.plan, block, inbox, seed=job.seed)
                del inbox
                deliver(job, result.batches, self._post)
                yield report_of(job, result, self._offsets)
                del result
        spilled = self._spill.pop(group, None)
        if spilled is not None:
            spilled.close()

    def _post(self, receiver: str, block: int, part: MessageBatch) -> None:
        size = batch_nbytes(part)
        if self._held + size <= self.memory_budget:
            self._held += size
            self._mail[(receiver, block)].append(part)
            return
        handle = self._spill.get(receiver)
        if handle is None:
            # closed once ``receiver`` has run (or by close())
            handle = tempfile.TemporaryFile(prefix="crowdhide-mail-")  # noqa: SIM115
            self._spill[receiver] = handle
        offset = handle.seek(0, os.SEEK_END)
        pickle.dump(part, handle, protocol=5)  # read back once, by this backend only
        load = functools.partial(self._read, receiver, offset)
        self._mail[(receiver, block)].append(Parcel(part.route, part.sender, part.block, load))

    def _read(self, group: str, offset: int) -> MessageBatch:
        handle = self._spill[group]
        handle.seek(offset)
        batch: MessageBatch = pickle.load(handle)  # written by _post of this backend
        return batch

    def close(self) -> None:
        self._mail.clear()
        self._held = 0
        self._job = None
        for handle in self._spill.values():
            handle.close()
        self._spill.clear()


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


def check_shards(shards: Any) -> int:
    """Validate a shard count (>= 1)."""
    return check_int("shards", shards, low=1)
