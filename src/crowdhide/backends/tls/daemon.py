"""A node daemon (``crowdhide node serve``): serves runs with its own keys and its own rows.

The unit of deployment: whoever owns a block of users' data runs one daemon. It uses only
what is in its state folder (``crowdhide node init``: TLS key, ``cert.pem`` signed by the
CA) and its own data file (:mod:`crowdhide.backends.tls.node_rows`: the source rows
``[first, first + n)`` it holds), and trusts only the CA certificate and the CA-signed
directory (:mod:`crowdhide.backends.tls.enrol`).

* **Who may connect.** Every TLS peer must present a certificate chaining to the CA whose
  SHA-256 fingerprint is a directory entry: an entry of role ``coordinator`` opens the
  *control* connection (typed messages of :mod:`crowdhide.backends.tls.control`, JSON plus
  raw buffers, never a pickle), an entry of role ``node`` a *frame* link
  (:class:`~crowdhide.backends.tls.host.Host`), and only under the id the directory gives
  it. A coordinator arriving while another's connection is served is told so in one typed
  message (:class:`~crowdhide.backends.tls.control.Busy`) and closed; anything else is
  dropped after the handshake, told nothing. Peers are dialled at the directory's
  addresses, never at addresses the coordinator names.
* **What it accepts.** A plan document signed with the key of the coordinator's certificate
  (:mod:`crowdhide.backends.tls.shipping`); the daemon fills in the rows of the source blocks
  the plan's placement gives it from its own file, and refuses a plan that places other
  rows on it, or that asks for a shared seed: a daemon keys its blocks' randomness
  (sampling, dummies, shuffles) with a 256-bit secret it draws per job and never sends.
* **What it tells the coordinator** (:class:`~crowdhide.backends.tls.control.Ran`): frames
  emitted and queued per peer, payload schemas, and the state of *result* blocks (the
  released output) — no block report, no real/dummy count, no origin, no ``used`` mask.
* **Stopping.** SIGTERM or SIGINT closes the listener and every link and returns; nothing
  is left behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import signal
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._validation import check_real
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.accept import HandshakeFailures, serve_tls
from crowdhide.backends.tls.enrol import (
    Directory,
    EnrolmentError,
    NodeEntry,
    check_address,
    load_directory,
)
from crowdhide.backends.tls.host import Host
from crowdhide.backends.tls.idle import GRACE, Expect, check_schedule, keep_alive
from crowdhide.backends.tls.links import Link, tls_contexts
from crowdhide.backends.tls.node_rows import NodeRows, check_domains
from crowdhide.backends.tls.placement import Placement
from crowdhide.errors import InvalidParameterError

__all__ = ["Daemon", "Identity", "serve"]

_LENGTH = struct.Struct("<Q")
#: Largest control message a daemon reads (a plan document, schemas, keys).
MAX_CONTROL = 1 << 28
#: Seconds a daemon reuses its measured frame costs (per frame size) before measuring again.
COSTS_FOR = 300.0
#: Seconds a coordinator turned away (:class:`~crowdhide.backends.tls.control.Busy`) has to
#: read why and close before the daemon cuts its connection.
TURN_AWAY = 10.0


@dataclass(frozen=True)
class Identity:
    """A daemon's own credentials (from ``--state``) and what it trusts."""

    node: int
    cert: Path
    key: Path
    ca: Path
    directory: Directory

    @classmethod
    def load(cls, state: Path, *, directory: Path, ca: Path, role: str = "node") -> Identity:
        """Read ``state`` (``node init`` + ``cert.pem``) and verify the directory; the node's
        certificate must be the one the directory lists for it under ``role``."""
        state = Path(state)
        try:
            node = int(json.loads((state / "card.json").read_text())["node"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EnrolmentError(
                f"--state {str(state)!r} holds no node card (crowdhide node init): {exc}"
            ) from None
        cert = state / "cert.pem"
        if not cert.is_file():
            raise EnrolmentError(
                f"--state {str(state)!r} has no cert.pem: copy there the certificate "
                f"`crowdhide net ca sign` issued for node {node}"
            )
        signed = load_directory(directory, ca=ca)
        entry = signed.entry(node)
        signed.check_peer(node, cert.read_bytes())
        if entry.role != role:
            raise EnrolmentError(f"the directory lists node {node} as a {entry.role}, not a {role}")
        return cls(node, cert, state / "tls.key", Path(ca), signed)

    def contexts(self) -> tuple[Any, Any]:
        """Server and client TLS contexts (TLS 1.3, certificates required both ways)."""
        cfg = {"cert": str(self.cert), "key": str(self.key), "ca": str(self.ca)}
        return tls_contexts(cfg)

    def entry_of(self, transport: asyncio.BaseTransport | None) -> NodeEntry | None:
        """The directory entry of the certificate presented on ``transport``."""
        der = _peer_der(transport)
        return None if der is None else self.directory.by_fingerprint(der)


def _peer_der(transport: asyncio.BaseTransport | None) -> bytes | None:
    if transport is None:
        return None
    tls = transport.get_extra_info("ssl_object")
    der = tls.getpeercert(binary_form=True) if tls is not None else None
    return bytes(der) if der else None


def public_key_der(certificate_der: bytes) -> bytes:
    """The DER SubjectPublicKeyInfo of a certificate (what plans are verified with)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key = x509.load_der_x509_certificate(certificate_der).public_key()
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


class _Door(asyncio.Protocol):
    """Every accepted connection: authenticated against the directory, then handed to a
    control connection (the coordinator) or to a frame link (another daemon)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.inner: asyncio.Protocol | None = None
        #: Cuts a turned-away coordinator's connection that is not closed in time.
        self.cut: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        daemon = self.daemon
        entry = daemon.identity.entry_of(transport)
        host, control = daemon.session, daemon.control
        if entry is not None and entry.role == "coordinator" and control is None:
            control = _Control(daemon, transport, entry)
            daemon.control = control
            self.inner = control
        elif entry is not None and entry.role == "coordinator" and control is not None:
            # An authorised coordinator is told why (its user would otherwise read the
            # refusal as this daemon's death); an unknown peer below learns nothing.
            busy = control.busy()
            daemon.refuse(
                transport,
                f"a second coordinator connection (id {entry.node}); told it this daemon "
                f"serves {busy.peer}",
            )
            self.cut = _turn_away(transport, busy)
        elif entry is not None and entry.role == "node" and host is not None:
            self.inner = Link(host, outgoing=None)
            self.inner.connection_made(transport)
        else:  # unknown certificate, or a peer outside a session
            if entry is None:
                why = "its certificate is not the directory's"
            else:
                why = f"node {entry.node} outside a run"
            daemon.refuse(transport, why)
            assert isinstance(transport, asyncio.Transport)
            transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self.cut is not None:
            self.cut.cancel()
        if self.inner is not None:
            self.inner.connection_lost(exc)


def _turn_away(
    transport: asyncio.BaseTransport, reply: ctl.Busy, timeout: float = TURN_AWAY
) -> asyncio.TimerHandle:
    """Write ``reply`` and close; cut the connection after ``timeout`` seconds if the
    coordinator has not closed its end by then. ``close()``, not ``abort()``: an abort drops
    what is not yet written, and closing a socket with unread input (the coordinator's
    ``Describe``) answers with a reset instead of an orderly end; ``close()`` sends the reply
    and the TLS close first and reads, and drops, what arrives until the coordinator closes."""
    assert isinstance(transport, asyncio.Transport)
    data = ctl.encode(reply)
    transport.write(_LENGTH.pack(len(data)) + data)
    transport.close()
    return asyncio.get_running_loop().call_later(timeout, transport.abort)


class _Control(asyncio.Protocol):
    """The coordinator's control connection: length-prefixed typed messages, answered in
    order by one worker task."""

    def __init__(self, daemon: Daemon, transport: asyncio.BaseTransport, entry: NodeEntry) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.daemon = daemon
        self.transport = transport
        der = _peer_der(transport)
        self.public = public_key_der(der) if der is not None else b""
        peer = transport.get_extra_info("peername")
        self.who = f"(id {entry.node}, {peer[0]}:{peer[1]})" if peer else f"(id {entry.node})"
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "an unknown address"
        self.opened = time.time()
        self.buffer = bytearray()
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.closed = False
        # Until its first message, a coordinator is expected within the setup wait.
        self.expect = Expect(grace_floor=daemon.idle_grace, at=time.monotonic())
        self.timer: asyncio.TimerHandle | None = None
        self.task = asyncio.get_running_loop().create_task(self._work())
        keep_alive(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= _LENGTH.size and not self.closed:
            (length,) = _LENGTH.unpack_from(self.buffer, 0)
            if length > MAX_CONTROL:
                self.transport.abort()
                return
            if len(self.buffer) < _LENGTH.size + length:
                return
            data_ = bytes(self.buffer[_LENGTH.size : _LENGTH.size + length])
            del self.buffer[: _LENGTH.size + length]
            try:
                message = ctl.decode(data_)
            except ctl.ControlError:
                self.transport.abort()  # garbage from the coordinator: end its session
                return
            if isinstance(message, ctl.Abandon):  # now, not after the request in hand
                self._finish(f"the coordinator abandoned the run ({message.reason or 'no reason'})")
                self.transport.close()  # the coordinator waits for this close
                return
            self._disarm()  # the coordinator spoke: the request in hand is ours to answer
            self.expect.heard(message, at=time.monotonic())
            self.queue.put_nowait(message)

    def busy(self) -> ctl.Busy:
        """What a second coordinator is told of this connection (:class:`_Door`)."""
        return ctl.Busy(
            peer=self.peer,
            since=self.opened,
            heard=time.monotonic() - self.expect.at,
            running=self.daemon.session is not None,
        )

    def _arm(self) -> None:
        """Give up on the coordinator if it sends nothing until its next message is due
        plus the grace (:class:`~crowdhide.backends.tls.idle.Expect`). Armed only while
        this daemon owes it nothing: its own slow work never counts against the
        coordinator."""
        self._disarm()
        limit = self.expect.limit(now=time.monotonic(), wall=time.time())
        self.timer = asyncio.get_running_loop().call_later(limit, self._idle)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _idle(self) -> None:
        """A coordinator silent past its due time and the grace is stopped (SIGSTOP),
        hung or cut off behind a live kernel (keepalive probes are still answered): drop
        its run and connection, and serve the next coordinator."""
        if self.closed or not self.queue.empty():
            return
        e = self.expect
        waited = time.monotonic() - e.at
        why = (
            f"the coordinator {self.who} sent nothing for {waited:.1f} s after its "
            f"{e.last} (the next was due {waited - e.grace:.1f} s after it, then "
            f"{e.grace:g} s of grace): it is stopped or stuck"
        )
        if self.daemon.session is None:
            print(f"node {self.daemon.node}: {why}; its connection is closed", file=sys.stderr)
        self._finish(why)
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish("the coordinator's connection closed during a run")

    def _finish(self, why: str) -> None:
        """End this coordinator's session once: cancel the request in hand, drop the run's
        state and links (logged with ``why`` if a run was live), free the daemon for the
        next coordinator. A coordinator killed outright (SIGKILL) gets here through
        :meth:`connection_lost`, its kernel closing the socket; one whose machine vanished
        through TCP keepalive (:func:`~crowdhide.backends.tls.idle.keep_alive`)."""
        if self.closed:
            return
        self.closed = True
        self._disarm()
        self.task.cancel()
        daemon = self.daemon
        if daemon.control is self:
            daemon.control = None
            if daemon.session is not None:
                print(f"node {daemon.node}: {why}; its state is dropped", file=sys.stderr)
            daemon.end_session()

    async def _work(self) -> None:
        while not self.closed:
            message = await self.queue.get()
            try:
                reply = await self.daemon.dispatch(message, self.public)
            except Exception as exc:  # a bug here must not leave the coordinator waiting
                reply = ctl.RunFailed(error=f"node {self.daemon.node}: {type(exc).__name__}: {exc}")
            if not self.closed:
                data = ctl.encode(reply)
                self.transport.write(_LENGTH.pack(len(data)) + data)
                if self.queue.empty():
                    self._arm()


class Daemon:
    """One node daemon (see the module docstring)."""

    def __init__(self, identity: Identity, rows: NodeRows, *, idle_grace: float = GRACE) -> None:
        self.identity = identity
        #: Least seconds past a coordinator's due message before its run is dropped.
        self.idle_grace = check_real("idle_grace", idle_grace, low=0.1, high=3600.0)
        self.rows = rows
        self.node = identity.node
        self.session: Host | None = None
        self.control: _Control | None = None
        self.refused = 0
        #: Incoming TLS handshakes that failed (another CA, expired, garbage, timeout), per
        #: remote address since the daemon started; each logged on standard error.
        self.handshake_failures = HandshakeFailures(f"node {self.node}")
        self.costs: dict[int, tuple[float, dict[str, tuple[float, float]]]] = {}
        self.stopping = asyncio.Event()
        self.plan_digest = ""
        from crowdhide.backends.tls.shipping import Signer

        self.signer = Signer.from_pem(identity.key)

    async def run(self, listen: tuple[str, int], ready: Callable[[int], None]) -> None:
        """Serve until SIGTERM/SIGINT (or :attr:`stopping` is set); ``ready(port)`` once
        listening."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        server_ctx, _ = self.identity.contexts()
        try:
            server = await serve_tls(
                lambda: _Door(self),
                listen[0],
                listen[1],
                server_ctx,
                timeout=10.0,
                failed=self.handshake_failures.failed,
                reuse_address=True,
            )
        except OSError as exc:  # address in use, or not one of this machine's
            raise InvalidParameterError(
                f"--listen {listen[0]}:{listen[1]}: cannot listen there ({exc.strerror or exc})",
                parameter="listen",
            ) from None
        try:
            ready(int(server.sockets[0].getsockname()[1]))
            await self.stopping.wait()
        finally:
            server.close()
            self.end_session()
            if self.control is not None:
                self.control.transport.abort()
            await asyncio.wait_for(server.wait_closed(), 10.0)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    def refuse(self, transport: asyncio.BaseTransport | None, why: str) -> None:
        """Count a refused peer and name it in one line on standard error (the operator's
        log): its address and why; never anything it sent."""
        self.refused += 1
        peer = transport.get_extra_info("peername") if transport is not None else None
        where = f"{peer[0]}:{peer[1]}" if peer else "an unknown address"
        print(f"node {self.node}: refused a connection from {where}: {why}", file=sys.stderr)

    def end_session(self) -> None:
        """Drop the session's links (the daemon keeps listening)."""
        host, self.session = self.session, None
        if host is not None:
            for link in list(host.out.values()) + list(host.incoming.values()):
                link.drop()

    def _peer_ok(self, claimed: int, transport: asyncio.BaseTransport) -> bool:
        entry = self.identity.entry_of(transport)
        ok = entry is not None and entry.role == "node" and entry.node == claimed
        if not ok:
            self.refuse(transport, f"a link claiming node {claimed} under another certificate")
        return ok

    async def dispatch(self, message: Any, coordinator: bytes) -> Any:
        """The reply to one control message of the coordinator."""
        if isinstance(message, ctl.Describe):
            return await self._describe(message.frame, fresh=message.fresh)
        if isinstance(message, ctl.Prepare):
            return self._prepare(message)
        host = self.session
        if host is None:
            return ctl.RunFailed(error=f"{type(message).__name__} outside a session")
        if isinstance(message, ctl.Link):
            entries = {p: self.identity.directory.entry(p) for p in message.peers}
            peers = {p: check_address(e.address) for p, e in entries.items()}
            return ctl.Connected(**await host.connect(peers, message.timeout))
        if isinstance(message, ctl.LoadJob):
            return self._load(host, message, coordinator)
        if isinstance(message, ctl.Learn):
            return self._learn(host, message)
        if isinstance(message, ctl.Run):
            reply = self._run(host, message)
            if message.reply_at is not None and isinstance(reply, ctl.Ran):
                # Answer at the scheduled time, whatever the work; past it is an overrun.
                wait = message.reply_at - time.time()
                await asyncio.sleep(max(0.0, wait))
                reply = dataclasses.replace(reply, late=max(0.0, -wait))
            return reply
        if isinstance(message, ctl.Flush):
            done = await host.flush(
                message.epoch, list(message.alive), message.deadline, message.start, message.ack_at
            )
            return ctl.Flushed(**done)
        if isinstance(message, ctl.EndRun):
            self.end_session()
            return ctl.Ended()
        return ctl.RunFailed(error=f"not an operation of a node daemon: {type(message).__name__}")

    async def _describe(self, frame: int, *, fresh: bool = False) -> Any:
        """Rows held and, for a frame size in range, this machine's measured frame costs
        (about 0.3 s of sealing in a worker thread when not fresh or when ``fresh`` asks for
        a new figure: the loop keeps serving links)."""
        from crowdhide.backends.tls import codec

        if not 0 <= frame <= codec.MAX_FRAME:
            return ctl.RunFailed(error=f"frame size {frame} outside 0..{codec.MAX_FRAME}")
        costs = await self._frame_costs(frame, fresh=fresh) if frame else {}
        return ctl.Described(
            node=self.node,
            first=self.rows.first,
            rows=self.rows.count,
            costs=costs,
            failed_handshakes=dict(self.handshake_failures.counts),
        )

    async def _frame_costs(
        self, frame: int, *, fresh: bool = False
    ) -> dict[str, tuple[float, float]]:
        """This machine's frame costs, measured at most every :data:`COSTS_FOR` seconds per
        frame size: a run's setup need not pay 0.3 s of sealing when the figure is fresh,
        and a sustained change of load is still seen by the next run after that."""
        from crowdhide.backends.tls import workload

        measured, costs = self.costs.get(frame, (-math.inf, {}))
        if fresh or time.monotonic() - measured > COSTS_FOR:
            costs = await asyncio.to_thread(workload.frame_costs, frame)
            self.costs[frame] = (time.monotonic(), costs)
        return costs

    def _prepare(self, message: ctl.Prepare) -> Any:
        self.end_session()
        hosts = len(self.identity.directory.nodes)
        if message.hosts != hosts:
            return ctl.RunFailed(error=f"the directory lists {hosts} nodes, not {message.hosts}")
        wrong = check_schedule(message.rounds, message.deadline)
        if wrong is not None:
            return ctl.RunFailed(error=f"node {self.node}: {wrong}")
        cfg = {
            "host": self.node,
            "hosts": hosts,
            "frame": message.frame,
            "cert": str(self.identity.cert),
            "key": str(self.identity.key),
            "ca": str(self.identity.ca),
            "coordinator": b"",
        }
        host = Host(cfg)
        host.peer_check = self._peer_ok
        self.session = host
        return ctl.Prepared()

    def _load(self, host: Host, message: ctl.LoadJob, coordinator: bytes) -> Any:
        from crowdhide.backends.tls.shipping import PlanRefusedError, load_job, verify

        try:
            verify(coordinator, message.plan, message.signature)
            document = json.loads(message.plan)
            placement = Placement(**document["placement"])
            if not placement.ranges:
                raise InvalidParameterError(
                    "the plan's placement gives no node its rows", parameter="placement"
                )
            rows = self.rows.parts(document, placement.ranges[self.node])
            check_domains(document, rows, self.rows.digests)
            job, plan_digest, placement, shared = load_job(
                dataclasses.replace(message, rows=rows), coordinator=coordinator
            )
            if shared:  # the coordinator picks the seed: it could replay this node's draws
                raise InvalidParameterError(
                    "a node daemon keys its blocks with its own secret randomness; "
                    "a plan asking for a shared seed is refused",
                    parameter="run.randomness",
                    value="shared",
                )
            # Only result groups publish their state: a plan asking for more is refused.
            roles = {g.name: g.role for g in job.plan.groups}
            if any(roles.get(name) != "result" for name in job.keep):
                raise InvalidParameterError(
                    f"the plan asks for the state of {sorted(job.keep)}",
                    parameter="run.keep",
                    value=sorted(job.keep),
                )
        except PlanRefusedError as exc:
            return ctl.JobRefused(error=str(exc))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            return ctl.JobRefused(error=f"node {self.node} refused the plan: {exc}")
        nodes = host.set_job(job, list(message.receivers), placement)["nodes"]
        self.plan_digest = plan_digest
        statement = ctl.key_statement(plan_digest, self.node, nodes)
        return ctl.JobLoaded(nodes=nodes, signature=self.signer.sign(statement))

    def _learn(self, host: Host, message: ctl.Learn) -> Any:
        """Learn the nodes' sealing keys only as each daemon signed them (the coordinator
        relays them and could otherwise swap one for its own)."""
        from crowdhide.backends.tls.shipping import PlanRefusedError, verify

        nodes: dict[int, bytes] = {}
        for h in range(host.hosts):
            if h not in message.signed:
                return ctl.RunFailed(error=f"no signed sealing keys of node {h}")
            keys, signature = message.signed[h]
            public = self._public_of(host, h)
            try:
                verify(public, ctl.key_statement(self.plan_digest, h, keys), signature)
            except PlanRefusedError:
                return ctl.RunFailed(error=f"the sealing keys of node {h} are not signed by it")
            nodes.update(keys)
        host.sealer.learn(hosts={}, nodes=nodes)
        return ctl.Learned()

    def _public_of(self, host: Host, h: int) -> bytes:
        """The public key of daemon ``h``'s certificate (checked against the directory when
        its link came up; this daemon's own from ``cert.pem``)."""
        if h == self.node:
            from cryptography import x509
            from cryptography.hazmat.primitives import serialization

            cert = x509.load_pem_x509_certificate(self.identity.cert.read_bytes())
            return public_key_der(cert.public_bytes(serialization.Encoding.DER))
        link = host.out.get(h)
        der = _peer_der(link.transport if link is not None else None)
        return public_key_der(der) if der is not None else b""

    def _run(self, host: Host, message: ctl.Run) -> Any:
        try:
            groups = (message.group, *message.also)
            done = host.run_all(groups, dict(message.schemas), message.epoch)
        except Exception as exc:  # a program error: report it, keep serving
            return ctl.RunFailed(error=f"{type(exc).__name__}: {exc}")
        where = host.placement.node_hosts(host.job)
        emitted = np.zeros(host.hosts, dtype=np.int64)
        released = []
        for report in done["reports"]:
            for _, _, _, dst, _ in report.traffic:
                emitted += np.bincount(where[np.asarray(dst, dtype=np.int64)], minlength=host.hosts)
            if report.state is not None:
                released.append(ctl.Released(report.block.group, report.block.index, report.state))
        return ctl.Ran(
            schemas=done["schemas"],
            queued=done["queued"],
            emitted={h: int(n) for h, n in enumerate(emitted) if n},
            released=tuple(released),
        )


def serve(
    *,
    listen: str,
    state: Path,
    data: Path,
    directory: Path,
    ca: Path,
    ready: Callable[[str], None] = print,
    idle_grace: float = GRACE,
) -> None:
    """Load the daemon's identity and rows, then serve until SIGTERM/SIGINT.
    ``idle_grace``: least seconds past a coordinator's due message before the daemon
    drops its run (:mod:`crowdhide.backends.tls.idle`)."""
    idle_grace = check_real("--idle-grace", idle_grace, low=0.1, high=3600.0)
    address = check_address(listen)
    identity = Identity.load(state, directory=directory, ca=ca)
    rows = NodeRows.load(data)

    async def main() -> None:
        daemon = Daemon(identity, rows, idle_grace=idle_grace)

        def say(port: int) -> None:
            ready(
                f"node {identity.node} listening on {address[0]}:{port} "
                f"(rows {rows.first}..{rows.first + rows.count - 1})"
            )

        await daemon.run(address, say)

    asyncio.run(main())
