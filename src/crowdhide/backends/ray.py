"""Ray backend (extra ``ray``): one actor per shard, batches actor → actor via the object store.

Each :class:`_Shard` actor owns the blocks that :meth:`Job.shard_of` assigns to its index.
When the driver asks for the first group of a round, every actor starts every group of that
round (streaming calls, in plan order); an actor runs its blocks
(:func:`crowdhide.engine.program.step`) and yields each block's report
(:class:`~crowdhide.engine.backend.BlockReport`, the observer's view) as soon as the block
has run, so the driver folds reports while the actors compute and the object store holds
only reports not folded yet. An actor keeps the parts for its own blocks in its heap (up to
:data:`SHARD_MEMORY_BUDGET` bytes), puts the others in the object store (which spills to
disk when full) and hands their references straight to the actor owning the receiver block
— one ``deliver`` call per peer and group, not per part — so message batches never travel
through the driver; before the next round the driver waits for those calls
(:meth:`_Shard.sent`). Blocks are placed in contiguous ranges of about equal node counts
(:meth:`Job.shard_of <crowdhide.engine.backend.Job.shard_of>`), so a source block's
scrambler usually lives on the same actor. An actor is created with
:meth:`Job.for_shard_index <crowdhide.engine.backend.Job.for_shard_index>`: the source rows
of its own blocks only, never the other users' data; the driver keeps the whole job.

By default Ray is started on this machine with its node address 127.0.0.1, no dashboard,
usage statistics off, ``num_cpus`` = shards and a modest object store; ``address`` joins an
existing cluster instead (``ray start --head`` on one machine, ``ray start --address=...``
on the others). :meth:`RayBackend.close` kills the actors and shuts down what it started.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

from crowdhide.engine.backend import BlockReport, Job, batch_nbytes, deliver, report_of
from crowdhide.engine.messages import Block, MessageBatch
from crowdhide.engine.program import Parcel, step
from crowdhide.errors import InvalidParameterError

__all__ = ["RayBackend", "shutdown_ray", "start_ray"]

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
        self.calls: list[Any] = []

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

    @ray.method(num_returns="streaming")
    def run_group(self, group: str) -> Iterator[BlockReport]:
        """Run this shard's blocks of ``group`` (ascending), yielding each block's report as
        soon as it has run (a streaming call: see :meth:`RayBackend.run_group`)."""
        job = self.job
        outgoing: dict[int, list[tuple[str, int, str, str, int, Any]]] = defaultdict(list)

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

        for block in _owned_blocks(job, group, self.index):
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
            # Streamed: the driver folds this report while the next block runs, and the
            # object store holds only reports not folded yet.
            yield report_of(job, result, self.offsets)
            del result
        # One call per peer and group (not per part): round trips follow the shards. The
        # calls are handed to the driver by ``sent`` (a normal return: references nested in
        # a streamed item are not reference-counted reliably by Ray).
        self.calls += [self.peers[owner].deliver.remote(items) for owner, items in outgoing.items()]

    def sent(self) -> list[Any]:
        """The ``deliver`` calls made since the last call (the driver waits for them)."""
        calls, self.calls = self.calls, []
        return calls


def _owned_blocks(job: Job, group: str, shard: int) -> list[Block]:
    """Blocks of ``group`` on ``shard``, ascending (the order its stream yields them)."""
    return [b for b in job.blocks(group) if job.shard_of(b.index, group) == shard]


def _fetch(ref: Any) -> MessageBatch:
    batch: MessageBatch = ray.get(ref)
    return batch


def start_ray(
    *,
    address: str | None = None,
    num_cpus: int = 2,
    object_store_memory: int = DEFAULT_OBJECT_STORE,
) -> None:
    """``ray.init`` as the backend does it: on this machine, loopback only, or ``address``.

    Ctrl-C while Ray starts raises :class:`KeyboardInterrupt` here, with what was started
    shut down, even when Ray lost the interrupt (see :func:`_sigint_recorded`).
    """
    # Nothing leaves the machine: no usage statistics, no dashboard, loopback node address.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    seen: list[int] = []
    try:
        with _sigint_recorded(seen):
            if address is None:
                _single_node_init(num_cpus, object_store_memory)
            else:
                _check_reachable(address)
                ray.init(address=address, log_to_driver=False, configure_logging=False)
    except BaseException as exc:
        if not seen and not isinstance(exc, KeyboardInterrupt):
            raise
        shutdown_ray()
        if isinstance(exc, KeyboardInterrupt):
            raise
        # Ctrl-C came first: whatever it broke on its way, the user stopped the run.
        raise KeyboardInterrupt from exc
    if seen:  # the KeyboardInterrupt raised by the handler was swallowed on its way
        shutdown_ray()
        raise KeyboardInterrupt


#: Ray's switch for single-node mode (named for Windows and macOS, where it is the default):
#: ``"0"`` makes every Ray process take 127.0.0.1 as its node address.
_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _single_node_init(num_cpus: int, object_store_memory: int) -> None:
    """``ray.init`` of a loopback-only single node.

    On Linux Ray replaces a node address of 127.0.0.1 by the address its route to
    8.8.8.8:53 leaves from (``resolve_ip_for_localhost``, ray-project/ray#26293): the node
    then listened on every interface under the machine's external address, and without a
    route Ray logged "Failed to determine local IP via external connectivity to 8.8.8.8:53"
    from the driver and the runtime-env agent. Single-node mode (``_CLUSTER_ENV`` = 0)
    skips that look-up: the processes ``ray.init`` starts inherit the variable (and the
    workers the raylet starts inherit its environment); this process read it into
    ``ray_constants`` when Ray was imported, so it is set there too, for the call only.
    """
    from ray._private import ray_constants

    had_env, had_flag = os.environ.get(_CLUSTER_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_CLUSTER_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            object_store_memory=object_store_memory,
            log_to_driver=False,
            configure_logging=False,
        )
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = had_flag
        if had_env is None:
            os.environ.pop(_CLUSTER_ENV, None)
        else:
            os.environ[_CLUSTER_ENV] = had_env


@contextlib.contextmanager
def _sigint_recorded(seen: list[int]) -> Iterator[None]:
    """Append each SIGINT to ``seen``, raising ``KeyboardInterrupt`` as Python's default
    handler does; the previous handler is back on exit.

    The record is what counts: ``ray.init`` spawns its processes with ``subprocess`` (a
    ``preexec_fn``, so Python's at-fork hooks run), and a ``KeyboardInterrupt`` raised in
    such a hook (``logging._releaseLock``) is printed as "Exception ignored" and dropped,
    so the run went on as if Ctrl-C had not been pressed (reproduced: SIGINT 0.2 s after
    ``gcs_server`` appeared, exit 0). While the handler is in place, such a dropped
    ``KeyboardInterrupt`` is not printed either (``sys.unraisablehook``): it is raised again
    once ``ray.init`` returns, and the user sees one line, not a traceback. Only Python's
    default handler is replaced: a SIGINT the caller ignores (``SIG_IGN``) or handles its
    own way stays so, and outside the main thread no handler can be set; nothing is
    recorded then.
    """

    def record(signum: int, frame: object) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield
        return
    hook = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if not (seen and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            hook(unraisable)

    signal.signal(signal.SIGINT, record)
    sys.unraisablehook = quiet
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = hook


def shutdown_ray() -> None:
    """``ray.shutdown``, then stop by id the Ray processes it left below this driver."""
    spawned = _ray_descendants()
    ray.shutdown()
    _stop(spawned)


#: Seconds to wait for an existing cluster's ``HOST:PORT`` to accept a connection.
CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast when nothing listens at ``HOST:PORT``: ``ray.init`` retries for minutes
    without a word (``"auto"`` and ``ray://`` addresses are left to Ray)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidParameterError(
            f"address {address!r}: no Ray cluster answers there ({reason}; waited at most "
            f"{timeout:g} s)",
            parameter="address",
            value=address,
        ) from None


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
            raise InvalidParameterError(
                f"address must be a non-empty string, got {address!r}",
                parameter="address",
                value=address,
            )
        self.address = address
        self.object_store_memory = object_store_memory
        self._actors: list[Any] = []
        self._started = False
        self._job: Job | None = None
        #: group -> one report stream per actor (groups of the round being run)
        self._streams: dict[str, list[Any]] = {}
        #: Peak resident memory of each actor (MB), measured when the run closes.
        self.worker_peak_rss_mb: list[float] = []

    def open(self, job: Job) -> None:
        if not ray.is_initialized():
            self._started = True  # before ray.init: a start cut short is shut down too
            start_ray(
                address=self.address,
                num_cpus=job.shards,
                object_store_memory=self.object_store_memory,
            )
        if self.address is not None:  # a Ray started here was given one CPU per shard
            self._check_cluster_cpus(job.shards)
        shard = ray.remote(num_cpus=1)(_Shard)
        # Each actor receives only its own blocks' source rows (Job.for_shard_index).
        self._actors = [shard.remote(job.for_shard_index(i), i) for i in range(job.shards)]
        ray.get([a.connect.remote(self._actors) for a in self._actors])
        self._job = job

    @staticmethod
    def _check_cluster_cpus(shards: int) -> None:
        """Each actor needs a CPU of the cluster: more shards would wait forever."""
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        cpus = int(resources.get("CPU", 0))
        if shards > cpus:
            raise InvalidParameterError(
                f"shards must be <= {cpus} on this Ray cluster (one CPU per actor), got {shards}",
                parameter="shards",
                value=shards,
            )

    def run_group(self, group: str) -> Iterator[BlockReport]:
        """The reports of ``group``'s blocks in block order, as the actors yield them.

        The first group asked of a round starts every group of that round on every actor
        (groups of one round exchange nothing), so the actors keep computing while the
        driver folds reports.
        """
        if not self._actors or self._job is None:
            raise RuntimeError("RayBackend.run_group called before open()")
        if group not in self._streams:
            self._start_round(self._job, group)
        return self._reports(self._job, group, self._streams.pop(group))

    def _start_round(self, job: Job, group: str) -> None:
        # Every part addressed to this round has reached its shard before the round starts
        # (a peer's ``deliver`` and the driver's ``run_group`` are not ordered by Ray).
        # ``sent`` runs after this actor's earlier calls (calls from one caller keep order).
        calls = ray.get([actor.sent.remote() for actor in self._actors])
        ray.get([call for made in calls for call in made])
        levels = job.plan.levels()
        for other in job.plan.topological_groups():
            if levels[other.name] == levels[group]:
                self._streams[other.name] = [
                    actor.run_group.remote(other.name) for actor in self._actors
                ]

    def _reports(self, job: Job, group: str, streams: list[Any]) -> Iterator[BlockReport]:
        # Each stream yields its shard's blocks ascending, so taking the next item of the
        # owner's stream walks the group in block order; reports of other shards wait in
        # the object store (unfetched, spillable), not in the driver.
        for block in job.blocks(group):
            ref = next(streams[job.shard_of(block.index, group)], None)
            if ref is None:
                raise RuntimeError(f"the shard of block {block.index} of {group!r} ended early")
            report: BlockReport = ray.get(ref)  # raises the actor's error, if any
            del ref
            yield report
        for stream in streams:
            for _ in stream:  # every stream is exhausted (and its task finished)
                raise RuntimeError(f"a shard yielded more reports than it owns blocks of {group!r}")

    def close(self) -> None:
        if self._actors:
            try:
                self.worker_peak_rss_mb = ray.get([a.peak_rss_mb.remote() for a in self._actors])
            except ray.exceptions.RayError:
                self.worker_peak_rss_mb = []
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        self._streams.clear()
        self._job = None
        if self._started:
            shutdown_ray()
            self._started = False


_RAY_MARKERS = ("ray::", "raylet", "gcs_server", "ray/_private", "ray/dashboard")


def _ray_descendants() -> list[int]:
    """Ids of Ray's processes below this driver (raylet, GCS and their agents), read from
    ``/proc`` (Linux; elsewhere none)."""
    parent: dict[int, int] = {}
    command: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        command[int(entry.name)] = line.decode(errors="replace")
    mine = {os.getpid()}
    grown = True
    while grown:
        below = {pid for pid, ppid in parent.items() if ppid in mine} - mine
        mine |= below
        grown = bool(below)
    mine.discard(os.getpid())
    return sorted(p for p in mine if any(m in command[p] for m in _RAY_MARKERS))


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop(pids: list[int], timeout: float = 5.0) -> None:
    """Terminate, by id, the Ray processes ``ray.shutdown`` left (after Ctrl-C its dashboard
    and runtime-env agents outlived the run), then kill the stubborn ones."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if _alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _alive(p)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
