"""Messages of a :class:`~crowdhide.engine.messages.MessageBatch` part ⇄ fixed-size frames.

One message is one frame (:mod:`crowdhide.backends.tls.frames` header + sealed body + padding). The
body carries the message's own fields and the payload rows it references, as records of
the route's *schema* (column names, dtypes and shapes, known to both ends through the
driver; the values travel only inside frames):

* ``PLAIN`` — sealed for the receiving node: ``src u32, order i32, rows i32, values``;
  ``rows = -1`` marks a dummy;
* ``ONION`` — first hop to a scrambler, sealed for the scrambler: ``src, order,
  forward i32, inner`` where ``inner`` = ``rows, values`` sealed for the final target;
* ``FORWARD`` — second hop: ``src, order, inner origin u16, inner`` (the scrambler forwards
  the inner body unread; its own dummies are fresh inner bodies with ``rows = -1``).

Header flag ``MULTI`` records that the part carried a per-message row count (``rows``).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.backends.tls import frames as fr

__all__ = ["HANDLE", "MULTI", "Schema", "record_dtype", "schema_of"]

#: Column a scrambler's program sees instead of payloads: opaque handles of inner bodies.
HANDLE = "@handle"
MULTI = 0x80
_FIELDS = struct.Struct("<Iii")  # src, order, rows | forward
_ROWS = struct.Struct("<i")
_ORIGIN = struct.Struct("<H")

Schema = tuple[tuple[str, str, tuple[int, ...]], ...]


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
            raise TypeError(f"column {name!r} has dtype object; frames carry numeric columns")
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


def encode_values(records: npt.NDArray[Any] | None, first: int, rows: int) -> bytes:
    """``rows`` count and the records ``first .. first+rows-1`` (``rows = -1``: a dummy)."""
    if rows < 0 or records is None:
        return _ROWS.pack(-1)
    return _ROWS.pack(rows) + records[first : first + rows].tobytes()


def decode_values(data: bytes, dtype: np.dtype[Any]) -> tuple[int, npt.NDArray[Any]]:
    """Inverse of :func:`encode_values`: ``(rows, records)``."""
    (rows,) = _ROWS.unpack_from(data, 0)
    if rows < 0:
        return -1, np.zeros(0, dtype=dtype)
    end = _ROWS.size + rows * dtype.itemsize
    return rows, np.frombuffer(data[_ROWS.size : end], dtype=dtype)


def pack_fields(src: int, order: int, third: int) -> bytes:
    """``src, order`` and the rows count (``PLAIN``) or the final target (``ONION``)."""
    return _FIELDS.pack(src, order, third)


def unpack_fields(data: bytes | memoryview) -> tuple[int, int, int]:
    """Inverse of :func:`pack_fields`."""
    src, order, third = _FIELDS.unpack_from(data, 0)
    return int(src), int(order), int(third)


FIELDS = _FIELDS.size
ORIGIN_BYTES = _ORIGIN.size


def pack_origin(host: int) -> bytes:
    """The host that sealed a forwarded inner body."""
    return _ORIGIN.pack(host)


def unpack_origin(data: bytes | memoryview, at: int) -> int:
    """Inverse of :func:`pack_origin`."""
    return int(_ORIGIN.unpack_from(data, at)[0])


def needed(mode: int, schema: Schema, rows: int) -> int:
    """Bytes of a frame carrying ``rows`` payload rows in ``mode`` (before padding)."""
    values = _ROWS.size + max(rows, 0) * record_dtype(schema).itemsize
    inner = fr.NONCE + values + fr.TAG
    if mode == fr.PLAIN:
        return fr.HEADER.size + fr.NONCE + FIELDS + values + fr.TAG
    if mode == fr.ONION:
        return fr.HEADER.size + fr.NONCE + FIELDS + inner + fr.TAG
    return fr.HEADER.size + 8 + ORIGIN_BYTES + inner


def concat(parts: Sequence[npt.NDArray[Any]], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Concatenate record arrays (empty-safe)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
