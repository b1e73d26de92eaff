"""The ``tls`` backend: node programs run in node-host processes linked by mutual TLS 1.3.

:class:`TlsBackend` implements the engine's backend contract (``open(job)``,
``run_group(group)``, ``close()``; see :mod:`crowdhide.engine.backend`). Blocks are placed on
hosts by :class:`~crowdhide.backends.tls.placement.Placement` (default ``"spread"``); each
host runs :func:`crowdhide.engine.program.step` on its blocks and sends every emitted
message — real or dummy — as one fixed-size frame to the host of the receiving block,
sealed end to end for the receiving node (:mod:`crowdhide.backends.tls.frames`,
:mod:`crowdhide.backends.tls.codec`). A host receives the job restricted to its blocks
(:meth:`TlsBackend.job_for`): the source rows of the nodes it serves, no other user's data.
The driver only sequences rounds and collects the blocks' reports (observer view, counters, kept
states), as from the local backend. Each host keys its blocks' randomness with a secret it
draws itself (``shared_seed=False``, the default), so a run is not reproducible from its
seed; ``shared_seed=True`` keys them by the seed as the local backend does — the same result
and transcript for the same seed and block size, and every host can replay the others' draws.

Delivery is accounted per round and link: ``run_group`` first closes the previous round —
every host writes its queued frames and an ``END`` frame per link, the receiver acknowledges
and reports the count it got. Frames queued on a dead host, addressed to a dead host or lost
on a dropped link are counted per link (:class:`MissingReport`), or the run fails
(``on_missing="fail"``). The driver learns counts only: no frame tells it which source a
message came from or whether it was real.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int, check_real
from crowdhide.backends.tls import codec
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls._control import Channel, ChildGoneError, write_message
from crowdhide.backends.tls._signals import Terminated, release_sigterm, trap_sigterm
from crowdhide.backends.tls.placement import Placement
from crowdhide.backends.tls.rounds import (
    Ledger,
    LedgerViews,
    LinkFailureError,
    MissingContributionsError,
    MissingReport,
    program_failed,
    receiving_groups,
)
from crowdhide.backends.tls.schedule import longest
from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "MissingContributionsError",
    "MissingReport",
    "Terminated",
    "TlsBackend",
    "WireView",
    "host_of_block",
]

IntArray = npt.NDArray[np.int64]
_NO_RECORDS: IntArray = np.zeros((0, 7), dtype=np.int64)


#: Frame costs ``(seal, open)`` in seconds that bound the first Run's wait when the round
#: length is given and no cost is measured: 10x those measured here on loaded cores (link
#: 5e-5 s, inner body 1.6e-3 s to seal), so a busy host is not taken for a hung one. Only a
#: hung host waits this long: one that dies closes its pipe and is found at once.
_UNMEASURED_COSTS = {"link": (5e-4, 5e-4), "inner": (2e-2, 1e-2)}


def host_of_block(block: int, hosts: int) -> int:
    """The node map: host serving block ``block`` of any group.

    Examples
    --------
    >>> [host_of_block(b, 3) for b in range(5)]
    [0, 1, 2, 0, 1]
    """
    return block % hosts


@dataclass(frozen=True)
class WireView:
    """The on-path observer's view recorded by the relay: one row per TLS record.

    ``records`` columns: link initiator host, link acceptor host, connection number,
    direction (0 = initiator → acceptor), TLS content type, record length, time (ns).
    """

    records: IntArray = field(repr=False)

    def link_counts(self, *, length: int, hosts: int) -> IntArray:
        """``(hosts, hosts)`` counts of initiator→acceptor records of exactly ``length`` bytes."""
        r = self.records
        mask = (r[:, 3] == 0) & (r[:, 4] == 23) & (r[:, 5] == length)
        out = np.zeros((hosts, hosts), dtype=np.int64)
        np.add.at(out, (r[mask, 0], r[mask, 1]), 1)
        return out


@dataclass
class _Proc:
    proc: subprocess.Popen[bytes]
    channel: Channel
    log: Path
    alive: bool = True


def _env() -> dict[str, str]:
    import crowdhide

    # The driver's own import path: the hosts run the same crowdhide (and program registry).
    src = str(Path(crowdhide.__file__).resolve().parents[1])
    paths = [src, os.getcwd(), *[p for p in sys.path if p and os.path.isdir(p)]]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class TlsBackend(LedgerViews):
    """Engine backend running ``hosts`` node-host processes linked by mutual TLS 1.3.

    Parameters
    ----------
    hosts
        Number of node-host processes (blocks placed by ``placement``).
    pki
        Directory written by :func:`crowdhide.backends.tls.pki.make_pki` (default: a fresh one in a
        temporary directory, removed at :meth:`close`).
    frame_size
        Bytes of every frame; default: derived from the plan at :meth:`open`
        (:func:`~crowdhide.backends.tls.codec.frame_for`), 256 for :meth:`start` alone.
    deadline
        Seconds a round may take before missing links are declared lost.
    on_missing
        ``"fail"`` raises :class:`MissingContributionsError`; ``"report"`` records the loss in
        :attr:`missing` and continues with what arrived.
    observe
        Route every link through a relay process recording TLS records (:meth:`wire`).
    placement
        ``"spread"`` (default: small groups — scramblers, compute, result — on different
        hosts) or ``"modulo"`` (block ``b`` on host ``b mod H``); see
        :mod:`crowdhide.backends.tls.placement`.
    netns
        One ``(network namespace, IP address)`` per host: host ``h`` runs inside namespace
        ``netns[h][0]`` (``ip netns exec``) and listens on ``netns[h][1]``; peers connect to
        those addresses (default: every host on 127.0.0.1 in this namespace).
    round_seconds
        Fixed length of every round, phases at fixed fractions
        (:meth:`Round.given <crowdhide.backends.tls.schedule.Round.given>`). Default: each
        round its own length, from the worst-case work of the hop it sends and the programs
        it runs (:func:`crowdhide.backends.tls.workload.round_schedule`), never the data.
        A round that does not fit raises :class:`~crowdhide.errors.RoundOverrunError`.
    shared_seed
        ``False`` (default): every host draws a 256-bit secret when it loads the job and keys
        its blocks' randomness with it (nobody else can replay a block's sampling, dummies
        or shuffles). ``True``: blocks are keyed by the run's seed as on the local backend
        (same result and transcript, for comparisons; every host can replay every other's).

    The executor calls :meth:`close` at the end of a run; every process is stopped by its id.
    """

    name = "tls"

    def __init__(
        self,
        *,
        hosts: int = 3,
        pki: Path | None = None,
        frame_size: int | None = None,
        deadline: float = 10.0,
        on_missing: str = "fail",
        observe: bool = False,
        round_seconds: float | None = None,
        netns: Sequence[tuple[str, str]] | None = None,
        placement: str = "spread",
        shared_seed: bool = False,
    ) -> None:
        self.hosts = check_int("hosts", hosts, low=1, high=256)
        if not isinstance(shared_seed, bool):
            raise ParameterTypeError(
                f"shared_seed must be a bool, got {shared_seed!r}",
                parameter="shared_seed",
                value=shared_seed,
            )
        self.shared_seed = shared_seed
        self.placement = Placement(hosts=self.hosts, rule=placement)
        self.netns = _check_netns(netns, self.hosts, observe)
        self._given_rounds(round_seconds)
        self._frame_arg = (
            None
            if frame_size is None
            else check_int("frame_size", frame_size, low=fr.MIN_FRAME, high=codec.MAX_FRAME)
        )
        self.frame: int = 256 if self._frame_arg is None else self._frame_arg
        self.deadline = check_real("deadline", deadline, low=0.1, high=3600.0)
        if on_missing not in ("fail", "report"):
            raise InvalidParameterError(
                f"on_missing must be 'fail' or 'report', got {on_missing!r}",
                parameter="on_missing",
                value=on_missing,
            )
        self.on_missing = on_missing
        self.ledger = Ledger(on_missing=on_missing)
        self.observe = bool(observe)
        self._pki_arg = None if pki is None else Path(pki)
        self._tmp: Path | None = None
        self._procs: list[_Proc] = []
        self._relay: _Proc | None = None
        self._job: Any = None
        self._run_timeout = self.deadline + 30.0
        self._schemas: dict[int, Any] = {}
        self._wire: IntArray | None = None
        self.ports: dict[int, int] = {}
        self.final_stats: dict[int, ctl.Stats] = {}
        self._closed = False
        self._dead = self.ledger.dead
        self._signer: Any = None
        self._node_hosts: IntArray | None = None
        self._sigterm_trapped = False

    # -- processes -----------------------------------------------------------------------
    @property
    def pids(self) -> list[int]:
        """Process ids of every child (hosts, then the relay)."""
        procs = self._procs + ([self._relay] if self._relay is not None else [])
        return [p.proc.pid for p in procs]

    def _launch(self, module: str, cfg: Any, label: str, netns: str | None = None) -> _Proc:
        assert self._tmp is not None
        log = self._tmp / f"{label}.log"
        # In a network namespace: ``ip netns exec`` execs the interpreter (same pid, pipes).
        prefix = ["ip", "netns", "exec", netns] if netns is not None else []
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=_env(),
            )
        assert proc.stdin is not None
        assert proc.stdout is not None
        child = _Proc(proc, Channel(proc.stdin, proc.stdout, label), log)
        with contextlib.suppress(OSError):  # a dead child is reported by _hello
            write_message(proc.stdin, cfg)
        return child

    def _hello(self, child: _Proc, kind: type[Any]) -> Any:
        try:
            reply = child.channel.recv(60.0)
        except (ChildGoneError, TimeoutError, OSError, ctl.ControlError) as exc:
            raise LinkFailureError(
                f"{child.channel.name} failed to start: {exc}; {_tail(child.log)}"
            ) from None
        if not isinstance(reply, kind):
            raise LinkFailureError(
                f"{child.channel.name} answered {type(reply).__name__}, not {kind.__name__}"
            )
        return reply

    def _all(
        self,
        make: Callable[[int], Any],
        hosts: list[int] | None = None,
        timeout: float | None = None,
    ) -> dict[int, Any]:
        """Send ``make(h)`` to every live host (or ``hosts``) first, then read every reply
        within ``timeout`` seconds in all.

        A host whose reply is not a control message is marked dead like one that does not
        answer (its bytes are decoded as data, never run)."""
        targets = [
            h for h in (hosts if hosts is not None else range(self.hosts)) if self._procs[h].alive
        ]
        sent = []
        for h in targets:
            try:
                self._procs[h].channel.send(make(h))
                sent.append(h)
            except ChildGoneError:
                self._procs[h].alive = False
                self._dead.add(h)
        replies = {}
        # One deadline for every reply (they are computed in parallel): N unresponsive hosts
        # cost the timeout once, not N times.
        deadline = time.monotonic() + (timeout or self.deadline + 30.0)
        for h in sent:
            try:
                replies[h] = self._procs[h].channel.recv(max(0.1, deadline - time.monotonic()))
            except (ChildGoneError, TimeoutError, ctl.ControlError):
                self._procs[h].alive = False
                self._dead.add(h)
        return replies

    def _stop(self, children: list[_Proc], seconds: float = 10.0) -> None:
        """Ask every child to stop, then wait for all of them within one shared ``seconds``
        (a Ctrl-C must not wait ``seconds`` per host); kill those still running."""
        deadline = time.monotonic() + seconds
        asked = []
        for child in children:
            if child.proc.poll() is None:
                with contextlib.suppress(ChildGoneError, OSError, ctl.ControlError):
                    child.channel.send(ctl.Stop())
                    asked.append(child)
        for child in asked:
            with contextlib.suppress(ChildGoneError, TimeoutError, OSError, ctl.ControlError):
                child.channel.recv(max(0.1, deadline - time.monotonic()))
        for child in children:
            proc = child.proc
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):  # unflushed bytes for a killed child
                        stream.close()
            child.alive = False

    def _dump(self) -> IntArray:
        assert self._relay is not None
        try:
            self._relay.channel.send(ctl.Dump())
            reply = self._relay.channel.recv(30.0)
            records: IntArray = reply.records if isinstance(reply, ctl.Dumped) else _NO_RECORDS
        except (ChildGoneError, TimeoutError, ctl.ControlError):
            records = np.zeros((0, 7), dtype=np.int64)
        return records

    def wire(self) -> WireView:
        """The relay's records so far (``observe=True`` only)."""
        if not self.observe:
            raise InvalidParameterError(
                "observe must be True to record the wire view, got False",
                parameter="observe",
                value=False,
            )
        return WireView(self._wire if self._wire is not None else self._dump())

    def start(self) -> None:
        """Start the hosts (and relay) and bring every link up, without a job (benchmarks)."""
        if self._procs:
            raise InvalidParameterError("the hosts of this backend are already running")
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        from crowdhide.backends.tls.pki import check_credentials, make_pki
        from crowdhide.backends.tls.shipping import Signer

        self._trap_sigterm()
        self._tmp = Path(tempfile.mkdtemp(prefix="crowdhide-net-"))
        self._signer = Signer.generate()  # the coordinator's plan key: never sent
        pki_dir = self._pki_arg
        if pki_dir is None:
            pki_dir = self._tmp / "pki"
            make_pki(hosts=self.hosts, out=pki_dir)
        for h in range(self.hosts):
            if not (pki_dir / f"host{h}.pem").exists():
                raise InvalidParameterError(
                    f"pki has no certificate for host{h} (pki={str(pki_dir)!r})",
                    parameter="pki",
                    value=str(pki_dir),
                )
        check_credentials(pki_dir, self.hosts)
        for h in range(self.hosts):
            cfg = ctl.HostConfig(
                host=h,
                hosts=self.hosts,
                frame=self.frame,
                ca=str(pki_dir / "ca.pem"),
                cert=str(pki_dir / f"host{h}.pem"),
                key=str(pki_dir / f"host{h}.key"),
                coordinator=self._signer.public,
                listen=self._address(h),
            )
            # Launch all first: the hosts start (import, bind) in parallel.
            space = self.netns[h][0] if self.netns is not None else None
            self._procs.append(
                self._launch("crowdhide.backends.tls.host", cfg, f"host{h}", netns=space)
            )
        hellos = [self._hello(child, ctl.Hello) for child in self._procs]
        ports = self.ports = {h: m.port for h, m in enumerate(hellos)}
        addresses = {(a, b): ports[b] for a in range(self.hosts) for b in range(self.hosts)}
        if self.observe:
            pairs = ctl.RelayConfig(pairs=addresses)
            self._relay = self._launch("crowdhide.backends.tls.relay", pairs, "relay")
            addresses = dict(self._hello(self._relay, ctl.RelayReady).ports)
        replies = self._all(
            lambda h: ctl.Connect(
                peers={b: (self._address(b), addresses[(h, b)]) for b in range(self.hosts)},
                timeout=self.deadline,
            )
        )
        failed = {
            h: r.failed if isinstance(r, ctl.Connected) else f"unexpected reply {r!r}"
            for h, r in replies.items()
            if not isinstance(r, ctl.Connected) or r.failed
        }
        if failed or len(replies) < self.hosts:
            raise LinkFailureError(f"links failed to come up: {failed}")

    def _trap_sigterm(self) -> None:
        """While the hosts run, SIGTERM raises :class:`Terminated` in the driver (whose
        default action would kill it unprepared); see :func:`._signals.trap_sigterm`."""
        self._sigterm_trapped = trap_sigterm()

    def _release_sigterm(self) -> None:
        self._sigterm_trapped = release_sigterm(self._sigterm_trapped)

    def _address(self, host: int) -> str:
        """The address host ``host`` listens on (its namespace's, else loopback)."""
        return self.netns[host][1] if self.netns is not None else "127.0.0.1"

    def close(self) -> None:
        """Stop every child process by its id and remove temporary files (idempotent)."""
        if self._closed:
            return
        self._closed = True
        # Closing on a Ctrl-C: the user is waiting, and a host may still owe the reply of the
        # interrupted request, so no final counters are asked for (the run is abandoned).
        interrupted = isinstance(sys.exc_info()[1], (KeyboardInterrupt, Terminated))
        late: Terminated | None = None
        try:
            if self._procs and not interrupted:
                self.final_stats = self._all(lambda h: ctl.GetStats(), timeout=10.0)
            if self._relay is not None and self._wire is None and self._relay.proc.poll() is None:
                self._wire = self._dump()
        except Terminated as exc:  # SIGTERM while closing politely: stop at once all the same
            interrupted, late = True, exc
        self._release_sigterm()  # from here a second SIGTERM kills the driver (as usual)
        children = self._procs + ([self._relay] if self._relay is not None else [])
        if interrupted:  # no polite Stop: a host in the middle of a round answers late
            for child in children:
                with contextlib.suppress(OSError):
                    child.proc.terminate()
        self._stop(children)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if late is not None:  # the process was asked to end: it does, once nothing is left
            raise late

    def __enter__(self) -> TlsBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def host_stats(self) -> dict[int, ctl.Stats]:
        """Counters of every live host (frames in/out, refused peers, frames per link)."""
        return self._all(lambda h: ctl.GetStats()) if not self._closed else self.final_stats

    # -- backend contract ----------------------------------------------------------------
    def open(self, job: Any) -> None:
        """Start hosts (and relay), bring links up, ship the signed plan, distribute node keys.

        The plan travels as a signed document naming its programs
        (:mod:`crowdhide.backends.tls.shipping`); a plan with an unnamed program is refused
        here, before any process starts."""
        from crowdhide.backends.tls.shipping import ship_job
        from crowdhide.engine.document import plan_document

        if self._procs:
            raise InvalidParameterError(
                "a TlsBackend runs one job; create a new one for another run", parameter="job"
            )
        self._job = job
        plan = job.plan
        if self._frame_arg is None:  # one frame size for the run, from the plan
            self.frame = codec.frame_for(plan)
        from crowdhide.backends.tls.workload import (
            closes_before,
            given_schedule,
            round_schedule,
            round_seconds,
        )

        if self._round_arg is None:  # each round's length from its own work in the plan
            rounds, self.round_basis = round_schedule(job, self.placement)  # measures costs
            model = longest(rounds)
        else:  # given: nothing to measure (0.3 s of sealing saved), a generous model instead
            rounds = given_schedule(plan, self._round_arg)
            model = round_seconds(job, self.placement, costs=_UNMEASURED_COSTS)
        self.ledger.rounds = rounds
        self.ledger.closes = closes_before(plan)  # the rounds close where the schedule's do
        self.round_schedule = tuple(r.length for r in rounds)
        self.round_seconds = longest(rounds) if rounds else self._round_arg
        # A host still running a group's programs is not dead: the first group runs before
        # any round is scheduled, so its Run may take the plan's worst-case round (the
        # model's, whatever round length is given) on top of the control deadline.
        self._run_timeout = self.deadline + 30.0 + model
        receivers = receiving_groups(plan)
        plan_document(plan)  # PlanDocumentError (one line) for a program that is not named
        try:
            self._start()
            replies = self._all(
                lambda h: ship_job(
                    job,
                    self._signer,
                    placement=self.placement.to_json(),
                    owns=lambda group, block: self.placement.host(job, group, block) == h,
                    receivers=tuple(receivers),
                    shared_seed=self.shared_seed,
                )
            )
            refused = {h: r.error for h, r in replies.items() if isinstance(r, ctl.JobRefused)}
            if refused:
                raise LinkFailureError(f"hosts refused the plan: {refused}")
            if len(replies) < self.hosts or not all(
                isinstance(r, ctl.JobLoaded) for r in replies.values()
            ):
                raise LinkFailureError("a host failed to load the job")
            nodes: dict[int, bytes] = {}
            for reply in replies.values():
                nodes.update(reply.nodes)
            self._all(lambda h: ctl.Learn(hosts={}, nodes=nodes))
        except BaseException:
            self.close()
            raise

    def job_for(self, host: int) -> Any:
        """The job as host ``host`` receives it: the source rows of its own blocks only
        (:meth:`Job.for_shard <crowdhide.engine.backend.Job.for_shard>`); the driver keeps
        the whole job."""
        if self._job is None:
            raise RuntimeError("TlsBackend.job_for called before open()")
        job = self._job
        return job.for_shard(lambda group, block: self.placement.host(job, group, block) == host)

    def run_group(self, group: str) -> list[Any]:
        """Run one group (:meth:`run_groups`)."""
        return self.run_groups([group])

    def run_groups(self, names: Sequence[str]) -> list[Any]:
        """Close the open round if ``names`` (one level of the plan: they exchange nothing)
        need its frames (:meth:`Ledger.closes_before
        <crowdhide.backends.tls.rounds.Ledger.closes_before>`), then run them on every
        host, one ``Run`` (one program window); return their block reports."""
        group, *also = names
        if self.ledger.closes_before(names):
            self._flush()
        job = self._job
        epoch = self.ledger.epoch + 1  # the round in which the frames emitted now will be sent
        replies = self._all(
            lambda h: ctl.Run(group=group, schemas=self._schemas, epoch=epoch, also=tuple(also)),
            timeout=self._run_timeout,
        )
        errors = {
            h: r.error if isinstance(r, ctl.RunFailed) else f"unexpected reply {type(r).__name__}"
            for h, r in replies.items()
            if not isinstance(r, ctl.RunDone)
        }
        if errors:
            label = " or ".join(names)
            raise program_failed(label, errors, lambda h: f"host {h} ({self._address(h)})")
        reports = []
        counts = {}
        for h, reply in replies.items():
            reports.extend(reply.reports)
            counts[h] = (self._link_counts(reply.reports), reply.queued)
            self._schemas.update(reply.schemas)
        self.ledger.ran_group(job, names, self.placement, counts)
        self.ledger.check()
        return reports

    def _link_counts(self, reports: list[Any]) -> dict[int, int]:
        """Messages per receiving host in ``reports``' traffic (the transcript the blocks
        claim, coarsened by the placement): what the sender must put on each link."""
        if self._node_hosts is None:
            self._node_hosts = self.placement.node_hosts(self._job)
        counts = np.zeros(self.hosts, dtype=np.int64)
        for report in reports:
            for _, _, _, dst, _ in report.traffic:
                hosts = self._node_hosts[np.asarray(dst, dtype=np.int64)]
                counts += np.bincount(hosts, minlength=self.hosts)
        return {int(h): int(n) for h, n in enumerate(counts) if n}

    # -- rounds --------------------------------------------------------------------------
    def _flush(self) -> None:
        self.ledger.close_round(
            lambda flush, timeout: self._all(lambda h: flush, timeout=timeout),
            alive=[h for h, p in enumerate(self._procs) if p.alive],
            deadline=self.deadline,
        )


def _check_netns(
    netns: Sequence[tuple[str, str]] | None, hosts: int, observe: bool
) -> tuple[tuple[str, str], ...] | None:
    """``netns``: one ``(namespace, IP address)`` per host, or ``None`` (all on loopback)."""
    if netns is None:
        return None
    pairs = tuple((str(n), str(a)) for n, a in netns)
    if len(pairs) != hosts:
        raise InvalidParameterError(
            f"netns must name one (namespace, address) per host ({hosts}), got {pairs}",
            parameter="netns",
            value=pairs,
        )
    if observe:
        raise InvalidParameterError(
            "observe applies to hosts on loopback only (netns given); capture instead",
            parameter="observe",
            value=observe,
        )
    return pairs


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return " | ".join(text[-lines:]) if text else "empty log"
