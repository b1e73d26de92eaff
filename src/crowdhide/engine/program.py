"""Node programs: one group's behaviour on one block of its nodes, where the block lives.

:func:`step` is everything a host needs to execute a block — the plan, the block, the block's
own tuples (sources), the batches addressed to it and the run's ``seed``; it returns the
block's state and the batches it emits. :func:`split` cuts an emitted batch into the parts
addressed to each receiver block. Every backend (the local streaming one, Ray actors, TLS
host processes) is a loop over these two functions plus a transport; the result does not
depend on which backend, how many shards, or in which order blocks ran, because

* randomness is counter-based: :func:`block_rng` is a Philox stream keyed by
  ``(seed, round, group, block)`` — or, when a host passes its own ``secret`` (the ``tls``
  backend does, unless the run asks for a shared seed), by ``(secret, seed, round, group,
  block)``, so no other host can replay the block's draws;
* a block orders its inbox canonically (by route, then sender block), see :func:`inbox_of`.

Group programs (Ladjel et al. and the shuffle model):

* **source** (``role="source"``): its tuples, optionally ``process(inbox, rng)`` (e.g. a
  K-means assignment), then per data route target sampling σ (convention U), local
  flooding with ``d`` dummies to distinct other targets, random send-order labels, or the
  first hop to scrambler ``⌊i/n⌋``;
* **scrambler**: collects its inbox (it cannot tell dummies), adds ``d`` dummies (uniform
  or capped, Algorithm 1), shuffles, forwards;
* **compute / result**: ``process(inbox, rng) -> state`` on the real messages only
  (dummies are recognised inside the decrypted payload and dropped by the receiver); a
  compute group with ``combine`` (a mergeable aggregate) folds one inbox part at a time,
  so a block receiving the whole population never holds it (see :func:`step`).

Row ownership of a state (which node sends which rows on ``fixed``/``broadcast``/``fanout``
routes): a :data:`~crowdhide.engine.messages.NODE` column if present; else one row per node
when every column has the block's length; else all rows belong to a single-node block.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.engine.blocks import block_rows
from crowdhide.engine.messages import (
    ID_DTYPE,
    NODE,
    ORIGIN,
    Block,
    BlockState,
    Inbox,
    MessageBatch,
    merge_deliveries,
)
from crowdhide.engine.plan import ExecutionPlan, NodeGroup, Route, State
from crowdhide.errors import DataError, InvalidParameterError, ParameterTypeError

__all__ = ["BlockResult", "Parcel", "block_rng", "inbox_of", "split", "step"]

IntArray = npt.NDArray[np.integer[Any]]

#: Partial states a folding block holds before merging them (bounds its memory).
FOLD_WIDTH = 64


@dataclass(frozen=True)
class Parcel:
    """An inbox part that is not in memory yet: its canonical key and how to load it.

    Backends hand parcels to :func:`step` so that a folding block (a compute group with
    ``combine``) loads one part at a time; other blocks load them all first.
    """

    route: str
    sender: str
    block: int
    load: Callable[[], MessageBatch] = field(repr=False)


def block_rng(
    seed: int, round: int, group: str, block: int, *, secret: int | None = None
) -> np.random.Generator:
    """Counter-based generator of one block: Philox keyed by ``(seed, round, group, block)``.

    With ``secret`` (a host's private random integer, e.g. 256 bits from :mod:`secrets`)
    the key is derived from the secret as entropy and ``(seed, round, group, block)`` as
    its spawn key: the stream is then unpredictable to anyone without the secret, even
    knowing the seed (Philox's key is 128 bits drawn from the SeedSequence pool).

    Parameters
    ----------
    seed
        The run's seed.
    round
        The superstep.
    group
        The node group.
    block
        The block's index.
    secret
        The host's private random integer (``None``: keyed by the seed alone).

    Returns
    -------
    numpy.random.Generator
        The block's generator.

    See Also
    --------
    step : Runs a block with it.

    Examples
    --------
    >>> a = block_rng(7, 2, "S", 3).integers(0, 1000, 3)
    >>> b = block_rng(7, 2, "S", 3).integers(0, 1000, 3)
    >>> bool((a == b).all()), bool((a == block_rng(7, 2, "S", 4).integers(0, 1000, 3)).all())
    (True, False)
    >>> c = block_rng(7, 2, "S", 3, secret=2**200 + 1).integers(0, 1000, 3)
    >>> bool((a == c).all())
    False
    """
    words = (seed, round, zlib.crc32(group.encode("utf-8")), block)
    key = (
        np.random.SeedSequence(list(words))
        if secret is None
        else np.random.SeedSequence(secret, spawn_key=words)
    )
    return np.random.Generator(np.random.Philox(key))


@dataclass(frozen=True)
class BlockResult:
    """What one block produced: its state, its outgoing batches and its counters.

    ``stats`` maps a route to ``{"messages", "dummies", "senders"}`` (sent here) and
    ``real_delivered`` (received here); ``used`` maps a data route to the origin nodes of the
    real messages this block received (or, for a folding block, a boolean mask over the
    sender group).

    Parameters
    ----------
    block
        The block that ran.
    state
        Its final state.
    batches
        Its outgoing message batches.
    stats
        Message counters by route (see above).
    used
        Origin nodes (or a mask) by data route (see above).

    See Also
    --------
    step : Produces it.
    """

    block: Block
    state: State = field(repr=False)
    batches: tuple[MessageBatch, ...] = field(repr=False)
    stats: Mapping[str, Mapping[str, int]]
    used: Mapping[str, npt.NDArray[Any]] = field(repr=False)


def inbox_of(
    plan: ExecutionPlan, group: str, batches: Sequence[MessageBatch | Parcel]
) -> list[MessageBatch | Parcel]:
    """Batches (or parcels) in canonical order: by route (plan order), then sender block."""
    rank = {r.name: i for i, r in enumerate(plan.routes)}
    return sorted(batches, key=lambda b: (rank[b.route], b.sender != group, b.block))


def split(
    batch: MessageBatch, receiver_size: int, block_size: int
) -> list[tuple[int, MessageBatch]]:
    """The parts of ``batch`` addressed to each receiver block: ``[(block index, part)]``.

    Parameters
    ----------
    batch
        A batch of one route hop.
    receiver_size
        Nodes in the receiving group.
    block_size
        Nodes per block.

    Returns
    -------
    list of (int, MessageBatch)
        One part per receiver block that gets messages, by block index.

    See Also
    --------
    step : Receives the parts.
    """
    if len(batch) == 0:
        return []
    if batch.dst.min() < 0 or batch.dst.max() >= receiver_size:
        raise InvalidParameterError(
            f"batch of route {batch.route!r} addresses a node outside its group"
        )
    if receiver_size <= block_size:
        return [(0, batch)]  # a one-block receiver group (scramblers, compute nodes)
    which = batch.dst // block_size
    first, last = int(which.min()), int(which.max())
    if first == last:
        return [(first, batch)]
    present = np.flatnonzero(np.bincount(which - first)) + first  # (no hash-based unique)
    return [(b, batch.select(which == b)) for b in present.tolist()]


def step(
    plan: ExecutionPlan,
    block: Block,
    batches: Sequence[MessageBatch | Parcel],
    *,
    seed: int,
    data: Mapping[str, npt.NDArray[Any]] | None = None,
    secret: int | None = None,
) -> BlockResult:
    """Run the program of ``block.group`` on ``block``.

    Parameters
    ----------
    plan
        The plan (programs and routes; only ``block``'s group is executed).
    block
        The nodes to run.
    batches
        Every batch (or part, or :class:`Parcel`) addressed to the block's nodes, in any
        order. A list is consumed (emptied) so that the raw parts can be freed once merged.
        A compute group with ``combine`` runs ``process`` on one part at a time (canonical
        order) and merges the partial states every :data:`FOLD_WIDTH` parts.
    seed
        The run's seed (counter-based randomness).
    data
        Sources: the block's tuples (rows ``block.start .. block.stop-1``); default: sliced
        from the plan.
    secret
        The executing host's private key for the block's generator (:func:`block_rng`);
        ``None`` (the in-process backends, a tls run with a shared seed): keyed by the seed.
        Every draw of a block is private to its node — target sampling σ, dummy targets,
        send-order labels, the scramblers' dummies and shuffles, and the ``rng`` handed to
        ``process`` (a program's own noise) — and no receiver re-derives any of them (a
        dummy is recognised by its payload, not by replaying the sender), so the whole
        stream may be secret. Randomness that nodes must share (e.g. K-means' initial
        centroids) is drawn by the plan's author and travels in the plan as parameters.

    Returns
    -------
    BlockResult
        The block's state, outgoing batches and counters.

    See Also
    --------
    block_rng : The block's randomness.
    crowdhide.engine.execute : Runs every block of a plan.
    """
    group = plan.group(block.group)
    level = plan.levels()[group.name]
    rng = block_rng(seed, level, group.name, block.index, secret=secret)
    ordered = inbox_of(plan, group.name, batches)
    if isinstance(batches, list):
        batches.clear()  # ``step`` consumes its inbox (see the docstring)
    stats: dict[str, dict[str, int]] = {}
    if group.role == "scrambler":
        route = next(
            r
            for r in plan.routes
            if r.protection is not None
            and r.protection.scrambler is not None
            and r.protection.scrambler.group == group.name
        )
        out = _scramble(route, plan, block, _loaded(ordered), level, rng)
        stats[route.name] = {"messages": len(out), "dummies": block.size * _layer(route).dummies}
        return BlockResult(block, {}, (out,), stats, {})
    used: Mapping[str, npt.NDArray[Any]]
    if group.combine is not None and ordered:
        state, used = _fold(plan, group, block, ordered, rng, stats)
    else:
        inbox, used = _receive(plan, group, block, _loaded(ordered), data, stats)
        state = _run(group, inbox, rng)
        del inbox
    emitted: list[MessageBatch] = []
    base = 0
    for route in plan.routes_from(group.name):
        batch, per_sender, dummies = _emit(route, plan, state, block, level, base, rng)
        base += per_sender
        emitted.append(batch)
        record = stats.setdefault(route.name, {})
        record["messages"] = record.get("messages", 0) + len(batch)
        record["dummies"] = record.get("dummies", 0) + dummies
        record["senders"] = block.size
    return BlockResult(block, state, tuple(emitted), stats, used)


def _loaded(parts: list[MessageBatch | Parcel]) -> list[MessageBatch]:
    """Every part in memory (the list is emptied as parts are loaded)."""
    out = [p.load() if isinstance(p, Parcel) else p for p in parts]
    parts.clear()
    return out


def _fold(
    plan: ExecutionPlan,
    group: NodeGroup,
    block: Block,
    parts: list[MessageBatch | Parcel],
    rng: np.random.Generator,
    stats: dict[str, dict[str, int]],
) -> tuple[State, dict[str, npt.NDArray[np.bool_]]]:
    """``process`` on one part at a time (canonical order), partial states merged with
    ``combine``: memory follows one part plus :data:`FOLD_WIDTH` partial states. ``used``
    is returned as a mask over the sender group (smaller than the origins of a whole
    population's messages)."""
    assert group.combine is not None
    assert group.process is not None
    partials: list[State] = []
    used: dict[str, npt.NDArray[np.bool_]] = {}
    parts.reverse()  # pop() from the end walks the canonical order
    while parts:
        item = parts.pop()
        batch = item.load() if isinstance(item, Parcel) else item
        inbox, origins = _receive(plan, group, block, [batch], None, stats)
        del batch
        for route, rows in origins.items():
            if route not in used:
                used[route] = np.zeros(plan.group(plan.route(route).sender).size, dtype=bool)
            used[route][rows] = True
        partials.append(_checked(group, group.process(inbox, rng)))
        del inbox, origins
        if len(partials) >= FOLD_WIDTH:
            partials = [_checked(group, group.combine(partials))]
    return _checked(group, group.combine(partials)), used


def _layer(route: Route) -> Any:
    assert route.protection is not None
    assert route.protection.scrambler is not None
    return route.protection.scrambler


def _receive(
    plan: ExecutionPlan,
    group: NodeGroup,
    block: Block,
    batches: Sequence[MessageBatch],
    data: Mapping[str, npt.NDArray[Any]] | None,
    stats: dict[str, dict[str, int]],
) -> tuple[Inbox, dict[str, IntArray]]:
    by_route: dict[str, list[MessageBatch]] = {}
    for batch in batches:
        if batch.receiver != group.name:
            raise InvalidParameterError(
                f"batch of route {batch.route!r} is not addressed to {group.name!r}"
            )
        by_route.setdefault(batch.route, []).append(batch)
    if isinstance(batches, list):
        batches.clear()  # the merged deliveries replace the raw parts (memory of big inboxes)
    deliveries = []
    used: dict[str, IntArray] = {}
    for route in list(by_route):
        delivery = merge_deliveries(route, by_route.pop(route))
        deliveries.append(delivery)
        record = stats.setdefault(route, {})
        record["real_delivered"] = record.get("real_delivered", 0) + len(delivery)
        if ORIGIN in delivery.columns:
            used[route] = delivery.origin
    columns: Mapping[str, npt.NDArray[Any]] = {}
    if group.data is not None:
        columns = data if data is not None else block_rows(group, block.start, block.stop)
    expected = tuple(r.name for r in plan.routes if r.receiver == group.name)
    return Inbox(tuple(deliveries), block, BlockState(columns, block), expected), used


def _run(group: NodeGroup, inbox: Inbox, rng: np.random.Generator) -> State:
    if group.role == "source":
        assert inbox.state is not None
        state = dict(inbox.state)
        if group.process is not None:
            state.update(_checked(group, group.process(inbox, rng)))
        return state
    assert group.process is not None  # validated by ExecutionPlan
    return _checked(group, group.process(inbox, rng))


def _checked(group: NodeGroup, state: Any) -> State:
    if not isinstance(state, Mapping):
        raise ParameterTypeError(
            f"groups[{group.name}].process must return a mapping of arrays, "
            f"got {type(state).__name__}"
        )
    return state


def _targets(route: Route, state: State, senders: int, receivers: int) -> IntArray:
    assert route.by is not None
    raw = np.asarray(route.by(state))
    if raw.shape != (senders,):
        raise InvalidParameterError(
            f"routes[{route.name}].by must return one target per sender ({senders},), "
            f"got shape {raw.shape}"
        )
    if not np.issubdtype(raw.dtype, np.integer):
        raise ParameterTypeError(
            f"routes[{route.name}].by must return integer targets, got dtype {raw.dtype}"
        )
    if senders and (raw.min() < 0 or raw.max() >= receivers):
        raise InvalidParameterError(
            f"routes[{route.name}].by must return targets in [0, {receivers}), "
            f"got range [{raw.min()}, {raw.max()}]"
        )
    return np.asarray(raw, dtype=np.int64)  # no copy when ``by`` gave int64 already


def _table(route: Route, state: State, block: Block) -> tuple[dict[str, Any], IntArray]:
    """Payload table of a route (declared columns, rows sorted by owner) and row owners."""
    names = [c for c in (route.columns or tuple(state)) if c != NODE]
    missing = [c for c in names if c not in state]
    if missing:
        raise DataError(
            f"routes[{route.name}] carries column(s) {missing} that the state of "
            f"{route.sender!r} does not have (columns: {sorted(state)})"
        )
    columns = {c: np.asarray(state[c]) for c in names}
    lengths = {c: (len(v) if v.ndim else -1) for c, v in columns.items()}
    if not columns:
        owner = np.zeros(0, dtype=np.int64)  # every node sends an empty message
    elif NODE in state:
        owner = np.asarray(state[NODE], dtype=np.int64)
    elif lengths and all(n == block.size for n in lengths.values()):
        owner = np.arange(block.start, block.stop, dtype=np.int64)
    elif block.size == 1:
        owner = np.full(next(iter(lengths.values()), 0), block.start, dtype=np.int64)
    else:
        raise DataError(
            f"routes[{route.name}]: the state of {route.sender!r} must give one row per node, "
            f"or a {NODE!r} column naming each row's node (lengths {lengths})"
        )
    if any(n != len(owner) for n in lengths.values()):
        raise InvalidParameterError(
            f"routes[{route.name}] carries columns of one row per message: the state of "
            f"{route.sender!r} must have columns of equal length, got lengths {lengths}"
        )
    if len(owner) and (owner.min() < block.start or owner.max() >= block.stop):
        raise InvalidParameterError(
            f"groups[{route.sender}]: {NODE!r} names a node outside the block"
        )
    if len(owner) > 1 and (np.diff(owner) < 0).any():
        perm = np.argsort(owner, kind="stable")
        owner = owner[perm]
        columns = {c: v[perm] for c, v in columns.items()}
    return columns, owner


def _emit(
    route: Route,
    plan: ExecutionPlan,
    state: State,
    block: Block,
    level: int,
    base: int,
    rng: np.random.Generator,
) -> tuple[MessageBatch, int, int]:
    """One route's batch from ``block``; return it, messages per sender node, dummies."""
    senders = plan.group(route.sender).size
    receivers = plan.group(route.receiver).size

    def batch(
        dst: IntArray,
        src: IntArray,
        payload: IntArray,
        order: IntArray,
        columns: Mapping[str, Any],
        rows: IntArray | None = None,
        receiver: str | None = None,
        forward: IntArray | None = None,
    ) -> MessageBatch:
        return MessageBatch(
            route=route.name,
            round=level,
            sender=route.sender,
            receiver=receiver or route.receiver,
            block=block.index,
            src=src,
            dst=dst,
            order=order,
            size=route.message_size,
            payload=payload,
            columns=columns,
            rows=rows,
            forward=forward,
        )

    if route.kind == "data":
        return _emit_data(route, state, block, receivers, base, rng, batch)
    if route.kind == "stream" and not state:
        raise InvalidParameterError(
            f"routes[{route.name}] is a stream: the state of {route.sender!r} must be "
            "non-empty columns of equal length (one row per message), got lengths {}"
        )
    return _emit_rows(route, state, block, senders, receivers, base, batch)


def _emit_rows(
    route: Route,
    state: State,
    block: Block,
    senders: int,
    receivers: int,
    base: int,
    batch: Any,
) -> tuple[MessageBatch, int, int]:
    """A data-independent route: each message carries its sender node's rows."""
    index = np.arange(block.start, block.stop, dtype=np.int64)
    columns, owner = _table(route, state, block)
    if route.kind == "stream":
        rows = len(owner)
        position = np.arange(rows, dtype=np.int64)
        dst = position * receivers // max(rows, 1)
        out = batch(
            dst, np.full(rows, block.start, dtype=np.int64), position, base + position, columns
        )
        return out, rows, 0
    first = np.searchsorted(owner, index)
    count = np.searchsorted(owner, index, side="right") - first
    single = bool((count == 1).all())
    first = np.where(count > 0, first, 0)
    if route.kind == "fixed":
        out = batch(
            index * receivers // senders,
            index,
            first,
            np.full(block.size, base, dtype=np.int64),
            columns,
            None if single else count,
        )
        return out, 1, 0
    if route.kind == "fanout":
        lo = -(-block.start * receivers // senders)
        hi = -(-block.stop * receivers // senders)
        recv = np.arange(lo, hi, dtype=np.int64)
        src = recv * senders // receivers
        within = recv - np.searchsorted(src, src)  # rank among the sender's messages
        local = src - block.start
        out = batch(
            recv, src, first[local], base + within, columns, None if single else count[local]
        )
        return out, -(-receivers // senders), 0
    # broadcast
    dst = np.tile(np.arange(receivers, dtype=np.int64), block.size)
    local = np.repeat(np.arange(block.size), receivers)
    out = batch(
        dst,
        index[local],
        first[local],
        base + dst,
        columns,
        None if single else count[local],
    )
    return out, receivers, 0


def _emit_data(
    route: Route,
    state: State,
    block: Block,
    receivers: int,
    base: int,
    rng: np.random.Generator,
    batch: Any,
) -> tuple[MessageBatch, int, int]:
    senders = block.size
    # int32 ids (a plan has < 2**31 nodes): the batch stores them so, no conversion pass
    index = np.arange(block.start, block.stop, dtype=ID_DTYPE)
    local = np.arange(senders, dtype=ID_DTYPE)
    true_target = _targets(route, state, senders, receivers)
    names = route.columns or tuple(c for c in state if c != NODE)
    columns = {c: np.asarray(state[c]) for c in names}
    columns[ORIGIN] = index
    protection = route.protection
    if protection is None or protection.sigma == 0.0:
        final = true_target
    else:
        sampled = rng.random(senders) < protection.sigma
        drawn = rng.integers(0, receivers, size=senders)
        final = np.where(sampled, drawn, true_target)
    payload = np.where(final == true_target, local, -1)
    dummies = int(np.count_nonzero(payload < 0))
    layer = protection.scrambler if protection is not None else None
    if layer is not None:
        scrambler = index // layer.per_scrambler
        out = batch(
            scrambler,
            index,
            payload,
            np.full(senders, base, dtype=ID_DTYPE),
            columns,
            receiver=layer.group,
            forward=final,
        )
        return out, 1, dummies
    flood = protection.local_dummies if protection is not None else 0
    if flood == 0:
        return (
            batch(final, index, payload, np.full(senders, base, dtype=ID_DTYPE), columns),
            1,
            dummies,
        )
    # d distinct dummy targets other than the first message's target, via random keys.
    keys = rng.random((senders, receivers), dtype=np.float32)
    keys[local, final] = 2.0
    extra = np.argpartition(keys, flood - 1, axis=1)[:, :flood]
    dst = np.concatenate([final[:, None], extra], axis=1).ravel()
    src = np.repeat(index, flood + 1)
    pay = np.concatenate(
        [payload[:, None], np.full((senders, flood), -1, dtype=np.int64)], axis=1
    ).ravel()
    labels = np.argsort(rng.random((senders, flood + 1)), axis=1).ravel()
    out = batch(dst.astype(np.int64), src, pay, base + labels.astype(np.int64), columns)
    return out, flood + 1, dummies + senders * flood


def _scramble(
    route: Route,
    plan: ExecutionPlan,
    block: Block,
    batches: Sequence[MessageBatch],
    level: int,
    rng: np.random.Generator,
) -> MessageBatch:
    """Algorithm 1 for every scrambler of ``block`` at once, then the shuffled forward hop.

    Entries ``[inputs..., dummies...]`` (final target, payload reference) are laid out in
    int32 buffers, the shuffle is a gather of them, and the sender and send-order label of
    every output are known in closed form (outputs are grouped by scrambler): no int64
    intermediate, no conversion pass.
    """
    layer = _layer(route)
    targets = plan.group(route.receiver).size
    count = block.size
    d = layer.dummies
    scr, dst, pay, columns = _scrambler_inputs(batches, block, count * d)
    inputs = scr.size
    dummy_dst = (
        _capped_dummies(scr, dst[:inputs], count, targets, layer, rng)
        if layer.cap
        else rng.integers(0, targets, size=count * d)
    )
    dst[inputs:] = dummy_dst
    pay[inputs:] = -1
    perm = _scrambler_order(scr, count, d, rng)
    sizes = np.bincount(scr, minlength=count) + d
    if bool((sizes == sizes[0]).all()):  # full scramblers (the usual case)
        order = np.tile(np.arange(sizes[0], dtype=ID_DTYPE), count)
    else:
        starts = np.cumsum(sizes) - sizes
        order = np.arange(perm.size, dtype=ID_DTYPE) - np.repeat(starts, sizes).astype(ID_DTYPE)
    return MessageBatch(
        route=route.name,
        round=level,
        sender=block.group,
        receiver=route.receiver,
        block=block.index,
        src=np.repeat(np.arange(block.start, block.stop, dtype=ID_DTYPE), sizes),
        dst=dst[perm],
        order=order,
        size=route.message_size,
        payload=pay[perm],
        columns=columns,
    )


def _scrambler_inputs(
    batches: Sequence[MessageBatch], block: Block, extra: int
) -> tuple[IntArray, IntArray, IntArray, dict[str, npt.NDArray[Any]]]:
    """A scrambler block's inbox joined: scrambler of each input (within the block), then
    int32 buffers of final targets and payload references (re-based onto the joined payload
    table) with ``extra`` free slots at the end, and the joined table."""
    inputs = sum(len(b) for b in batches)
    scr = np.empty(inputs, dtype=ID_DTYPE)
    dst = np.empty(inputs + extra, dtype=ID_DTYPE)
    pay = np.empty(inputs + extra, dtype=ID_DTYPE)
    tables: dict[str, list[npt.NDArray[Any]]] = {}
    at = offset = 0
    for b in batches:
        part = slice(at, at + len(b))
        np.subtract(b.dst, block.start, out=scr[part], casting="unsafe")
        dst[part] = b.forward if b.forward is not None else 0
        pay[part] = b.payload
        if offset:  # re-based, dummies stay -1 (a masked add: no scatter)
            np.add(pay[part], offset, out=pay[part], where=pay[part] >= 0)
        for name, values in b.columns.items():
            tables.setdefault(name, []).append(np.asarray(values))
        offset += len(next(iter(b.columns.values()), ()))
        at += len(b)
    columns = {k: v[0] if len(v) == 1 else np.concatenate(v) for k, v in tables.items()}
    return scr, dst, pay, columns


def _capped_dummies(
    scr: IntArray, fwd: IntArray, count: int, targets: int, layer: Any, rng: np.random.Generator
) -> IntArray:
    """Capped scramblers: each dummy goes to a target that has fewer of the scrambler's
    messages than the scrambler has inputs (no target stands out), chosen at random."""
    d = layer.dummies
    inputs = np.bincount(scr, minlength=count)
    counts = np.zeros((count, targets), dtype=np.int64)
    np.add.at(counts, (scr, fwd), 1)
    placed = np.empty((count, d), dtype=np.int64)
    for j in range(d):
        allowed = counts < inputs[:, None]
        if not allowed.any(axis=1).all():
            raise InvalidParameterError(
                f"capped scrambler cannot place dummy {j + 1}: n + d > n*T "
                f"(n={layer.per_scrambler}, d={d}, T={targets})"
            )
        keys = np.where(allowed, rng.random((count, targets)), -1.0)
        choice = np.argmax(keys, axis=1)
        counts[np.arange(count), choice] += 1
        placed[:, j] = choice
    flat: IntArray = placed.ravel()
    return flat


def _scrambler_order(scr: IntArray, count: int, dummies: int, rng: np.random.Generator) -> IntArray:
    """Shuffled output of ``count`` scramblers: indices into ``[inputs..., dummies...]``.

    Scrambler ``j`` holds its inputs (``scr == j``) then its ``dummies`` dummies (entries
    ``len(scr) + j*d + k``). Entries are laid out one row per scrambler (padded with -1 when
    input counts differ), rows are shuffled independently (Fisher–Yates,
    ``Generator.permuted``) and the padding is dropped: a uniformly random order within each
    scrambler, grouped by scrambler, in O(entries) without sorting keys.
    """
    inputs = np.bincount(scr, minlength=count)
    width = int(inputs.max(initial=0)) + dummies
    ordered = scr.size < 2 or not bool((np.diff(scr) < 0).any())
    uniform = bool((inputs == inputs[0]).all())
    if ordered and uniform:
        # Full scramblers in order (the usual case): the table is two reshapes, no scatter.
        table = np.empty((count, width), dtype=np.int64)
        rows = np.arange(count, dtype=np.int64)[:, None]
        n = width - dummies
        # Written in place by broadcasting (no full-size temporaries).
        np.add(rows * n, np.arange(n, dtype=np.int64), out=table[:, :n])
        np.add(rows * dummies + scr.size, np.arange(dummies, dtype=np.int64), out=table[:, n:])
        flat: IntArray = rng.permuted(table, axis=1, out=table).ravel()  # in place: same draws
        return flat
    table = np.full((count, width), -1, dtype=np.int64)
    grouped = np.arange(scr.size, dtype=np.int64) if ordered else np.argsort(scr, kind="stable")
    starts = np.cumsum(inputs) - inputs
    owner = scr[grouped]
    table[owner, np.arange(scr.size, dtype=np.int64) - starts[owner]] = grouped
    if dummies:
        rows = np.repeat(np.arange(count, dtype=np.int64), dummies)
        slots = inputs[rows] + np.tile(np.arange(dummies, dtype=np.int64), count)
        table[rows, slots] = scr.size + np.arange(count * dummies, dtype=np.int64)
    shuffled = rng.permuted(table, axis=1, out=table).ravel()
    if uniform:
        return shuffled  # no padding
    result: IntArray = shuffled[shuffled >= 0]
    return result
