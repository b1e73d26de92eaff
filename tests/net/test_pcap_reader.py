"""The wire tests' pcap reader keeps apart two connections on one reused 4-tuple.

Found in session 15: a 40-run audit capture reused the ephemeral port 35548 for a second
connection between the same two daemons; their segments mixed in one stream, so one run's
link showed 0 frames (and another's frames with garbage content types) where the coordinator
counted 108 — the landing CI's failure of ``test_daemon_audit``.
"""

from __future__ import annotations

import struct
from pathlib import Path

from tests.net._pcap import tls_records

A, B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])


def _packet(seq: int, flags: int, payload: bytes = b"") -> bytes:
    tcp = struct.pack("!HHIIBBHHH", 40000, 7000, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, A, B) + tcp
    return b"\x00" * 12 + b"\x08\x00" + ip  # Ethernet: two MACs, IPv4


def _record(kind: int, length: int) -> bytes:
    return struct.pack("!BHH", kind, 0x0303, length) + b"\x00" * length


def _pcap(path: Path, packets: list[tuple[float, bytes]]) -> Path:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for time, data in packets:
        out.append(struct.pack("<IIII", int(time), int(time % 1 * 1e6), len(data), len(data)))
        out.append(data)
    path.write_bytes(b"".join(out))
    return path


def test_a_reused_four_tuple_starts_a_new_stream(tmp_path: Path) -> None:
    first, second = 1_000, 4_000_000_000  # the second connection's sequence also wraps
    one, two = _record(23, 100) + _record(23, 100), _record(23, 50)
    pcap = _pcap(
        tmp_path / "reuse.pcap",
        [
            (1.0, _packet(first, 0x02)),
            (1.1, _packet(first + 1, 0x18, one)),
            (5.0, _packet(second, 0x02)),
            (5.1, _packet(second + 1, 0x18, two[:30])),
            (5.2, _packet((second + 31) & 0xFFFFFFFF, 0x18, two[30:])),
        ],
    )
    gaps: list[tuple[str, int, str, int]] = []
    records = tls_records(pcap, gaps)
    assert [(r.kind, r.length, round(r.time, 1)) for r in records] == [
        (23, 100, 1.1),
        (23, 100, 1.1),
        (23, 50, 5.2),
    ]
    assert gaps == []


def test_a_hole_ends_the_stream_and_is_named(tmp_path: Path) -> None:
    data = _record(23, 100) * 3
    pcap = _pcap(
        tmp_path / "hole.pcap",
        [
            (1.0, _packet(0, 0x02)),
            (1.1, _packet(1, 0x18, data[:105])),
            (1.3, _packet(211, 0x18, data[210:])),
        ],
    )
    gaps: list[tuple[str, int, str, int]] = []
    assert len(tls_records(pcap, gaps)) == 1
    assert gaps == [("10.0.0.1", 40000, "10.0.0.2", 7000)]
