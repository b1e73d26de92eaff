"""Messages of a :class:`~crowdhide.engine.messages.MessageBatch` part ⇄ fixed-size frames.

One message is one frame (:mod:`crowdhide.backends.tls.frames` header + sealed body +
padding). Every plaintext has **one length per mode**, whatever the message carries: the
*values block* (``rows i32`` then the payload records, ``rows = -1`` for a dummy) is
zero-padded to the run's capacity ``V`` (:func:`values_bytes`), so real messages, dummies and
messages with any number of rows seal to bodies of equal length. Records are rows of the
route's *schema* (column names, dtypes and shapes, known to both ends through the driver;
the values travel only inside frames). The engine's ``@origin`` column (which source sent a
real message) never travels: :func:`wire_columns` drops it.

* ``PLAIN`` — sealed for the receiving node: ``fields || values``;
* ``ONION`` — first hop to a scrambler, sealed for the scrambler: ``fields || inner`` where
  ``inner`` = ``values`` sealed for the final target (``forward`` names it in ``fields``);
* ``FORWARD`` — second hop, sealed for the target: ``fields || inner`` (the scrambler
  forwards the inner body unread; its own dummies are fresh inner bodies with ``rows = -1``).

``fields`` = ``epoch u32, index u32, src u32, order i32, forward i32`` (``forward = 0`` but
for onions). Header flag ``MULTI`` records that the part carried a per-message row count.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls import hpke
from crowdhide.errors import DataError, DataTypeError, InvalidParameterError

__all__ = [
    "FIELDS",
    "HANDLE",
    "MULTI",
    "Schema",
    "frame_bytes",
    "frame_for",
    "record_dtype",
    "rows_of",
    "schema_of",
    "values_bytes",
    "wire_columns",
]

#: Column a scrambler's program sees instead of payloads: opaque handles of inner bodies.
HANDLE = "@handle"
MULTI = 0x80
_FIELDS = struct.Struct("<IIIii")  # epoch, index, src, order, forward
_ROWS = struct.Struct("<i")
FIELDS = _FIELDS.size
#: Bytes of a frame besides the values block: header, onion fields, two HPKE layers.
FIXED = fr.HEADER.size + FIELDS + 2 * hpke.OVERHEAD

Schema = tuple[tuple[str, str, tuple[int, ...]], ...]


def values_bytes(frame: int) -> int:
    """Capacity ``V`` of the values block in frames of ``frame`` bytes.

    Examples
    --------
    >>> values_bytes(frame_bytes(64)), frame_bytes(64)
    (68, 196)
    """
    return frame - FIXED


def frame_bytes(payload: int) -> int:
    """Frame size whose values block holds ``payload`` bytes of records (plus the count)."""
    return FIXED + _ROWS.size + payload


#: Largest frame: one frame must fit one TLS record (16 KiB) with room to spare.
MAX_FRAME = 16_000


def frame_for(plan: Any) -> int:
    """The run's frame size: the plan's largest ``message_size`` in the values block.

    Raises :class:`~crowdhide.errors.InvalidParameterError` naming ``run.message_size`` when
    such frames would not fit one TLS record: refused before anything is sent.
    """
    from crowdhide.errors import InvalidParameterError

    largest = max((int(r.message_size) for r in plan.routes), default=0)
    if frame_bytes(largest) > MAX_FRAME:
        raise InvalidParameterError(
            f"run.message_size: the plan's largest message is {largest} bytes; the tls "
            f"backend carries at most {MAX_FRAME - frame_bytes(0)} per frame (fewer groups "
            f"per compute node: raise query.compute_nodes)",
            parameter="run.message_size",
            value=largest,
        )
    return frame_bytes(largest)


def wire_columns(columns: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
    """The columns a message carries on the wire: all but the engine's ``@origin``."""
    from crowdhide.engine.messages import ORIGIN

    return {name: values for name, values in columns.items() if name != ORIGIN}


def schema_of(columns: Mapping[str, npt.NDArray[Any]]) -> Schema:
    """The schema of a payload table.

    Examples
    --------
    >>> schema_of({"x": np.zeros(3), "k": np.zeros((3, 2), dtype=np.int32)})
    (('x', '<f8', ()), ('k', '<i4', (2,)))
    """
    out = []
    for name, values in columns.items():
        arr = np.asarray(values)
        if arr.dtype.hasobject:
            raise DataTypeError(f"column {name!r} has dtype object; frames carry numeric columns")
        out.append((name, arr.dtype.str, tuple(arr.shape[1:])))
    return tuple(out)


def record_dtype(schema: Schema) -> np.dtype[Any]:
    """The packed record of one payload row."""
    return np.dtype([(name, np.dtype(kind), shape) for name, kind, shape in schema])


def table(columns: Mapping[str, npt.NDArray[Any]], schema: Schema) -> npt.NDArray[Any]:
    """Rows of ``columns`` as packed records."""
    length = len(next(iter(columns.values()))) if columns else 0
    out = np.empty(length, dtype=record_dtype(schema))
    for name, _, _ in schema:
        out[name] = columns[name]
    return out


def columns_of(records: npt.NDArray[Any], schema: Schema) -> dict[str, npt.NDArray[Any]]:
    """Columns of packed records."""
    return {name: np.ascontiguousarray(records[name]) for name, _, _ in schema}


def encode_values(records: npt.NDArray[Any] | None, first: int, rows: int, size: int) -> bytes:
    """The values block of exactly ``size`` bytes: ``rows`` and records ``first ..
    first+rows-1`` (``rows = -1``: a dummy), zero-padded. ``ValueError`` if they do not fit.
    """
    if rows < 0 or records is None:
        return _ROWS.pack(-1) + bytes(size - _ROWS.size)
    data = _ROWS.pack(rows) + records[first : first + rows].tobytes()
    if len(data) > size:
        raise InvalidParameterError(
            f"run.message_size must hold every message: one carries {rows} row(s), "
            f"{len(data) - _ROWS.size} bytes, the frames hold {size - _ROWS.size}",
            parameter="run.message_size",
            value=size,
        )
    return data + bytes(size - len(data))


def encode_many(
    records: npt.NDArray[Any] | None,
    payload: npt.ArrayLike,
    rows: npt.ArrayLike | None,
    size: int,
) -> list[bytes]:
    """:func:`encode_values` of every message of a part at once: message ``i`` starts at
    record ``payload[i]`` (``< 0``: a dummy) and holds ``rows[i]`` records (``None``: one
    each). One array fill and one copy for the part instead of byte strings per message.

    Examples
    --------
    >>> recs = np.arange(3, dtype="<i8").view(np.dtype([("v", "<i8")]))
    >>> blocks = encode_many(recs, [2, -1], None, 16)
    >>> blocks == [encode_values(recs, 2, 1, 16), encode_values(None, 0, -1, 16)]
    True
    """
    first = np.asarray(payload, dtype=np.int64).reshape(-1)
    count = len(first)
    if records is None:  # every block a dummy's (a scrambler's part): one shared object
        return [encode_values(None, 0, -1, size)] * count
    real = first >= 0
    many = np.ones(count, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    counts = np.where(real, many, -1)
    item = records.dtype.itemsize
    widest = int(counts.max(initial=0))
    if _ROWS.size + widest * item > size:
        raise InvalidParameterError(
            f"run.message_size must hold every message: one carries {widest} row(s), "
            f"{widest * item} bytes, the frames hold {size - _ROWS.size}",
            parameter="run.message_size",
            value=size,
        )
    out = np.zeros((count, size), dtype=np.uint8)
    out[:, : _ROWS.size] = counts.astype("<i4").view(np.uint8).reshape(count, _ROWS.size)
    if item and real.any():
        raw = np.ascontiguousarray(records).view(np.uint8).reshape(len(records), item)
        if widest <= 1:
            take = real & (counts == 1)
            out[take, _ROWS.size : _ROWS.size + item] = raw[first[take]]
        else:  # several rows per message (a MULTI part): row by row
            for i in np.flatnonzero(real).tolist():
                span = raw[first[i] : first[i] + counts[i]].reshape(-1)
                out[i, _ROWS.size : _ROWS.size + span.size] = span
    data = out.tobytes()
    return [data[i * size : (i + 1) * size] for i in range(count)]


def pack_many(
    epoch: int, src: npt.ArrayLike, order: npt.ArrayLike, forward: npt.ArrayLike | None
) -> list[bytes]:
    """:func:`pack_fields` of every message of a part (index ``i`` for message ``i``)."""
    src_ = np.asarray(src, dtype=np.int64).reshape(-1)
    count = len(src_)
    table = np.zeros(count, dtype=np.dtype([(k, f"<{c}4") for k, c in _FIELD_KINDS]))
    table["epoch"], table["index"], table["src"] = epoch, np.arange(count), src_
    table["order"] = np.asarray(order, dtype=np.int64).reshape(-1)
    if forward is not None:
        table["forward"] = np.asarray(forward, dtype=np.int64).reshape(-1)
    data = table.tobytes()
    return [data[i * FIELDS : (i + 1) * FIELDS] for i in range(count)]


_FIELD_KINDS = (("epoch", "u"), ("index", "u"), ("src", "u"), ("order", "i"), ("forward", "i"))


def decode_values(data: bytes, dtype: np.dtype[Any]) -> tuple[int, npt.NDArray[Any]]:
    """Inverse of :func:`encode_values`: ``(rows, records)``.

    A dummy is parsed like a real message (its records are read and discarded), so the
    receiver's work does not depend on which it is.
    """
    (rows,) = _ROWS.unpack_from(data, 0)
    count = max(rows, 0)
    end = _ROWS.size + count * dtype.itemsize
    if end > len(data):
        raise DataError(f"values block announces {rows} rows, more than it holds")
    records = np.frombuffer(data[_ROWS.size : end], dtype=dtype)
    return (rows, records) if rows >= 0 else (-1, records[:0])


def rows_of(data: bytes) -> int:
    """The row count a values block announces (-1: a dummy), read without its schema.

    >>> rows_of(encode_values(None, 0, -1, 16)), rows_of(struct.pack("<i", 3) + bytes(12))
    (-1, 3)
    """
    return int(_ROWS.unpack_from(data, 0)[0])


def pack_fields(epoch: int, index: int, src: int, order: int, forward: int = 0) -> bytes:
    """The fixed fields in front of every plaintext."""
    return _FIELDS.pack(epoch, index, src, order, forward)


def unpack_fields(data: bytes | memoryview) -> tuple[int, int, int, int, int]:
    """Inverse of :func:`pack_fields`: ``(epoch, index, src, order, forward)``."""
    epoch, index, src, order, forward = _FIELDS.unpack_from(data, 0)
    return int(epoch), int(index), int(src), int(order), int(forward)


def inner_bytes(values: int) -> int:
    """Length of a sealed inner body (an onion's payload for the final target)."""
    return hpke.OVERHEAD + values


def concat(parts: Sequence[npt.NDArray[Any]], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Concatenate record arrays (empty-safe)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
