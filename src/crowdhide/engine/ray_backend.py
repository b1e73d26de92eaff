"""Ray backend (extra ``ray``): one actor per shard, batches actor → actor via the object store.

Each :class:`_Shard` actor owns the blocks that :meth:`Job.shard_of` assigns to its index.
To run the groups of one round the driver calls every actor once per group, all at once;
an actor runs its blocks (:func:`crowdhide.engine.program.step`), keeps the parts for its
own blocks in its heap (up to :data:`SHARD_MEMORY_BUDGET` bytes), puts the others in the
object store (which spills to disk when full) and hands their references straight to the
actor owning the receiver block — one ``deliver`` call per peer and group, not per part —
so message batches never travel through the driver. Blocks are placed in contiguous
ranges (:meth:`Job.shard_of <crowdhide.engine.backend.Job.shard_of>`), so a source block's
scrambler usually lives on the same actor; the driver receives the observer's view
(:class:`~crowdhide.engine.backend.BlockReport`) only. An actor is created with
:meth:`Job.for_shard_index <crowdhide.engine.backend.Job.for_shard_index>`: the source rows
of its own blocks only, never the other users' data; the driver keeps the whole job.

By default Ray is started on this machine with its node address 127.0.0.1, no dashboard,
usage statistics off, ``num_cpus`` = shards and a modest object store; ``address`` joins an
existing cluster instead (``ray start --head`` on one machine, ``ray start --address=...``
on the others). :meth:`RayBackend.close` kills the actors and shuts down what it started.
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from typing import Any

import ray

from crowdhide.engine.backend import BlockReport, Job, batch_nbytes, deliver, report_of
from crowdhide.engine.messages import MessageBatch
from crowdhide.engine.program import Parcel, step

__all__ = ["RayBackend", "start_ray"]

#: Object store of a Ray instance started here (bytes); larger batches spill to disk.
DEFAULT_OBJECT_STORE = 512 * 1024 * 1024
#: Bytes of parts for an actor's own blocks kept in its heap (beyond: the object store).
SHARD_MEMORY_BUDGET = 768 * 1024 * 1024


class _Shard:
    """One shard: the blocks it owns, their inboxes, and handles of its peers."""

    def __init__(self, job: Job, index: int) -> None:
        self.job = job
        self.index = index
        self.offsets = job.plan.node_offsets()
        self.peers: list[Any] = []
        #: (group, block) -> parts waiting to run: in the heap, or (route, sender, sender
        #: block, ObjectRef) in the object store
        self.mail: dict[tuple[str, int], list[Any]] = defaultdict(list)
        self.memory_budget = SHARD_MEMORY_BUDGET
        self.held = 0

    def peak_rss_mb(self) -> float:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    def connect(self, peers: list[Any]) -> int:
        self.peers = peers
        return len(peers)

    def deliver(self, parts: list[tuple[str, int, str, str, int, Any]]) -> int:
        """Take parts ``(group, block, route, sender, sender block, ref)`` of this shard."""
        # A list of ObjectRefs is not resolved on arrival: the data moves when the block runs.
        for group, block, route, sender, origin, ref in parts:
            self.mail[(group, block)].append((route, sender, origin, ref))
        return len(parts)

    def run_group(self, group: str) -> tuple[list[BlockReport], list[Any]]:
        job = self.job
        outgoing: dict[int, list[tuple[str, int, str, str, int, Any]]] = defaultdict(list)
        reports: list[BlockReport] = []

        def post(receiver: str, block: int, part: MessageBatch) -> None:
            owner = job.shard_of(block, receiver)
            size = batch_nbytes(part)
            if owner == self.index and self.held + size <= self.memory_budget:
                # This shard's own block: the part stays in the heap, up to a budget.
                self.held += size
                self.mail[(receiver, block)].append(part)
                return
            # Beyond the budget, parts wait in the object store (which spills to disk when
            # full), so an actor's heap follows its block, not its inbox.
            item = (receiver, block, part.route, part.sender, part.block, ray.put(part))
            if owner == self.index:
                self.deliver([item])
            else:
                outgoing[owner].append(item)

        mine = [b for b in job.blocks(group) if job.shard_of(b.index, group) == self.index]
        for block in mine:
            inbox = [
                item
                if isinstance(item, MessageBatch)
                else Parcel(item[0], item[1], item[2], functools.partial(_fetch, item[3]))
                for item in self.mail.pop((group, block.index), [])
            ]
            self.held -= sum(batch_nbytes(p) for p in inbox if isinstance(p, MessageBatch))
            result = step(job.plan, block, inbox, seed=job.seed)
            del inbox
            deliver(job, result.batches, post)
            reports.append(report_of(job, result, self.offsets))
        # One call per peer and group (not per part): round trips follow the shards.
        acks = [self.peers[owner].deliver.remote(items) for owner, items in outgoing.items()]
        return reports, acks


def _fetch(ref: Any) -> MessageBatch:
    batch: MessageBatch = ray.get(ref)
    return batch


def start_ray(
    *,
    address: str | None = None,
    num_cpus: int = 2,
    object_store_memory: int = DEFAULT_OBJECT_STORE,
) -> None:
    """``ray.init`` as the backend does it: on this machine, loopback only, or ``address``."""
    # Nothing leaves the machine: no usage statistics, no dashboard, loopback node address.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address is None:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            object_store_memory=object_store_memory,
            log_to_driver=False,
            configure_logging=False,
        )
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)


class RayBackend:
    """Blocks run in Ray actors (one per shard); see the module docstring.

    Parameters
    ----------
    address
        An existing Ray cluster (``"HOST:PORT"`` or ``"auto"``); ``None`` starts Ray here.
    object_store_memory
        Object store size when Ray is started here (bytes).
    """

    name = "ray"

    def __init__(
        self, *, address: str | None = None, object_store_memory: int = DEFAULT_OBJECT_STORE
    ) -> None:
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise ValueError(f"address must be a non-empty string, got {address!r}")
        self.address = address
        self.object_store_memory = object_store_memory
        self._actors: list[Any] = []
        self._started = False
        #: Peak resident memory of each actor (MB), measured when the run closes.
        self.worker_peak_rss_mb: list[float] = []

    def open(self, job: Job) -> None:
        if not ray.is_initialized():
            start_ray(
                address=self.address,
                num_cpus=job.shards,
                object_store_memory=self.object_store_memory,
            )
            self._started = True
        shard = ray.remote(num_cpus=1)(_Shard)
        # Each actor receives only its own blocks' source rows (Job.for_shard_index).
        self._actors = [shard.remote(job.for_shard_index(i), i) for i in range(job.shards)]
        ray.get([a.connect.remote(self._actors) for a in self._actors])

    def run_group(self, group: str) -> list[BlockReport]:
        return self.run_groups([group])

    def run_groups(self, groups: list[str]) -> list[BlockReport]:
        """Run groups of one round at once (actors work on different groups in parallel)."""
        if not self._actors:
            raise RuntimeError("RayBackend.run_group called before open()")
        calls = [a.run_group.remote(g) for g in groups for a in self._actors]
        results = ray.get(calls)
        # Every part addressed to the next groups has reached its shard before they run.
        ray.get([ack for _, acks in results for ack in acks])
        return [report for reports, _ in results for report in reports]

    def close(self) -> None:
        if self._actors:
            try:
                self.worker_peak_rss_mb = ray.get([a.peak_rss_mb.remote() for a in self._actors])
            except ray.exceptions.RayError:
                self.worker_peak_rss_mb = []
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._started:
            ray.shutdown()
            self._started = False
