"""A node-host process: runs the node programs of its blocks and talks mutual TLS 1.3.

Started by the driver (:class:`crowdhide.backends.tls.backend.TlsBackend`) as
``python -m crowdhide.backends.tls.host``; it reads its configuration and commands from stdin and
answers on stdout (:mod:`crowdhide.backends.tls._control`). It listens on 127.0.0.1 and opens one
TLS link to every host of the run (itself included, so every message crosses a socket).

* **Peers.** A peer is accepted only if its certificate chains to the run's CA (checked by
  ``ssl``) *and* its DNS name is ``host<i>`` for the id ``i`` it claims in its welcome
  frame; a link is up only once the server's welcome frame came back (in TLS 1.3 a client
  whose certificate is rejected may believe the handshake succeeded).
* **Programs.** ``run`` executes the program of one group on every block this host serves
  (block ``b`` lives on host ``b mod H``) with :func:`crowdhide.engine.program.step`, on
  the messages decrypted from the frames it received; dummies are dropped after decryption,
  except at scramblers, which cannot tell them and see opaque handles instead of payloads.
* **Rounds.** ``flush`` writes the queued frames (one ``write`` per frame), then an ``END``
  frame per link with the count; the receiver answers ``ACK`` and reports what it got.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import sys
from collections import defaultdict
from typing import Any

import numpy as np

from crowdhide.backends.tls import codec
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls._control import read_message, read_message_async, write_message

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
        self.host.changed.set()

    def drop(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class Host:
    """State of one node host (see the module docstring)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.host = int(cfg["host"])
        self.hosts = int(cfg["hosts"])
        self.frame = int(cfg["frame"])
        self.sealer = fr.Sealer(host=self.host)
        self.contexts = _contexts(cfg)
        self.out: dict[int, _Link] = {}
        self.incoming: dict[int, _Link] = {}
        # Received data frames: (frame, from host, epoch, position in that link's epoch).
        self.inbox: list[tuple[bytes, int, int, int]] = []
        self.handles: list[tuple[int, bytes]] = []
        self.outbox: dict[int, list[bytes]] = defaultdict(list)
        self.recv_count: dict[int, int] = defaultdict(int)
        self.recv_epochs: dict[int, int] = defaultdict(int)
        self.ends: dict[tuple[int, int], int] = {}
        self.acks: dict[tuple[int, int], int] = {}
        self.schemas: dict[int, codec.Schema] = {}
        self.job: Any = None
        self.stats = dict.fromkeys(("handshakes", "refused", "frames_in", "frames_out"), 0)
        self.changed = asyncio.Event()

    # -- frames --------------------------------------------------------------------------
    def on_frame(self, link: _Link, frame: bytes) -> None:
        head = fr.unpack_header(frame)
        if not link.outgoing and link.peer is None:
            self._welcome_incoming(link, head)
            return
        peer = link.peer
        assert peer is not None
        if head.kind == fr.WELCOME and link.outgoing:
            ok = head.origin == peer and head.index == fr.WELCOME_MAGIC
            if not link.welcomed.done():
                link.welcomed.set_result(ok)
        elif head.kind == fr.DATA and not link.outgoing:
            epoch = self.recv_epochs[peer] + 1
            self.inbox.append((frame, peer, epoch, self.recv_count[peer]))
            self.recv_count[peer] += 1
            self.stats["frames_in"] += 1
        elif head.kind == fr.END and not link.outgoing:
            got = self.recv_count.pop(peer, 0)
            self.recv_epochs[peer] += 1
            self.ends[(peer, head.batch)] = got
            link.write(
                fr.pack_control(
                    fr.ACK, batch=head.batch, count=got, origin=self.host, size=self.frame
                )
            )
        elif head.kind == fr.ACK and link.outgoing:
            self.acks[(peer, head.batch)] = head.index
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
            or claimed >= self.hosts
            or f"host{claimed}" not in names
        ):
            # Wrong frame, or a CA-signed certificate naming another host: refuse, deliver nothing.
            self.stats["refused"] += 1
            link.drop()
            return
        link.peer = claimed
        self.incoming[claimed] = link
        link.write(
            fr.pack_control(
                fr.WELCOME, batch=0, count=fr.WELCOME_MAGIC, origin=self.host, size=self.frame
            )
        )
        self.changed.set()

    # -- links and rounds ----------------------------------------------------------------
    async def connect(self, peers: dict[int, tuple[str, int]], timeout: float) -> dict[str, Any]:
        client = self.contexts[1]
        loop = asyncio.get_running_loop()

        async def one(peer: int, address: tuple[str, int]) -> str | None:
            try:
                _, link = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: _Link(self, outgoing=peer),
                        address[0],
                        address[1],
                        ssl=client,
                        server_hostname=f"host{peer}",
                    ),
                    timeout,
                )
                link.write(
                    fr.pack_control(
                        fr.WELCOME,
                        batch=0,
                        count=fr.WELCOME_MAGIC,
                        origin=self.host,
                        size=self.frame,
                    )
                )
                if not await asyncio.wait_for(link.welcomed, timeout):
                    link.drop()
                    return "peer refused the link (no welcome frame)"
            except (TimeoutError, OSError, ssl.SSLError) as exc:
                return f"{type(exc).__name__}: {exc}"
            self.out[peer] = link
            return None

        results = await asyncio.gather(*(one(p, a) for p, a in peers.items()))
        return {"failed": {p: r for p, r in zip(peers, results, strict=True) if r is not None}}

    async def flush(self, epoch: int, alive: list[int], deadline: float) -> dict[str, Any]:
        """Write queued frames and close the epoch on every link; report what arrived."""
        key = epoch & 0xFFFF
        for peer, link in self.out.items():
            queued = self.outbox.pop(peer, [])
            if link.closed:
                continue
            for frame in queued:
                link.write(frame)
            self.stats["frames_out"] += len(queued)
            link.write(
                fr.pack_control(
                    fr.END, batch=key, count=len(queued), origin=self.host, size=self.frame
                )
            )
            if len(queued) > 256:
                await asyncio.sleep(0)  # let the loop drain while others flush
        self.outbox.clear()
        loop = asyncio.get_running_loop()
        stop = loop.time() + deadline

        def pending() -> bool:
            acks = any(
                (p, key) not in self.acks and not link.closed
                for p, link in self.out.items()
                if p in alive
            )
            ends = any(
                (p, key) not in self.ends
                and (p not in self.incoming or not self.incoming[p].closed)
                for p in alive
            )
            return acks or ends

        while pending() and loop.time() < stop:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), max(0.0, stop - loop.time()))
            except TimeoutError:
                break
        received = {}
        for p in alive:
            # Without an END (peer died or link dropped), what arrived so far is what counts.
            received[p] = self.ends.pop((p, key), None)
            if received[p] is None:
                received[p] = self.recv_count.pop(p, 0)
                self.recv_epochs[p] += 1
        acked = {p: self.acks.pop((p, key), None) for p in self.out}
        return {"received": received, "acked": acked}

    # -- programs ------------------------------------------------------------------------
    def set_job(self, job: Any, receivers: list[str], placement: Any) -> dict[str, Any]:
        """Keep the job; create the X25519 keys of the receiving nodes this host serves."""
        self.job = job
        self.placement = placement  # which host serves which block (signed in the plan)
        plan = job.plan
        self.offsets = plan.node_offsets()
        self.levels = plan.levels()
        self.routes = list(plan.routes)
        self.route_index = {r.name: i for i, r in enumerate(self.routes)}
        self.scrambler_of = {
            r.name: r.protection.scrambler.group
            for r in self.routes
            if r.protection is not None and r.protection.scrambler is not None
        }
        keys = {}
        for group in receivers:
            for block in job.blocks(group):
                if self.placement.host(job, group, block.index) == self.host:
                    first = self.offsets[group]
                    for node in range(first + block.start, first + block.stop):
                        keys[node] = self.sealer.node_public(node)
        return {"nodes": keys}

    def run(self, group: str, schemas: dict[int, codec.Schema]) -> dict[str, Any]:
        """Run ``group``'s program on this host's blocks; queue the frames they emit."""
        from crowdhide.engine.backend import report_of
        from crowdhide.engine.program import split, step

        self.schemas.update(schemas)
        job = self.job
        inbox, handles = self._decode(group)
        reports: list[Any] = []
        tags: dict[int, list[Any]] = defaultdict(list)
        emitted: dict[int, Any] = {}
        for block in job.blocks(group):
            if self.placement.host(job, group, block.index) != self.host:
                continue
            result = step(job.plan, block, inbox.pop(block.index, []), seed=job.seed)
            for batch in result.batches:
                size = job.plan.group(batch.receiver).size
                for rb, part in split(batch, size, job.block_size):
                    peer = self.placement.host(job, batch.receiver, rb)
                    emitted.update(self._encode(part, peer, tags))
            reports.append(report_of(job, result, self.offsets))
        log = {peer: np.asarray(t, dtype=np.int64).reshape(-1, 4) for peer, t in tags.items()}
        return {"reports": reports, "schemas": emitted, "log": log, "handles": handles}

    def _decode(self, group: str) -> tuple[dict[int, list[Any]], dict[int, tuple[int, int, int]]]:
        """Decrypt the frames addressed to ``group``; rebuild one batch part per sender block."""
        first = self.offsets[group]
        last = first + self.job.plan.group(group).size
        keep, parts = [], defaultdict(list)
        for item in self.inbox:
            head = fr.unpack_header(item[0])
            if first <= head.dst < last:
                parts[(head.batch, head.mode, head.block)].append((head, item))
            else:
                keep.append(item)
        self.inbox = keep
        inbox: dict[int, list[Any]] = defaultdict(list)
        handles: dict[int, tuple[int, int, int]] = {}
        size = self.job.block_size
        for (r, mode, sender_block), items in parts.items():
            # Message order of a part: its index, within each receiver block.
            items.sort(key=lambda x: ((x[0].dst - first) // size, x[0].index))
            for rb, batch in _rebuild(self, group, r, mode, sender_block, items, handles):
                inbox[rb].append(batch)
        return inbox, handles

    def _encode(self, part: Any, peer: int, tags: dict[int, list[Any]]) -> dict[int, Any]:
        """Queue one frame per message of ``part`` for ``peer``; return its route's schema."""
        return _encode(self, part, peer, tags)


def _rebuild(
    host: Host,
    group: str,
    r: int,
    mode: int,
    sender_block: int,
    items: list[Any],
    handles: dict[int, tuple[int, int, int]],
) -> list[tuple[int, Any]]:
    """Batches (by receiver block) of one route and sender block from decrypted frames."""
    route = host.routes[r]
    kind = mode & 0x7F
    schema = host.schemas.get(r, ())
    dtype = codec.record_dtype(schema)
    offset = host.offsets[group]
    by_block: dict[int, list[Any]] = defaultdict(list)
    for head, (frame, peer, epoch, seq) in items:
        node = head.dst
        if kind == fr.ONION:
            plain, _ = host.sealer.open(node, head.origin, frame, fr.HEADER.size)
            src, order, forward = codec.unpack_fields(plain)
            handles[len(host.handles)] = (peer, epoch, seq)
            row: tuple[Any, ...] = (src, node - offset, order, len(host.handles), forward, None)
            host.handles.append((head.origin, plain[codec.FIELDS :]))
        else:
            if kind == fr.PLAIN:
                plain, _ = host.sealer.open(node, head.origin, frame, fr.HEADER.size)
                src, order, _ = codec.unpack_fields(plain)
                values = plain[codec.FIELDS :]
            else:
                src, order, _ = codec.unpack_fields(memoryview(frame)[fr.HEADER.size :])
                at = fr.HEADER.size + codec.FIELDS
                origin = codec.unpack_origin(frame, at)
                values, _ = host.sealer.open(node, origin, frame, at + codec.ORIGIN_BYTES)
            rows, records = codec.decode_values(values, dtype)
            if rows < 0:
                continue  # the target drops dummies after decryption
            row = (src, node - offset, order, rows, -1, records)
        by_block[(node - offset) // host.job.block_size].append(row)
    return [
        (rb, _batch(host, route, kind, mode, sender_block, rows_, schema, dtype))
        for rb, rows_ in by_block.items()
    ]


def _batch(
    host: Host,
    route: Any,
    kind: int,
    mode: int,
    sender_block: int,
    rows_: list[Any],
    schema: codec.Schema,
    dtype: Any,
) -> Any:
    from crowdhide.engine.messages import MessageBatch

    sender = host.scrambler_of[route.name] if kind == fr.FORWARD else route.sender
    receiver = host.scrambler_of[route.name] if kind == fr.ONION else route.receiver
    src, dst, order = (np.array([x[i] for x in rows_], dtype=np.int64) for i in range(3))
    if kind == fr.ONION:
        columns = {codec.HANDLE: np.array([x[3] for x in rows_], dtype=np.int64)}
        payload = np.arange(len(rows_), dtype=np.int64)
        forward: Any = np.array([x[4] for x in rows_], dtype=np.int64)
        rows_arr = None
    else:
        counts = np.array([x[3] for x in rows_], dtype=np.int64)
        payload = (np.cumsum(counts) - counts).astype(np.int64)
        columns = codec.columns_of(codec.concat([x[5] for x in rows_], dtype), schema)
        forward = None
        rows_arr = counts if mode & codec.MULTI else None
    return MessageBatch(
        route=route.name,
        round=host.levels[sender],
        sender=sender,
        receiver=receiver,
        block=sender_block,
        src=src,
        dst=dst,
        order=order,
        size=route.message_size,
        payload=payload,
        columns=columns,
        rows=rows_arr,
        forward=forward,
    )


def _encode(host: Host, part: Any, peer: int, tags: dict[int, list[Any]]) -> dict[int, Any]:
    from crowdhide.engine.messages import ORIGIN

    r = host.route_index[part.route]
    route = host.routes[r]
    if part.forward is not None:
        kind = fr.ONION
    elif part.sender != route.sender:
        kind = fr.FORWARD
    else:
        kind = fr.PLAIN
    mode = kind | (codec.MULTI if part.rows is not None else 0)
    schema = codec.schema_of(part.columns) if kind != fr.FORWARD else ()
    records = codec.table(part.columns, schema) if kind != fr.FORWARD else None
    origins = part.columns.get(ORIGIN)
    handle_col = part.columns.get(codec.HANDLE)
    dst_first = host.offsets[part.receiver]
    final_first = host.offsets[route.receiver]
    seal, frame_size = host.sealer, host.frame
    queue, log = host.outbox[peer], tags[peer]
    for i in range(len(part)):
        node = dst_first + int(part.dst[i])
        p = int(part.payload[i])
        rows = -1 if p < 0 else (int(part.rows[i]) if part.rows is not None else 1)
        handle = -1
        if kind == fr.FORWARD:
            fields = codec.pack_fields(int(part.src[i]), int(part.order[i]), 0)
            if p >= 0:
                handle = int(handle_col[p])
                origin, inner = host.handles[handle]
            else:  # the scrambler's own dummy, sealed for the target
                origin, inner = host.host, seal.seal(node, codec.encode_values(None, 0, -1))
            body = fields + codec.pack_origin(origin) + inner
        elif kind == fr.ONION:
            target = int(part.forward[i])
            inner = seal.seal(final_first + target, codec.encode_values(records, p, rows))
            fields = codec.pack_fields(int(part.src[i]), int(part.order[i]), target)
            body = seal.seal(node, fields + inner)
        else:
            fields = codec.pack_fields(int(part.src[i]), int(part.order[i]), 0)
            body = seal.seal(node, fields + codec.encode_values(records, p, rows))
        head = fr.HEADER.pack(fr.DATA, mode, r, host.host, part.block, node, i)
        length = len(head) + len(body)
        if length > frame_size:
            raise ValueError(
                f"frame_size must hold every message: route {part.route!r} needs {length} "
                f"bytes, got frame_size={frame_size}"
            )
        queue.append(head + body + bytes(frame_size - length))
        log.append((r, kind, int(origins[p]) if origins is not None and p >= 0 else -1, handle))
    return {r: schema} if kind != fr.FORWARD else {}


async def _serve(cfg: ctl.HostConfig) -> None:
    host = Host(dataclasses.asdict(cfg))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Link(host, outgoing=None),
        cfg.listen,
        0,
        ssl=host.contexts[0],
        ssl_handshake_timeout=cfg.handshake_timeout,
    )
    port = server.sockets[0].getsockname()[1]
    out = sys.stdout.buffer
    write_message(out, ctl.Hello(port=port, public=host.sealer.host_public))
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        msg = await read_message_async(reader)
        if msg is None or isinstance(msg, ctl.Stop):
            break
        write_message(out, await _dispatch(host, msg))
    server.close()
    for link in list(host.out.values()) + list(host.incoming.values()):
        link.drop()
    await server.wait_closed()
    write_message(out, ctl.Stopped(stats=dict(host.stats)))


async def _dispatch(host: Host, msg: Any) -> Any:
    if isinstance(msg, ctl.Connect):
        return ctl.Connected(**await host.connect(dict(msg.peers), msg.timeout))
    if isinstance(msg, ctl.LoadJob):
        from crowdhide.backends.tls.shipping import PlanRefusedError, load_job

        try:
            job, _, placement = load_job(msg, coordinator=host.cfg["coordinator"])
        except PlanRefusedError as exc:
            return ctl.JobRefused(error=str(exc))
        return ctl.JobLoaded(**host.set_job(job, list(msg.receivers), placement))
    if isinstance(msg, ctl.Learn):
        host.sealer.learn(hosts=dict(msg.hosts), nodes=dict(msg.nodes))
        return ctl.Learned()
    if isinstance(msg, ctl.Run):
        try:
            done = host.run(msg.group, dict(msg.schemas))
        except Exception as exc:  # a program error: report it, keep serving
            return ctl.RunFailed(error=f"{type(exc).__name__}: {exc}")
        return ctl.RunDone(
            reports=tuple(done["reports"]),
            schemas=done["schemas"],
            log=done["log"],
            handles=done["handles"],
        )
    if isinstance(msg, ctl.Flush):
        return ctl.Flushed(**await host.flush(msg.epoch, list(msg.alive), msg.deadline))
    if isinstance(msg, ctl.Blast):  # benchmark: queue `count` sealed frames for `peer`
        node = 1 << 30
        host.sealer.learn(hosts={}, nodes={node: host.sealer.node_public(node)})
        fields = codec.pack_fields(0, 0, 0) + codec.encode_values(None, 0, -1)
        queue = host.outbox[msg.peer]
        for i in range(msg.count):
            head = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, host.host, 0, node, i)
            body = host.sealer.seal(node, fields)
            queue.append(head + body + bytes(host.frame - len(head) - len(body)))
        return ctl.Blasted(queued=msg.count)
    if isinstance(msg, ctl.GetStats):
        return ctl.Stats(
            stats=dict(host.stats),
            up={p: not link.closed for p, link in host.out.items()},
            written={p: link.written for p, link in host.out.items()},
            written_in={p: link.written for p, link in host.incoming.items()},
        )
    raise ValueError(f"not an operation of a node host: {type(msg).__name__}")


def main() -> None:
    """Entry point: read the configuration from stdin, then serve until ``Stop``."""
    cfg = read_message(sys.stdin.buffer)
    if not isinstance(cfg, ctl.HostConfig):
        kind = type(cfg).__name__
        raise SystemExit(f"the first control message must be a HostConfig, got {kind}")
    asyncio.run(_serve(cfg))


if __name__ == "__main__":
    main()
