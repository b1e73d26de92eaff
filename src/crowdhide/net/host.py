"""A node-host process: serves a block of node ids over mutual TLS 1.3.

Started by the driver (:class:`crowdhide.net.backend.TlsBackend`) as
``python -m crowdhide.net.host``; it reads its configuration and commands from stdin and
answers on stdout (:mod:`crowdhide.net._control`). It listens on 127.0.0.1, opens one TLS
link to every host of the run (itself included, so every message crosses a socket), and:

* accepts a peer only if its certificate chains to the run's CA (checked by ``ssl``) *and*
  its DNS name is ``host<i>`` for the id ``i`` it claims in its welcome frame; a link is up
  only once the server's welcome frame came back (in TLS 1.3 a client whose certificate is
  rejected may believe the handshake succeeded);
* writes every message as one fixed-size frame, one ``write`` per frame;
* closes an epoch with an ``END`` frame carrying the number of frames sent on the link;
  the receiver answers ``ACK`` with the number it received, and reports it to the driver,
  which names every message that did not arrive.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crowdhide.net import frames as fr
from crowdhide.net._control import read_message_async, write_message

__all__ = ["main"]


def _contexts(cfg: dict[str, Any]) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for ctx in (server, client):
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.maximum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(cfg["cert"], cfg["key"])
        ctx.load_verify_locations(cfg["ca"])
        ctx.verify_mode = ssl.CERT_REQUIRED
    # No session tickets: nothing but frames follows the handshake on the wire.
    server.num_tickets = 0
    return server, client


def _names(peercert: Any) -> set[str]:
    if not peercert:
        return set()
    return {value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS"}


class _Link(asyncio.Protocol):
    """One TLS connection carrying fixed-size frames (either direction of use)."""

    def __init__(self, host: Host, *, outgoing: int | None) -> None:
        self.host = host
        self.peer = outgoing  # known up front for outgoing links, after WELCOME otherwise
        self.outgoing = outgoing is not None
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.welcomed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.written = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.outgoing:
            self.host.stats["handshakes"] += 1

    def write(self, frame: bytes) -> None:
        assert self.transport is not None
        self.transport.write(frame)  # one write per frame: one TLS record per frame
        self.written += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        size = self.host.frame
        usable = len(self.buffer) - len(self.buffer) % size
        for start in range(0, usable, size):
            if self.closed:
                return
            self.host.on_frame(self, bytes(self.buffer[start : start + size]))
        del self.buffer[:usable]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.welcomed.done():
            self.welcomed.set_result(False)
        self.host.on_lost(self)

    def drop(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


@dataclass
class Host:
    """State of one node host (see the module docstring)."""

    cfg: dict[str, Any]
    host: int = field(init=False)
    frame: int = field(init=False)
    sealer: fr.Sealer = field(init=False)
    out: dict[int, _Link] = field(default_factory=dict)
    incoming: dict[int, _Link] = field(default_factory=dict)
    inbox: list[bytes] = field(default_factory=list)
    handles: list[tuple[int, bytes]] = field(default_factory=list)
    sent_epoch: dict[int, int] = field(default_factory=dict)
    recv_epoch: dict[int, int] = field(default_factory=dict)
    ends: dict[tuple[int, int], int] = field(default_factory=dict)
    acks: dict[tuple[int, int], int] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("handshakes", "refused", "frames_in", "frames_out", "dropped_before_welcome"), 0))
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.host = int(self.cfg["host"])
        self.frame = int(self.cfg["frame"])
        self.sealer = fr.Sealer(host=self.host)
        self.starts = np.asarray(self.cfg["starts"], dtype=np.int64)

    # -- frames --------------------------------------------------------------------------
    def on_frame(self, link: _Link, frame: bytes) -> None:
        head = fr.unpack_header(frame)
        if not link.outgoing and link.peer is None:
            self._welcome_incoming(link, head)
            return
        if head.kind == fr.WELCOME and link.outgoing:
            ok = head.origin == link.peer and head.index == fr.WELCOME_MAGIC
            if not link.welcomed.done():
                link.welcomed.set_result(ok)
        elif head.kind == fr.DATA and not link.outgoing:
            self.inbox.append(frame)
            self.stats["frames_in"] += 1
            assert link.peer is not None
            self.recv_epoch[link.peer] = self.recv_epoch.get(link.peer, 0) + 1
        elif head.kind == fr.END and not link.outgoing:
            assert link.peer is not None
            got = self.recv_epoch.pop(link.peer, 0)
            self.ends[(link.peer, head.batch)] = got
            link.write(fr.pack_control(fr.ACK, batch=head.batch, count=got, origin=self.host,
                                       size=self.frame))
        elif head.kind == fr.ACK and link.outgoing:
            assert link.peer is not None
            self.acks[(link.peer, head.batch)] = head.index
        else:
            link.drop()
            return
        self.changed.set()

    def _welcome_incoming(self, link: _Link, head: fr.Header) -> None:
        assert link.transport is not None
        names = _names(link.transport.get_extra_info("peercert"))
        claimed = head.origin
        if (
            head.kind != fr.WELCOME
            or head.index != fr.WELCOME_MAGIC
            or claimed >= int(self.cfg["hosts"])
            or f"host{claimed}" not in names
        ):
            # Wrong frame, or a CA-signed certificate naming another host: refuse, deliver nothing.
            self.stats["refused"] += 1
            if head.kind == fr.DATA:
                self.stats["dropped_before_welcome"] += 1
            link.drop()
            return
        link.peer = claimed
        self.incoming[claimed] = link
        link.write(fr.pack_control(fr.WELCOME, batch=0, count=fr.WELCOME_MAGIC,
                                   origin=self.host, size=self.frame))
        self.changed.set()

    def on_lost(self, link: _Link) -> None:
        self.changed.set()

    # -- commands ------------------------------------------------------------------------
    async def connect(self, peers: dict[int, tuple[str, int]], timeout: float) -> dict[str, Any]:
        _, client = self.contexts
        loop = asyncio.get_running_loop()

        async def one(peer: int, address: tuple[str, int]) -> str | None:
            try:
                _, link = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: _Link(self, outgoing=peer), address[0], address[1],
                        ssl=client, server_hostname=f"host{peer}",
                    ),
                    timeout,
                )
                link.write(fr.pack_control(fr.WELCOME, batch=0, count=fr.WELCOME_MAGIC,
                                           origin=self.host, size=self.frame))
                if not await asyncio.wait_for(link.welcomed, timeout):
                    link.drop()
                    return "peer refused the link (no welcome frame)"
            except (OSError, asyncio.TimeoutError, ssl.SSLError) as exc:
                return f"{type(exc).__name__}: {exc}"
            self.out[peer] = link
            return None

        results = await asyncio.gather(*(one(p, a) for p, a in peers.items()))
        return {"failed": {p: r for p, r in zip(peers, results, strict=True) if r is not None}}

    def send(self, arrays: dict[str, Any]) -> dict[str, Any]:
        dst = np.asarray(arrays["dst"], dtype=np.int64)
        hosts = np.searchsorted(self.starts, dst, side="right") - 1
        written: dict[int, int] = {}
        batch = int(arrays["batch"])
        mode = int(arrays["mode"])
        pad = self.frame - fr.HEADER.size
        payload, forward, index = arrays["payload"], arrays["forward"], arrays["index"]
        seal = self.sealer
        for i in range(dst.shape[0]):
            node = int(dst[i])
            origin = self.host
            if mode == fr.PLAIN:
                body = seal.seal_payload(node, int(payload[i]))
            elif mode == fr.ONION:
                body = seal.seal_onion(node, int(forward[i]), int(payload[i]))
            elif int(payload[i]) >= 0:  # forward a stored inner body, unread
                origin, body = self.handles[int(payload[i])]
            else:  # the scrambler's own dummy, sealed for the target
                body = seal.seal_payload(node, -1)
            peer = int(hosts[i])
            link = self.out.get(peer)
            if link is None or link.closed:
                continue  # counted as not delivered by the receiver's count
            head = fr.HEADER.pack(fr.DATA, mode, batch, origin, 0, node, int(index[i]))
            link.write(head + body + bytes(pad - len(body)))
            written[peer] = written.get(peer, 0) + 1
        for peer, n in written.items():
            self.sent_epoch[peer] = self.sent_epoch.get(peer, 0) + n
        self.stats["frames_out"] += sum(written.values())
        return {"written": written}

    async def barrier(self, epoch: int, alive: list[int], deadline: float) -> dict[str, Any]:
        for peer, link in self.out.items():
            if not link.closed:
                count = self.sent_epoch.pop(peer, 0)
                link.write(fr.pack_control(fr.END, batch=epoch, count=count, origin=self.host,
                                           size=self.frame))
        key = epoch & 0xFFFF
        loop = asyncio.get_running_loop()
        stop = loop.time() + deadline

        def pending() -> bool:
            waiting_ack = any((p, key) not in self.acks and not l.closed
                              for p, l in self.out.items() if p in alive)
            waiting_end = any((p, key) not in self.ends and p in self.incoming
                              and not self.incoming[p].closed for p in alive)
            return waiting_ack or waiting_end

        while pending() and loop.time() < stop:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), max(0.0, stop - loop.time()))
            except asyncio.TimeoutError:
                break
        received = {}
        for p in alive:
            if (p, key) in self.ends:
                received[p] = self.ends.pop((p, key))
            else:  # the peer never closed the epoch: what arrived so far is what counts
                received[p] = self.recv_epoch.pop(p, 0)
        acked = {p: self.acks.pop((p, key), None) for p in self.out}
        return {"received": received, "acked": acked}

    def collect(self, lo: int, hi: int) -> dict[str, Any]:
        keep, rows = [], []
        for frame in self.inbox:
            head = fr.unpack_header(frame)
            if not lo <= head.dst < hi:
                keep.append(frame)
                continue
            body = memoryview(frame)[fr.HEADER.size :]
            if head.mode == fr.ONION:
                target, inner = self.sealer.open_onion(head.dst, head.origin, body)
                self.handles.append((head.origin, inner))
                rows.append((head.batch, head.index, head.dst, len(self.handles) - 1, target))
            else:
                value = self.sealer.open_payload(head.dst, head.origin, body)
                if value >= 0:  # the target drops dummies after decryption
                    rows.append((head.batch, head.index, head.dst, value, -1))
        self.inbox = keep
        table = np.asarray(rows, dtype=np.int64).reshape(-1, 5)
        return {"rows": table}

    def keys(self, nodes: list[int]) -> dict[str, Any]:
        return {"nodes": {int(n): self.sealer.node_public(int(n)) for n in nodes}}


async def _serve(cfg: dict[str, Any]) -> None:
    host = Host(cfg)
    host.contexts = _contexts(cfg)  # type: ignore[attr-defined]
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Link(host, outgoing=None), "127.0.0.1", 0, ssl=host.contexts[0],
        ssl_handshake_timeout=float(cfg.get("handshake_timeout", 10.0)),
    )
    port = server.sockets[0].getsockname()[1]
    out = sys.stdout.buffer
    write_message(out, {"port": port, "public": host.sealer.host_public})
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        msg = await read_message_async(reader)
        if msg is None or msg["op"] == "stop":
            break
        write_message(out, await _dispatch(host, msg))
    server.close()
    for link in list(host.out.values()) + list(host.incoming.values()):
        link.drop()
    await server.wait_closed()
    write_message(out, {"stopped": True, "stats": host.stats})


async def _dispatch(host: Host, msg: dict[str, Any]) -> dict[str, Any]:
    op = msg["op"]
    if op == "connect":
        return await host.connect(msg["peers"], float(msg["timeout"]))
    if op == "keys":
        return host.keys(msg["nodes"])
    if op == "learn":
        host.sealer.learn(hosts=msg["hosts"], nodes=msg["nodes"])
        return {}
    if op == "send":
        return host.send(msg)
    if op == "barrier":
        return await host.barrier(int(msg["epoch"]), list(msg["alive"]), float(msg["deadline"]))
    if op == "collect":
        return host.collect(int(msg["lo"]), int(msg["hi"]))
    if op == "stats":
        up = {p: not l.closed for p, l in host.out.items()}
        return {"stats": dict(host.stats), "up": up,
                "written": {p: l.written for p, l in host.out.items()},
                "written_in": {p: l.written for p, l in host.incoming.items()}}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    """Entry point: read the configuration from stdin, then serve until ``stop``."""
    import pickle
    import struct

    head = sys.stdin.buffer.read(8)
    (length,) = struct.unpack("<Q", head)
    cfg = pickle.loads(sys.stdin.buffer.read(length))  # noqa: S301 - from our driver
    asyncio.run(_serve(cfg))


if __name__ == "__main__":
    main()
