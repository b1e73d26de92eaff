"""The ``tls`` backend: every message crosses a mutual-TLS link between node-host processes.

:class:`TlsBackend` implements the engine's backend contract (``open``/``send``/``receive``/
``transcript``, see :mod:`crowdhide.engine.backend`). The executor still computes what each
group emits; this backend moves every message — real or dummy — as one fixed-size frame
from the host serving its sending node to the host serving its receiving node, sealed end to
end for that node (:mod:`crowdhide.net.frames`). Receiving hosts decrypt, drop dummies, and
hand the driver what arrived; a scrambler's host gets an opaque handle per message and later
forwards the inner ciphertext it cannot read.

Delivery is accounted per round: each host closes the round on every link with an ``END``
frame, the receiver acknowledges the count it got, and since a TLS link delivers in order,
the first ``k`` frames of a link with ``k`` received are exactly the delivered ones. Every
other message — sent by a dead host, addressed to a dead host, or lost on a dropped link —
is reported by the source row it carried (:class:`MissingReport`), or the run fails
(``on_missing="fail"``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int, check_real
from crowdhide.engine.backend import LocalBackend
from crowdhide.engine.messages import MessageBatch, Transcript
from crowdhide.net import frames as fr
from crowdhide.net._control import Channel, ChildGone, write_message

__all__ = ["MissingContributions", "MissingReport", "NodeMap", "TlsBackend", "WireView"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class NodeMap:
    """Which host serves which global node ids: host ``h`` serves ``[starts[h], starts[h+1])``.

    Examples
    --------
    >>> m = NodeMap.blocks(total=10, hosts=3)
    >>> m.starts, m.host_of(np.array([0, 3, 9])).tolist(), m.block(2)
    ((0, 3, 6), [0, 1, 2], (6, 10))
    """

    starts: tuple[int, ...]
    total: int

    @classmethod
    def blocks(cls, *, total: int, hosts: int) -> NodeMap:
        """Contiguous blocks of (almost) equal size."""
        n = check_int("total", total, low=1)
        h = check_int("hosts", hosts, low=1, high=n)
        return cls(starts=tuple(i * n // h for i in range(h)), total=n)

    @property
    def hosts(self) -> int:
        return len(self.starts)

    def host_of(self, ids: npt.NDArray[np.integer[Any]]) -> IntArray:
        """Host serving each global node id."""
        return np.searchsorted(np.asarray(self.starts), ids, side="right").astype(np.int64) - 1

    def block(self, host: int) -> tuple[int, int]:
        """``(first, end)`` node ids of ``host``."""
        end = self.starts[host + 1] if host + 1 < self.hosts else self.total
        return self.starts[host], end


@dataclass(frozen=True)
class MissingReport:
    """Messages that did not reach their node, named by the source rows they carried.

    Attributes
    ----------
    contributions
        ``{route: sorted rows of the route's origin group}`` whose *real* message was lost.
    messages
        Frames lost (real and dummy).
    dead_hosts
        Hosts found dead.
    """

    contributions: Mapping[str, IntArray]
    messages: int
    dead_hosts: tuple[int, ...]

    def __bool__(self) -> bool:
        return self.messages > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "messages_lost": self.messages,
            "dead_hosts": list(self.dead_hosts),
            "missing_contributions": {k: v.tolist() for k, v in self.contributions.items()},
        }


class MissingContributions(ConnectionError):
    """Raised with ``on_missing="fail"`` when a round lost messages."""

    def __init__(self, report: MissingReport) -> None:
        counts = {k: len(v) for k, v in report.contributions.items()}
        super().__init__(
            f"{report.messages} messages lost (dead hosts {list(report.dead_hosts)}); missing "
            f"contributions per route: {counts}; rerun with --on-missing report to keep the rest"
        )
        self.report = report


@dataclass(frozen=True)
class WireView:
    """The on-path observer's view recorded by the relay: one row per TLS record.

    ``records`` columns: sending host, receiving host (of the link), connection number,
    direction (0 = link initiator → acceptor), TLS content type, record length, time (ns).
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


@dataclass
class _Pending:
    bid: int
    batch: MessageBatch
    mode: int
    src_host: IntArray
    dst_host: IntArray
    dst: IntArray
    forward: IntArray


def _env() -> dict[str, str]:
    import crowdhide

    src = str(Path(crowdhide.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


class TlsBackend:
    """Engine backend running ``hosts`` node-host processes linked by mutual TLS 1.3.

    Parameters
    ----------
    hosts
        Number of node-host processes; node ids are split into contiguous blocks.
    routes
        ``{route name: receiving group}`` of the plan; needed to seal a scrambled message's
        inner body for its final target (use :meth:`for_plan`).
    pki
        Directory written by :func:`crowdhide.net.pki.make_pki` (default: a fresh one in a
        temporary directory, removed at :meth:`close`).
    frame_size
        Bytes of every frame (at least :data:`~crowdhide.net.frames.MIN_FRAME` and at least
        every message size of the plan).
    deadline
        Seconds a round may take before missing links are declared lost.
    on_missing
        ``"fail"`` raises :class:`MissingContributions`; ``"report"`` records the loss in
        :attr:`missing` and continues with what arrived.
    observe
        Route every link through a relay process recording TLS records (:meth:`wire`).

    Use as a context manager (or call :meth:`close`): every process is stopped by its id.
    """

    name = "tls"

    def __init__(
        self,
        *,
        hosts: int = 3,
        routes: Mapping[str, str] | None = None,
        pki: Path | None = None,
        frame_size: int = 128,
        deadline: float = 10.0,
        on_missing: str = "fail",
        observe: bool = False,
    ) -> None:
        self.hosts = check_int("hosts", hosts, low=1, high=256)
        self.frame = check_int("frame_size", frame_size, low=fr.MIN_FRAME, high=16_000)
        self.deadline = check_real("deadline", deadline, low=0.1, high=3600.0)
        if on_missing not in ("fail", "report"):
            raise ValueError(f"on_missing must be 'fail' or 'report', got {on_missing!r}")
        self.on_missing = on_missing
        self.observe = bool(observe)
        self._routes = dict(routes or {})
        self._pki_arg = None if pki is None else Path(pki)
        self._tmp: Path | None = None
        self._local = LocalBackend()
        self._procs: list[_Proc] = []
        self._relay: _Proc | None = None
        self._groups: dict[str, tuple[int, int]] = {}
        self.map: NodeMap | None = None
        self._pending: list[_Pending] = []
        self._held: dict[tuple[int, str], list[tuple[_Pending, IntArray]]] = defaultdict(list)
        self._inflight: dict[int, _Pending] = {}
        self._handles: dict[tuple[int, int], int] = {}
        self._known: set[int] = set()
        self._lost: dict[str, list[IntArray]] = defaultdict(list)
        self._lost_messages = 0
        self._epoch = 0
        self._bid = 0
        self._wire: IntArray | None = None
        self.ports: dict[int, int] = {}

    @classmethod
    def for_plan(cls, plan: Any, **options: Any) -> TlsBackend:
        """A backend for ``plan`` (an :class:`~crowdhide.plans.model.ExecutionPlan`)."""
        return cls(routes={r.name: r.receiver for r in plan.routes}, **options)

    # -- processes -----------------------------------------------------------------------
    @property
    def pids(self) -> list[int]:
        """Process ids of every child (hosts, then the relay)."""
        procs = self._procs + ([self._relay] if self._relay is not None else [])
        return [p.proc.pid for p in procs]

    def _launch(self, module: str, cfg: dict[str, Any], label: str) -> _Proc:
        assert self._tmp is not None
        log = self._tmp / f"{label}.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=_env(),
            )
        assert proc.stdin is not None and proc.stdout is not None
        child = _Proc(proc, Channel(proc.stdin, proc.stdout, label), log)
        try:
            write_message(proc.stdin, cfg)
        except OSError:
            pass  # reported by _hello
        return child

    def _hello(self, child: _Proc) -> Any:
        try:
            return child.channel.recv(60.0)
        except (ChildGone, TimeoutError, OSError) as exc:
            raise ConnectionError(
                f"{child.channel.name} failed to start: {exc}; {_tail(child.log)}"
            ) from None

    def _start(self, total: int) -> None:
        from crowdhide.net.pki import make_pki

        self._tmp = Path(tempfile.mkdtemp(prefix="crowdhide-net-"))
        pki_dir = self._pki_arg
        if pki_dir is None:
            pki_dir = self._tmp / "pki"
            make_pki(hosts=self.hosts, out=pki_dir)
        for h in range(self.hosts):
            if not (pki_dir / f"host{h}.pem").exists():
                raise ValueError(f"pki has no certificate for host{h} (pki={str(pki_dir)!r})")
        self.map = NodeMap.blocks(total=total, hosts=self.hosts)
        for h in range(self.hosts):
            cfg = {
                "host": h, "hosts": self.hosts, "frame": self.frame, "starts": self.map.starts,
                "ca": str(pki_dir / "ca.pem"), "cert": str(pki_dir / f"host{h}.pem"),
                "key": str(pki_dir / f"host{h}.key"),
            }
            # Launch all first: the hosts start (import, bind) in parallel.
            self._procs.append(self._launch("crowdhide.net.host", cfg, f"host{h}"))
        hellos = [self._hello(child) for child in self._procs]
        ports = self.ports = {h: m["port"] for h, m in enumerate(hellos)}
        publics = {h: m["public"] for h, m in enumerate(hellos)}
        addresses = {(a, b): ports[b] for a in range(self.hosts) for b in range(self.hosts)}
        if self.observe:
            self._relay = self._launch("crowdhide.net.relay", {"pairs": addresses}, "relay")
            addresses = self._hello(self._relay)["ports"]
        self._all("learn", lambda h: {"hosts": publics, "nodes": {}})
        replies = self._all(
            "connect",
            lambda h: {
                "peers": {b: ("127.0.0.1", addresses[(h, b)]) for b in range(self.hosts)},
                "timeout": self.deadline,
            },
        )
        failed = {h: r["failed"] for h, r in replies.items() if r["failed"]}
        if failed:
            raise ConnectionError(f"links failed to come up: {failed}")

    def _all(self, op: str, args: Any, hosts: list[int] | None = None,
             timeout: float | None = None) -> dict[int, Any]:
        """Send ``op`` to every live host (or ``hosts``) first, then read every reply."""
        targets = [h for h in (hosts if hosts is not None else range(self.hosts))
                   if self._procs[h].alive]
        sent = []
        for h in targets:
            try:
                self._procs[h].channel.send({"op": op, **args(h)})
                sent.append(h)
            except ChildGone:
                self._procs[h].alive = False
        replies = {}
        for h in sent:
            try:
                replies[h] = self._procs[h].channel.recv(timeout or self.deadline + 30.0)
            except (ChildGone, TimeoutError):
                self._procs[h].alive = False
        return replies

    def _stop(self, child: _Proc) -> None:
        proc = child.proc
        if proc.poll() is None:
            try:
                child.channel.send({"op": "stop"})
                child.channel.recv(5.0)
            except (ChildGone, TimeoutError, OSError):
                pass
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # unflushed bytes for a killed child
                    pass
        child.alive = False

    def close(self) -> None:
        """Stop every child process by its id and remove temporary files."""
        if self._relay is not None and self._wire is None and self._relay.proc.poll() is None:
            self._wire = self._dump()
        for child in self._procs + ([self._relay] if self._relay is not None else []):
            self._stop(child)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> TlsBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _dump(self) -> IntArray:
        assert self._relay is not None
        try:
            self._relay.channel.send({"op": "dump"})
            records: IntArray = self._relay.channel.recv(30.0)["records"]
        except (ChildGone, TimeoutError):
            records = np.zeros((0, 7), dtype=np.int64)
        return records

    def wire(self) -> WireView:
        """The relay's records so far (``observe=True`` only)."""
        if not self.observe:
            raise ValueError("observe must be True to record the wire view, got False")
        return WireView(self._wire if self._wire is not None else self._dump())

    def host_stats(self) -> dict[int, Any]:
        """Counters of every live host (frames in/out, refused peers, frames written per link)."""
        return self._all("stats", lambda h: {})

    # -- backend contract ----------------------------------------------------------------
    def open(self, groups: Mapping[str, tuple[int, int]]) -> None:
        """Start the hosts (and relay) for the node layout ``groups`` and bring links up."""
        if self._procs:
            raise ValueError("a TlsBackend runs one plan; create a new one for another run")
        self._groups = dict(groups)
        self._local.open(groups)
        total = max((first + size for first, size in self._groups.values()), default=0)
        try:
            self._start(max(total, self.hosts))
        except BaseException:
            self.close()
            raise

    def send(self, batch: MessageBatch) -> None:
        """Queue ``batch``; it goes on the wire at the next :meth:`receive` (round barrier)."""
        if batch.size > self.frame:
            raise ValueError(
                f"frame_size must hold every message: route {batch.route!r} has "
                f"{batch.size}-byte messages, got frame_size={self.frame}"
            )
        self._local.send(batch)  # validates ids and records the logical transcript
        self._local.receive(batch.receiver)
        assert self.map is not None
        first_s, first_r = self._groups[batch.sender][0], self._groups[batch.receiver][0]
        dst = batch.dst.astype(np.int64) + first_r
        forward = np.full(len(batch), -1, dtype=np.int64)
        if batch.forward is not None:
            final = self._routes.get(batch.route)
            if final is None:
                raise ValueError(f"routes must name the receiver of scrambled route {batch.route!r}")
            forward = batch.forward.astype(np.int64) + self._groups[final][0]
            mode = fr.ONION
        else:
            mode = fr.FORWARD if batch.sender != batch.origin else fr.PLAIN
        self._bid = (self._bid + 1) & 0xFFFF
        self._pending.append(
            _Pending(self._bid, batch, mode, self.map.host_of(batch.src + first_s),
                     self.map.host_of(dst), dst, forward)
        )

    def receive(self, group: str) -> list[MessageBatch]:
        """Close the round (barrier) and return what the hosts of ``group`` received."""
        if self._pending:
            self._flush()
        out = self._collect(group)
        if self.on_missing == "fail" and self._lost_messages:
            raise MissingContributions(self.missing)
        return out

    def transcript(self) -> Transcript:
        """The logical transcript (same as the local backend's); see :meth:`wire` for bytes."""
        return self._local.transcript()

    @property
    def missing(self) -> MissingReport:
        """Everything lost so far."""
        rows = {
            k: np.unique(np.concatenate(v)).astype(np.int64) for k, v in self._lost.items() if v
        }
        dead = tuple(h for h, p in enumerate(self._procs) if not p.alive)
        return MissingReport(contributions=rows, messages=self._lost_messages, dead_hosts=dead)

    # -- rounds --------------------------------------------------------------------------
    def _lose(self, item: _Pending, rows: IntArray, host: int) -> None:
        """Record ``rows`` of ``item`` as lost; name the source rows of real messages."""
        if rows.size == 0:
            return
        self._lost_messages += int(rows.size)
        carried = item.batch.payload[rows].astype(np.int64)
        if item.mode == fr.FORWARD:  # handles at the scrambler's host -> source rows
            carried = np.array([self._handles.get((host, int(c)), -1) if c >= 0 else -1
                                for c in carried], dtype=np.int64)
        self._lost[item.batch.route].append(carried[carried >= 0])

    def _ensure_keys(self, nodes: IntArray) -> None:
        assert self.map is not None
        new = np.setdiff1d(nodes[nodes >= 0], np.fromiter(self._known, dtype=np.int64))
        if new.size == 0:
            return
        owner = self.map.host_of(new)
        replies = self._all("keys", lambda h: {"nodes": new[owner == h].tolist()},
                            hosts=sorted(set(owner.tolist())))
        learned: dict[int, bytes] = {}
        for reply in replies.values():
            learned.update(reply["nodes"])
        self._all("learn", lambda h: {"hosts": {}, "nodes": learned})
        self._known.update(learned)

    def _flush(self) -> None:
        self._epoch += 1
        pending, self._pending = self._pending, []
        self._ensure_keys(np.concatenate([np.concatenate([p.dst, p.forward]) for p in pending]))
        links: dict[tuple[int, int], list[tuple[_Pending, IntArray]]] = defaultdict(list)
        for item in pending:
            self._inflight[item.bid] = item
            for a in np.unique(item.src_host).tolist():
                rows = np.flatnonzero(item.src_host == a)
                if not self._procs[a].alive:
                    self._lose(item, rows, a)
                    continue
                for b in np.unique(item.dst_host[rows]).tolist():
                    links[(a, b)].append((item, rows[item.dst_host[rows] == b]))
            senders = [int(a) for a in np.unique(item.src_host)]
            self._all("send", lambda h, it=item: self._send_args(it, h), hosts=senders)
        alive = [h for h, p in enumerate(self._procs) if p.alive]
        replies = self._all(
            "barrier", lambda h: {"epoch": self._epoch, "alive": alive, "deadline": self.deadline}
        )
        for (a, b), segments in links.items():
            got = int(replies[b]["received"].get(a, 0)) if b in replies else 0
            for item, rows in segments:
                delivered, rest = rows[:got], rows[got:]
                got -= delivered.size
                self._lose(item, rest, a)
                if delivered.size:
                    self._held[(b, item.batch.receiver)].append((item, delivered))

    def _send_args(self, item: _Pending, host: int) -> dict[str, Any]:
        rows = np.flatnonzero(item.src_host == host)
        return {
            "batch": item.bid, "mode": item.mode, "index": rows, "dst": item.dst[rows],
            "payload": item.batch.payload[rows].astype(np.int64), "forward": item.forward[rows],
        }

    def _collect(self, group: str) -> list[MessageBatch]:
        """Ask the hosts serving ``group`` for its messages; rebuild batches in send order."""
        assert self.map is not None
        first, size = self._groups[group]
        owners = sorted(set(self.map.host_of(np.arange(first, first + size)).tolist()))
        held = {h: self._held.pop((h, group), []) for h in owners}

        def args(h: int) -> dict[str, Any]:
            lo, hi = self.map.block(h) if self.map is not None else (0, 0)
            return {"lo": max(lo, first), "hi": min(hi, first + size)}

        replies = self._all("collect", args, hosts=owners)
        parts: dict[int, list[IntArray]] = defaultdict(list)
        for h in owners:
            if h not in replies:  # the host died holding delivered messages: they are lost
                for item, rows in held[h]:
                    self._lose(item, rows, int(item.src_host[rows[0]]) if rows.size else h)
                continue
            table = replies[h]["rows"]
            for bid in np.unique(table[:, 0]).tolist():
                sub = table[table[:, 0] == bid]
                parts[bid].append(np.column_stack([sub, np.full(len(sub), h)]))
        out = []
        for bid in sorted(parts, key=lambda b: self._order_of(b)):
            item = self._inflight[bid]
            table = np.concatenate(parts[bid])
            table = table[np.argsort(table[:, 1], kind="stable")]
            out.append(self._rebuild(item, table))
        return out

    def _order_of(self, bid: int) -> int:
        return list(self._inflight).index(bid)

    def _rebuild(self, item: _Pending, table: IntArray) -> MessageBatch:
        batch = item.batch
        idx = table[:, 1]
        forward = None
        if item.mode == fr.ONION:
            final = self._routes[batch.route]
            forward = table[:, 4] - self._groups[final][0]
            for host, handle, carried in zip(
                table[:, 5].tolist(), table[:, 3].tolist(), batch.payload[idx].tolist(),
                strict=True,
            ):
                self._handles[(host, handle)] = carried  # to name lost forwards later
        return MessageBatch(
            route=batch.route,
            round=batch.round,
            sender=batch.sender,
            receiver=batch.receiver,
            src=batch.src[idx],
            dst=table[:, 2] - self._groups[batch.receiver][0],
            order=batch.order[idx],
            size=batch.size,
            origin=batch.origin,
            payload=table[:, 3],
            forward=forward,
        )


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return " | ".join(text[-lines:]) if text else "empty log"
