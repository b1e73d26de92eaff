"""The control channel between the driver and its child processes (a pipe pair).

Messages are the typed dataclasses of :mod:`crowdhide.backends.tls.control`, each written
as a length-prefixed :func:`~crowdhide.backends.tls.control.encode` (JSON and raw buffers,
never a pickle): a child decodes only the listed types, whoever wrote the bytes.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import threading
import time
from typing import IO, Any

from crowdhide.backends.tls.control import ControlError, decode, encode

__all__ = [
    "Channel",
    "ChildGoneError",
    "end_with_driver",
    "read_message",
    "read_message_async",
    "write_message",
]

_LENGTH = struct.Struct("<Q")
#: The largest control message read (a job with its blocks' rows stays far below): a
#: longer length prefix is garbage, refused before any allocation (a stray write of
#: ``b"hello world!"`` read as a length asked for 8e18 bytes: a MemoryError).
MAX_MESSAGE = 1 << 30
_CHUNK = 1 << 20


def _checked(length: int, who: str) -> int:
    if length > MAX_MESSAGE:
        raise ControlError(f"{who} sent a {length}-byte control message (at most {MAX_MESSAGE})")
    return length


class ChildGoneError(ConnectionError):
    """The child process closed its end (it exited or was killed)."""


def write_message(stream: IO[bytes], message: Any) -> None:
    """Write one message to a blocking binary stream."""
    data = encode(message)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


class Channel:
    """Driver end of a child's stdin/stdout pipes, with timeouts on reads."""

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes], name: str) -> None:
        self._in = stdin
        self._fd = stdout.fileno()
        self._buffer = bytearray()
        self.name = name

    def send(self, message: Any) -> None:
        """Write ``message``; :class:`ChildGoneError` if the child's stdin is closed."""
        try:
            write_message(self._in, message)
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ChildGoneError(f"{self.name} is gone ({exc})") from None

    def _fill(self, need: int, deadline: float) -> None:
        while len(self._buffer) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name} did not answer in time")
            ready, _, _ = select.select([self._fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._fd, min(_CHUNK, max(65536, need - len(self._buffer))))
            if not chunk:
                raise ChildGoneError(f"{self.name} closed its control pipe (exited or killed)")
            self._buffer += chunk

    def recv(self, timeout: float) -> Any:
        """Read one message within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        self._fill(_LENGTH.size, deadline)
        length = _checked(_LENGTH.unpack_from(self._buffer, 0)[0], self.name)
        self._fill(_LENGTH.size + length, deadline)
        data = bytes(self._buffer[_LENGTH.size : _LENGTH.size + length])
        del self._buffer[: _LENGTH.size + length]
        return decode(data)


async def read_message_async(reader: Any) -> Any:
    """Child side: read one message from an ``asyncio.StreamReader`` (``None`` at EOF)."""
    import asyncio

    try:
        head = await reader.readexactly(_LENGTH.size)
        length = _checked(_LENGTH.unpack(head)[0], "the driver")
        data = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None
    return decode(data)


def read_message(stream: IO[bytes]) -> Any:
    """Child side, blocking: read one message (the configuration, before the loop starts)."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise ChildGoneError("the driver closed the control pipe before the configuration")
    length = _checked(_LENGTH.unpack(head)[0], "the driver")
    return decode(stream.read(length))


def end_with_driver(every: float = 0.2) -> None:
    """Child side: stop this process (SIGTERM to itself) once its driver is gone (killed,
    even by SIGKILL). Otherwise the end of the pipe would be read only after the current
    request — the rest of a round, or a block's computation — 10-15 s later. A thread, so
    that it also cuts a computation short; the driver is our parent until it dies
    (``ip netns exec`` execs the child in place)."""
    driver = os.getppid()

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(every)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()
