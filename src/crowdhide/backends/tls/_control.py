"""The control channel between the driver and its child processes (a pipe pair).

Messages are length-prefixed pickles: the channel links a driver to processes it started
itself, with its own ``sys.executable``, so both ends are the same trusted program.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from typing import IO, Any

__all__ = ["Channel", "ChildGoneError", "write_message"]

_LENGTH = struct.Struct("<Q")


class ChildGoneError(ConnectionError):
    """The child process closed its end (it exited or was killed)."""


def write_message(stream: IO[bytes], message: Any) -> None:
    """Write one message to a blocking binary stream."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
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
            chunk = os.read(self._fd, max(65536, need - len(self._buffer)))
            if not chunk:
                raise ChildGoneError(f"{self.name} closed its control pipe (exited or killed)")
            self._buffer += chunk

    def recv(self, timeout: float) -> Any:
        """Read one message within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        self._fill(_LENGTH.size, deadline)
        (length,) = _LENGTH.unpack_from(self._buffer, 0)
        self._fill(_LENGTH.size + length, deadline)
        data = bytes(self._buffer[_LENGTH.size : _LENGTH.size + length])
        del self._buffer[: _LENGTH.size + length]
        return pickle.loads(data)


async def read_message_async(reader: Any) -> Any:
    """Child side: read one message from an ``asyncio.StreamReader`` (``None`` at EOF)."""
    import asyncio

    try:
        head = await reader.readexactly(_LENGTH.size)
        (length,) = _LENGTH.unpack(head)
        data = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None
    return pickle.loads(data)
