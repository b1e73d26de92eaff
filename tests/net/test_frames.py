"""Sealing and option validation (no processes)."""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.exceptions import InvalidTag

from crowdhide.backends.tls import codec
from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.backends.tls.frames import Sealer


def test_a_body_opens_only_for_its_node_and_unaltered() -> None:
    a, b = Sealer(host=0), Sealer(host=1)
    a.learn(hosts={}, nodes={7: b.node_public(7), 8: b.node_public(8)})
    blob = a.seal(7, b"payload row", b"head")
    assert b.open(7, blob, b"head") == b"payload row"
    with pytest.raises(InvalidTag):
        b.open(8, blob, b"head")  # misdirected: another node's key
    with pytest.raises(InvalidTag):
        b.open(7, blob, b"other head")  # moved to another header
    forged = bytearray(blob)
    forged[-1] ^= 1
    with pytest.raises(InvalidTag):
        b.open(7, bytes(forged), b"head")
    # Ephemeral keys: sealing the same plaintext twice shares no byte prefix (no counter).
    one, two = a.seal(7, b"x", b""), a.seal(7, b"x", b"")
    assert one[:32] != two[:32]
    assert len(one) == len(two)


def test_values_blocks_have_one_length_for_reals_dummies_and_any_row_count() -> None:
    records = np.arange(10, dtype=np.int64).view(np.dtype([("v", "<i8")]))
    size = codec.values_bytes(codec.frame_bytes(64))
    blocks = [codec.encode_values(records, 0, rows, size) for rows in (-1, 0, 1, 8)]
    assert {len(b) for b in blocks} == {size}
    assert codec.decode_values(blocks[3], records.dtype)[1]["v"].tolist() == list(range(8))
    assert codec.decode_values(blocks[0], records.dtype)[0] == -1
    with pytest.raises(ValueError, match=r"run\.message_size must hold every message"):
        codec.encode_values(records, 0, 9, size)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hosts": 0}, "hosts must be >= 1, got 0"),
        ({"frame_size": 64}, "frame_size must be >= 136, got 64"),
        ({"on_missing": "ignore"}, "on_missing must be 'fail' or 'report', got 'ignore'"),
        ({"deadline": 0.0}, "deadline must be >= 0.1, got 0.0"),
    ],
)
def test_invalid_backend_options_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TlsBackend(**options)  # type: ignore[arg-type]
