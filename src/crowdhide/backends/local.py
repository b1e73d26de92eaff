"""The local backend: the engine's blocks run in this process, one at a time.

:class:`LocalBackend` implements the contract of :mod:`crowdhide.engine.backend` with no
workers: batches stay numpy arrays in memory up to a budget, beyond which they wait in
anonymous temporary files (read back once, by this backend only).
"""

from __future__ import annotations

import functools
import os
import pickle
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from typing import IO

from crowdhide._validation import check_int
from crowdhide.engine.backend import BlockReport, Job, batch_nbytes, deliver, report_of
from crowdhide.engine.messages import MessageBatch
from crowdhide.engine.program import Parcel, step

__all__ = ["LocalBackend"]


class LocalBackend:
    """In-process streaming backend: one block in memory at a time, batches stay numpy.

    Shards are processed one after another (shard-major order), which changes nothing in
    the result; peak memory follows the block size and the inboxes of the group being run.

    Parameters
    ----------
    memory_budget
        Bytes of messages held in memory; beyond it, inboxes spill to a temporary file.

    See Also
    --------
    crowdhide.backends.make_backend : Chooses a backend by name.

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
