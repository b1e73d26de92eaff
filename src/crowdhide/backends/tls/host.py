"""A node-host process: runs the node programs of its blocks and talks mutual TLS 1.3.

Started by the driver (:class:`crowdhide.backends.tls.backend.TlsBackend`) as
``python -m crowdhide.backends.tls.host``; it reads its configuration and commands from stdin and
answers on stdout (typed messages, :mod:`crowdhide.backends.tls.control`). It listens on its
configured address (127.0.0.1 by default) and opens one TLS link to every host of the run
(itself included, so every message crosses a socket; :mod:`crowdhide.backends.tls.links`).

* **Peers.** A peer is accepted only if its certificate chains to the run's CA (checked by
  ``ssl``) *and* its DNS name is ``host<i>`` for the id ``i`` it claims in its welcome
  frame; a link is up only once the server's welcome frame came back (in TLS 1.3 a client
  whose certificate is rejected may believe the handshake succeeded).
* **Programs.** ``run`` executes the program of one group on every block this host serves
  (the signed plan's placement, :mod:`crowdhide.backends.tls.placement`) with
  :func:`crowdhide.engine.program.step`, on the messages decrypted from the frames it
  received, and queues the messages they emit as frames
  (:mod:`crowdhide.backends.tls.outgoing`); dummies are dropped after decryption,
  except at scramblers, which cannot tell them and see opaque handles instead of payloads.
* **Frames** are opened on arrival (epoch, duplicate and validity checks, counted per link
  when refused) whether they carry a real message or a dummy.
* **Rounds.** ``flush`` waits for the round's scheduled start, seals the queued messages in
  a shuffled order (one HPKE context per link and round, :mod:`crowdhide.backends.tls.frames`),
  writes them (one TLS record per frame, handed over in batches), then an ``END`` frame per
  link with the count;
  the receiver answers ``ACK`` at the round's scheduled middle and reports what it got.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import ssl
import struct
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from crowdhide.backends.tls import codec, hpke
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls._control import (
    end_with_driver,
    read_message,
    read_message_async,
    write_message,
)
from crowdhide.backends.tls.accept import HandshakeFailures, serve_tls
from crowdhide.backends.tls.inbox import Inbox, Keys, Onions, inner_key
from crowdhide.backends.tls.links import Link, peer_names, tls_contexts
from crowdhide.backends.tls.outgoing import inner_aad, queue_blank, queue_part
from crowdhide.backends.tls.received import parcels, stripped
from crowdhide.errors import InvalidParameterError

__all__ = ["main"]


#: Frames sealed and handed to a link's transport at once.
_SEND_CHUNK = 2048
_FIELDS = struct.Struct("<IIIii")  # codec.pack_fields: epoch, index, src, order, forward


class Host:
    """State of one node host (see the module docstring)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.host = int(cfg["host"])
        self.hosts = int(cfg["hosts"])
        self.frame = int(cfg["frame"])
        self.values = codec.values_bytes(self.frame)
        # Sealed body length (after the link context's enc) by mode.
        plain = codec.FIELDS + self.values + hpke.TAG
        onion = plain + codec.inner_bytes(self.values) - self.values
        self.body_lengths = {fr.PLAIN: plain, fr.ONION: onion, fr.FORWARD: onion}
        self.lengths: dict[int, set[int]] = {}
        self.sealer = fr.Sealer(host=self.host)
        self.contexts = tls_contexts(cfg)
        self.out: dict[int, Link] = {}
        self.incoming: dict[int, Link] = {}
        # Accepted data frames (route, mode, sender block, node, index, src, order, forward,
        # payload: an inner body at a scrambler, the values block elsewhere; dummies at a
        # target are dropped once parsed) and the keys that detect repeats, held compactly.
        self.inbox = Inbox()
        self.keys = Keys()
        self.rejected: dict[int, dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(("invalid", "stale", "duplicate", "garbage"), 0)
        )
        self.claims: dict[tuple[int, int], int] = {}
        self.ack_at: float | None = None
        self.pending_acks: list[tuple[Link, bytes]] = []
        self.late = 0.0
        # Inner bodies held by this host's scramblers by handle, until forwarded (then
        # dropped: a round's onions would otherwise stay in memory for the whole run).
        self.onions = Onions()
        # Queued (header, plaintext) per peer; sealed per link and round at the flush.
        self.outbox: dict[int, list[tuple[bytes, bytes]]] = defaultdict(list)
        self.sealed: dict[int, list[tuple[bytes, bytes]]] = {}  # shuffled, last sent first
        # Per sending host: data frames received in its current round (their positions in
        # the round's context), the epoch of its last END (frames now arriving belong to the
        # next one), and the last round closed without its END (epoch, count reported then).
        self.recv_count: dict[int, int] = defaultdict(int)
        self.recv_epochs: dict[int, int] = defaultdict(int)
        self.missed: dict[int, tuple[int, int]] = {}
        self.ends: dict[tuple[int, int], int] = {}
        self.acks: dict[tuple[int, int], int] = {}
        self.schemas: dict[int, codec.Schema] = {}
        self.job: Any = None
        # This host's key for its blocks' randomness (see set_job); never sent anywhere.
        self.secret: int | None = None
        self.stats = dict.fromkeys(
            ("handshakes", "refused", "duplicate_identity", "frames_in", "frames_out"), 0
        )
        #: Incoming TLS handshakes that failed, per remote address (the host's server).
        self.handshake_failures = HandshakeFailures(f"host {self.host}")
        self.changed = asyncio.Event()
        #: Extra authentication of a peer claiming id ``i`` on a transport (node daemons:
        #: its certificate must be the one the signed directory lists for ``i``).
        self.peer_check: Callable[[int, asyncio.BaseTransport], bool] | None = None

    # -- frames --------------------------------------------------------------------------
    def on_frame(self, link: Link, frame: bytes) -> None:
        kind = frame[0]
        if not link.outgoing and link.peer is None:
            self._welcome_incoming(link, fr.unpack_control(frame))
            return
        peer = link.peer
        assert peer is not None
        if kind == fr.WELCOME and link.outgoing:
            head = fr.unpack_control(frame)
            ok = head.origin == peer and head.magic == fr.WELCOME_MAGIC
            if not link.welcomed.done():
                link.welcomed.set_result(ok)
        elif kind == fr.DATA and not link.outgoing:
            self.on_data(link, [frame])
        elif kind == fr.END and not link.outgoing:
            head = fr.unpack_control(frame)
            got = self.recv_count.pop(peer, 0)
            # The END names its round: frames after it belong to the next, however many
            # rounds were closed here without it (never counted twice, see _close_round).
            self.recv_epochs[peer] = max(self.recv_epochs[peer], head.epoch)
            missed = self.missed.get(peer, (0, 0))
            if head.epoch > missed[0]:
                self.ends[(peer, head.epoch)] = got
                self.claims[(peer, head.epoch)] = head.count
            else:  # a late END of a round already closed: its frames were reported lost
                got = missed[1] if head.epoch == missed[0] else 0
            ack = fr.pack_control(
                fr.ACK, epoch=head.epoch, count=got, origin=self.host, size=self.frame
            )
            if self.ack_at is not None and time.time() < self.ack_at:
                self.pending_acks.append((link, ack))  # acknowledged at the round's end
            else:
                if self.ack_at is not None:  # an END after the round's end: an overrun
                    self.late = max(self.late, time.time() - self.ack_at)
                link.write(ack)
        elif kind == fr.ACK and link.outgoing:
            head = fr.unpack_control(frame)
            self.acks[(peer, head.epoch)] = head.count
        else:  # garbage, or a frame in the wrong direction: name the peer, drop its link
            self.rejected[peer]["garbage"] += 1
            link.drop()
            return
        self.changed.set()

    def on_data(self, link: Link, frames: list[bytes]) -> None:
        """Consecutive data frames of an incoming link: open them on arrival (one AEAD
        call each in the link's context); keep a frame only if it is new and of this epoch.

        Frames that do not open (forged, misdirected, reordered, garbage), carry another
        epoch (replayed or late: they were reported lost in their own epoch) or repeat a
        message or an inner body already received (duplicated or replayed) are dropped and
        counted per link, so the driver can name the host that sent them.
        """
        from cryptography.exceptions import InvalidTag

        peer = link.peer
        assert peer is not None
        epoch, seq = self.recv_epochs[peer] + 1, self.recv_count[peer]
        self.recv_count[peer] = seq + len(frames)
        # Frames of a round closed without its END were reported lost: refused as stale.
        closed = epoch <= self.missed.get(peer, (0, 0))[0]
        self.stats["frames_in"] += len(frames)
        plains = self.sealer.open_frames(peer, epoch, seq, frames, self.body_lengths)
        rejected, keep, inbox = self.rejected[peer], self.keys.add, self.inbox
        unpack, forwarded, onion = _FIELDS.unpack_from, fr.FORWARD, fr.ONION
        for frame, plain in zip(frames, plains, strict=True):
            if plain is None:
                rejected["invalid"] += 1
                continue
            _, mode, r, block, dst = fr.HEADER.unpack_from(frame, 0)
            sent, index, src, order, forward = unpack(plain, 0)
            inner = plain[codec.FIELDS :]
            # A message is its header, epoch and index (a frame re-sealed by its sender
            # under another position opens, and is a duplicate); an inner body its key.
            # Repeats are refused when the round closes (Keys.settle), before any use.
            key = frame[: fr.HEADER.size] + plain[:8]
            keys: tuple[bytes, ...] = (key,)
            if mode & 0x7F == forwarded:
                try:
                    keys = (key, inner_key(inner))
                    inner = self.sealer.open(dst, inner, inner_aad(r, dst))
                except (InvalidTag, ValueError, KeyError):
                    rejected["invalid"] += 1
                    continue
            if sent != epoch or closed:
                rejected["stale"] += 1
                continue
            self.opened(mode & 0x7F, plain)
            if len(keys) > 1:
                self.opened(-1, inner)
            if mode & 0x7F != onion and codec.rows_of(inner) < 0:
                inbox.dummy(dst)  # a target drops a dummy once decrypted and parsed
                keep(peer, -1 - dst, *keys)
            else:
                # A values block is kept without its zero padding (restored when decoded).
                kept = inner if mode & 0x7F == onion else stripped(inner)
                slot = inbox.add((r, mode, block, dst, index, src, order, forward), kept)
                keep(peer, slot, *keys)
        self.changed.set()

    def settle(self) -> None:
        """Refuse the frames accepted since the last call that repeat an earlier frame's
        message or inner body (counted per link as duplicates; see :class:`Keys`)."""
        # The least epoch a frame of any host could still be accepted in (both only grow):
        # the message keys of earlier epochs are checked, then forgotten.
        floor = min(
            max(self.recv_epochs.get(h, 0), self.missed.get(h, (0, 0))[0]) + 1
            for h in range(self.hosts)
        )
        for peer, slot in self.keys.settle(floor):
            self.rejected[peer]["duplicate"] += 1
            self.inbox.refuse(slot)

    def _welcome_incoming(self, link: Link, head: fr.Control) -> None:
        assert link.transport is not None
        names = peer_names(link.transport.get_extra_info("peercert"))
        claimed = head.origin
        if (
            head.kind != fr.WELCOME
            or head.magic != fr.WELCOME_MAGIC
            or claimed >= self.hosts
            or f"host{claimed}" not in names
            or (claimed in self.incoming and not self.incoming[claimed].closed)
            or (self.peer_check is not None and not self.peer_check(claimed, link.transport))
        ):
            # A second link under an existing identity is refused too (it would replace
            # the first); it is counted apart so the driver can name it.
            if f"host{claimed}" in names and claimed in self.incoming:
                self.stats["duplicate_identity"] += 1
            # Wrong frame, or a CA-signed certificate naming another host: refuse, deliver nothing.
            self.stats["refused"] += 1
            link.drop()
            return
        if claimed in self.incoming:  # a new link after the old one closed: a fresh count
            self.recv_count.pop(claimed, None)
            missed = self.missed.get(claimed, (0, 0))[0]
            self.recv_epochs[claimed] = max(self.recv_epochs[claimed], missed)
        link.peer = claimed
        self.incoming[claimed] = link
        link.write(fr.pack_control(fr.WELCOME, epoch=0, count=0, origin=self.host, size=self.frame))
        self.changed.set()

    # -- links and rounds ----------------------------------------------------------------
    async def connect(self, peers: dict[int, tuple[str, int]], timeout: float) -> dict[str, Any]:
        client = self.contexts[1]
        loop = asyncio.get_running_loop()

        async def one(peer: int, address: tuple[str, int]) -> str | None:
            try:
                _, link = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: Link(self, outgoing=peer),
                        address[0],
                        address[1],
                        ssl=client,
                        server_hostname=f"host{peer}",
                    ),
                    timeout,
                )
                check = self.peer_check
                if check is not None and (
                    link.transport is None or not check(peer, link.transport)
                ):
                    link.drop()
                    return "its certificate is not the signed directory's"
                link.write(
                    fr.pack_control(fr.WELCOME, epoch=0, count=0, origin=self.host, size=self.frame)
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

    async def flush(
        self,
        epoch: int,
        alive: list[int],
        deadline: float,
        start: float | None = None,
        ack_at: float | None = None,
    ) -> dict[str, Any]:
        """One round on the wire; report what arrived.

        With a schedule (``start``, ``ack_at``: wall-clock times from the driver) the queued
        frames leave at ``start`` — not when this host finished processing — in a random
        order per link (independent of which are real), then an ``END`` per link; ENDs are
        acknowledged at ``ack_at``, the round's end, however early they arrived. A host that
        reaches ``start`` late, or an END after ``ack_at``, is an overrun (``late``, seconds).
        """
        self.late = 0.0
        if start is not None:
            wait = start - time.time()
            if wait > 0:
                await asyncio.sleep(wait)
            else:
                self.late = -wait
        # Sealed in the window (the work depends on the frame counts only, which the wire
        # shows anyway): the shuffle and the link's sequence numbers are fixed together.
        self._seal_outbox(epoch)
        self.ack_at = ack_at
        await self._send_window(epoch)
        if ack_at is not None:
            await self._acknowledge(ack_at)
        result = await self._close_round(epoch, alive, deadline)
        result["late"] = self.late
        return result

    def _seal_outbox(self, epoch: int) -> None:
        """Fix every link's order for the round, shuffled (the order on the wire says
        nothing about which are real); :meth:`_send_window` seals them in that order, one
        HPKE context per link and round, a chunk at a time as it writes them (sealed all
        at once, a scrambler host would hold every frame of the round twice over)."""
        for peer in list(self.outbox):
            queued = self.outbox.pop(peer)  # freed link by link
            order = fr.secure_order(len(queued)).tolist()
            items = [queued[i] for i in order]
            del queued
            items.reverse()  # popped from the end: sent in the shuffled order
            self.sealed[peer] = items

    async def _send_window(self, epoch: int) -> None:
        """Every queued frame per link, sealed and written a chunk at a time (waiting while
        the link's transport holds more than its high-water mark), then the link's END."""
        for peer, link in self.out.items():
            queued = self.sealed.pop(peer, [])
            if link.closed:
                continue
            count = len(queued)
            if queued:
                enc, context = self.sealer.link_context(peer, epoch)
            while queued and not link.closed:
                chunk = [queued.pop() for _ in range(min(_SEND_CHUNK, len(queued)))]
                link.writelines(fr.frames_of(enc, context, chunk, self.frame))
                self.stats["frames_out"] += len(chunk)
                del chunk
                await link.drained()  # let the loop drain (and read) while others flush
            link.write(
                fr.pack_control(fr.END, epoch=epoch, count=count, origin=self.host, size=self.frame)
            )
        self.sealed.clear()

    async def _acknowledge(self, ack_at: float) -> None:
        """Wait for the ENDs until the round's end, then acknowledge them all at once."""
        await asyncio.sleep(max(0.0, ack_at - time.time()))
        self.ack_at = None  # later ENDs are acknowledged on arrival (and counted as late)
        for link, ack in self.pending_acks:
            if not link.closed:
                link.write(ack)
        self.pending_acks.clear()

    async def _close_round(self, epoch: int, alive: list[int], deadline: float) -> dict[str, Any]:
        key = epoch
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
            # Without an END (peer died, link dropped, or late), what arrived so far is what
            # counts; the frames still to come of this round are refused as stale, and its
            # END, if it comes, moves the link to the next round (on_frame).
            got = self.ends.pop((p, key), None)
            if got is None:
                # The frames arriving now are this round's only if the last END is the
                # previous round's (a peer late by more than a round sent none of this one).
                got = self.recv_count[p] if self.recv_epochs[p] + 1 == key else 0
                if key > self.missed.get(p, (0, 0))[0]:
                    self.missed[p] = (key, got)
            received[p] = got
        acked = {p: self.acks.pop((p, key), None) for p in self.out}
        claimed = {p: self.claims.pop((p, key), None) for p in alive}
        # Answers of rounds now closed that came too late to count (or from dead peers).
        for table in (self.acks, self.ends, self.claims):
            for stale in [k for k in table if k[1] <= key]:
                del table[stale]
        self.settle()
        rejected = {p: dict(c) for p, c in self.rejected.items() if any(c.values())}
        self.rejected.clear()
        return {"received": received, "acked": acked, "claimed": claimed, "rejected": rejected}

    # -- programs ------------------------------------------------------------------------
    def set_job(
        self, job: Any, receivers: list[str], placement: Any, *, shared_seed: bool = False
    ) -> dict[str, Any]:
        """Keep the job; draw this host's secret randomness key (unless the run shares its
        seed); create the X25519 keys of the receiving nodes this host serves."""
        self.job = job
        # 256 bits from the OS CSPRNG, held in this process only: the blocks it runs are keyed
        # with it, so no one else (coordinator, driver, other hosts) can replay their
        # sampling, dummies or shuffles from the plan's seed.
        self.secret = None if shared_seed else secrets.randbits(256)
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
        keys = {fr.link_node(self.host): self.sealer.link_public()}
        for group in receivers:
            for block in job.blocks(group):
                if self.placement.host(job, group, block.index) == self.host:
                    first = self.offsets[group]
                    for node in range(first + block.start, first + block.stop):
                        keys[node] = self.sealer.node_public(node)
        return {"nodes": keys}

    def run(self, group: str, schemas: dict[int, codec.Schema], epoch: int) -> dict[str, Any]:
        """Run ``group``'s program on this host's blocks; queue the frames they emit for
        ``epoch`` (the round in which they will be sent)."""
        from crowdhide.engine.backend import report_of
        from crowdhide.engine.program import split, step

        self.schemas.update(schemas)
        job = self.job
        self.settle()  # repeats are never used (counted at the next round's close)
        inbox = self._decode(group)
        reports: list[Any] = []
        emitted: dict[int, Any] = {}
        for block in job.blocks(group):
            if self.placement.host(job, group, block.index) != self.host:
                continue
            parts = inbox.pop(block.index, [])
            result = step(job.plan, block, parts, seed=job.seed, secret=self.secret)
            for batch in result.batches:
                size = job.plan.group(batch.receiver).size
                for rb, part in split(batch, size, job.block_size):
                    peer = self.placement.host(job, batch.receiver, rb)
                    emitted.update(queue_part(self, part, peer, epoch))
            reports.append(report_of(job, result, self.offsets))
        queued = {peer: len(q) for peer, q in self.outbox.items()}
        return {"reports": reports, "schemas": emitted, "queued": queued}

    def run_all(
        self, groups: Sequence[str], schemas: dict[int, codec.Schema], epoch: int
    ) -> dict[str, Any]:
        """:meth:`run` each of ``groups`` in order (the groups of one level, one ``Run``):
        their reports and payload schemas together, the queue after the last."""
        done: dict[str, Any] = {"reports": [], "schemas": {}, "queued": {}}
        for group in groups:
            one = self.run(group, schemas, epoch)
            done["reports"].extend(one["reports"])
            done["schemas"].update(one["schemas"])
            done["queued"] = one["queued"]
        return done

    def _decode(self, group: str) -> dict[int, list[Any]]:
        """One parcel per route, sender block and receiver block of the frames accepted for
        ``group`` (opened on arrival, see :meth:`on_data`), decoded when the program loads
        it (:func:`crowdhide.backends.tls.received.parcels`)."""
        first = self.offsets[group]
        last, size = first + self.job.plan.group(group).size, self.job.block_size
        data, parts = self.inbox.take(first, last, size)
        return parcels(self, group, data, parts)

    def opened(self, mode: int, plain: bytes) -> None:
        """Record the length of a decrypted body (the wire tests read them from ``stats``)."""
        self.lengths.setdefault(mode, set()).add(len(plain))


async def _serve(cfg: ctl.HostConfig) -> None:
    host = Host(dataclasses.asdict(cfg))
    loop = asyncio.get_running_loop()
    server = await serve_tls(
        lambda: Link(host, outgoing=None),
        cfg.listen,
        0,
        host.contexts[0],
        timeout=cfg.handshake_timeout,
        failed=host.handshake_failures.failed,  # logged on this host's standard error
    )
    port = server.sockets[0].getsockname()[1]
    out = sys.stdout.buffer
    write_message(out, ctl.Hello(port=port))
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
    stats = {**host.stats, "failed_handshakes": host.handshake_failures.total}
    write_message(out, ctl.Stopped(stats=stats))


async def _dispatch(host: Host, msg: Any) -> Any:
    if isinstance(msg, ctl.Connect):
        return ctl.Connected(**await host.connect(dict(msg.peers), msg.timeout))
    if isinstance(msg, ctl.LoadJob):
        from crowdhide.backends.tls.shipping import PlanRefusedError, load_job

        try:
            job, _, placement, shared = load_job(msg, coordinator=host.cfg["coordinator"])
        except PlanRefusedError as exc:
            return ctl.JobRefused(error=str(exc))
        keys = host.set_job(job, list(msg.receivers), placement, shared_seed=shared)
        return ctl.JobLoaded(**keys)
    if isinstance(msg, ctl.Learn):
        host.sealer.learn(hosts=dict(msg.hosts), nodes=dict(msg.nodes))
        return ctl.Learned()
    if isinstance(msg, ctl.Run):
        try:
            done = host.run_all((msg.group, *msg.also), dict(msg.schemas), msg.epoch)
        except Exception as exc:  # a program error: report it, keep serving
            return ctl.RunFailed(error=f"{type(exc).__name__}: {exc}")
        return ctl.RunDone(
            reports=tuple(done["reports"]), schemas=done["schemas"], queued=done["queued"]
        )
    if isinstance(msg, ctl.Flush):
        flushed = await host.flush(msg.epoch, list(msg.alive), msg.deadline, msg.start, msg.ack_at)
        return ctl.Flushed(**flushed)
    if isinstance(msg, ctl.Blast):  # benchmark: queue `count` plain frames for `peer`
        return ctl.Blasted(queued=queue_blank(host, msg.peer, msg.count))
    if isinstance(msg, ctl.GetStats):
        return ctl.Stats(
            stats={**host.stats, "failed_handshakes": host.handshake_failures.total},
            up={p: not link.closed for p, link in host.out.items()},
            written={p: link.written for p, link in host.out.items()},
            written_in={p: link.written for p, link in host.incoming.items()},
            opened_lengths={m: tuple(sorted(v)) for m, v in host.lengths.items()},
            failed_handshakes=dict(host.handshake_failures.counts),
        )
    raise InvalidParameterError(
        f"not an operation of a node host: {type(msg).__name__}",
        parameter="message",
        value=type(msg).__name__,
    )


def main() -> None:
    """Entry point: read the configuration from stdin, then serve until ``Stop``."""
    end_with_driver()  # a killed driver's hosts stop at once, not after their round
    cfg = read_message(sys.stdin.buffer)
    if not isinstance(cfg, ctl.HostConfig):
        kind = type(cfg).__name__
        raise SystemExit(f"the first control message must be a HostConfig, got {kind}")
    asyncio.run(_serve(cfg))


if __name__ == "__main__":
    main()
