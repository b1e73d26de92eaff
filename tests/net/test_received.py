"""The lazy parcels a node host builds from its inbox give the batches a per-message decode
gives (same messages, order, rows and records), values blocks kept without their padding."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from crowdhide.backends.tls import codec
from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls.inbox import Inbox, Onions
from crowdhide.backends.tls.received import padded, parcels, stripped
from crowdhide.errors import DataError

SCHEMA: codec.Schema = (("k", "<i4", ()), ("v", "<f8", ()))
DTYPE = codec.record_dtype(SCHEMA)
VALUES = 4 + 3 * DTYPE.itemsize + 5  # room for three rows, and some padding


def _host(block_size: int) -> Any:
    route = SimpleNamespace(name="S->C", sender="S", receiver="C", message_size=VALUES)
    return SimpleNamespace(
        offsets={"S": 0, "C": 1000},
        job=SimpleNamespace(block_size=block_size),
        routes=[route],
        scrambler_of={"S->C": "X"},
        schemas={0: SCHEMA},
        values=VALUES,
        levels={"S": 0, "X": 1, "C": 2},
        onions=Onions(),
    )


def _messages(rng: np.random.Generator, count: int) -> list[tuple[tuple[int, ...], bytes]]:
    out = []
    for i in range(count):
        rows = int(rng.integers(0, 4))
        recs = np.zeros(rows, dtype=DTYPE)
        recs["k"] = rng.integers(-3, 3, rows)  # zeros at the end of a block: stripped
        recs["v"] = np.where(rng.random(rows) < 0.3, 0.0, rng.normal(size=rows))
        block = codec.encode_values(recs, 0, rows, VALUES)
        node = 1000 + int(rng.integers(0, 12))
        mode = fr.FORWARD | codec.MULTI
        fields = (0, mode, int(rng.integers(0, 2)), node, int(rng.integers(0, 50)), i, i % 7, -1)
        out.append((fields, block))
    return out


def _expected(host: Any, messages: list[tuple[tuple[int, ...], bytes]]) -> dict[Any, Any]:
    """Per (receiver block, sender block): the messages a per-message decode gives, in the
    order by index (stable: arrival order on ties)."""
    out: dict[Any, list[Any]] = {}
    for fields, block in messages:
        rows, recs = codec.decode_values(block, DTYPE)
        rb = (fields[3] - 1000) // host.job.block_size
        out.setdefault((rb, fields[2]), []).append((fields, rows, recs))
    for items in out.values():
        items.sort(key=lambda x: x[0][4])
    return out


@pytest.mark.parametrize("block_size", [1, 5, 64])
def test_parcels_give_the_per_message_decode(block_size: int) -> None:
    rng = np.random.default_rng(block_size)
    host = _host(block_size)
    messages = _messages(rng, 300)
    inbox = Inbox()
    for fields, block in messages:
        inbox.add(fields, stripped(block))
    data, parts = inbox.take(1000, 1012, block_size)
    got = parcels(host, "C", data, parts)
    expected = _expected(host, messages)
    seen = set()
    for rb, items in got.items():
        for parcel in items:
            batch = parcel.load()
            want = expected[(rb, parcel.block)]
            seen.add((rb, parcel.block))
            assert (parcel.route, parcel.sender) == ("S->C", "X")
            assert (batch.sender, batch.receiver, batch.round) == ("X", "C", 1)
            assert batch.src.tolist() == [f[5] for f, _, _ in want]
            assert batch.dst.tolist() == [f[3] - 1000 for f, _, _ in want]
            assert batch.order.tolist() == [f[6] for f, _, _ in want]
            assert batch.rows is not None
            assert batch.rows.tolist() == [r for _, r, _ in want]
            recs = np.concatenate([r for _, _, r in want])
            assert batch.columns["k"].tolist() == recs["k"].tolist()
            assert batch.columns["v"].tolist() == recs["v"].tolist()
            counts = batch.rows
            assert batch.payload.tolist() == (np.cumsum(counts) - counts).tolist()
    assert seen == set(expected)


def test_padding_is_restored_exactly_and_an_overlong_block_is_refused() -> None:
    blocks = [b"\x01\x00\x00\x00\x07" + bytes(6), bytes(11), b"\xff" * 11]
    data = bytearray()
    spans = []
    for block in blocks:
        kept = stripped(block)
        spans.append((len(data), len(data) + len(kept)))
        data += kept
    out = padded(data, np.array(spans, dtype=np.int64), 11)
    assert [bytes(row) for row in out] == blocks
    with pytest.raises(DataError):
        padded(data, np.array(spans, dtype=np.int64), 10)
