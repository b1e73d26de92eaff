"""A tiny pcap reader for the wire tests: TCP streams on IPv4 loopback → TLS records.

Reads the classic pcap format (what ``tcpdump -w`` writes) with ``struct`` only: Ethernet
(linktype 1, Linux loopback) or Linux cooked (113) frames, IPv4, TCP; reassembles each
direction of each connection by sequence number and cuts it into TLS records (5-byte header:
content type, version, length). A record's time is that of the packet holding its last byte.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Record", "ip_packets", "tls_records"]


@dataclass(frozen=True)
class Record:
    """One TLS record: ``(src port, dst port)`` of its direction, type, length, time (s),
    and the direction's IPv4 addresses (a bridge carries many hosts' connections)."""

    src: int
    dst: int
    kind: int
    length: int
    time: float
    src_ip: str = ""
    dst_ip: str = ""


def ip_packets(path: Path) -> list[tuple[float, bytes]]:
    """``(time, IP packet)`` of every packet of a capture (a record cut short by a capture
    still being written is kept as far as it goes)."""
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
    link = struct.unpack_from(endian + "I", data, 20)[0]
    skip = {1: 14, 113: 16}[link]
    out, at = [], 24
    while at + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from(endian + "IIII", data, at)
        at += 16
        out.append((sec + frac / (1e9 if nano else 1e6), data[at + skip : at + incl]))
        at += incl
    return out


#: A TCP direction: (source address, source port, destination address, destination port).
_Key = tuple[str, int, str, int]


def tls_records(path: Path, gaps: list[tuple[str, int, str, int]] | None = None) -> list[Record]:
    """Every TLS record of every TCP connection in the capture, in capture order.

    A SYN (or SYN-ACK) with a new sequence number starts a new stream, even on a 4-tuple
    seen before: a long capture reuses ephemeral ports (found on a 40-run capture, where two
    connections' segments mixed). Sequence numbers are taken relative to the stream's start
    modulo 2³² (a long stream may wrap). A hole in a stream (bytes the capture lost) ends
    that stream's records there — past it the record boundaries are unknown — and its key
    is appended to ``gaps`` if given."""
    streams: dict[tuple[_Key, int], dict[int, tuple[float, bytes]]] = defaultdict(dict)
    first: dict[tuple[_Key, int], int] = {}
    generation: dict[_Key, int] = {}
    for time, ip in ip_packets(path):
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from("!H", ip, 2)[0]
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack_from("!HHI", tcp, 0)
        flags = tcp[13]
        payload = tcp[(tcp[12] >> 4) * 4 :]
        key = (".".join(map(str, ip[12:16])), sport, ".".join(map(str, ip[16:20])), dport)
        if flags & 0x02:  # SYN: a stream starts after it (a retransmitted SYN: the same)
            start = (seq + 1) & _MASK
            if key not in generation or first.get((key, generation[key])) != start:
                generation[key] = generation.get(key, -1) + 1
                first[(key, generation[key])] = start
        if payload:
            stream = (key, generation.setdefault(key, 0))
            first.setdefault(stream, seq)  # no SYN captured: the first segment seen
            offset = (seq - first[stream]) & _MASK
            if offset < _HALF:  # else a segment from before the start
                streams[stream][offset] = (time, payload)
    records: list[Record] = []
    for (key, _), segments in streams.items():
        buffer, times, at = bytearray(), [], 0
        for offset in sorted(segments):
            time, payload = segments[offset]
            if offset + len(payload) <= at:
                continue  # a retransmission
            if offset > at:
                if gaps is not None:
                    gaps.append(key)
                break
            payload = payload[at - offset :]
            buffer += payload
            times.append((len(buffer), time))
            at += len(payload)
        records.extend(_cut(key, buffer, times))
    records.sort(key=lambda r: r.time)
    return records


_MASK, _HALF = 0xFFFFFFFF, 1 << 31


def _cut(
    key: tuple[str, int, str, int], buffer: bytearray, times: list[tuple[int, float]]
) -> list[Record]:
    """One direction's bytes cut into TLS records (5-byte header: type, version, length);
    a record's time is that of the segment holding its last byte."""
    out, pos, t = [], 0, 0
    while pos + 5 <= len(buffer):
        length = struct.unpack_from("!H", buffer, pos + 3)[0]
        end = pos + 5 + length
        if end > len(buffer):
            break
        while times[t][0] < end:
            t += 1
        out.append(Record(key[1], key[3], buffer[pos], length, times[t][1], key[0], key[2]))
        pos = end
    return out
