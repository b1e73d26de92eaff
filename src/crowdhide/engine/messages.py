"""Messages as numpy arrays, inboxes of compute nodes, and the observer's transcript.

A :class:`MessageBatch` is a struct of arrays: every message of one route (or one hop of a
scrambled route) in one superstep. The payload of a message is a row index into the
state of the group that produced it (``-1`` for a dummy); it travels encrypted, so the
observer's :class:`Transcript` records only ``(round, source, target, size, order)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Delivery", "Inbox", "MessageBatch", "Transcript"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class MessageBatch:
    """Messages of one route hop in one superstep (one entry per message).

    Attributes
    ----------
    route
        Route name.
    round
        Superstep in which the messages are sent.
    sender, receiver
        Sending and receiving group names.
    src, dst
        Node index of sender and receiver within their groups.
    order
        Send-order label of the message at its sender (Definition 1's edge label).
    size
        Bytes on the wire, identical for every message of the batch (real or dummy).
    origin
        Group whose state ``payload`` indexes.
    payload
        Row of ``origin``'s state carried (encrypted) by the message; ``-1`` = dummy.
    forward
        Scrambled routes, first hop: the final target chosen by the source (encrypted for
        the scrambler); ``None`` otherwise.
    """

    route: str
    round: int
    sender: str
    receiver: str
    src: IntArray
    dst: IntArray
    order: IntArray
    size: int
    origin: str
    payload: IntArray
    forward: IntArray | None = None

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def real(self) -> npt.NDArray[np.bool_]:
        """Mask of real (non-dummy) messages; only the receiver can compute it."""
        return self.payload >= 0


@dataclass(frozen=True)
class Delivery:
    """Real messages of one route received by a group (dummies already discarded).

    Attributes
    ----------
    route
        Route name.
    target
        Receiving node index of each message.
    payload
        Row of ``sender_state`` carried by each message.
    sender_state
        State of the group that produced the payload.
    """

    route: str
    target: IntArray
    payload: IntArray
    sender_state: Mapping[str, npt.NDArray[Any]] = field(repr=False)

    def gather(self, column: str) -> npt.NDArray[Any]:
        """Values of ``column`` carried by the messages (sender rows ``payload``)."""
        if column not in self.sender_state:
            raise KeyError(
                f"route {self.route!r} carries no column {column!r} "
                f"(available: {sorted(self.sender_state)})"
            )
        return np.asarray(self.sender_state[column])[self.payload]

    def __len__(self) -> int:
        return int(self.target.shape[0])


@dataclass(frozen=True)
class Inbox:
    """All real messages received by a group, by route."""

    deliveries: tuple[Delivery, ...] = ()

    def only(self, route: str) -> Delivery:
        """The delivery of ``route`` (empty if nothing arrived)."""
        for delivery in self.deliveries:
            if delivery.route == route:
                return delivery
        raise KeyError(
            f"no delivery from route {route!r} (got {[d.route for d in self.deliveries]})"
        )

    def __iter__(self) -> Iterator[Delivery]:
        return iter(self.deliveries)

    def __len__(self) -> int:
        return len(self.deliveries)


@dataclass(frozen=True)
class Transcript:
    """What the network observer sees: one row per message, no contents.

    Attributes
    ----------
    round, source, target, size, order
        Equal-length integer arrays. Node ids are global (see ``groups``).
    groups
        ``{group name: (first id, size)}``.
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
