"""A loopback relay that plays the on-path observer.

Started by the driver as ``python -m crowdhide.backends.tls.relay``. For every ordered host pair
``(a, b)`` it listens on its own 127.0.0.1 port and forwards the bytes of host ``a``'s link
to host ``b`` unchanged, in both directions, while parsing TLS record headers (content type
and length, 5 bytes in the clear) and timestamping each record. This is exactly what a
network observer of Ladjel et al. sees: per connection, record lengths and times.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import numpy as np

from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls._control import read_message, read_message_async, write_message

__all__ = ["main"]


class _Tap:
    """Parses TLS records of one direction of one connection."""

    def __init__(
        self,
        log: list[tuple[int, int, int, int, int, int, int]],
        pair: tuple[int, int],
        conn: int,
        direction: int,
    ) -> None:
        self.log, self.pair, self.conn, self.direction = log, pair, conn, direction
        self.buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self.buffer += data
        now = time.monotonic_ns()
        buffer, at, end = self.buffer, 0, len(self.buffer)
        a, b, conn, direction = self.pair[0], self.pair[1], self.conn, self.direction
        append = self.log.append
        # Walk the complete records, then drop them at once (not one deletion per record).
        while end - at >= 5:
            length = int.from_bytes(buffer[at + 3 : at + 5], "big")
            if end - at < 5 + length:
                break
            append((a, b, conn, direction, buffer[at], length, now))
            at += 5 + length
        del buffer[:at]


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tap: _Tap) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            tap.feed(data)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(cfg: ctl.RelayConfig) -> None:
    log: list[tuple[int, int, int, int, int, int, int]] = []
    counter = [0]
    servers = {}
    tasks: set[asyncio.Task[None]] = set()

    def handler(pair: tuple[int, int], upstream: int) -> Any:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            counter[0] += 1
            conn = counter[0]
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream)
            except OSError:
                writer.close()
                return
            for task in (
                asyncio.create_task(_pump(reader, up_writer, _Tap(log, pair, conn, 0))),
                asyncio.create_task(_pump(up_reader, writer, _Tap(log, pair, conn, 1))),
            ):
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        return handle

    for pair, upstream in cfg.pairs.items():
        servers[pair] = await asyncio.start_server(handler(pair, upstream), "127.0.0.1", 0)
    out = sys.stdout.buffer
    ports = {p: s.sockets[0].getsockname()[1] for p, s in servers.items()}
    write_message(out, ctl.RelayReady(ports=ports))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        msg = await read_message_async(reader)
        if msg is None or isinstance(msg, ctl.Stop):
            break
        if isinstance(msg, ctl.Dump):
            table = np.asarray(log, dtype=np.int64).reshape(-1, 7)
            write_message(out, ctl.Dumped(records=table))
    for server in servers.values():
        server.close()
    for task in list(tasks):
        task.cancel()
    write_message(out, ctl.Stopped(stats={}))


def main() -> None:
    """Entry point: read the configuration from stdin, relay until ``Stop``."""
    cfg = read_message(sys.stdin.buffer)
    if not isinstance(cfg, ctl.RelayConfig):
        kind = type(cfg).__name__
        raise SystemExit(f"the first control message must be a RelayConfig, got {kind}")
    asyncio.run(_serve(cfg))


if __name__ == "__main__":
    main()
