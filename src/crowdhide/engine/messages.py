"""The node-program contract: blocks, messages, inboxes, and the observer's transcript.

Nodes of a group are cut into *blocks* of consecutive node ids (:class:`Block`, fixed size
per run, independent of how many shards or hosts execute them). A group's program runs on
one block at a time, where the block lives, and sees only:

* the block's own state (:class:`BlockState`: for sources, their tuples; read-only,
  guarded against reads outside the block);
* the block's inbox (:class:`Inbox`): the *real* messages addressed to its nodes, each
  carrying the columns declared on its route (:class:`Delivery`) — never another group's
  state;
* a counter-based generator keyed by ``(seed, round, group, block)``
  (:func:`crowdhide.engine.program.block_rng`).

A :class:`MessageBatch` is the unit a transport moves: the messages one sender block emits on
one route, or the part of them addressed to one receiver block. It is a struct of arrays —
ids, send-order labels, a row reference per message (``-1`` = dummy) and the payload table
of declared columns — convertible to and from a flat ``{name: ndarray}`` mapping
(:meth:`MessageBatch.to_arrays`, :meth:`MessageBatch.from_arrays`) for framing. The
observer's :class:`Transcript` records only ``(round, source, target, size, order)``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ORIGIN",
    "Block",
    "BlockState",
    "Delivery",
    "Inbox",
    "MessageBatch",
    "OutOfBlockError",
    "Transcript",
]

IntArray = npt.NDArray[np.integer[Any]]
#: Node ids, send orders and row references of a batch: int32 (half the memory and bytes on
#: a transport; a plan has fewer than 2**31 nodes, checked by the executor).
IdArray = npt.NDArray[np.integer[Any]]
ID_DTYPE = np.int32
#: Reserved payload column of data routes: the source node whose tuple a message carries.
#: Simulation bookkeeping (which tuples the result used); programs must not route on it.
ORIGIN = "@origin"
#: Reserved state column: the node (index in its group) owning each row of a program's state.
NODE = "@node"


class OutOfBlockError(IndexError):
    """A node program read state of a node outside its block.

    See Also
    --------
    BlockState : Raises it.
    """


@dataclass(frozen=True)
class Block:
    """Nodes ``start .. stop-1`` (indices within ``group``) executed together.

    Parameters
    ----------
    group
        The node group.
    index
        The block's index within the group.
    start, stop
        The first node and one past the last.

    See Also
    --------
    BlockState : The state of a block's nodes.

    Examples
    --------
    >>> [(b.index, b.start, b.stop) for b in Block.cut("S", size=10, block_size=4)]
    [(0, 0, 4), (1, 4, 8), (2, 8, 10)]
    """

    group: str
    index: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        """Number of nodes in the block."""
        return self.stop - self.start

    @staticmethod
    def cut(group: str, *, size: int, block_size: int) -> tuple[Block, ...]:
        """The blocks of a group of ``size`` nodes."""
        count = -(-size // block_size)
        return tuple(
            Block(group, i, i * block_size, min(size, (i + 1) * block_size)) for i in range(count)
        )


class BlockState(Mapping[str, npt.NDArray[Any]]):
    """Read-only columns of one block's nodes (row ``i`` = node ``block.start + i``).

    Indexing a column gives the block's rows only; :meth:`at` reads by node index within the
    group and raises :class:`OutOfBlockError` for a node of another block.

    Parameters
    ----------
    columns
        The block's rows of each column.
    block
        The block they belong to.

    See Also
    --------
    Inbox : Holds it for a program.
    OutOfBlockError : Raised when reading outside the block.

    Examples
    --------
    >>> import numpy as np
    >>> s = BlockState({"x": np.arange(10)[4:8]}, Block("S", 1, 4, 8))
    >>> s["x"].tolist(), s.at("x", np.array([5, 7])).tolist()
    ([4, 5, 6, 7], [5, 7])
    >>> try:
    ...     s.at("x", np.array([8]))
    ... except OutOfBlockError as error:
    ...     print(error)
    group 'S': block 1 holds nodes [4, 8), a program read node(s) [8]
    """

    def __init__(self, columns: Mapping[str, npt.NDArray[Any]], block: Block) -> None:
        self.block = block
        self._columns: dict[str, npt.NDArray[Any]] = {}
        for name, values in columns.items():
            view = np.asarray(values).view()
            view.flags.writeable = False
            self._columns[name] = view

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def at(self, name: str, nodes: npt.ArrayLike) -> npt.NDArray[Any]:
        """Values of ``name`` at ``nodes`` (indices within the group, inside the block)."""
        index = np.asarray(nodes, dtype=np.int64)
        outside = (index < self.block.start) | (index >= self.block.stop)
        if outside.any():
            raise OutOfBlockError(
                f"group {self.block.group!r}: block {self.block.index} holds nodes "
                f"[{self.block.start}, {self.block.stop}), a program read node(s) "
                f"{np.unique(index[outside])[:5].tolist()}"
            )
        return self._columns[name][index - self.block.start]


def _empty() -> IntArray:
    return np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class MessageBatch:
    """Messages of one route hop from one sender block (one entry per message).

    Parameters
    ----------
    route
        Route name.
    round
        Superstep in which the messages are sent.
    sender, receiver
        Sending and receiving group names.
    block
        Index of the sender block (receivers order their inbox by it, so the result does not
        depend on which shard or host sent first).
    src, dst
        Node index of sender and receiver within their groups.
    order
        Send-order label of the message at its sender (Definition 1's edge label).
    size
        Bytes on the wire, identical for every message of the batch (real or dummy).
    payload
        First row of ``columns`` carried (encrypted) by the message; ``-1`` = dummy.
    columns
        The payload table: the route's declared columns (plus :data:`ORIGIN` on data routes).
    rows
        Rows carried by each message (``None``: exactly one; e.g. a compute node sending its
        whole partial aggregate carries several).
    forward
        Scrambled routes, first hop: the final target chosen by the source (encrypted for
        the scrambler); ``None`` otherwise.

    See Also
    --------
    Transcript : What the observer sees of the batches.
    """

    route: str
    round: int
    sender: str
    receiver: str
    block: int
    src: IdArray
    dst: IdArray
    order: IdArray
    size: int
    payload: IdArray
    columns: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict, repr=False)
    rows: IdArray | None = None
    forward: IdArray | None = None

    def __post_init__(self) -> None:
        for name in ("src", "dst", "order", "payload", "rows", "forward"):
            value = getattr(self, name)
            if value is not None and value.dtype != ID_DTYPE:
                object.__setattr__(self, name, np.asarray(value).astype(ID_DTYPE))

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def real(self) -> npt.NDArray[np.bool_]:
        """Mask of real (non-dummy) messages; only the receiver can compute it."""
        return self.payload >= 0

    def select(self, mask: npt.NDArray[np.bool_]) -> MessageBatch:
        """The messages of ``mask``; single-row payload tables are compacted to them."""
        # Positions, then take(): much faster than boolean indexing on scattered masks.
        picked = np.flatnonzero(mask)
        payload = self.payload.take(picked)
        columns = self.columns
        rows = None if self.rows is None else self.rows.take(picked)
        if self.rows is None:
            # Keep only the rows this part references (each once: a broadcast shares them).
            real = np.flatnonzero(payload >= 0)
            refs = payload.take(real)
            compact_refs: IntArray
            if refs.size < 2 or bool((np.diff(refs) > 0).all()):
                keep, compact_refs = refs, np.arange(refs.size, dtype=ID_DTYPE)
            else:
                keep, compact_refs = np.unique(refs, return_inverse=True)
            columns = {k: np.asarray(v)[keep] for k, v in self.columns.items()}
            compact = np.full(payload.shape[0], -1, dtype=ID_DTYPE)
            compact[real] = compact_refs
            payload = compact
        return MessageBatch(
            route=self.route,
            round=self.round,
            sender=self.sender,
            receiver=self.receiver,
            block=self.block,
            src=self.src.take(picked),
            dst=self.dst.take(picked),
            order=self.order.take(picked),
            size=self.size,
            payload=payload,
            columns=columns,
            rows=rows,
            forward=None if self.forward is None else self.forward.take(picked),
        )

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Flat ``{name: array}`` form (for frames or ``.npz``); inverse of :meth:`from_arrays`."""
        out: dict[str, npt.NDArray[Any]] = {
            "meta.route": np.asarray(self.route),
            "meta.sender": np.asarray(self.sender),
            "meta.receiver": np.asarray(self.receiver),
            "meta.ints": np.asarray([self.round, self.block, self.size], dtype=np.int64),
            "src": self.src,
            "dst": self.dst,
            "order": self.order,
            "payload": self.payload,
        }
        if self.rows is not None:
            out["rows"] = self.rows
        if self.forward is not None:
            out["forward"] = self.forward
        for name, values in self.columns.items():
            out[f"col.{name}"] = np.asarray(values)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> MessageBatch:
        """Rebuild a batch from :meth:`to_arrays`.

        Examples
        --------
        >>> import numpy as np
        >>> one = np.array([0, 1])
        >>> b = MessageBatch("r", 0, "S", "C", 0, one, one, one, 64, one, {"x": one * 5})
        >>> c = MessageBatch.from_arrays(b.to_arrays())
        >>> c.route, c.columns["x"].tolist(), c.rows is None
        ('r', [0, 5], True)
        """
        ints = np.asarray(arrays["meta.ints"])
        return cls(
            route=str(arrays["meta.route"]),
            round=int(ints[0]),
            sender=str(arrays["meta.sender"]),
            receiver=str(arrays["meta.receiver"]),
            block=int(ints[1]),
            src=np.asarray(arrays["src"]),
            dst=np.asarray(arrays["dst"]),
            order=np.asarray(arrays["order"]),
            size=int(ints[2]),
            payload=np.asarray(arrays["payload"]),
            columns={k[4:]: np.asarray(v) for k, v in arrays.items() if k.startswith("col.")},
            rows=None if "rows" not in arrays else np.asarray(arrays["rows"]),
            forward=None if "forward" not in arrays else np.asarray(arrays["forward"]),
        )


@dataclass(frozen=True)
class Delivery:
    """Real messages of one route received by a block (dummies already discarded).

    Parameters
    ----------
    route
        Route name.
    source
        Sending node of each message (index within the sender group).
    target
        Receiving node of each message (index within the receiving group, inside the block).
    first
        First row of ``columns`` carried by each message.
    columns
        The payload table (the route's declared columns).
    count
        Rows carried by each message (``None``: one each).

    See Also
    --------
    Inbox : What a program receives, one delivery per route.
    """

    route: str
    source: IntArray
    target: IntArray
    first: IntArray
    columns: Mapping[str, npt.NDArray[Any]] = field(repr=False)
    count: IntArray | None = None

    def gather(self, column: str) -> npt.NDArray[Any]:
        """Values of ``column`` carried by the messages, in message order.

        A message carrying k rows contributes k values (see :meth:`row_index`).
        """
        if column not in self.columns:
            if len(self) == 0:  # nothing arrived (see Inbox.only): no table names the columns
                return np.empty(0)
            raise KeyError(
                f"route {self.route!r} carries no column {column!r} "
                f"(available: {sorted(self.columns)})"
            )
        return np.asarray(self.columns[column])[self._rows]

    @functools.cached_property
    def _rows(self) -> IntArray:
        """:meth:`row_index` as ``intp``, once: indexing with another integer type converts
        the index on every call, and programs gather several columns."""
        return np.asarray(self.row_index(), dtype=np.intp)

    def row_index(self) -> IntArray:
        """Payload row of every carried value, message by message."""
        if self.count is None:
            return self.first
        total = int(self.count.sum())
        starts = np.repeat(self.first - np.cumsum(self.count) + self.count, self.count)
        return starts + np.arange(total, dtype=np.int64)

    def per_row(self, ids: IntArray) -> IntArray:
        """Repeat a per-message array (``source`` or ``target``) once per carried row."""
        return ids if self.count is None else np.repeat(ids, self.count)

    @property
    def origin(self) -> IntArray:
        """Data routes: the source node whose tuple each message carries (bookkeeping)."""
        return np.asarray(self.gather(ORIGIN), dtype=np.int64)

    @property
    def payload(self) -> IntArray:
        """Alias of :attr:`origin` (row of the data group's tuples)."""
        return self.origin

    def __len__(self) -> int:
        return int(self.target.shape[0])


@dataclass(frozen=True)
class Inbox:
    """What a program sees: its block, the block's own state and the real messages to it.

    Parameters
    ----------
    deliveries
        The real messages, one :class:`Delivery` per route.
    block
        The block the program runs on.
    state
        The block's own state (iterative groups), else ``None``.
    expected
        The routes into the block's group: one that delivered nothing to this block (no
        message addressed to it, or every one lost) reads as an empty delivery.

    See Also
    --------
    Delivery : The messages of one route.
    crowdhide.engine.plan.PlanBuilder : Where the programs that read it are declared.
    """

    deliveries: tuple[Delivery, ...] = ()
    block: Block | None = None
    state: BlockState | None = field(default=None, repr=False)
    expected: tuple[str, ...] = ()

    def only(self, route: str) -> Delivery:
        """The delivery of ``route`` (empty if nothing arrived; a route that does not lead
        to this group is a ``KeyError``)."""
        for delivery in self.deliveries:
            if delivery.route == route:
                return delivery
        if route in self.expected:
            # A block no message reached (a key range nobody chose, or a lost link: the
            # backend reports the loss) still runs, on nothing.
            return Delivery(route, _empty(), _empty(), _empty(), columns={})
        raise KeyError(
            f"no delivery from route {route!r} (got {[d.route for d in self.deliveries]}, "
            f"routes into this group: {list(self.expected)})"
        )

    def __iter__(self) -> Iterator[Delivery]:
        return iter(self.deliveries)

    def __len__(self) -> int:
        return len(self.deliveries)


def merge_deliveries(route: str, batches: Sequence[MessageBatch]) -> Delivery:
    """The :class:`Delivery` of ``route`` from the (canonically ordered) batches to a block."""
    sources, targets, firsts, counts = [], [], [], []
    tables: dict[str, list[npt.NDArray[Any]]] = {}
    multi = any(b.rows is not None for b in batches)
    offset = 0
    for batch in batches:
        # Positions of the real messages, then take(): much faster than a boolean mask
        # (dummies are scattered, so a mask's branches mispredict).
        real = np.flatnonzero(batch.real)
        if real.size == len(batch):  # no dummies (an unprotected route): no copies
            sources.append(batch.src)
            targets.append(batch.dst)
            first = batch.payload
        else:
            sources.append(batch.src.take(real))
            targets.append(batch.dst.take(real))
            first = batch.payload.take(real)
        firsts.append(first + offset if offset else first)
        if multi:
            counts.append(
                np.ones(real.size, dtype=np.int64) if batch.rows is None else batch.rows.take(real)
            )
        length = 0
        for name, values in batch.columns.items():
            tables.setdefault(name, []).append(np.asarray(values))
            length = len(values)
        offset += length

    def cat(parts: list[IntArray]) -> IntArray:
        return np.concatenate(parts) if parts else _empty()

    return Delivery(
        route=route,
        source=cat(sources),
        target=cat(targets),
        first=cat(firsts),
        columns={k: v[0] if len(v) == 1 else np.concatenate(v) for k, v in tables.items()},
        count=cat(counts) if multi else None,
    )


@dataclass(frozen=True)
class Transcript:
    """What the network observer sees: one row per message, no contents.

    Parameters
    ----------
    round, source, target, size, order
        Equal-length integer arrays. Node ids are global (see ``groups``).
    groups
        ``{group name: (first id, size)}``.

    See Also
    --------
    crowdhide.engine.execute : Returns it in the execution.
    crowdhide.audit.transcript_link_counts : Its messages per host pair.
    """

    round: npt.NDArray[np.int16]
    source: npt.NDArray[np.int32]
    target: npt.NDArray[np.int32]
    size: npt.NDArray[np.int32]
    order: npt.NDArray[np.int32]
    groups: Mapping[str, tuple[int, int]]

    def __len__(self) -> int:
        return int(self.round.shape[0])

    @property
    def bytes_on_wire(self) -> int:
        """Total bytes sent."""
        return int(self.size.sum(dtype=np.int64))

    def group_of(self, node_ids: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.str_]:
        """Group name of each global node id."""
        names = sorted(self.groups, key=lambda g: self.groups[g][0])
        starts = np.array([self.groups[g][0] for g in names])
        return np.asarray(names)[np.searchsorted(starts, node_ids, side="right") - 1]

    def between(self, sender: str, receiver: str) -> tuple[IntArray, IntArray]:
        """Local (source, target) indices of the messages from ``sender`` to ``receiver``."""
        s0, sn = self.groups[sender]
        r0, rn = self.groups[receiver]
        mask = (self.source >= s0) & (self.source < s0 + sn)
        mask &= (self.target >= r0) & (self.target < r0 + rn)
        return (
            self.source[mask].astype(np.int64) - s0,
            self.target[mask].astype(np.int64) - r0,
        )

    def save(self, path: Path) -> Path:
        """Write ``.npz`` (always) and return its path; ``.csv`` too when it ends so."""
        path = Path(path)
        if path.suffix == ".csv":
            header = "round,source,target,size,order"
            table = np.column_stack([self.round, self.source, self.target, self.size, self.order])
            np.savetxt(path, table, fmt="%d", delimiter=",", header=header, comments="")
            return path
        np.savez(
            path,
            round=self.round,
            source=self.source,
            target=self.target,
            size=self.size,
            order=self.order,
            group_names=np.asarray(list(self.groups)),
            group_first=np.asarray([v[0] for v in self.groups.values()]),
            group_size=np.asarray([v[1] for v in self.groups.values()]),
        )
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path: Path) -> Transcript:
        """Read a transcript written by :meth:`save` (``.npz``)."""
        with np.load(path) as data:
            groups = {
                str(n): (int(f), int(s))
                for n, f, s in zip(
                    data["group_names"], data["group_first"], data["group_size"], strict=True
                )
            }
            return cls(
                round=data["round"],
                source=data["source"],
                target=data["target"],
                size=data["size"],
                order=data["order"],
                groups=groups,
            )
