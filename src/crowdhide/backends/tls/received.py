"""Batches rebuilt from a node host's inbox lazily, one receiver block and part at a time.

A compute host at 10^6 users holds about a million real messages when its group runs.
Rebuilt eagerly (a Python tuple, a ``bytes`` body and a records array per message, every
part's batch in memory at once) that cost about 700 bytes a message on top of the inbox.
Here every ``(route, mode, sender block, receiver block)`` becomes a
:class:`~crowdhide.engine.program.Parcel` that decodes its values blocks with array
operations when :func:`~crowdhide.engine.program.step` loads it: a folding block (a compute
group with ``combine``) holds one part's arrays at a time; other blocks load every parcel
first, as before. The batches are those the per-message loop built (same rows, same order:
receiver block, then the index inside the sealed body).

Values blocks are kept in the inbox without their zero padding (:func:`stripped`); the
padding is restored here (:func:`padded`) before parsing, so parsing sees the bytes that
arrived.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.backends.tls import codec
from crowdhide.backends.tls import frames as fr
from crowdhide.engine.messages import MessageBatch
from crowdhide.engine.program import Parcel
from crowdhide.errors import DataError

__all__ = ["padded", "parcels", "stripped"]

#: Bytes of padded values blocks rebuilt at once (bounds the decoder's transient arrays).
_CHUNK_BYTES = 1 << 19


def stripped(values: bytes) -> bytes:
    """A values block without its trailing zero bytes (:func:`padded` restores it exactly:
    every block of a run has the same length)."""
    return values.rstrip(b"\0")


def padded(
    data: bytearray | bytes, spans: npt.NDArray[np.int64], size: int
) -> npt.NDArray[np.uint8]:
    """The blocks ``data[a:b]`` for ``(a, b)`` in ``spans``, each zero-padded to ``size``
    bytes, as one ``(len(spans), size)`` array (``DataError`` if one is longer)."""
    count = len(spans)
    out = np.zeros((count, size), dtype=np.uint8)
    if not count:
        return out
    starts, lengths = spans[:, 0], spans[:, 1] - spans[:, 0]
    if int(lengths.max()) > size:
        raise DataError(f"a kept values block is longer than the run's {size} bytes")
    buf = np.frombuffer(data, dtype=np.uint8)
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths
    row = np.repeat(np.arange(count), lengths)
    within = np.arange(total) - np.repeat(first, lengths)
    out[row, within] = buf[np.repeat(starts, lengths) + within]
    return out


def _records(
    blocks: npt.NDArray[np.uint8], dtype: np.dtype[Any]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    """:func:`codec.decode_values` of every row of ``blocks``: the row counts (``-1``: a
    dummy) and the real messages' records, message after message."""
    rows = blocks[:, :4].copy().view("<i4").reshape(-1).astype(np.int64)
    item = dtype.itemsize
    counts = np.maximum(rows, 0)
    widest = int(counts.max(initial=0))
    if 4 + widest * item > blocks.shape[1]:
        raise DataError(f"values block announces {widest} rows, more than it holds")
    if not item or not widest:
        return rows, np.zeros(int(counts.sum()), dtype=dtype)
    cells = blocks[:, 4 : 4 + widest * item].reshape(len(blocks), widest, item)
    taken = cells[np.arange(widest) < counts[:, None]]  # row-major: message after message
    return rows, np.ascontiguousarray(taken).view(dtype).reshape(-1)


def _decoded(
    data: bytearray | bytes, spans: npt.NDArray[np.int64], size: int, dtype: np.dtype[Any]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    """:func:`_records` of the blocks at ``spans``, rebuilt a bounded chunk at a time."""
    step = max(1, _CHUNK_BYTES // max(size, 1))
    rows, records = [], []
    for at in range(0, len(spans), step):
        r, rec = _records(padded(data, spans[at : at + step], size), dtype)
        rows.append(r)
        records.append(rec)
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=dtype)
    return np.concatenate(rows), codec.concat(records, dtype)


def parcels(host: Any, group: str, data: bytearray, parts: list[Any]) -> dict[int, list[Parcel]]:
    """One parcel per receiver block of each inbox part of ``group`` (see the module
    docstring), by receiver block; ``data`` is the payload store the spans point into.
    ``parts`` (from ``Inbox.take`` with the block size) is consumed."""
    offset, size = host.offsets[group], host.job.block_size
    out: dict[int, list[Parcel]] = {}
    parts.reverse()  # pop() from the end walks the inbox's order
    while parts:
        (r, mode, sender_block), ints, spans = parts.pop()
        route = host.routes[r]
        kind = mode & 0x7F
        sender = host.scrambler_of[route.name] if kind == fr.FORWARD else route.sender
        # Message order of a part (Inbox.take sorted it): by receiver block, then the index
        # inside the sealed body (frames arrive in any order; the index restores the sender's).
        block_of = (ints[:, 0] - offset) // size
        cut = np.flatnonzero(np.diff(block_of)) + 1
        for sub, sub_spans in zip(np.split(ints, cut), np.split(spans, cut), strict=True):
            rb = int((sub[0, 0] - offset) // size)
            load = functools.partial(
                _load, host, group, r, mode, sender_block, data, sub, sub_spans
            )
            out.setdefault(rb, []).append(Parcel(route.name, sender, sender_block, load))
    return out


def _load(
    host: Any,
    group: str,
    r: int,
    mode: int,
    sender_block: int,
    data: bytearray,
    ints: npt.NDArray[np.int64],
    spans: npt.NDArray[np.int64],
) -> MessageBatch:
    """The batch of one parcel: columns node, index, src, order, forward of ``ints``."""
    route = host.routes[r]
    kind = mode & 0x7F
    schema = host.schemas.get(r, ())
    scrambler = host.scrambler_of.get(route.name)
    sender = scrambler if kind == fr.FORWARD else route.sender
    src, dst = ints[:, 2].copy(), ints[:, 0] - host.offsets[group]
    order, rows_arr, forward = ints[:, 3].copy(), None, None
    if kind == fr.ONION:  # a scrambler: opaque handles of the inner bodies, in order
        handles = [host.onions.put(bytes(data[a:b])) for a, b in spans.tolist()]
        columns = {codec.HANDLE: np.array(handles, dtype=np.int64)}
        payload = np.arange(len(ints), dtype=np.int64)
        forward = ints[:, 4].copy()
    else:
        dtype = codec.record_dtype(schema)
        rows, records = _decoded(data, spans, host.values, dtype)
        real = rows >= 0  # the target drops dummies after decryption and parsing
        src, dst, order, counts = src[real], dst[real], order[real], rows[real]
        payload = np.cumsum(counts) - counts
        columns = codec.columns_of(records, schema)
        rows_arr = counts if mode & codec.MULTI else None
    return MessageBatch(
        route=route.name,
        round=host.levels[sender],
        sender=sender,
        receiver=scrambler if kind == fr.ONION else route.receiver,
        block=sender_block,
        src=src,
        dst=dst,
        order=order,
        size=route.message_size,
        payload=payload.astype(np.int64),
        columns=columns,
        rows=rows_arr,
        forward=forward,
    )
