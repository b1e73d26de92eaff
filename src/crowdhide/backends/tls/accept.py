"""Accepting TLS connections so that a failed handshake is seen, counted and named.

``loop.create_server(ssl=...)`` drops a connection whose handshake fails (another CA, an
expired certificate, garbage, a timeout) without telling the application: asyncio logs it
at debug level only. :func:`serve_tls` accepts plain TCP connections and upgrades each with
``loop.start_tls``; a failure reaches ``failed(address, reason)`` — the remote address and
one line of reason — and the protocol made by ``factory`` sees only connections whose
handshake succeeded, exactly as with ``create_server(ssl=...)``. :class:`HandshakeFailures`
counts them per remote address and writes the operator's log line.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import sys
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["HandshakeFailures", "reason_of", "serve_tls"]

#: ``failed(address, reason)``: a handshake from ``address`` (its IP) failed.
Failed = Callable[[str, str], None]


def reason_of(exc: BaseException) -> str:
    """One line saying why a handshake failed (the OpenSSL source position dropped).

    Examples
    --------
    >>> reason_of(ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)"))
    '[SSL: WRONG_VERSION_NUMBER] wrong version number'
    >>> reason_of(ConnectionResetError())
    'ConnectionResetError'
    """
    text = " ".join(str(exc).split())
    return re.sub(r"\s*\(_ssl\.c:\d+\)$", "", text) or type(exc).__name__


class HandshakeFailures:
    """Failed handshakes per remote address, and the log line for each (on ``log``,
    default standard error): the first ten from an address, then every power of two, so a
    flood of garbage cannot flood the log.

    Examples
    --------
    >>> import io
    >>> log = io.StringIO()
    >>> seen = HandshakeFailures("node 0", log=log)
    >>> for _ in range(3):
    ...     seen.failed("10.0.0.9", "certificate verify failed")
    >>> seen.counts
    {'10.0.0.9': 3}
    >>> print(log.getvalue().splitlines()[-1])
    node 0: WARNING: 3 TLS handshakes from 10.0.0.9 failed; the latest: certificate verify failed

    At most ``addresses`` are counted one by one (a peer cycling through source addresses
    cannot grow the table without bound); failures from any further address are counted
    under ``"other addresses"``:

    >>> few = HandshakeFailures("node 0", log=io.StringIO(), addresses=2)
    >>> for last in range(5):
    ...     few.failed(f"10.0.0.{last}", "garbage")
    >>> few.counts
    {'10.0.0.0': 1, '10.0.0.1': 1, 'other addresses': 3}
    """

    #: The key under which failures beyond the table's capacity are counted.
    OTHER = "other addresses"

    def __init__(self, who: str, *, log: TextIO | None = None, addresses: int = 1024) -> None:
        self.who = who
        self.log = log
        self.capacity = addresses
        self.counts: dict[str, int] = {}

    @property
    def total(self) -> int:
        """Failed handshakes from every address."""
        return sum(self.counts.values())

    def failed(self, address: str, reason: str) -> None:
        """Count one failed handshake from ``address``; log it (see the class docstring)."""
        if address not in self.counts and len(self.counts) >= self.capacity:
            address = self.OTHER
        n = self.counts.get(address, 0) + 1
        self.counts[address] = n
        if n <= 10 or n & (n - 1) == 0:
            what = "TLS handshake" if n == 1 else f"{n} TLS handshakes"
            latest = "" if n == 1 else "; the latest"
            print(
                f"{self.who}: WARNING: {what} from {address} failed{latest}: {reason}",
                file=self.log if self.log is not None else sys.stderr,
                flush=True,
            )


class _Early(asyncio.Protocol):
    """Holds what arrives between the end of the handshake and the hand-over to the
    application's protocol (``start_tls`` may read before its caller resumes)."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.eof = False
        self.lost: tuple[Exception | None] | None = None

    def data_received(self, data: bytes) -> None:
        self.data.append(data)

    def eof_received(self) -> bool | None:
        self.eof = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = (exc,)

    def hand_over(self, transport: asyncio.Transport, protocol: asyncio.Protocol) -> None:
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        for data in self.data:
            protocol.data_received(data)
        if self.eof and not protocol.eof_received():
            transport.close()
        if self.lost is not None:
            protocol.connection_lost(self.lost[0])


class _Accepted(asyncio.Protocol):
    """One accepted TCP connection until its TLS handshake ends."""

    def __init__(
        self,
        factory: Callable[[], asyncio.Protocol],
        context: ssl.SSLContext,
        timeout: float,
        failed: Failed,
        tasks: set[asyncio.Task[None]],
    ) -> None:
        self.factory, self.context, self.timeout = factory, context, timeout
        self.failed, self.tasks = failed, tasks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()  # nothing is read before start_tls takes the transport
        task = asyncio.get_running_loop().create_task(self._upgrade(transport))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _upgrade(self, raw: asyncio.Transport) -> None:
        peer: Any = raw.get_extra_info("peername")
        address = str(peer[0]) if peer else "an unknown address"
        early = _Early()
        try:
            if raw.is_closing():
                raise ConnectionResetError("closed before the handshake")
            tls = await asyncio.get_running_loop().start_tls(
                raw, early, self.context, server_side=True, ssl_handshake_timeout=self.timeout
            )
        except (OSError, TimeoutError, RuntimeError, ValueError) as exc:
            raw.abort()
            self.failed(address, reason_of(exc))
            return
        except asyncio.CancelledError:  # the server is closing
            raw.abort()
            raise
        if tls is None:  # closed while the handshake ended
            self.failed(address, "closed during the handshake")
            return
        early.hand_over(tls, self.factory())

    def data_received(self, data: bytes) -> None:  # reading is paused until start_tls
        pass


async def serve_tls(
    factory: Callable[[], asyncio.Protocol],
    host: str,
    port: int,
    context: ssl.SSLContext,
    *,
    timeout: float,
    failed: Failed,
    reuse_address: bool | None = None,
) -> asyncio.Server:
    """Listen on ``host:port`` like ``loop.create_server(factory, host, port, ssl=context,
    ssl_handshake_timeout=timeout)``, but report every failed handshake to ``failed``."""
    tasks: set[asyncio.Task[None]] = set()
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: _Accepted(factory, context, timeout, failed, tasks),
        host,
        port,
        reuse_address=reuse_address,
    )
