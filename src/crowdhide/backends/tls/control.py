"""Typed control messages between the driver and its node hosts, and their byte encoding.

One frozen dataclass per operation (and per reply) replaces the ``{"op": ...}`` dicts. A
message crosses the process boundary as **JSON plus raw buffers**, never as a pickle:
decoding builds only the types listed in :data:`TYPES` (messages, and the engine's
:class:`~crowdhide.engine.messages.Block` and :class:`~crowdhide.engine.backend.BlockReport`
that replies carry), so a peer that controls the bytes can make the decoder raise
:class:`ControlError`, never run code.

Encoding (:func:`encode`): ``u32 length of the JSON document || JSON || buffers``. In the
JSON, plain ``str``/``int``/``float``/``bool``/``None``, lists and string-keyed objects
are themselves; everything else is a one-key object whose key starts with ``$``:
``$bytes`` / ``$array`` (an index into the buffers; arrays also carry a dtype descriptor
and a shape; object dtypes are refused), ``$tuple``, ``$frozenset``, ``$dict`` (pairs, for
non-string keys), ``$scalar`` (a numpy scalar) and ``$type`` (a listed dataclass by name).

Examples
--------
>>> import numpy as np
>>> msg = Flushed(received={0: 3, 2: 0}, acked={0: 3, 2: None})
>>> decode(encode(msg)) == msg
True
>>> arr = decode(encode(Dumped(records=np.arange(6).reshape(2, 3)))).records
>>> arr.shape, arr.dtype.str
((2, 3), '<i8')
>>> doc = b'{"$type": "os.system"}'
>>> decode(len(doc).to_bytes(4, "little") + doc)
Traceback (most recent call last):
...
crowdhide.backends.tls.control.ControlError: control message: unknown type 'os.system'
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.engine.backend import BlockReport
from crowdhide.engine.messages import Block
from crowdhide.errors import DataTypeError, ParameterTypeError

__all__ = [
    "TYPES",
    "Abandon",
    "Blast",
    "Blasted",
    "Busy",
    "Connect",
    "Connected",
    "ControlError",
    "Describe",
    "Described",
    "Dump",
    "Dumped",
    "EndRun",
    "Ended",
    "Flush",
    "Flushed",
    "GetStats",
    "Hello",
    "HostConfig",
    "JobLoaded",
    "JobRefused",
    "Learn",
    "Learned",
    "Link",
    "LoadJob",
    "Prepare",
    "Prepared",
    "Ran",
    "RelayConfig",
    "RelayReady",
    "Released",
    "Run",
    "RunDone",
    "RunFailed",
    "Stats",
    "Stop",
    "Stopped",
    "decode",
    "encode",
    "key_statement",
]

_LENGTH = struct.Struct("<I")
IntArray = npt.NDArray[np.int64]


class ControlError(ValueError):
    """Bytes that are not a well-formed control message (named in the text)."""


# -- driver -> host -------------------------------------------------------------------------
@dataclass(frozen=True)
class HostConfig:
    """A host's first message: its id, the run's host count, frame size and credentials."""

    host: int
    hosts: int
    frame: int
    ca: str
    cert: str
    key: str
    #: The coordinator's Ed25519 public key: plans it did not sign are refused.
    coordinator: bytes = b""
    #: The address to listen on (port chosen by the system).
    listen: str = "127.0.0.1"
    handshake_timeout: float = 10.0


@dataclass(frozen=True)
class Connect:
    """Open one TLS link to every peer ``{host: (address, port)}``."""

    peers: Mapping[int, tuple[str, int]]
    timeout: float


@dataclass(frozen=True)
class LoadJob:
    """A signed plan document (:mod:`crowdhide.engine.document`), the source rows of this
    host's blocks (``{group: {first row: {column: values}}}``) and the receiving groups."""

    plan: bytes = field(repr=False)
    signature: bytes = field(repr=False)
    rows: Mapping[str, Mapping[int, Mapping[str, npt.NDArray[Any]]]] = field(repr=False)
    receivers: tuple[str, ...]


@dataclass(frozen=True)
class Learn:
    """Public sealing keys of hosts (by id) and nodes (by global id); for node daemons, every
    daemon's :class:`JobLoaded` as signed (``signed``: ``{host: (nodes, signature)}``), which
    each daemon verifies against that host's certificate: the coordinator relays the keys
    but cannot swap them."""

    hosts: Mapping[int, bytes]
    nodes: Mapping[int, bytes]
    signed: Mapping[int, tuple[Mapping[int, bytes], bytes]] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """Run one group's program on this host's blocks (with the payload schemas known); the
    frames it emits are sealed for ``epoch``, the round in which they will be sent.

    ``reply_at`` (wall-clock seconds, fixed-length rounds): answer then, not when the
    program ends — the answer's time on the wire would show how long the work took."""

    group: str
    schemas: Mapping[int, Any]
    epoch: int
    reply_at: float | None = None
    #: Groups run after ``group``, in order, in the same window (the groups of one level of
    #: the plan: they exchange nothing); one answer covers them all.
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Flush:
    """Close epoch ``epoch``: write queued frames, ``END`` every link, report arrivals.

    With a schedule, frames leave at ``start`` and ENDs are acknowledged at ``ack_at``
    (wall-clock seconds); ``None``: at once (no fixed-length rounds)."""

    epoch: int
    alive: tuple[int, ...]
    deadline: float
    start: float | None = None
    ack_at: float | None = None


@dataclass(frozen=True)
class Blast:
    """Benchmark: queue ``count`` sealed dummy frames for ``peer``."""

    peer: int
    count: int


@dataclass(frozen=True)
class GetStats:
    """Ask for the host's counters."""


@dataclass(frozen=True)
class Stop:
    """Close every link and exit."""


# -- coordinator -> node daemon (crowdhide node serve) ------------------------------------
@dataclass(frozen=True)
class Describe:
    """Ask a daemon which source rows it holds and, if ``frame`` > 0, what sealing and
    opening a frame of ``frame`` bytes costs on its machine (the round length is set from
    the slowest daemon's costs, not the coordinator's machine). ``fresh`` asks for a new
    measurement even if the daemon holds a recent one (the coordinator re-asks once when
    one daemon's figure is far off the others', which a passing load spike can cause)."""

    frame: int = 0
    fresh: bool = False


@dataclass(frozen=True)
class Prepare:
    """Start a run session: frames of ``frame`` bytes between ``hosts`` daemons.

    ``rounds`` (the schedule's round lengths, seconds; empty: unscheduled) and ``deadline``
    (the coordinator's, for the ENDs of a round) tell a daemon when the coordinator speaks
    next, so that it can drop the run of a frozen one (:mod:`~crowdhide.backends.tls.idle`)."""

    frame: int
    hosts: int
    rounds: tuple[float, ...] = ()
    deadline: float = 10.0


@dataclass(frozen=True)
class Link:
    """Open one TLS link to every daemon of ``peers`` (addresses from the signed directory,
    never from the coordinator)."""

    peers: tuple[int, ...]
    timeout: float


@dataclass(frozen=True)
class EndRun:
    """Close the session's links; the daemon keeps serving."""


@dataclass(frozen=True)
class Abandon:
    """The coordinator stops mid-run (SIGTERM, Ctrl-C): the daemon drops the run's state and
    links at once, without finishing the request in hand, closes this control connection
    (the coordinator's acknowledgement) and keeps serving the next run. ``reason`` is for
    the daemon's log (``terminated (SIGTERM)``, ``interrupted (Ctrl-C)``)."""

    reason: str = ""


# -- node daemon -> coordinator -----------------------------------------------------------
@dataclass(frozen=True)
class Described:
    """This daemon's id, the source rows ``[first, first + rows)`` it holds, its measured
    ``(seal, open)`` seconds per frame (:func:`crowdhide.backends.tls.workload.frame_costs`;
    empty when not asked) and the incoming TLS handshakes that failed since it started, per
    remote address."""

    node: int
    first: int
    rows: int
    costs: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    failed_handshakes: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Busy:
    """The daemon refuses this control connection: it serves another coordinator's
    connection (a run, or one whose close has not reached it yet, e.g. a FIN behind a slow
    link's backlog). Sent unasked, as the only message, and only to a peer that
    authenticated with a coordinator certificate of the directory; the daemon then closes.
    ``peer``: the other connection's address; ``since``: when it opened (the daemon's wall
    clock, seconds since the epoch); ``heard``: seconds since its last message;
    ``running``: whether a run's session is live on it.

    >>> busy = Busy(peer="10.0.0.9:40312", since=3725.0, heard=2.04, running=True)
    >>> print(busy.why().replace(", l", ",\\nl"))
    it is serving another coordinator connection (from 10.0.0.9:40312 since 01:02:05 UTC,
    last message 2.0 s ago, a run in progress)
    """

    peer: str
    since: float
    heard: float
    running: bool

    def why(self) -> str:
        """One line for the coordinator's error (a field of the wrong type, which only a
        broken daemon sends, is shown as sent rather than raising)."""
        peer = " ".join(str(self.peer).split())[:80]
        real = (int, float)
        since = (
            time.strftime("%H:%M:%S UTC", time.gmtime(self.since))
            if isinstance(self.since, real) and math.isfinite(self.since) and self.since >= 0
            else repr(self.since)[:40]
        )
        heard = f"{self.heard:.1f} s" if isinstance(self.heard, real) else repr(self.heard)[:40]
        state = "a run in progress" if self.running is True else "no run in progress"
        return (
            f"it is serving another coordinator connection (from {peer} since {since}, "
            f"last message {heard} ago, {state})"
        )


@dataclass(frozen=True)
class Prepared:
    """Session started."""


@dataclass(frozen=True)
class Released:
    """The state a block of a *result* group publishes (the run's released output)."""

    group: str
    block: int
    state: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Ran:
    """A group ran on a daemon: payload schemas, frames its blocks emitted and frames now
    queued per peer (counts), and the released outputs of result blocks. No block report:
    no tuple, no real/dummy count, no origin, no ``used`` mask, no per-message log.
    ``late``: seconds past the ``Run``'s ``reply_at`` the program ended (an overrun)."""

    schemas: Mapping[int, Any]
    queued: Mapping[int, int]
    emitted: Mapping[int, int]
    released: tuple[Released, ...] = ()
    late: float = 0.0


@dataclass(frozen=True)
class Ended:
    """Session closed."""


# -- host -> driver -------------------------------------------------------------------------
@dataclass(frozen=True)
class Hello:
    """A host is listening on ``port`` (bodies are sealed with ephemeral keys: a host has
    no sealing key of its own to announce)."""

    port: int


@dataclass(frozen=True)
class Connected:
    """Links that did not come up, with the reason."""

    failed: Mapping[int, str]


@dataclass(frozen=True)
class JobLoaded:
    """Public sealing keys of the receiving nodes this host serves (a node daemon signs them
    with its TLS key, bound to the plan's digest: :func:`key_statement`)."""

    nodes: Mapping[int, bytes]
    signature: bytes = b""


@dataclass(frozen=True)
class JobRefused:
    """The host refused the plan (signature, version, unknown program, malformed)."""

    error: str


@dataclass(frozen=True)
class Learned:
    """Keys recorded."""


@dataclass(frozen=True)
class RunDone:
    """A group ran: block reports, payload schemas, and the frames now queued per peer
    (counts only: no origin leaves the host)."""

    reports: tuple[BlockReport, ...] = field(repr=False)
    schemas: Mapping[int, Any]
    queued: Mapping[int, int]


@dataclass(frozen=True)
class RunFailed:
    """A node program raised (the host keeps serving)."""

    error: str


@dataclass(frozen=True)
class Flushed:
    """One epoch per link: frames received from each peer, counts peers acknowledged,
    counts peers claimed in their ``END`` (``None``: no END), frames refused per peer and
    reason (``invalid``/``stale``/``duplicate``/``garbage``), and seconds this host was
    late for the round's schedule."""

    received: Mapping[int, int]
    acked: Mapping[int, int | None]
    claimed: Mapping[int, int | None] = field(default_factory=dict)
    rejected: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    late: float = 0.0


@dataclass(frozen=True)
class Blasted:
    """Frames queued by :class:`Blast`."""

    queued: int


@dataclass(frozen=True)
class Stats:
    """Counters: handshakes, refused peers, frames; links up; frames written per link;
    the lengths of decrypted bodies seen per mode (the wire tests check one per mode)."""

    stats: Mapping[str, int]
    up: Mapping[int, bool]
    written: Mapping[int, int]
    written_in: Mapping[int, int]
    opened_lengths: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    #: Incoming TLS handshakes that failed, per remote address.
    failed_handshakes: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Stopped:
    """The host stopped; its final counters."""

    stats: Mapping[str, int]


# -- relay ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RelayConfig:
    """Relay ``(initiator, acceptor)`` links to the acceptor's port."""

    pairs: Mapping[tuple[int, int], int]


@dataclass(frozen=True)
class RelayReady:
    """The relay's listening port for each link."""

    ports: Mapping[tuple[int, int], int]


@dataclass(frozen=True)
class Dump:
    """Ask the relay for its records."""


@dataclass(frozen=True)
class Dumped:
    """The relay's records (see :class:`~crowdhide.backends.tls.backend.WireView`)."""

    records: IntArray = field(repr=False)


#: Every type the decoder may build, by name.
TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        HostConfig,
        Connect,
        LoadJob,
        Learn,
        Run,
        Flush,
        Blast,
        GetStats,
        Stop,
        Hello,
        Connected,
        JobLoaded,
        JobRefused,
        Learned,
        RunDone,
        RunFailed,
        Flushed,
        Blasted,
        Stats,
        Stopped,
        RelayConfig,
        RelayReady,
        Dump,
        Dumped,
        Describe,
        Prepare,
        Link,
        EndRun,
        Abandon,
        Described,
        Busy,
        Prepared,
        Released,
        Ran,
        Ended,
        Block,
        BlockReport,
    )
}


def key_statement(plan_digest: str, host: int, nodes: Mapping[int, bytes]) -> bytes:
    """The bytes a daemon signs to vouch for its nodes' sealing keys in one plan's run.

    Examples
    --------
    >>> key_statement("ab", 1, {7: bytes(2)})
    b'{"host":1,"nodes":{"7":"0000"},"plan":"ab"}'
    """
    body = {
        "plan": plan_digest,
        "host": int(host),
        "nodes": {str(n): bytes(k).hex() for n, k in sorted(nodes.items())},
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def encode(message: Any) -> bytes:
    """``message`` (a listed dataclass) as bytes."""
    if type(message).__name__ not in TYPES or TYPES[type(message).__name__] is not type(message):
        raise ParameterTypeError(
            f"not a control message type: {type(message).__name__}",
            parameter="message",
            value=type(message).__name__,
        )
    buffers: list[bytes] = []
    doc = json.dumps(_pack(message, buffers), separators=(",", ":")).encode()
    return b"".join([_LENGTH.pack(len(doc)), doc, *buffers])


def decode(data: bytes) -> Any:
    """Inverse of :func:`encode`; :class:`ControlError` for anything malformed."""
    try:
        (length,) = _LENGTH.unpack_from(data, 0)
        doc = json.loads(bytes(data[_LENGTH.size : _LENGTH.size + length]))
    except (struct.error, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ControlError(f"control message: not a JSON document ({exc})") from None
    reader = _Buffers(memoryview(data)[_LENGTH.size + length :])
    try:
        message = _unpack(doc, reader)
    except RecursionError:  # a document nested deeper than any message is
        raise ControlError("control message: nested too deeply") from None
    if reader.at != len(reader.data):
        raise ControlError("control message: trailing bytes after the last buffer")
    if type(message).__name__ not in TYPES or isinstance(message, (Block, BlockReport, Released)):
        raise ControlError(f"control message: not a message but {type(message).__name__}")
    return message


def _pack(value: Any, buffers: list[bytes]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        buffers.append(bytes(value))
        return {"$bytes": len(bytes(value))}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise DataTypeError("control messages carry numeric arrays only, got dtype object")
        raw = np.ascontiguousarray(value).tobytes()
        buffers.append(raw)
        descr = np.lib.format.dtype_to_descr(value.dtype)
        return {"$array": [len(raw), descr, list(value.shape)]}
    if isinstance(value, np.generic):
        return {"$scalar": _pack(np.asarray(value).reshape(1), buffers)}
    if isinstance(value, tuple):
        return {"$tuple": [_pack(v, buffers) for v in value]}
    if isinstance(value, list):
        return [_pack(v, buffers) for v in value]
    if isinstance(value, (frozenset, set)):
        return {"$frozenset": [_pack(v, buffers) for v in sorted(value)]}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _pack(v, buffers) for k, v in value.items()}
        return {"$dict": [[_pack(k, buffers), _pack(v, buffers)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and TYPES.get(type(value).__name__) is type(value):
        fields = {f.name: _pack(getattr(value, f.name), buffers) for f in dataclasses.fields(value)}
        return {"$type": type(value).__name__, "fields": fields}
    raise ParameterTypeError(
        f"control messages cannot carry a {type(value).__name__}",
        parameter="message",
        value=type(value).__name__,
    )


class _Buffers:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.at = 0

    def take(self, length: Any) -> bytes:
        if not isinstance(length, int) or length < 0 or self.at + length > len(self.data):
            raise ControlError(f"control message: bad buffer length {length!r}")
        out = bytes(self.data[self.at : self.at + length])
        self.at += length
        return out


def _unpack(value: Any, reader: _Buffers) -> Any:
    if isinstance(value, list):
        return [_unpack(v, reader) for v in value]
    if not isinstance(value, dict):
        return value
    tags = [k for k in value if k.startswith("$")]
    if not tags:
        return {k: _unpack(v, reader) for k, v in value.items()}
    tag = tags[0]
    body = value[tag]
    try:
        return _TAGS[tag](value, body, reader)
    except KeyError:
        raise ControlError(f"control message: unknown tag {tag!r}") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ControlError):
            raise
        raise ControlError(f"control message: bad {tag} ({exc})") from None


def _array(body: Any, reader: _Buffers) -> npt.NDArray[Any]:
    length, descr, shape = body
    dtype = np.lib.format.descr_to_dtype(_descr(descr))
    if dtype.hasobject:
        raise ControlError("control message: object arrays are refused")
    out: npt.NDArray[Any] = np.frombuffer(reader.take(length), dtype=dtype).reshape(shape)
    return out.copy()  # writable, like the array that was sent


def _descr(descr: Any) -> Any:
    """A structured descriptor from JSON lists back to the tuples numpy expects."""
    if isinstance(descr, str):
        return descr
    out = []
    for name, sub, *shape in descr:
        kind = _descr(sub) if isinstance(sub, list) else sub
        out.append((name, kind, tuple(shape[0])) if shape else (name, kind))
    return out


def _typed(value: Any, body: Any, reader: _Buffers) -> Any:
    cls = TYPES.get(body) if isinstance(body, str) else None
    if cls is None:
        raise ControlError(f"control message: unknown type {body!r}")
    fields = value.get("fields", {})
    if not isinstance(fields, dict):
        raise ControlError(f"control message: fields of {body} must be an object")
    names = {f.name for f in dataclasses.fields(cls)}
    if not set(fields) <= names:
        raise ControlError(f"control message: {body} has no field {sorted(set(fields) - names)}")
    return cls(**{k: _unpack(v, reader) for k, v in fields.items()})


_TAGS: dict[str, Any] = {
    "$bytes": lambda value, body, reader: reader.take(body),
    "$array": lambda value, body, reader: _array(body, reader),
    "$scalar": lambda value, body, reader: _unpack(body, reader)[0],
    "$tuple": lambda value, body, reader: tuple(_unpack(v, reader) for v in body),
    "$frozenset": lambda value, body, reader: frozenset(_unpack(v, reader) for v in body),
    "$dict": lambda value, body, reader: {_unpack(k, reader): _unpack(v, reader) for k, v in body},
    "$type": _typed,
}
