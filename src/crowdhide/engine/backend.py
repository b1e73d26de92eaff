"""The backend contract and the embedded local backend.

A backend is the transport between node groups. The executor
(:func:`crowdhide.engine.execute`) computes every group's messages as numpy arrays and asks
the backend to move them; the backend records what a network observer sees. The contract
is four methods, so a sharded Ray backend (one actor per core owning blocks of node ids)
or a real-network backend (TLS, fixed-size frames) can be added without touching plans:

* ``open(groups)`` — the node-id layout ``{group: (first id, size)}``;
* ``send(batch)`` — ship one :class:`~crowdhide.engine.messages.MessageBatch`;
* ``receive(group)`` — every batch addressed to ``group`` since the last call;
* ``transcript()`` — the observer's view so far.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from crowdhide.engine.messages import MessageBatch, Transcript

__all__ = ["Backend", "LocalBackend"]


@runtime_checkable
class Backend(Protocol):
    """Transport between node groups (see the module docstring)."""

    name: str

    def open(self, groups: Mapping[str, tuple[int, int]]) -> None:
        """Start a run with the given node-id layout."""

    def send(self, batch: MessageBatch) -> None:
        """Ship ``batch``."""

    def receive(self, group: str) -> list[MessageBatch]:
        """Batches delivered to ``group`` (each returned once)."""

    def transcript(self) -> Transcript:
        """The observer's transcript of everything sent since :meth:`open`."""


class LocalBackend:
    """In-process backend: batches stay numpy arrays; the transcript is kept compactly.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.messages import MessageBatch
    >>> b = LocalBackend()
    >>> b.open({"S": (0, 2), "C": (2, 3)})
    >>> one = np.array([0, 1])
    >>> b.send(MessageBatch("r", 0, "S", "C", one, np.array([2, 0]), 0 * one, 64, "S", one))
    >>> [len(x) for x in b.receive("C")], b.transcript().target.tolist()
    ([2], [4, 2])
    """

    name = "local"

    def __init__(self) -> None:
        self._groups: dict[str, tuple[int, int]] = {}
        self._mail: dict[str, list[MessageBatch]] = defaultdict(list)
        self._parts: list[tuple[npt.NDArray[np.generic], ...]] = []

    def open(self, groups: Mapping[str, tuple[int, int]]) -> None:
        self._groups = dict(groups)
        self._mail.clear()
        self._parts.clear()

    def send(self, batch: MessageBatch) -> None:
        if batch.receiver not in self._groups or batch.sender not in self._groups:
            raise ValueError(f"batch of route {batch.route!r} names an unknown group")
        first_s, size_s = self._groups[batch.sender]
        first_r, size_r = self._groups[batch.receiver]
        if len(batch) and (
            batch.dst.min() < 0 or batch.dst.max() >= size_r or batch.src.max() >= size_s
        ):
            raise ValueError(f"batch of route {batch.route!r} addresses a node outside its group")
        count = len(batch)
        self._parts.append(
            (
                np.full(count, batch.round, dtype=np.int16),
                (batch.src + first_s).astype(np.int32),
                (batch.dst + first_r).astype(np.int32),
                np.full(count, batch.size, dtype=np.int32),
                batch.order.astype(np.int32),
            )
        )
        self._mail[batch.receiver].append(batch)

    def receive(self, group: str) -> list[MessageBatch]:
        return self._mail.pop(group, [])

    def transcript(self) -> Transcript:
        if self._parts:
            columns = [np.concatenate(c) for c in zip(*self._parts, strict=True)]
            self._parts = [tuple(columns)]
        else:
            columns = [
                np.zeros(0, dtype=t) for t in (np.int16, np.int32, np.int32, np.int32, np.int32)
            ]
        return Transcript(
            round=columns[0],
            source=columns[1],
            target=columns[2],
            size=columns[3],
            order=columns[4],
            groups=dict(self._groups),
        )
