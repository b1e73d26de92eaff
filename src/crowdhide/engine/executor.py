"""Vectorized superstep execution of an :class:`~crowdhide.plans.model.ExecutionPlan`.

Groups run in rounds (their level in the plan DAG). In its round a group (1) receives the
batches addressed to it, (2) drops dummies (a target recognises them inside the decrypted
payload) and runs its compute function, (3) emits one batch per route. All per-message
work is numpy on whole arrays; no Python object is created per message.

Countermeasures (seed 000, Sections III–IV) are applied while emitting a data route:

* target sampling σ (convention U): with probability σ the source draws a target uniformly
  among all T; the real message goes out when the draw equals the true target (footnote
  5), a dummy otherwise;
* local flooding: ``d`` dummies to distinct targets other than the first one;
* send order: every node's messages of one route get a uniformly random order label, so
  Definition 1's edge labels do not reveal the real message;
* scramblers: sources send to scrambler ``⌊i/n⌋`` (independent of the data), which adds
  ``d`` dummies (uniform over T, or capped at ``n`` per target) and shuffles.

A ``stream`` route sends one message per row of its (single) sender's state, in row order:
the messages carry row indices of that state, so a receiver of a shuffler's stream sees the
permuted rows and nothing of the shuffler's own inbox.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng
from crowdhide.engine.backend import Backend, LocalBackend
from crowdhide.engine.messages import Delivery, Inbox, MessageBatch, Transcript
from crowdhide.plans.model import ExecutionPlan, NodeGroup, Route, State

__all__ = ["Execution", "RouteStats", "execute"]

IntArray = npt.NDArray[np.int64]
ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True)
class RouteStats:
    """Message counts of one route.

    Attributes
    ----------
    messages
        Messages on the wire (both hops of a scrambled route).
    real_delivered
        Real messages that reached the receiver group.
    dummies
        Dummy messages (sampled-away, flooding and scrambler dummies).
    senders
        Sending nodes.
    """

    messages: int
    real_delivered: int
    dummies: int
    senders: int


@dataclass(frozen=True)
class Execution:
    """Result of :func:`execute`.

    Attributes
    ----------
    states
        Final state of every group.
    transcript
        The observer's transcript.
    routes
        :class:`RouteStats` by route name.
    used
        By data route: boolean mask over sender nodes whose real message was delivered
        (the tuples the result used).
    """

    states: Mapping[str, State] = field(repr=False)
    transcript: Transcript = field(repr=False)
    routes: Mapping[str, RouteStats]
    used: Mapping[str, npt.NDArray[np.bool_]] = field(repr=False)


def execute(
    plan: ExecutionPlan,
    *,
    rng: np.random.Generator | int | None = None,
    backend: Backend | None = None,
    progress: ProgressCallback | None = None,
) -> Execution:
    """Run ``plan`` round by round on ``backend`` (default :class:`LocalBackend`).

    Parameters
    ----------
    plan
        A validated plan (possibly transformed by :func:`crowdhide.plans.protect`).
    rng
        Randomness of sampling, dummies, shuffles and send orders.
    backend
        Transport; records the transcript.
    progress
        ``progress(done, total, group)`` called after each group.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.plans import PlanBuilder, protect
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.arange(100) % 4})
    >>> _ = b.compute("C", size=4, process=lambda inbox, rng: {
    ...     "count": np.bincount(inbox.only("S->C").target, minlength=4)})
    >>> _ = b.route("S", "C", by=lambda s: s["g"])
    >>> run = execute(b.build(), rng=0)
    >>> run.states["C"]["count"].tolist(), len(run.transcript)
    ([25, 25, 25, 25], 100)
    >>> safe = execute(protect(b.build(), sigma=0.5, per_scrambler=10, dummies=5), rng=0)
    >>> int(safe.states["C"]["count"].sum()) == safe.routes["S->C"].real_delivered
    True
    >>> len(safe.transcript) == 100 + 100 + 10 * 5
    True
    """
    generator = as_rng(rng)
    transport: Backend = backend if backend is not None else LocalBackend()
    offsets = plan.node_offsets()
    transport.open({g.name: (offsets[g.name], g.size) for g in plan.groups})
    levels = plan.levels()
    states: dict[str, State] = {}
    stats: dict[str, dict[str, int]] = {}
    used: dict[str, npt.NDArray[np.bool_]] = {}
    order = plan.topological_groups()
    scrambled_by = {
        r.protection.scrambler.group: r
        for r in plan.routes
        if r.protection is not None and r.protection.scrambler is not None
    }
    for done, group in enumerate(order, start=1):
        batches = transport.receive(group.name)
        if group.role == "scrambler":
            route = scrambled_by[group.name]
            _scramble(route, plan, group, batches, levels[group.name], generator, transport, stats)
            states[group.name] = {}
        else:
            inbox = _inbox(batches, states, stats, used, plan)
            states[group.name] = _run_group(group, inbox, generator)
            base = 0
            for route in plan.routes_from(group.name):
                base += _emit(
                    route,
                    plan,
                    states[group.name],
                    levels[group.name],
                    base,
                    generator,
                    transport,
                    stats,
                )
        if progress is not None:
            progress(done, len(order), group.name)
    route_stats = {
        name: RouteStats(
            messages=s["messages"],
            real_delivered=s.get("real_delivered", 0),
            dummies=s["dummies"],
            senders=s["senders"],
        )
        for name, s in stats.items()
    }
    return Execution(
        states=states, transcript=transport.transcript(), routes=route_stats, used=used
    )


def _run_group(group: NodeGroup, inbox: Inbox, rng: np.random.Generator) -> State:
    if group.role == "source":
        data = dict(group.data or {})
        if group.process is not None:
            data.update(group.process(inbox, rng))
        return data
    assert group.process is not None  # validated by ExecutionPlan
    state = group.process(inbox, rng)
    if not isinstance(state, Mapping):
        raise TypeError(
            f"groups[{group.name}].process must return a mapping of arrays, "
            f"got {type(state).__name__}"
        )
    return state


def _inbox(
    batches: list[MessageBatch],
    states: Mapping[str, State],
    stats: dict[str, dict[str, int]],
    used: dict[str, npt.NDArray[np.bool_]],
    plan: ExecutionPlan,
) -> Inbox:
    deliveries = []
    for batch in batches:
        real = batch.real  # the target decrypts and discards dummies here
        target = batch.dst[real]
        payload = batch.payload[real]
        deliveries.append(
            Delivery(
                route=batch.route, target=target, payload=payload, sender_state=states[batch.origin]
            )
        )
        stats[batch.route]["real_delivered"] = stats[batch.route].get("real_delivered", 0) + len(
            target
        )
        if plan.route(batch.route).kind == "data":
            mask = used.setdefault(batch.route, np.zeros(plan.group(batch.origin).size, dtype=bool))
            mask[payload] = True
    return Inbox(tuple(deliveries))


def _targets(route: Route, state: State, senders: int, receivers: int) -> IntArray:
    assert route.by is not None
    raw = np.asarray(route.by(state))
    if raw.shape != (senders,):
        raise ValueError(
            f"routes[{route.name}].by must return one target per sender ({senders},), "
            f"got shape {raw.shape}"
        )
    if not np.issubdtype(raw.dtype, np.integer):
        raise TypeError(
            f"routes[{route.name}].by must return integer targets, got dtype {raw.dtype}"
        )
    if senders and (raw.min() < 0 or raw.max() >= receivers):
        raise ValueError(
            f"routes[{route.name}].by must return targets in [0, {receivers}), "
            f"got range [{raw.min()}, {raw.max()}]"
        )
    return raw.astype(np.int64)


def _stream_rows(route: Route, state: State) -> int:
    """Number of messages of a stream route: the common length of the sender's columns."""
    lengths = {name: len(np.asarray(column)) for name, column in state.items()}
    if not lengths or len(set(lengths.values())) != 1:
        raise ValueError(
            f"routes[{route.name}] is a stream: the state of {route.sender!r} must be "
            f"non-empty columns of equal length (one row per message), got lengths {lengths}"
        )
    return next(iter(lengths.values()))


def _emit(
    route: Route,
    plan: ExecutionPlan,
    state: State,
    level: int,
    base: int,
    rng: np.random.Generator,
    transport: Backend,
    stats: dict[str, dict[str, int]],
) -> int:
    """Send one route's messages; return the number of messages per sender node."""
    senders = plan.group(route.sender).size
    receivers = plan.group(route.receiver).size
    index = np.arange(senders, dtype=np.int64)
    record = stats.setdefault(route.name, {"messages": 0, "dummies": 0, "senders": senders})

    def send(dst: IntArray, src: IntArray, payload: IntArray, order: IntArray, **kw: Any) -> None:
        receiver = kw.pop("receiver", route.receiver)
        forward = kw.pop("forward", None)
        batch = MessageBatch(
            route=route.name,
            round=level,
            sender=route.sender,
            receiver=receiver,
            src=src,
            dst=dst,
            order=order,
            size=route.message_size,
            origin=route.sender,
            payload=payload,
            forward=forward,
        )
        transport.send(batch)
        record["messages"] += len(batch)

    if route.kind == "fixed":
        send(index * receivers // senders, index, index, np.full(senders, base, dtype=np.int64))
        return 1
    if route.kind == "fanout":
        recv = np.arange(receivers, dtype=np.int64)
        src = recv * senders // receivers
        within = recv - np.searchsorted(src, src)  # rank among the sender's messages
        send(recv, src, src, base + within)
        return -(-receivers // senders)
    if route.kind == "stream":
        rows = _stream_rows(route, state)
        position = np.arange(rows, dtype=np.int64)
        send(
            position * receivers // max(rows, 1),
            np.zeros(rows, dtype=np.int64),
            position,
            base + position,
        )
        return rows
    if route.kind == "broadcast":
        dst = np.tile(np.arange(receivers, dtype=np.int64), senders)
        send(dst, np.repeat(index, receivers), np.repeat(index, receivers), base + dst)
        return receivers
    true_target = _targets(route, state, senders, receivers)
    protection = route.protection
    if protection is None or protection.sigma == 0.0:
        final = true_target
    else:
        sampled = rng.random(senders) < protection.sigma
        drawn = rng.integers(0, receivers, size=senders)
        final = np.where(sampled, drawn, true_target)
    payload = np.where(final == true_target, index, -1)
    record["dummies"] += int(np.count_nonzero(payload < 0))
    layer = protection.scrambler if protection is not None else None
    if layer is not None:
        scrambler = index // min(layer.per_scrambler, senders)
        send(
            scrambler,
            index,
            payload,
            np.full(senders, base, dtype=np.int64),
            receiver=layer.group,
            forward=final,
        )
        return 1
    flood = protection.local_dummies if protection is not None else 0
    if flood == 0:
        send(final, index, payload, np.full(senders, base, dtype=np.int64))
        return 1
    # d distinct dummy targets other than the first message's target, via random keys.
    keys = rng.random((senders, receivers), dtype=np.float32)
    keys[index, final] = 2.0
    extra = np.argpartition(keys, flood - 1, axis=1)[:, :flood]
    dst = np.concatenate([final[:, None], extra], axis=1).ravel()
    src = np.repeat(index, flood + 1)
    pay = np.concatenate(
        [payload[:, None], np.full((senders, flood), -1, dtype=np.int64)], axis=1
    ).ravel()
    labels = np.argsort(rng.random((senders, flood + 1)), axis=1).ravel()
    record["dummies"] += senders * flood
    send(dst.astype(np.int64), src, pay, base + labels.astype(np.int64))
    return flood + 1


def _scramble(
    route: Route,
    plan: ExecutionPlan,
    group: NodeGroup,
    batches: list[MessageBatch],
    level: int,
    rng: np.random.Generator,
    transport: Backend,
    stats: dict[str, dict[str, int]],
) -> None:
    """Algorithm 1 for every scrambler of ``group`` at once, then the shuffled forward hop."""
    assert route.protection is not None
    assert route.protection.scrambler is not None
    layer = route.protection.scrambler
    targets = plan.group(route.receiver).size
    count = group.size
    src = np.concatenate([b.src for b in batches]) if batches else np.zeros(0, dtype=np.int64)
    scr = np.concatenate([b.dst for b in batches]) if batches else np.zeros(0, dtype=np.int64)
    fwd = np.concatenate([b.forward for b in batches if b.forward is not None]) if batches else src
    payload = np.concatenate([b.payload for b in batches]) if batches else src
    del src
    d = layer.dummies
    if layer.cap:
        inputs = np.bincount(scr, minlength=count)
        counts = np.zeros((count, targets), dtype=np.int64)
        np.add.at(counts, (scr, fwd), 1)
        placed = np.empty((count, d), dtype=np.int64)
        for j in range(d):
            allowed = counts < inputs[:, None]
            if not allowed.any(axis=1).all():
                raise ValueError(
                    f"capped scrambler cannot place dummy {j + 1}: n + d > n*T "
                    f"(n={layer.per_scrambler}, d={d}, T={targets})"
                )
            keys = np.where(allowed, rng.random((count, targets)), -1.0)
            choice = np.argmax(keys, axis=1)
            counts[np.arange(count), choice] += 1
            placed[:, j] = choice
        dummy_dst: IntArray = placed.ravel()
    else:
        dummy_dst = rng.integers(0, targets, size=count * d)
    out_src = np.concatenate([scr, np.repeat(np.arange(count, dtype=np.int64), d)])
    out_dst = np.concatenate([fwd, dummy_dst])
    out_pay = np.concatenate([payload, np.full(count * d, -1, dtype=np.int64)])
    # Shuffle: a uniformly random order within each scrambler.
    # (scrambler index + uniform key) sorts by scrambler, then uniformly within each one.
    perm = np.argsort(out_src + rng.random(out_src.shape[0]))
    out_src, out_dst, out_pay = out_src[perm], out_dst[perm], out_pay[perm]
    starts = np.searchsorted(out_src, np.arange(count))
    order = np.arange(out_src.shape[0]) - starts[out_src]
    record = stats[route.name]
    record["dummies"] += count * d
    batch = MessageBatch(
        route=route.name,
        round=level,
        sender=group.name,
        receiver=route.receiver,
        src=out_src,
        dst=out_dst,
        order=order,
        size=route.message_size,
        origin=route.sender,
        payload=out_pay,
    )
    transport.send(batch)
    record["messages"] += len(batch)
