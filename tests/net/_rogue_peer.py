"""A rogue peer of a node daemon (run inside a test's namespace by tests/net/test_faults.py).

``python -m tests.net._rogue_peer ADDRESS MODE [STATE]`` connects to the daemon at
``ADDRESS`` and prints one word: ``answered`` if the daemon replied to a control
``Describe``, ``refused`` if it closed the connection or failed the handshake. ``MODE``:
``tls`` presents ``STATE/cert.pem`` and ``STATE/tls.key`` (the rogue does not check the
daemon's certificate); ``garbage`` sends random bytes over plain TCP. Two more modes print
the type of each message the daemon sent back instead (``nothing``: it closed first):
``first`` sends a ``Describe`` as ``tls`` does; ``hold`` sends one, prints, holds the
connection until its standard input closes, then sends another and prints again (a
coordinator's control connection that a test keeps open).
"""

from __future__ import annotations

import os
import socket
import ssl
import sys
from pathlib import Path

from crowdhide.backends.tls import control as ctl


def _tls(address: tuple[str, int], state: Path) -> str:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(state / "cert.pem", state / "tls.key")
    data = ctl.encode(ctl.Describe())
    with socket.create_connection(address, timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="host0") as tls:
                tls.settimeout(10)
                tls.sendall(len(data).to_bytes(8, "little") + data)
                head = tls.recv(8)
        except (OSError, ssl.SSLError):
            return "refused"
    return "answered" if len(head) == 8 else "refused"


def _reply(tls: ssl.SSLSocket) -> str:
    """Send a ``Describe``; the type of the daemon's next message, or ``nothing``."""
    data = ctl.encode(ctl.Describe())
    try:
        tls.sendall(len(data).to_bytes(8, "little") + data)
        body = b""
        head = tls.recv(8)
        while len(head) == 8 and len(body) < int.from_bytes(head, "little"):
            chunk = tls.recv(65536)
            if not chunk:
                return "nothing"
            body += chunk
    except (OSError, ssl.SSLError):
        return "nothing"
    return type(ctl.decode(body)).__name__ if len(head) == 8 else "nothing"


def _typed(address: tuple[str, int], state: Path, *, hold: bool) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(state / "cert.pem", state / "tls.key")
    with socket.create_connection(address, timeout=10) as raw:
        try:
            tls = context.wrap_socket(raw, server_hostname="host0")
        except (OSError, ssl.SSLError):
            print("nothing", flush=True)
            return
        with tls:
            tls.settimeout(20)
            print(_reply(tls), flush=True)
            if hold:
                sys.stdin.read()  # until the test lets go
                print(_reply(tls), flush=True)


def _garbage(address: tuple[str, int]) -> str:
    with socket.create_connection(address, timeout=10) as raw:
        try:
            raw.sendall(os.urandom(4096))
            raw.settimeout(10)
            while raw.recv(65536):
                pass
        except OSError:
            pass
    return "refused"


if __name__ == "__main__":
    host, port = sys.argv[1].rsplit(":", 1)
    target = (host, int(port))
    if sys.argv[2] in ("first", "hold"):
        _typed(target, Path(sys.argv[3]), hold=sys.argv[2] == "hold")
    else:
        print(_tls(target, Path(sys.argv[3])) if sys.argv[2] == "tls" else _garbage(target))
