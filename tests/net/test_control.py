"""Typed control messages: every type round-trips through JSON + buffers, and the decoder
builds nothing it does not list (pickles, unknown types, object arrays, bad lengths)."""

from __future__ import annotations

import dataclasses
import io
import pickle
from typing import Any

import numpy as np
import pytest

from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls._control import read_message, write_message
from crowdhide.engine.backend import BlockReport
from crowdhide.engine.messages import Block

_REPORT = BlockReport(
    block=Block("S", 2, 100, 150),
    traffic=(
        (
            0,
            64,
            np.arange(3, dtype=np.int32),
            np.array([7, 8, 9], dtype=np.int32),
            np.zeros(3, dtype=np.int32),
        ),
    ),
    stats={"S->C": {"messages": 3, "dummies": 1}},
    used={"S->C": np.array([True, False, True])},
    state={"count": np.arange(4.0), "k": np.int64(3), "name": "x", "nan": float("nan")},
)

EXAMPLES: list[Any] = [
    ctl.HostConfig(
        host=1, hosts=3, frame=256, ca="ca.pem", cert="h.pem", key="h.key", coordinator=b"c" * 32
    ),
    ctl.Connect(peers={0: ("10.0.0.1", 7000), 2: ("10.0.0.3", 7002)}, timeout=5.0),
    ctl.LoadJob(
        plan=b"{}",
        signature=b"s" * 64,
        rows={"S": {0: {"g": np.arange(3)}, 50: {"g": np.arange(2)}}},
        receivers=("C", "R"),
    ),
    ctl.JobRefused(error="bad signature"),
    ctl.Learn(hosts={0: b"k" * 32}, nodes={1 << 30: b"n" * 32}),
    ctl.Run(group="C", schemas={0: (("x", "<f8", ()), ("k", "<i4", (2,)))}, epoch=3),
    ctl.Flush(epoch=4, alive=(0, 2), deadline=10.0, start=1.7e9, ack_at=1.7e9 + 0.3),
    ctl.Blast(peer=1, count=10),
    ctl.GetStats(),
    ctl.Stop(),
    ctl.Hello(port=4242),
    ctl.Connected(failed={2: "ConnectionRefusedError"}),
    ctl.JobLoaded(nodes={5: b"n" * 32}),
    ctl.Learned(),
    ctl.RunDone(
        reports=(_REPORT,),
        schemas={0: (("x", "<f8", ()),)},
        queued={1: 8, 2: 0},
    ),
    ctl.RunFailed(error="ValueError: boom"),
    ctl.Flushed(
        received={0: 3},
        acked={0: None, 1: 2},
        claimed={0: 3, 1: None},
        rejected={1: {"invalid": 0, "stale": 2, "duplicate": 1, "garbage": 0}},
        late=0.012,
    ),
    ctl.Blasted(queued=10),
    ctl.Stats(
        stats={"refused": 0},
        up={0: True},
        written={0: 5},
        written_in={1: 4},
        opened_lengths={-1: (46,), 2: (90,)},
    ),
    ctl.Stopped(stats={"frames_in": 1}),
    ctl.RelayConfig(pairs={(0, 1): 7001}),
    ctl.RelayReady(ports={(0, 1): 9001}),
    ctl.Dump(),
    ctl.Dumped(records=np.arange(14, dtype=np.int64).reshape(2, 7)),
    ctl.Describe(),
    ctl.Described(node=1, first=200, rows=200),
    ctl.Busy(peer="10.0.0.9:40312", since=1.7e9, heard=2.5, running=True),
    ctl.Prepare(frame=276, hosts=3, rounds=(0.5, 1.25), deadline=10.0),
    ctl.Prepared(),
    ctl.Link(peers=(0, 1, 2), timeout=5.0),
    ctl.Ran(
        schemas={0: (("x", "<f8", ()),)},
        queued={1: 3},
        emitted={1: 3},
        released=(ctl.Released("R", 0, {"sum": np.arange(3.0)}),),
    ),
    ctl.EndRun(),
    ctl.Abandon(reason="terminated (SIGTERM)"),
    ctl.Ended(),
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(_same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, np.generic):
        return type(a) is type(b) and a == b
    return type(a) is type(b) and a == b


def test_every_message_type_has_an_example() -> None:
    listed = {n for n, t in ctl.TYPES.items() if t not in (Block, BlockReport, ctl.Released)}
    assert {type(m).__name__ for m in EXAMPLES} == listed


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip(message: Any) -> None:
    data = ctl.encode(message)
    assert b"\x80\x04" not in data[:2]  # not a pickle (protocol header)
    assert _same(message, ctl.decode(data))
    stream = io.BytesIO()
    write_message(stream, message)
    stream.seek(0)
    assert _same(message, read_message(stream))


def test_the_comparison_can_fail() -> None:
    other = dataclasses.replace(_REPORT, state={"count": np.arange(4.0) + 1})
    assert not _same(_REPORT, other)
    assert not _same(ctl.Flush(epoch=1, alive=(0,), deadline=1.0), ctl.Flush(1, (1,), 1.0))
    assert not _same(ctl.Flushed({}, {}, late=0.5), ctl.Flushed({}, {}, late=0.0))


def test_structured_arrays_round_trip() -> None:
    records = np.zeros(3, dtype=[("x", "<f8"), ("k", "<i4", (2,))])
    records["k"][1] = [4, 5]
    out = ctl.decode(ctl.encode(ctl.Dumped(records=records))).records  # type: ignore[arg-type]
    assert out.dtype == records.dtype
    assert out.tobytes() == records.tobytes()


class _Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("a pickle ran",))


def _framed(doc: bytes, tail: bytes = b"") -> bytes:
    return len(doc).to_bytes(4, "little") + doc + tail


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (pickle.dumps(_Boom()), "not a JSON document"),
        (_framed(b'{"$type": "Popen", "fields": {}}'), "unknown type 'Popen'"),
        (_framed(b'{"$type": "Stop", "fields": {"cmd": 1}}'), "has no field"),
        (_framed(b'{"$type": "Dumped", "fields": {"records": {"$array": [8, "|O", [1]]}}}'), "obj"),
        (_framed(b'{"$type": "Dumped", "fields": {"records": {"$bytes": 9}}}'), "length"),
        (_framed(b'{"$type": "Stop", "fields": {}}', b"extra"), "trailing bytes"),
        (_framed(b'{"$eval": "1"}'), "unknown tag"),
        (_framed(b'{"a": 1}'), "not a message"),
        (_framed(b'{"$type": "Block", "fields": {}}'), "bad $type"),
        (b"\x01", "not a JSON document"),
    ],
)
def test_malformed_bytes_are_refused(data: bytes, words: str, capsys: Any) -> None:
    with pytest.raises(ctl.ControlError, match=words.replace("$", r"\$")):
        ctl.decode(data)
    assert "a pickle ran" not in capsys.readouterr().out


def test_only_listed_types_are_sent() -> None:
    with pytest.raises(TypeError, match="not a control message"):
        ctl.encode({"op": "stop"})
    with pytest.raises(TypeError, match="dtype object"):
        ctl.encode(ctl.Dumped(records=np.array([object()])))  # type: ignore[arg-type]


def test_a_garbage_length_prefix_is_refused_before_any_allocation() -> None:
    """A child writing stray bytes on its control pipe: the driver read ``b"hello wo"`` as
    an 8e18-byte length and died of a MemoryError (review of issue 27)."""
    import os

    from crowdhide.backends.tls._control import Channel

    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b"hello world! and then some more bytes")
        with (
            open(read_fd, "rb", closefd=False) as stdout,
            open(os.devnull, "wb") as stdin,
        ):
            channel = Channel(stdin, stdout, "host 0")
            with pytest.raises(ctl.ControlError, match=r"host 0 sent a \d+-byte control message"):
                channel.recv(timeout=5.0)
        with pytest.raises(ctl.ControlError, match="at most"):
            read_message(io.BytesIO(b"\xff" * 8 + b"x"))
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_deep_nesting_is_a_control_error() -> None:
    doc = b"[" * 100_000 + b"]" * 100_000
    data = len(doc).to_bytes(4, "little") + doc
    with pytest.raises(ctl.ControlError):
        ctl.decode(data)


def test_busy_says_why_in_one_line_whatever_its_fields() -> None:
    """The refusal a daemon sends a second coordinator: its text names the other
    connection; fields of the wrong type (a broken daemon) still give one line, not an
    exception in the coordinator."""
    busy = ctl.decode(
        ctl.encode(ctl.Busy(peer="10.0.0.9:1", since=0.0, heard=61.25, running=False))
    )
    assert busy.why() == (
        "it is serving another coordinator connection (from 10.0.0.9:1 since 00:00:00 UTC, "
        "last message 61.2 s ago, no run in progress)"
    )
    odd = ctl.Busy(peer="a\nb" * 100, since=float("nan"), heard="x", running=1)  # type: ignore[arg-type]
    text = odd.why()
    assert "\n" not in text
    assert "since nan," in text
    assert "last message 'x' ago" in text
    assert "no run in progress" in text  # only True says a run is on
    assert len(text) < 300
