"""The TLS links between node hosts: each carries fixed-size frames one way.

A host dials every host of the run (itself included) over mutual TLS 1.3
(:func:`tls_contexts`) and accepts their links; each :class:`Link` cuts the bytes it
receives into frames and hands them to its :class:`~crowdhide.backends.tls.host.Host`
(data frames of a welcomed incoming link in batches), and writes one TLS record per frame,
pausing while its transport's buffer is full.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING, Any

from crowdhide.backends.tls import frames as fr

if TYPE_CHECKING:
    from crowdhide.backends.tls.host import Host

__all__ = ["Link", "peer_names", "tls_contexts"]


def tls_contexts(cfg: dict[str, Any]) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """Server and client contexts of a host: TLS 1.3 only, its certificate and key
    (``cfg["cert"]``, ``cfg["key"]``), peers' certificates required and checked against
    ``cfg["ca"]``."""
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


def peer_names(peercert: Any) -> set[str]:
    """The DNS names of a peer's certificate (``host<i>`` for host ``i``)."""
    if not peercert:
        return set()
    return {value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS"}


class Link(asyncio.Protocol):
    """One TLS connection carrying fixed-size frames."""

    def __init__(self, host: Host, *, outgoing: int | None) -> None:
        self.host = host
        self.peer = outgoing  # known up front for outgoing links, after WELCOME otherwise
        self.outgoing = outgoing is not None
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.welcomed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.written = 0
        self.writable = asyncio.Event()  # cleared while the transport's buffer is full
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.outgoing:
            self.host.stats["handshakes"] += 1

    def write(self, frame: bytes) -> None:
        assert self.transport is not None
        self.transport.write(frame)  # one write per frame: one TLS record per frame
        self.written += 1

    def writelines(self, frames: list[bytes]) -> None:
        """Many frames, still one TLS record each (the SSL transport writes every item of
        a ``writelines`` as its own record), in chunks: its backlog is a list it pops
        from the front."""
        assert self.transport is not None
        for at in range(0, len(frames), 512):
            self.transport.writelines(frames[at : at + 512])
        self.written += len(frames)

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    async def drained(self) -> None:
        """Wait until the transport takes more (at once if it does, or if the link closed)."""
        await asyncio.sleep(0)
        await self.writable.wait()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        size = self.host.frame
        usable = len(self.buffer) - len(self.buffer) % size
        # Consecutive data frames of a welcomed incoming link are opened as one batch.
        batch = not self.outgoing and self.peer is not None
        run: list[bytes] = []
        for start in range(0, usable, size):
            if self.closed:
                return
            frame = bytes(self.buffer[start : start + size])
            if batch and frame[0] == fr.DATA:
                run.append(frame)
                continue
            if run:
                self.host.on_data(self, run)
                run = []
            self.host.on_frame(self, frame)
            batch = not self.outgoing and self.peer is not None
        if run and not self.closed:
            self.host.on_data(self, run)
        del self.buffer[:usable]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.writable.set()
        if not self.welcomed.done():
            self.welcomed.set_result(False)
        self.host.changed.set()

    def drop(self) -> None:
        self.closed = True
        self.writable.set()
        if self.transport is not None:
            self.transport.abort()
