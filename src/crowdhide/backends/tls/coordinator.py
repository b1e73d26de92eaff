"""The coordinator of a deployment: schedules runs on running node daemons, knows little.

:class:`Coordinator` implements the engine's backend contract like
:class:`~crowdhide.backends.tls.backend.TlsBackend`, but starts nothing: it dials every
daemon of the signed directory (:mod:`crowdhide.backends.tls.daemon`) over mutual TLS with
its own enrolled certificate (role ``coordinator``), checks each daemon's certificate
against the directory, and signs the plan document with its own key. Sources' rows never
pass through it: each daemon reads its own.

What it learns, per daemon and round (:class:`~crowdhide.backends.tls.control.Ran`,
:class:`~crowdhide.backends.tls.control.Flushed`): frames emitted, queued, received,
claimed and refused per link, acknowledgements, lateness, liveness, and the state of the
result blocks (the released output). The block reports it hands the engine therefore
carry no traffic, no message counters, no ``used`` mask and no state but the result's:
the run's transcript is empty and its route counters are zero, and the report says the
coordinator does not observe them.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import ssl
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crowdhide._validation import check_real
from crowdhide.backends.tls import codec, workload
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls._signals import Terminated, interrupted, release_sigterm, trap_sigterm
from crowdhide.backends.tls.daemon import Identity
from crowdhide.backends.tls.enrol import check_address
from crowdhide.backends.tls.idle import REPLY_SLACK, SETUP_WAIT, reply_wait
from crowdhide.backends.tls.placement import Placement
from crowdhide.backends.tls.rounds import (
    Ledger,
    LedgerViews,
    program_failed,
    receiving_groups,
    refuse_oversized,
)
from crowdhide.engine.backend import BlockReport, Job
from crowdhide.errors import InvalidParameterError, NodeFailureError

__all__ = ["Coordinator", "NodeGoneError"]

_LENGTH = struct.Struct("<Q")
_MAX_REPLY = 1 << 30


class NodeGoneError(ConnectionError):
    """A daemon's control connection closed, timed out or carried garbage."""


class _Conn:
    """The control connection to one daemon (blocking TLS socket, deadlines on reads)."""

    def __init__(self, node: int, sock: ssl.SSLSocket) -> None:
        self.node = node
        self.sock = sock
        self.buffer = bytearray()
        self.alive = True

    def send(self, message: Any) -> None:
        data = ctl.encode(message)
        try:
            self.sock.settimeout(30.0)
            self.sock.sendall(_LENGTH.pack(len(data)) + data)
        except OSError as exc:
            raise NodeGoneError(f"node {self.node}: {exc}") from None

    def _read(self, size: int) -> bytes:
        """Bytes from the daemon (every byte the coordinator receives passes here)."""
        return self.sock.recv(size)

    def _fill(self, need: int, deadline: float) -> None:
        while len(self.buffer) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NodeGoneError(f"node {self.node} did not answer in time")
            if not self.sock.pending():
                ready, _, _ = select.select([self.sock], [], [], left)
                if not ready:
                    continue
            try:
                chunk = self._read(max(65536, need - len(self.buffer)))
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            except OSError as exc:
                raise NodeGoneError(f"node {self.node}: {exc}") from None
            if not chunk:
                raise NodeGoneError(f"node {self.node} closed its control connection")
            self.buffer += chunk

    def recv(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.0)
        self._fill(_LENGTH.size, deadline)
        (length,) = _LENGTH.unpack_from(self.buffer, 0)
        if length > _MAX_REPLY:
            raise NodeGoneError(f"node {self.node} sent a {length}-byte reply")
        self._fill(_LENGTH.size + length, deadline)
        data = bytes(self.buffer[_LENGTH.size : _LENGTH.size + length])
        del self.buffer[: _LENGTH.size + length]
        try:
            return ctl.decode(data)
        except ctl.ControlError as exc:
            raise NodeGoneError(f"node {self.node}: {exc}") from None

    def wait_closed(self, deadline: float) -> None:
        """Read and drop what the daemon still sends until it closes (or ``deadline``)."""
        self.sock.settimeout(0.0)
        while (left := deadline - time.monotonic()) > 0:
            if not self.sock.pending():
                ready, _, _ = select.select([self.sock], [], [], left)
                if not ready:
                    return
            try:
                if not self._read(65536):
                    return
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            except OSError:
                return

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.close()


class Coordinator(LedgerViews):
    """Engine backend running a job on the node daemons of a signed directory.

    Parameters
    ----------
    directory, ca
        The CA-signed directory (``crowdhide net directory``) and the CA certificate.
    state
        The coordinator's own state folder (``crowdhide node init --role coordinator``,
        plus its ``cert.pem``): its key signs the plan and authenticates it to the daemons.
    on_missing, deadline, round_seconds, placement, frame_size
        As for :class:`~crowdhide.backends.tls.backend.TlsBackend`.
    connect_timeout
        Seconds to reach a daemon (TCP and TLS handshake).
    """

    name = "tls"

    def __init__(
        self,
        *,
        directory: Path,
        ca: Path,
        state: Path,
        on_missing: str = "fail",
        deadline: float = 10.0,
        round_seconds: float | None = None,
        placement: str = "spread",
        frame_size: int | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        from crowdhide.backends.tls.shipping import Signer

        self.identity = Identity.load(state, directory=directory, ca=ca, role="coordinator")
        self.entries = self.identity.directory.nodes
        self.hosts = len(self.entries)
        if [e.node for e in self.entries] != list(range(self.hosts)):
            ids = [e.node for e in self.entries]
            raise InvalidParameterError(
                f"directory: node daemons must have ids 0..{self.hosts - 1}, got {ids}",
                parameter="directory",
            )
        if on_missing not in ("fail", "report"):
            raise InvalidParameterError(
                f"on_missing must be 'fail' or 'report', got {on_missing!r}",
                parameter="on_missing",
                value=on_missing,
            )
        self.on_missing = on_missing
        self.deadline = check_real("deadline", deadline, low=0.1, high=3600.0)
        self.connect_timeout = check_real("connect_timeout", connect_timeout, low=0.1, high=600.0)
        self._given_rounds(round_seconds)
        self._frame_arg = frame_size
        self.frame = 256 if frame_size is None else int(frame_size)
        self.placement = Placement(hosts=self.hosts, rule=placement)
        self.signer = Signer.from_pem(self.identity.key)
        self.ledger = Ledger(on_missing=on_missing, slowest=self._slowest)
        self.conns: dict[int, _Conn] = {}
        self.ranges: tuple[tuple[int, int], ...] = ()
        #: Failed incoming TLS handshakes each daemon counted before this run, per address.
        self.failed_handshakes: dict[int, dict[str, int]] = {}
        self._job: Job | None = None
        self._schemas: dict[int, Any] = {}
        self._closed = False
        self._sigterm_trapped = False
        self._where = ""
        #: Longest seconds each daemon took to answer a message of this round (names the
        #: late daemon of an overrun: a stopped, cut off or throttled node).
        self._answered: dict[int, float] = {}

    # -- connections ---------------------------------------------------------------------
    def _dial(self, node: int) -> _Conn:
        _, client = self.identity.contexts()
        ip, port = check_address(self.entries[node].address)
        try:
            raw = socket.create_connection((ip, port), timeout=self.connect_timeout)
        except OSError as exc:
            raise NodeFailureError(
                f"node {node} ({self.entries[node].address}) is unreachable: {exc}"
            ) from None
        try:
            sock = client.wrap_socket(raw, server_hostname=f"host{node}")
        except (OSError, ssl.SSLError) as exc:
            raw.close()
            raise NodeFailureError(
                f"node {node} ({self.entries[node].address}): TLS handshake failed: {exc}"
            ) from None
        der = sock.getpeercert(binary_form=True)
        entry = self.identity.directory.by_fingerprint(der) if der else None
        if entry is None or entry.node != node or entry.role != "node":
            sock.close()
            raise NodeFailureError(
                f"node {node} ({self.entries[node].address}) presented a certificate that "
                f"is not the signed directory's"
            )
        return _Conn(node, sock)

    def _all(self, make: Callable[[int], Any], timeout: float = SETUP_WAIT) -> dict[int, Any]:
        """Send ``make(h)`` to every live daemon, then read every reply; a daemon that does
        not answer is dead (counted in the ledger, named in the report). The daemons mirror
        these waits (:mod:`~crowdhide.backends.tls.idle`): a healthy one never gives up on
        a coordinator that is waiting for a late one."""
        sent = []
        for h, conn in self.conns.items():
            if not conn.alive:
                continue
            try:
                conn.send(make(h))
                sent.append(h)
            except NodeGoneError:
                self._bury(h)
        replies: dict[int, Any] = {}
        began = time.monotonic()
        deadline = began + timeout
        pending = set(sent)
        while pending:
            # Read replies as they arrive (not in node order), so that each daemon's answer
            # time is its own: an overrun names the daemon that made the round late.
            for h in self._arrived(pending, deadline):
                pending.discard(h)
                try:
                    replies[h] = self.conns[h].recv(max(0.1, deadline - time.monotonic()))
                except NodeGoneError:
                    self._bury(h)
                    continue
                took = time.monotonic() - began
                self._answered[h] = max(took, self._answered.get(h, 0.0))
            if pending and time.monotonic() >= deadline:
                for h in sorted(pending):
                    self._bury(h)
                pending.clear()
        return replies

    def _arrived(self, pending: set[int], deadline: float) -> list[int]:
        """The daemons of ``pending`` whose reply has begun to arrive (waits until one has,
        or until ``deadline``)."""
        conns = {h: self.conns[h] for h in sorted(pending)}
        ready = [h for h, c in conns.items() if c.buffer or c.sock.pending()]
        if ready:
            return ready
        left = deadline - time.monotonic()
        if left <= 0:
            return []
        try:
            readable, _, _ = select.select([c.sock for c in conns.values()], [], [], left)
        except (OSError, ValueError):  # a socket closed under us: let recv say which
            return list(conns)
        return [h for h, c in conns.items() if c.sock in readable]

    def _bury(self, node: int) -> None:
        self.conns[node].close()
        self.ledger.dead.add(node)

    def _expect(self, replies: dict[int, Any], kind: type, what: str) -> None:
        """Raise one line unless every daemon answered ``kind``: daemons serving another
        coordinator first (:meth:`_turned_away`), then dead nodes (named with their
        addresses), then refusals."""
        busy = {h: r for h, r in replies.items() if isinstance(r, ctl.Busy)}
        if busy or len(replies) < self.hosts:
            self._where = what
        if busy:
            raise NodeFailureError(self._turned_away(busy, dead=len(replies) < self.hosts))
        if len(replies) < self.hosts:
            raise NodeFailureError(self.failure_text())
        bad = {
            h: getattr(r, "error", None) or getattr(r, "failed", None) or type(r).__name__
            for h, r in replies.items()
            if not isinstance(r, kind)
        }
        if bad:
            raise NodeFailureError(f"{what} failed: {bad}")

    def _turned_away(self, busy: dict[int, ctl.Busy], *, dead: bool) -> str:
        """One line for daemons that refused this coordinator (:class:`~.control.Busy`,
        their first and only message): each named with why, then any that died. Their
        connections are closed here: they close their ends and expect nothing more."""
        for h in busy:
            self.conns[h].close()
        told = [
            f"{self._name(h)} refused this coordinator: {r.why()}" for h, r in sorted(busy.items())
        ]
        if any(r.running is True for r in busy.values()):
            advice = "wait for that run to end or restart the daemon"
        else:  # a coordinator gone quiet, or a close still on its way: the idle timeout ends it
            advice = "wait for that connection to end (a daemon drops a silent coordinator) or "
            advice += "restart the daemon"
        advice += "s" if len(busy) > 1 else ""
        return "; ".join([*told, self.failure_text(advice=advice) if dead else advice])

    # -- backend contract ----------------------------------------------------------------
    def open(self, job: Job) -> None:
        """Reach every daemon, agree the placement on their rows, ship the signed plan."""
        from crowdhide.backends.tls.shipping import ship_job
        from crowdhide.engine.document import plan_document

        if self.conns:
            raise InvalidParameterError(
                "a Coordinator runs one job; create a new one for another run", parameter="job"
            )
        plan = job.plan
        plan_document(plan)  # a program that is not named: one line, before any connection
        results = [g.name for g in plan.groups if g.role == "result"]
        job = Job(plan=plan, seed=job.seed, block_size=job.block_size, keep=frozenset(results))
        self._job = job
        if self._frame_arg is None:
            self.frame = codec.frame_for(plan)
        # From here SIGTERM unwinds the run like Ctrl-C: close() tells the daemons to
        # abandon it and the CLI exits 143 with one line (the default would kill us mute).
        self._sigterm_trapped = trap_sigterm()
        try:
            for h in range(self.hosts):
                self.conns[h] = self._dial(h)
            self._where = "setup"
            # Each daemon measures its own frame costs only if the round length is ours to set.
            ask = ctl.Describe(frame=self.frame if self._round_arg is None else 0)
            described = self._all(lambda h: ask)
            self._expect(described, ctl.Described, "describing the nodes")
            self.ranges = tuple(
                (described[h].first, described[h].first + described[h].rows)
                for h in range(self.hosts)
            )
            self.failed_handshakes = {
                h: dict(r.failed_handshakes) for h, r in described.items() if r.failed_handshakes
            }
            self._check_ranges(job)
            self.placement = Placement(
                hosts=self.hosts, rule=self.placement.rule, ranges=self.ranges
            )
            self.placement.check(job)
            if self._round_arg is None:
                self.ledger.rounds, self.round_basis = self._round_length(job, described)
            else:
                self.ledger.rounds = workload.given_schedule(plan, self._round_arg)
            self.ledger.closes = workload.closes_before(plan)  # as the schedule's rounds
            self.round_schedule = tuple(r.length for r in self.ledger.rounds)
            self.round_seconds = self.ledger.longest or self._round_arg
            self._setup(job, ship_job)
        except BaseException:
            self.close()
            raise

    def _round_length(self, job: Job, described: dict[int, Any]) -> tuple[Any, str]:
        """The default schedule (one round length per round): the plan's worst-case work
        per host under this placement, at the slowest daemon's measured frame costs (never
        the data's).

        The daemon that sets it is named in the basis; one whose figures are more than
        :data:`~crowdhide.backends.tls.workload.OUTLIER_FACTOR` times the others' median is
        asked once for a fresh figure (every daemon re-measures at the same moment: a
        passing load spike on a shared machine made an honest daemon 65x its peers) and
        refused if it stays an outlier (a broken or lying daemon would otherwise stall
        every round)."""
        measured = self._costs(described)
        node, factor = workload.outlier(measured)
        again = ""
        if factor > workload.OUTLIER_FACTOR:
            ask = ctl.Describe(frame=self.frame, fresh=True)
            fresh = self._all(lambda h: ask)
            measured |= self._costs({h: r for h, r in fresh.items() if h in measured})
            first, (node, factor) = factor, workload.outlier(measured)
            again = f"; re-measured after {first:g}x"
        if factor > workload.OUTLIER_FACTOR:
            raise NodeFailureError(
                f"{self._name(node)} measured frame costs {factor:g}x the other daemons' "
                f"median{again} ({dict(measured[node])}): its figure would set every round's "
                f"length; check that machine, or give --round-seconds"
            )
        costs = workload.slowest(measured.values())
        rounds, basis = workload.round_schedule(job, self.placement, costs=costs)
        slowest = f"the slowest daemon measured ({self._name(node)}"
        slowest += f", {factor:g}x the others' median{again})" if len(measured) > 1 else ")"
        return rounds, basis.replace("measured as the run began", slowest)

    def _costs(self, described: dict[int, Any]) -> dict[int, Any]:
        """Each daemon's frame costs from its ``Described`` reply; a reply that is not one,
        or whose figures are not valid costs, is refused naming the daemon."""
        for h, reply in described.items():
            if not isinstance(reply, ctl.Described):
                raise NodeFailureError(f"{self._name(h)} did not describe itself: {reply!r}")
            try:
                workload.slowest([reply.costs])
            except InvalidParameterError as exc:
                raise NodeFailureError(f"{self._name(h)} described itself wrongly: {exc}") from None
        return {h: reply.costs for h, reply in described.items()}

    def _check_ranges(self, job: Job) -> None:
        covered = sorted(self.ranges)
        sizes = {g.size for g in job.plan.groups if g.role == "source"}
        total = sizes.pop() if len(sizes) == 1 else None
        tiled = all(a[1] == b[0] for a, b in itertools.pairwise(covered))
        if total is None or covered[0][0] != 0 or covered[-1][1] != total or not tiled:
            raise InvalidParameterError(
                f"the nodes' rows {list(self.ranges)} must tile the plan's {total} sources "
                f"(each daemon's --data: its rows first..first+n-1)",
                parameter="data",
            )

    def _setup(self, job: Job, ship_job: Any) -> None:
        plan = job.plan
        # The schedule tells each daemon when this coordinator speaks next (idle timeout).
        prepare = ctl.Prepare(
            frame=self.frame,
            hosts=self.hosts,
            rounds=tuple(r.length for r in self.ledger.rounds or ()),
            deadline=self.deadline,
        )
        prepared = self._all(lambda h: prepare)
        self._expect(prepared, ctl.Prepared, "starting the session")
        linked = self._all(
            lambda h: ctl.Link(peers=tuple(range(self.hosts)), timeout=self.connect_timeout),
            timeout=self.connect_timeout + REPLY_SLACK,
        )
        self._expect(linked, ctl.Connected, "linking the nodes")
        failed = {h: r.failed for h, r in linked.items() if r.failed}
        if failed:
            raise NodeFailureError(f"links between nodes failed to come up: {failed}")
        receivers = receiving_groups(plan)
        message = ship_job(
            job,
            self.signer,
            placement=self.placement.to_json(),
            owns=None,
            receivers=tuple(receivers),
        )
        loaded = self._all(lambda h: message)
        self._expect(loaded, ctl.JobLoaded, "loading the plan")
        signed = {h: (dict(r.nodes), r.signature) for h, r in loaded.items()}
        learned = self._all(lambda h: ctl.Learn(hosts={}, nodes={}, signed=signed))
        self._expect(learned, ctl.Learned, "distributing the nodes' keys")

    def run_group(self, group: str) -> list[BlockReport]:
        """Run one group (:meth:`run_groups`)."""
        return self.run_groups([group])

    def run_groups(self, names: Sequence[str]) -> list[BlockReport]:
        """Close the open round if ``names`` (one level of the plan: they exchange nothing)
        need its frames (:meth:`Ledger.closes_before
        <crowdhide.backends.tls.rounds.Ledger.closes_before>`), run them on every daemon,
        one ``Run`` in their program window; the reports carry the released state of
        result blocks only."""
        job = self._job
        assert job is not None
        group, *also = names
        label = " or ".join(names)
        if self.ledger.closes_before(names):
            self._close_round()
        epoch = self.ledger.epoch + 1
        self._where = f"group {label!r} (round {epoch})"
        reply_at = self.ledger.reply_at()
        run_at = self.ledger.run_at()
        if run_at is not None:  # the request leaves at a scheduled time, as the answers do
            time.sleep(max(0.0, run_at - time.time()))
        run = ctl.Run(
            group=group, schemas=self._schemas, epoch=epoch, reply_at=reply_at, also=tuple(also)
        )
        replies = self._all(lambda h: run, timeout=reply_wait(self.ledger.longest, self.deadline))
        errors = {
            h: getattr(r, "error", type(r).__name__)
            for h, r in replies.items()
            if not isinstance(r, ctl.Ran)
        }
        if errors:
            refuse_oversized(errors)  # a parameter error, even after a death
            if self.ledger.dead:  # what arrived after a death was not enough to go on
                self._where = f"the run (group {label!r} then failed on what arrived: {errors})"
                raise NodeFailureError(self.failure_text(advice="nothing was released"))
            raise program_failed(label, errors, self._name)
        reports = self._released(job, names, replies)
        counts = {h: (reply.emitted, reply.queued) for h, reply in replies.items()}
        self.ledger.ran_group(job, names, self.placement, counts)
        self.ledger.check_replies([r.late for r in replies.values()])
        self._check()
        results = [g for g in names if job.plan.group(g).role == "result"]
        if len(reports) < sum(len(job.blocks(g)) for g in results):
            # Even with --on-missing report: without the result there is nothing to report.
            raise NodeFailureError(
                self.failure_text(advice="the result was not released: nothing to report")
            )
        return reports

    def _released(
        self, job: Job, names: Sequence[str], replies: dict[int, Any]
    ) -> list[BlockReport]:
        """The result blocks' states the daemons released (a daemon releasing any other
        group's state is refused)."""
        reports = []
        for h, reply in replies.items():
            self._schemas.update(reply.schemas)
            for out in reply.released:
                if out.group not in names or job.plan.group(out.group).role != "result":
                    raise NodeFailureError(f"node {h} released the state of {out.group!r}")
                block = job.blocks(out.group)[out.block]
                reports.append(BlockReport(block, (), {}, {}, dict(out.state)))
        return reports

    def _check(self) -> None:
        if self.on_missing == "fail" and self.ledger.missing:
            raise NodeFailureError(self.failure_text())

    def failure_text(self, advice: str = "rerun with --on-missing report to keep the rest") -> str:
        """One line: which nodes died (id and address) and what was lost."""
        m = self.ledger.missing
        dead = ", ".join(f"node {h} ({self.entries[h].address})" for h in m.dead_hosts)
        parts = [f"{dead} died during {self._where}"] if dead else []
        if m.messages:
            links = {f"{a}->{b}": n for (a, b), n in sorted(m.links.items())}
            parts.append(f"{m.messages} frames lost (per link {links})")
        if m.lost_blocks:
            parts.append(f"{len(m.lost_blocks)} blocks not run")
        if m.suspects:
            parts.append(f"suspect nodes {list(m.suspects)}")
        return "; ".join([*parts, advice])

    def _name(self, node: int) -> str:
        return f"node {node} ({self.entries[node].address})"

    def _slowest(self) -> str:
        """How long each daemon took to answer this round, slowest first (a stopped or cut
        off daemon answers last; a throttled link slows both of its ends)."""
        if not self._answered:
            return "no daemon answered"
        order = sorted(self._answered, key=lambda n: -self._answered[n])
        took = ", ".join(
            f"node {h} ({self.entries[h].address}) {self._answered[h]:.1f} s" for h in order
        )
        return f"the daemons answered this round after: {took}"

    def _close_round(self) -> None:
        """Close the round (an overrun names the daemons by answer time, see the ledger's
        ``slowest``: a late start names the answers to the previous ``Run``)."""

        def broadcast(flush: ctl.Flush, timeout: float) -> dict[int, Any]:
            self._answered = {}
            return self._all(lambda h: flush, timeout=timeout)

        self.ledger.close_round(
            broadcast,
            alive=[h for h, c in self.conns.items() if c.alive],
            deadline=self.deadline,
        )

    def close(self) -> None:
        """End the session on every live daemon and close the connections (idempotent).

        Closing on a Ctrl-C or SIGTERM (or a SIGTERM while closing politely) abandons the
        run: :meth:`_abandon`, then the signal goes on unwinding (exit 130 or 143)."""
        if self._closed:
            return
        self._closed = True
        stop = interrupted()
        late: Terminated | None = None
        if stop is None:
            try:
                self._end_politely()
            except Terminated as exc:
                stop = late = exc
        self._sigterm_trapped = release_sigterm(self._sigterm_trapped)
        if stop is not None:
            self._abandon(getattr(stop, "reason", "interrupted (Ctrl-C)"))
        for conn in self.conns.values():
            conn.close()
        if late is not None:  # the process was asked to end: it does, once nothing is left
            raise late

    def _end_politely(self) -> None:
        """``EndRun`` to every live daemon, each answer awaited in turn."""
        for conn in [c for c in self.conns.values() if c.alive]:
            try:
                conn.send(ctl.EndRun())
                conn.recv(10.0)
            except NodeGoneError:
                pass

    def _abandon(self, reason: str, timeout: float = 3.0) -> None:
        """Tell every live daemon to drop the run now (:class:`~.control.Abandon`: it does
        not finish the request in hand, which may wait out a round) and wait, sharing one
        ``timeout``, until each closed its end: a daemon that does not is left to notice
        the closed connection."""
        live = [c for c in self.conns.values() if c.alive]
        for conn in live:
            with contextlib.suppress(NodeGoneError, Terminated):
                conn.send(ctl.Abandon(reason=reason))
        deadline = time.monotonic() + timeout
        for conn in live:
            with contextlib.suppress(NodeGoneError, Terminated, ValueError):
                conn.wait_closed(deadline)

    def __enter__(self) -> Coordinator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        """What the coordinator knows of the deployment (for the report)."""
        return {
            "nodes": {e.node: e.address for e in self.entries},
            "rows": {h: list(r) for h, r in enumerate(self.ranges)},
            "observed": "per-link frame counts, acknowledgements, liveness, released outputs",
            "failed_handshakes": {
                h: dict(sorted(c.items())) for h, c in sorted(self.failed_handshakes.items())
            },
        }
