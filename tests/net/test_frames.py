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


def _linked() -> tuple[Sealer, Sealer]:
    a, b = Sealer(host=0), Sealer(host=1)
    a.learn(hosts={1: b.link_public()}, nodes={})
    b.learn(hosts={0: a.link_public()}, nodes={})
    return a, b


def test_the_frames_of_a_link_round_share_one_context_and_open_only_in_place() -> None:
    from crowdhide.backends.tls import frames as fr
    from crowdhide.backends.tls import hpke

    a, b = _linked()
    heads = [fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, n) for n in range(4)]
    items = [(h, bytes([i]) * 40) for i, h in enumerate(heads)]
    frames = a.seal_frames(1, 3, items, 200)
    assert {len(f) for f in frames} == {200}
    length = 40 + hpke.TAG
    at = fr.HEADER.size
    # One encapsulation per link and round: the same enc in every frame, no counter sent.
    assert len({f[at : at + hpke.ENC] for f in frames}) == 1
    assert [b.open_frame(0, 3, i, f, length) for i, f in enumerate(frames)] == [p for _, p in items]
    for seq, frame, epoch in (
        (1, frames[0], 3),  # replayed or reordered: another position on the link
        (0, frames[0], 4),  # replayed in another round
    ):
        with pytest.raises(InvalidTag):  # the same keys, no context yet
            Sealer(host=1, _nodes=b._nodes).open_frame(0, epoch, seq, frame, length)
    forged = bytearray(frames[2])
    forged[at + hpke.ENC] ^= 1
    with pytest.raises(InvalidTag):
        b.open_frame(0, 3, 2, bytes(forged), length)
    moved = bytearray(frames[2])
    moved[8] ^= 1  # the destination node in the header (associated data)
    with pytest.raises(InvalidTag):
        b.open_frame(0, 3, 2, bytes(moved), length)
    # A frame of another context in the same round is refused before any key agreement.
    other = a.seal_frames(1, 3, items[:1], 200)[0]
    with pytest.raises(ValueError, match="names another context"):
        b.open_frame(0, 3, 0, other, length)
    # A new round: a new context (another enc), and the old round's frames fail in it.
    later = a.seal_frames(1, 4, items[:1], 200)[0]
    assert later[at : at + hpke.ENC] != frames[0][at : at + hpke.ENC]
    assert b.open_frame(0, 4, 0, later, length) == items[0][1]
    with pytest.raises(ValueError, match="names another context"):
        b.open_frame(0, 4, 0, frames[0], length)


def test_a_scramblers_bodies_and_frames_have_one_length_for_reals_and_dummies() -> None:
    """An onion's inner body (what a scrambler forwards unread) and the frames it travels
    in have one length whether the message is real (any row count) or a dummy."""
    from crowdhide.backends.tls import frames as fr

    a, b = _linked()
    target = Sealer(host=2)
    a.learn(hosts={}, nodes={9: target.node_public(9)})
    records = np.arange(10, dtype=np.int64).view(np.dtype([("v", "<i8")]))
    size = codec.frame_bytes(64)
    values = codec.values_bytes(size)
    inners = [
        a.seal(9, codec.encode_values(records, 0, rows, values), b"r") for rows in (-1, 0, 1, 8)
    ]
    assert {len(i) for i in inners} == {codec.inner_bytes(values)}
    head = fr.HEADER.pack(fr.DATA, fr.ONION, 0, 0, 5)
    items = [(head, codec.pack_fields(1, i, 0, 0, 3) + inner) for i, inner in enumerate(inners)]
    frames = a.seal_frames(1, 1, items, size)
    assert {len(f) for f in frames} == {size}
    length = codec.FIELDS + codec.inner_bytes(values) + 16
    opened = [b.open_frame(0, 1, i, f, length) for i, f in enumerate(frames)]
    assert {len(p) for p in opened} == {length - 16}
    rows = [target.open(9, p[codec.FIELDS :], b"r")[:4] for p in opened]
    assert [int.from_bytes(r, "little", signed=True) for r in rows] == [-1, 0, 1, 8]


def test_a_parts_blocks_and_fields_equal_the_message_by_message_encoding() -> None:
    rng = np.random.default_rng(1)
    records = rng.integers(0, 1000, 30).astype("<i8").view(np.dtype([("v", "<i8")]))
    size = codec.values_bytes(codec.frame_bytes(40))
    payload = np.array([0, -1, 5, 29, -1, 3])
    for rows in (None, np.array([1, 0, 4, 1, 2, 0])):
        blocks = codec.encode_many(records, payload, rows, size)
        each = [
            codec.encode_values(records, int(p), -1 if p < 0 else (1 if rows is None else r), size)
            for p, r in zip(payload, rows if rows is not None else [1] * 6, strict=True)
        ]
        assert blocks == each
    assert codec.encode_many(None, payload, None, size) == [
        codec.encode_values(None, 0, -1, size)
    ] * len(payload)
    with pytest.raises(ValueError, match=r"run\.message_size must hold every message"):
        codec.encode_many(records, payload, np.array([1, 0, 9, 1, 1, 0]), size)
    src, order, forward = [4, 5, 6], [0, -2, 7], [1, 0, 3]
    assert codec.pack_many(9, src, order, forward) == [
        codec.pack_fields(9, i, s, o, f)
        for i, (s, o, f) in enumerate(zip(src, order, forward, strict=True))
    ]
    assert codec.pack_many(9, src, order, None)[1] == codec.pack_fields(9, 1, 5, -2, 0)


def test_the_relay_tap_logs_every_record_whatever_the_chunking() -> None:
    from crowdhide.backends.tls.relay import _Tap

    records = [bytes([23, 3, 3]) + n.to_bytes(2, "big") + bytes(n) for n in (5, 300, 0, 70)]
    stream = b"".join(records)
    for cut in (1, 4, 5, 7, 64, len(stream)):
        log: list[tuple[int, int, int, int, int, int, int]] = []
        tap = _Tap(log, (0, 1), 1, 0)
        for at in range(0, len(stream), cut):
            tap.feed(stream[at : at + cut])
        assert [(row[4], row[5]) for row in log] == [(23, 5), (23, 300), (23, 0), (23, 70)]
        assert tap.buffer == bytearray()
