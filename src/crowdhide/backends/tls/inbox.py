"""Compact stores of what a node host received: frames kept until their group runs, the
keys that detect a replayed or duplicated frame, and a scrambler's inner bodies.

At 10^6 users one compute host receives millions of frames in a round (every forward of a
scrambled route, two thirds of them dummies). Held as one Python tuple, one ``bytes`` body
and two ``bytes`` keys in a set per frame, that is about 580 bytes a frame (1.6 GB on the
busiest host); here a real message is eight 32-bit integers, an offset and its values
block without its zero padding in one ``bytearray`` (about 70 bytes in the diabetes
plan), a dummy is dropped on arrival once decrypted and parsed (only its keys stay),
and a key is 20 bytes of a ``bytearray``, checked for repeats in bulk when the round
closes (:meth:`Keys.settle`) — before any program sees the frames, since a group runs
only after the round that brought its inputs has closed.
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import DataError

__all__ = ["KEY", "Inbox", "Keys", "Onions", "Part", "inner_key"]

#: Bytes of a key: a message key is its header (12 bytes) and its epoch and index (8).
KEY = 20
#: A key as raw bytes (numpy sorts and compares them bytewise, NULs included).
_KEYS = np.dtype(f"V{KEY}")
#: An inner body's key: this prefix (its first byte is no frame kind) and the body's first
#: 8 bytes (its ephemeral public key's), so it never equals a message key.
_INNER = b"\xff" * (KEY - 8)
#: Offset of the epoch (u32, little endian) in a message key (after the 12-byte header).
_EPOCH = KEY - 8
#: Integers kept per real message (32 bits each): route, mode, sender block, node, index,
#: src, order, forward.
_WIDTH = 8
_MASK = 0xFFFFFFFF
#: The mode of a refused message (a wire mode is one byte).
_REFUSED = _MASK
#: Messages of one route, mode and sender block taken from the inbox: the key, the
#: integers (columns node, index, src, order, forward) and the payload spans.
Part = tuple[tuple[int, int, int], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def inner_key(inner: bytes) -> bytes:
    """The key of an inner body (see :data:`_INNER`)."""
    return _INNER + inner[:8]


class Keys:
    """Keys of the frames accepted so far, and of those accepted since the last
    :meth:`settle`, with the link and the inbox item of each pending frame."""

    def __init__(self) -> None:
        self.history: npt.NDArray[Any] = np.zeros(0, dtype=_KEYS)  # sorted, unique
        self.pending = bytearray()
        self.frame_of = array("q")  # per pending key: its frame's number
        self.peers = array("q")  # per pending frame: the link (sending host)
        self.slots = array("q")  # per pending frame: its inbox item (a dummy: -1 - node)

    def add(self, peer: int, slot: int, *keys: bytes) -> None:
        """Record a frame accepted from ``peer`` (inbox item ``slot``, or ``-1 - node`` for a
        dummy received for ``node``) and its keys."""
        frame = len(self.peers)
        self.peers.append(peer)
        self.slots.append(slot)
        for key in keys:
            self.pending += key
            self.frame_of.append(frame)

    def settle(self, floor: int | None = None) -> list[tuple[int, int]]:
        """``(peer, slot)`` of every pending frame that repeats a key of an earlier frame
        (accepted before, or pending and arrived earlier), in arrival order, as if each
        frame had been checked on arrival: a repeated frame's own keys are not recorded.

        ``floor``: no frame of an epoch below it can be accepted any more (from any link);
        once checked, the message keys of those epochs are dropped from the history (a
        message key holds its epoch, so no later frame's can equal them), keeping the
        inner bodies' keys (which hold none) for the whole run."""
        refused = self._settle()
        if floor is not None and len(self.history):
            cells = self.history.view(np.uint8).reshape(-1, KEY)
            inner = cells[:, 0] == _INNER[0]
            epoch = cells[:, _EPOCH : _EPOCH + 4].copy().view("<u4").reshape(-1)
            self.history = self.history[inner | (epoch >= floor)]
        return refused

    def _settle(self) -> list[tuple[int, int]]:
        if not self.peers:
            return []
        keys = np.frombuffer(self.pending, dtype=_KEYS)
        old = len(self.history)
        every = np.concatenate([self.history, keys])
        every.sort()  # in place (no index array: the usual case needs none)
        refused: list[tuple[int, int]] = []
        if not np.any(every[1:] == every[:-1]):  # the usual case: no key repeats
            self.history = every
        else:  # an insider's repeat: which frames, in arrival order
            every = np.concatenate([self.history, keys])
            order = np.argsort(every, kind="stable")
            ranked = every[order]
            same = ranked[1:] == ranked[:-1]
            twice = np.union1d(order[1:][same], order[:-1][same])
            suspects = twice[twice >= old] - old
            refused, kept = self._sequential(keys, suspects, every[twice[twice < old]])
            self.history = np.unique(np.concatenate([self.history, keys[kept]]))
        self.pending, self.frame_of = bytearray(), array("q")
        self.peers, self.slots = array("q"), array("q")
        return refused

    def _sequential(
        self, keys: npt.NDArray[Any], suspects: npt.NDArray[Any], before: npt.NDArray[Any]
    ) -> tuple[list[tuple[int, int]], npt.NDArray[np.bool_]]:
        """Check the frames holding a repeated key one by one in arrival order."""
        frame_of = np.frombuffer(self.frame_of, dtype=np.int64)
        seen = {bytes(k) for k in before}  # repeated keys accepted in earlier settles
        kept = np.ones(len(keys), dtype=bool)
        refused: list[tuple[int, int]] = []
        frames = np.unique(frame_of[suspects])
        # A frame's keys are consecutive (recorded together): its range by bisection.
        starts = np.searchsorted(frame_of, frames, side="left").tolist()
        stops = np.searchsorted(frame_of, frames, side="right").tolist()
        for frame, start, stop in zip(frames.tolist(), starts, stops, strict=True):
            mine = np.arange(start, stop)
            values = {bytes(k) for k in keys[mine]}
            if values & seen:
                kept[mine] = False
                refused.append((self.peers[frame], self.slots[frame]))
            else:
                seen |= values
        return refused, kept


class Inbox:
    """Real messages accepted for this host's nodes, until their group runs (eight 32-bit
    integers, a 64-bit payload offset and one payload each); dummies are counted per node
    and dropped."""

    def __init__(self) -> None:
        # route, mode, sender block, node, index, src (unsigned on the wire), order and
        # forward (signed: stored as their 32-bit two's complement).
        self.fields = array("I")
        self.offsets = array("q")  # per message: where its payload starts
        self.payloads = bytearray()
        self.dummies: dict[int, int] = defaultdict(int)  # per receiving node
        self.live = 0  # real messages held, repeats refused

    def __len__(self) -> int:
        """Messages held: reals and dummies not yet taken by a run, repeats refused."""
        return self.live + sum(self.dummies.values())

    def add(self, fields: tuple[int, ...], payload: bytes) -> int:
        """Keep a real message (``fields``: route, mode, sender block, node, index, src,
        order, forward; each fits 32 bits, as on the wire); return its slot."""
        slot = len(self.offsets)
        self.fields.extend([v & _MASK for v in fields])
        self.offsets.append(len(self.payloads))
        self.payloads += payload
        self.live += 1
        return slot

    def dummy(self, node: int) -> None:
        """Count a dummy received for ``node`` (dropped: nothing of it is kept)."""
        self.dummies[node] += 1

    def refuse(self, slot: int) -> None:
        """Drop a repeated frame: inbox item ``slot``, or ``-1 - node``: a dummy for ``node``."""
        if slot < 0:
            self.dummies[-1 - slot] -= 1
        else:
            self.fields[slot * _WIDTH + 1] = _REFUSED  # no wire mode: skipped by take
            self.live -= 1

    def take(
        self, first: int, last: int, block_size: int | None = None
    ) -> tuple[bytearray, list[Part]]:
        """Remove the messages for nodes ``first <= node < last``: the payload store they
        point into and one :data:`Part` per ``(route, mode, sender block)``, messages in
        arrival order — or, given ``block_size``, by receiver block (``(node - first) //
        block_size``) then index, the order a receiver block reads them in (sorted here,
        while the table is in memory anyway, rather than copied again per part)."""
        for node in [n for n in self.dummies if first <= n < last]:
            del self.dummies[node]
        data, table = self.payloads, np.frombuffer(self.fields, dtype=np.uint32)
        table = table.reshape(-1, _WIDTH)
        starts = np.frombuffer(self.offsets, dtype=np.int64)
        ends = np.append(starts[1:], len(data))
        nodes = table[:, 3]
        mine = (nodes >= first) & (nodes < last)
        rest = np.flatnonzero(~mine)
        kept = [data[a:b] for a, b in zip(starts[rest].tolist(), ends[rest].tolist(), strict=True)]
        lengths = ends[rest] - starts[rest]
        live = np.flatnonzero(mine & (table[:, 1] != _REFUSED))
        self.live -= len(live)
        # Grouped by (route, mode, sender block), stable: arrival order within a group.
        order = [table[live, 2], table[live, 1], table[live, 0]]
        if block_size is not None:
            order = [table[live, 4], (table[live, 3] - first) // block_size, *order]
        live = live[np.lexsort(order)]
        del order
        keys = table[live, :3].astype(np.int64)
        ints = table[live, 3:8].astype(np.int64)
        ints[:, 3:] = table[live, 6:8].view(np.int32)  # order, forward: signed
        spans = np.stack([starts[live], ends[live]], axis=1)
        self.fields = array("I", table[rest].tobytes())
        self.offsets = array("q", (np.cumsum(lengths) - lengths).tobytes())
        self.payloads = bytearray(b"".join(kept))
        del table, starts, ends, nodes, mine, rest, live
        if not len(ints):
            return data, []
        cut = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
        bounds = [0, *cut.tolist(), len(ints)]
        parts: list[Part] = []
        for a, b in itertools.pairwise(bounds):
            r, mode, block = (int(v) for v in keys[a])
            parts.append(((r, mode, block), ints[a:b], spans[a:b]))
        return data, parts


class Onions:
    """A scrambler host's inner bodies by handle, until forwarded (each once)."""

    def __init__(self) -> None:
        self.bodies: dict[int, bytes] = {}
        self.next = 0

    def put(self, inner: bytes) -> int:
        handle = self.next
        self.bodies[handle] = inner
        self.next += 1
        return handle

    def pop(self, handle: int) -> bytes:
        inner = self.bodies.pop(handle, None)
        if inner is None:
            raise DataError(f"onion {handle} forwarded twice, or never received by this host")
        return inner
