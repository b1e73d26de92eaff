"""Sharded execution of an :class:`~crowdhide.engine.plan.ExecutionPlan`.

Groups run in rounds (their level in the plan DAG). In its round a group's program runs on
every block of its nodes (:mod:`crowdhide.engine.program`): the block receives the batches
addressed to it, drops dummies (a target recognises them inside the decrypted payload),
runs the program on its own state and inbox, and emits one batch per route, carrying the
route's declared columns. All per-message work is numpy on whole arrays.

Countermeasures (Ladjel et al., Sections III–IV) are part of the source and scrambler programs:
target sampling σ (convention U, footnote 5), local flooding with ``d`` dummies to distinct
other targets, uniformly random send-order labels (Definition 1's edge labels), and
scramblers ``⌊i/n⌋`` adding ``d`` dummies and shuffling (Algorithm 1).

Randomness is counter-based (Philox keyed by ``(seed, round, group, block)``), and blocks
order their inboxes canonically, so the states, the transcript and every counter are the
same for any backend and any number of shards, given the seed and the block size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_bool, check_int
from crowdhide.engine.backend import DEFAULT_BLOCK_SIZE, Backend, BlockReport, Job
from crowdhide.engine.messages import Transcript
from crowdhide.engine.plan import ExecutionPlan, State
from crowdhide.errors import DataTypeError, InvalidParameterError, ParameterTypeError

__all__ = ["Execution", "RouteStats", "execute", "seed_of"]

ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True)
class RouteStats:
    """Message counts of one route.

    Parameters
    ----------
    messages
        Messages on the wire (both hops of a scrambled route).
    real_delivered
        Real messages that reached the receiver group.
    dummies
        Dummy messages (sampled-away, flooding and scrambler dummies).
    senders
        Sending nodes.

    See Also
    --------
    Execution : Holds one per route.
    """

    messages: int
    real_delivered: int
    dummies: int
    senders: int


@dataclass(frozen=True)
class Execution:
    """Result of :func:`execute`.

    Parameters
    ----------
    states
        Final state of every kept group (all non-source groups by default), blocks joined.
    transcript
        The observer's transcript.
    routes
        :class:`RouteStats` by route name.
    used
        By data route: boolean mask over sender nodes whose real message was delivered
        (the tuples the result used).
    backend, shards, block_size, seed
        How the run was executed (the result depends on ``seed`` and ``block_size`` only).

    See Also
    --------
    execute : Produces it.
    """

    states: Mapping[str, State] = field(repr=False)
    transcript: Transcript = field(repr=False)
    routes: Mapping[str, RouteStats]
    used: Mapping[str, npt.NDArray[np.bool_]] = field(repr=False)
    backend: str = "local"
    shards: int = 1
    block_size: int = DEFAULT_BLOCK_SIZE
    seed: int = 0


def seed_of(rng: np.random.Generator | int | None) -> int:
    """The integer seed of a run: ``rng`` itself, a draw from a Generator, or fresh entropy.

    Parameters
    ----------
    rng
        An int >= 0 (returned as is), a Generator (one draw) or ``None`` (fresh entropy).

    Returns
    -------
    int
        The seed.

    See Also
    --------
    execute : Runs a plan with this seed.
    """
    if rng is None:
        return int(np.random.SeedSequence().generate_state(2, np.uint32).view(np.uint64)[0] >> 1)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63 - 1))
    return check_int("seed", rng, low=0)


def execute(
    plan: ExecutionPlan,
    *,
    backend: Backend,
    rng: np.random.Generator | int | None = None,
    shards: int = 1,
    block_size: int = DEFAULT_BLOCK_SIZE,
    keep: Collection[str] | None = None,
    keep_sources: bool = False,
    progress: ProgressCallback | None = None,
) -> Execution:
    """Run ``plan`` round by round on ``backend``.

    Parameters
    ----------
    plan
        A validated plan (possibly transformed by :func:`crowdhide.plans.protect`).
    rng
        Seed (int >= 0) of the counter-based randomness; a Generator contributes one draw;
        ``None`` draws fresh entropy.
    backend
        A :class:`~crowdhide.engine.backend.Backend` (:func:`crowdhide.backends.make_backend`
        chooses one by name; :func:`crowdhide.backends.execute` runs this with it). The
        engine never chooses a backend itself, so it imports none.
    shards
        Shards (Ray: actors, about one per core); never changes the result.
    block_size
        Nodes per block (unit of execution and of randomness; part of the seed's meaning).
    keep
        Groups whose final state to return (default: every non-source group).
    keep_sources
        Also return the states of source groups (memory grows with the population).
    progress
        ``progress(done, total, group)`` called after each group.

    Returns
    -------
    Execution
        The kept states, the observer's transcript and the routes' message counts.

    See Also
    --------
    crowdhide.backends.execute : The same with a backend chosen by name.
    crowdhide.plans.protect : The countermeasures a plan runs with.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.backends.local import LocalBackend
    >>> from crowdhide.engine.plan import PlanBuilder
    >>> from crowdhide.plans.semantics import protect
    >>> local = LocalBackend()
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.arange(100) % 4})
    >>> _ = b.compute("C", size=4, process=lambda inbox, rng: {
    ...     "count": np.bincount(inbox.only("S->C").target, minlength=4)})
    >>> _ = b.route("S", "C", by=lambda s: s["g"])
    >>> run = execute(b.build(), backend=local, rng=0)
    >>> run.states["C"]["count"].tolist(), len(run.transcript)
    ([25, 25, 25, 25], 100)
    >>> plan = protect(b.build(), sigma=0.5, per_scrambler=10, dummies=5)
    >>> safe = execute(plan, backend=local, rng=0)
    >>> int(safe.states["C"]["count"].sum()) == safe.routes["S->C"].real_delivered
    True
    >>> len(safe.transcript) == 100 + 100 + 10 * 5
    True
    >>> three = execute(plan, backend=local, rng=0, shards=3, block_size=16)
    >>> sixteen = execute(plan, backend=local, rng=0, block_size=16)
    >>> bool((three.transcript.target == sixteen.transcript.target).all())
    True
    """
    seed = seed_of(rng)
    count = check_int("shards", shards, low=1)
    size = check_int("block_size", block_size, low=1)
    sources = check_bool("keep_sources", keep_sources)
    every = {g.name for g in plan.groups if g.role != "source" or sources}
    kept = set(keep) if keep is not None else every
    if not isinstance(backend, Backend):
        raise ParameterTypeError(
            "backend must be a Backend object (crowdhide.backends.make_backend chooses one "
            f"by name), got {backend!r}"
        )
    transport = backend
    total = sum(g.size for g in plan.groups)
    if total >= 2**31:
        raise InvalidParameterError(f"a plan must have fewer than 2**31 nodes, got {total}")
    job = Job(plan=plan, seed=seed, block_size=size, shards=count, keep=frozenset(kept))
    collector = _Collector(job)
    try:
        # Inside the try: a Ctrl-C while the backend starts (Ray's workers coming up) still
        # closes it, or Ray's agent processes outlive the run.
        transport.open(job)
        _run_rounds(job, transport, collector, progress)
    finally:
        transport.close()
    return collector.finish(getattr(transport, "name", type(transport).__name__))


def _run_rounds(
    job: Job, transport: Backend, collector: _Collector, progress: ProgressCallback | None
) -> None:
    """Every round of ``job``'s plan on ``transport``, reports folded into ``collector``."""
    try:
        _rounds(job, transport, collector, progress)
    except BaseException:
        collector.traffic.close()  # stop its writer thread: finish() is not reached
        raise


def _rounds(
    job: Job, transport: Backend, collector: _Collector, progress: ProgressCallback | None
) -> None:
    total = len(job.plan.groups)
    done = 0
    together = getattr(transport, "run_groups", None)
    for level in job.plan.groups_by_level():
        names = list(level)
        # Groups of one round exchange nothing: run them together when the backend can;
        # otherwise one by one, folding each group's reports before the next one runs.
        reports = together(names) if together is not None else None
        for name in names:
            mine = (
                transport.run_group(name)
                if reports is None
                else [r for r in reports if r.block.group == name]
            )
            collector.add(mine)
            done += 1
            if progress is not None:
                progress(done, total, name)
        del reports


class _Collector:
    """Folds block reports into counters, masks, kept states and the transcript, group by
    group, so the driver holds no per-block history (the transcript spills to disk)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.stats: dict[str, dict[str, int]] = {}
        self.used: dict[str, npt.NDArray[np.bool_]] = {}
        self.states: dict[str, State] = {}
        self.traffic = TrafficSink()
        self.data_routes = {r.name: r for r in job.plan.routes if r.kind == "data"}

    def add(self, reports: Iterable[BlockReport]) -> None:
        """Fold one group's reports, in block order, as they arrive (a reorder buffer holds
        the early ones): the driver never holds a whole group's traffic at once when the
        backend yields reports in block order (the local backend does)."""
        pending: dict[int, BlockReport] = {}
        kept: list[State] = []
        expected = 0
        group = None
        for report in reports:
            group = report.block.group
            pending[report.block.index] = report
            while expected in pending:
                self._fold(pending.pop(expected), kept)
                expected += 1
        for index in sorted(pending):  # blocks missing from a partial run: the rest in order
            self._fold(pending.pop(index), kept)
        if kept and group is not None:
            self.states[group] = _join(kept)

    def _fold(self, report: BlockReport, kept: list[State]) -> None:
        plan = self.job.plan
        for route, record in report.stats.items():
            total = self.stats.setdefault(route, {})
            for key, value in record.items():
                total[key] = total.get(key, 0) + value
        for route, origins in report.used.items():
            if route in self.data_routes:
                size = plan.group(self.data_routes[route].sender).size
                mask = self.used.setdefault(route, np.zeros(size, dtype=bool))
                if origins.dtype == np.bool_:
                    mask |= origins  # a folding block's mask over the sender group
                else:
                    mask[origins] = True
        self.traffic.add(report.traffic)
        if report.state is not None:
            kept.append(report.state)

    def finish(self, name: str) -> Execution:
        plan = self.job.plan
        for declared in plan.routes:  # senders = the whole sender group, even with no traffic
            self.stats.setdefault(declared.name, {})["senders"] = plan.group(declared.sender).size
        names = {r.name for r in plan.routes}
        routes = {
            route: RouteStats(
                messages=s.get("messages", 0),
                real_delivered=s.get("real_delivered", 0),
                dummies=s.get("dummies", 0),
                senders=s["senders"],
            )
            for route, s in self.stats.items()
            if route in names
        }
        offsets = plan.node_offsets()
        groups = {g.name: (offsets[g.name], g.size) for g in plan.groups}
        return Execution(
            states=self.states,
            transcript=self.traffic.transcript(groups),
            routes=routes,
            used=self.used,
            backend=name,
            shards=self.job.shards,
            block_size=self.job.block_size,
            seed=self.job.seed,
        )


def _join(states: list[State]) -> State:
    """One group's state from its blocks' states (columns concatenated in block order)."""
    if len(states) == 1:
        return states[0]
    names = list(states[0])
    joined: dict[str, Any] = {}
    for name in names:
        values = [s[name] for s in states]
        if not all(isinstance(v, np.ndarray) and v.ndim >= 1 for v in values):
            raise DataTypeError(
                f"state column {name!r} of a multi-block group must be an array to join blocks"
            )
        joined[name] = np.concatenate(values)
    return joined


_COLUMNS = (
    ("round", np.int16),
    ("source", np.int32),
    ("target", np.int32),
    ("size", np.int32),
    ("order", np.int32),
)


class TrafficSink:
    """The observer's transcript, accumulated in order; beyond ``limit`` bytes in memory it
    is appended to anonymous files, and the final columns are read-only memory maps of
    them, so a run's peak memory does not grow with its message count.

    The files are written by a writer thread (writing releases the GIL, so it overlaps the
    next blocks' computing); the driver hands it one batch of parts at a time and waits
    while it is one batch behind, so at most about three times ``limit`` bytes are held.
    """

    def __init__(self, limit: int = 1 << 26) -> None:
        self.limit = limit
        self.parts: list[tuple[int, int, Any, Any, Any]] = []
        self.held = 0
        self.count = 0
        self.files: dict[str, Any] = {}
        self._queue: queue.Queue[list[tuple[int, int, Any, Any, Any]] | None] | None = None
        self._writer: threading.Thread | None = None
        self._error: BaseException | None = None

    def add(self, parts: Any) -> None:
        for part in parts:
            self.parts.append(part)
            self.held += 18 * len(part[2])
        if self.held > self.limit:
            self._flush()

    def _columns(self) -> list[npt.NDArray[Any]]:
        lengths = [len(p[2]) for p in self.parts]
        total = sum(lengths)
        out = [np.empty(total, dtype=t) for _, t in _COLUMNS]
        at = 0
        for (r, s, src, dst, order), n in zip(self.parts, lengths, strict=True):
            out[0][at : at + n] = r
            out[3][at : at + n] = s
            out[1][at : at + n] = src
            out[2][at : at + n] = dst
            out[4][at : at + n] = order
            at += n
        self.parts.clear()
        self.held = 0
        self.count += total
        return out

    def _flush(self) -> None:
        import tempfile

        if self._writer is None or self._queue is None:
            # Anonymous (already unlinked) files: nothing is left behind whatever ends the run;
            # they are closed in transcript(), once mapped.
            for name, _ in _COLUMNS:
                if name not in self.files:
                    self.files[name] = tempfile.TemporaryFile(prefix="crowdhide-")  # noqa: SIM115
            self._queue = queue.Queue(maxsize=1)
            self._writer = threading.Thread(
                target=self._write_loop, name="crowdhide-transcript", daemon=True
            )
            self._writer.start()
        parts, self.parts = self.parts, []
        self.count += sum(len(p[2]) for p in parts)
        self.held = 0
        self._queue.put(parts)  # waits while the writer is one batch behind (bounded memory)

    def _write_loop(self) -> None:
        """The writer thread: each part straight to its columns' files, in order."""
        assert self._queue is not None
        while (parts := self._queue.get()) is not None:
            if self._error is not None:
                continue  # a write failed: drain, transcript() raises it
            try:
                for r, s, src, dst, order in parts:
                    n = len(src)
                    constant = (np.full(n, r, dtype=np.int16), np.full(n, s, dtype=np.int32))
                    for (name, dtype), values in zip(
                        _COLUMNS, (constant[0], src, dst, constant[1], order), strict=True
                    ):
                        np.ascontiguousarray(values, dtype=dtype).tofile(self.files[name])
            except BaseException as error:  # re-raised by transcript()
                self._error = error

    def _stop(self) -> None:
        """Stop the writer thread once it has written everything handed to it."""
        if self._writer is not None and self._queue is not None:
            self._queue.put(None)
            self._writer.join()
        self._writer = self._queue = None

    def close(self) -> None:
        """Drop what was not made into a transcript: stop the writer, close its files
        (idempotent; a run that fails calls it)."""
        self._stop()
        for handle in self.files.values():
            handle.close()
        self.files.clear()

    def transcript(self, groups: Mapping[str, tuple[int, int]]) -> Transcript:
        """The transcript of everything added (in memory, or memory-mapped from disk)."""
        if not self.files:
            columns = self._columns()
        else:
            self._flush()
            self._stop()
            if self._error is not None:
                self.close()
                raise self._error
            columns = []
            for name, dtype in _COLUMNS:
                handle = self.files.pop(name)
                handle.flush()
                # The map keeps the data; closing the file object frees nothing yet.
                columns.append(np.memmap(handle, dtype=dtype, mode="r", shape=(self.count,)))
                handle.close()
        return Transcript(
            round=columns[0],
            source=columns[1],
            target=columns[2],
            size=columns[3],
            order=columns[4],
            groups=dict(groups),
        )
