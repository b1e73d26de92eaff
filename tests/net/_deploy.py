"""A deployment for the daemon tests: a CA, node daemons and a coordinator, all enrolled.

:func:`enrol` makes the CA, each node's keys (``node init``), certificates (``ca sign``,
copied back as ``cert.pem``) and the signed directory, with the library calls the CLI
makes; :class:`Daemons` starts ``crowdhide node serve`` processes (optionally inside network
namespaces), waits for their "listening" line and stops them by pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.enrol import ca_sign, make_directory, node_init
from crowdhide.backends.tls.pki import make_ca

__all__ = ["Daemons", "Deployment", "enrol", "free_ports"]


@dataclass(frozen=True)
class Deployment:
    """Paths of an enrolled deployment."""

    root: Path
    ca: Path
    directory: Path
    coordinator: Path
    nodes: tuple[Path, ...]
    addresses: tuple[str, ...]


def free_ports(n: int) -> list[int]:
    """``n`` TCP ports free on 127.0.0.1 right now."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def enrol(root: Path, addresses: list[str], *, coordinator: str = "127.0.0.1:9") -> Deployment:
    """Enrol one daemon per address (ids 0..n-1) and a coordinator (id 100)."""
    make_ca(out=root / "ca")
    cards = []
    states = []
    for i, address in enumerate(addresses):
        state = root / f"n{i}"
        cards.append(node_init(state, node=i, address=address))
        states.append(state)
    cstate = root / "coord"
    cards.append(node_init(cstate, node=100, address=coordinator, role="coordinator"))
    for card, state in zip(cards, [*states, cstate], strict=True):
        shutil.copy(ca_sign(root / "ca", card), state / "cert.pem")
    directory = make_directory(root / "ca", cards, out=root / "directory.toml")
    return Deployment(
        root, root / "ca" / "ca.pem", directory, cstate, tuple(states), tuple(addresses)
    )


def _env() -> dict[str, str]:
    import crowdhide

    src = str(Path(crowdhide.__file__).resolve().parents[1])
    env = dict(os.environ)
    # CROWDHIDE_TEST_HOOKS: a directory of test-only import hooks (tests/net/_secret_hook.py)
    hooks = [os.environ["CROWDHIDE_TEST_HOOKS"]] if "CROWDHIDE_TEST_HOOKS" in os.environ else []
    env["PYTHONPATH"] = os.pathsep.join([src, os.getcwd(), *hooks])
    return env


class Daemons:
    """``crowdhide node serve`` processes of a deployment (stopped by pid in :meth:`close`)."""

    def __init__(
        self,
        deployment: Deployment,
        rows: list[Path],
        *,
        listen: list[str] | None = None,
        netns: list[str] | None = None,
        serve_args: tuple[str, ...] = (),
    ) -> None:
        self.deployment = deployment
        self.procs: list[subprocess.Popen[bytes]] = []
        self.lines: list[str] = []
        try:
            for i, state in enumerate(deployment.nodes):
                prefix = ["ip", "netns", "exec", netns[i]] if netns is not None else []
                address = listen[i] if listen is not None else deployment.addresses[i]
                command = [
                    *prefix,
                    sys.executable,
                    "-m",
                    "crowdhide",
                    "node",
                    "serve",
                    "--listen",
                    address,
                    "--state",
                    str(state),
                    "--data",
                    str(rows[i]),
                    "--directory",
                    str(deployment.directory),
                    "--ca",
                    str(deployment.ca),
                    *serve_args,
                ]
                with (deployment.root / f"daemon{i}.log").open("wb") as log:
                    self.procs.append(
                        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, env=_env())
                    )
            for i, proc in enumerate(self.procs):
                self.lines.append(self._ready(i, proc))
        except BaseException:
            self.close()
            raise

    def _ready(self, i: int, proc: subprocess.Popen[bytes]) -> str:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline().decode()
            if "listening on" in line:
                return line.strip()
            if not line:
                break
        log = (self.deployment.root / f"daemon{i}.log").read_text(errors="replace")
        raise RuntimeError(f"daemon {i} did not start: {log[-2000:]}")

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def terminate(self, timeout: float = 20.0) -> list[int | None]:
        """SIGTERM every daemon; their exit codes (``None``: still running after timeout)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes: list[int | None] = []
        for proc in self.procs:
            try:
                codes.append(proc.wait(timeout))
            except subprocess.TimeoutExpired:
                codes.append(None)
        return codes

    def close(self) -> None:
        """Kill any survivor by pid."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()


def ask_describe(dep: Deployment, state: Path, *, frame: int = 0, fresh: bool = False) -> Any:
    """Send ``Describe(frame=frame, fresh=fresh)`` to daemon 0 with the credentials in
    ``state``; its reply, or ``None`` if the daemon closed the connection."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(state / "cert.pem", state / "tls.key")
    context.load_verify_locations(dep.ca)
    host, port = dep.addresses[0].split(":")
    data = ctl.encode(ctl.Describe(frame=frame, fresh=fresh))
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="host0") as tls,
    ):
        tls.settimeout(20)
        try:
            tls.sendall(len(data).to_bytes(8, "little") + data)
            head = tls.recv(8)
        except (ssl.SSLError, ConnectionError):
            return None
        if len(head) < 8:
            return None
        body = b""
        while len(body) < int.from_bytes(head, "little"):
            chunk = tls.recv(65536)
            if not chunk:
                return None
            body += chunk
        return ctl.decode(body)
