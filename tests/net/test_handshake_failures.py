"""Failed TLS handshakes at a node daemon are counted per address and logged, not lost.

A real daemon on 127.0.0.1; real clients: three with a certificate of another CA (the
daemon's TLS refuses them: certificate verify failed), one with an expired certificate of
the run's CA, one sending garbage. The daemon's log says, at WARNING, how many handshakes
from 127.0.0.1 failed and why; its ``Described`` reply (what the coordinator asks first)
carries the counts per address, the coordinator's own handshake still succeeds and a
run's coordinator reports them (``describe()``).
Before, asyncio dropped these connections silently (debug log only).
"""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import time
from pathlib import Path

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.coordinator import Coordinator
from crowdhide.backends.tls.node_rows import write_rows
from crowdhide.backends.tls.pki import make_pki, write_host_cert
from crowdhide.engine.library import named
from crowdhide.engine.plan import ExecutionPlan, PlanBuilder
from tests.net._deploy import Daemons, ask_describe, enrol, free_ports
from tests.net.conftest import assert_all_gone

pytestmark = pytest.mark.net


ROWS = 4


def counting_plan() -> ExecutionPlan:
    b = PlanBuilder()
    b.sources("S", {"g": np.zeros(ROWS, dtype=np.int64)})
    b.result("R", process=named("compute.count", route="S->R", size=1))
    b.route("S", "R", by=named("route.column", column="g"))
    return b.build()


def _context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(ca)
    return context


def _try(address: str, context: ssl.SSLContext) -> None:
    """Handshake, then wait for the daemon to close the connection (a TLS 1.3 client
    learns that its certificate was refused only after its side of the handshake)."""
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="host0") as tls:
                tls.settimeout(10)
                tls.recv(1)
        except (ssl.SSLError, OSError):
            pass


def _garbage(address: str) -> None:
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(300))
        raw.settimeout(10)
        try:
            while raw.recv(4096):
                pass
        except OSError:
            pass


def _wait_for(path: Path, text: str) -> str:
    deadline = time.monotonic() + 20
    log = path.read_text()
    while text not in log and time.monotonic() < deadline:
        time.sleep(0.1)
        log = path.read_text()
    return log


def test_failed_handshakes_are_counted_per_address_and_logged(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    dep = enrol(tmp_path, [f"127.0.0.1:{port}"])
    rows = write_rows(
        tmp_path / "rows.npz", first=0, columns={"S": {"g": np.zeros(ROWS, dtype=np.int64)}}
    )
    daemons = Daemons(dep, [rows])
    log_path = dep.root / "daemon0.log"
    try:
        # Another CA's certificate (it trusts the daemon's CA): refused by the daemon's TLS.
        other = make_pki(hosts=1, out=tmp_path / "other").hosts[0]
        foreign = _context(other.cert, other.key, dep.ca)
        for _ in range(3):
            _try(dep.addresses[0], foreign)
        log = _wait_for(log_path, "3 TLS handshakes from 127.0.0.1 failed")
        assert "node 0: WARNING: 3 TLS handshakes from 127.0.0.1 failed; the latest: " in log, log
        line = log.split("3 TLS handshakes from 127.0.0.1 failed; the latest: ")[1].splitlines()[0]
        assert "certificate verify failed" in line.lower(), line
        # The run's CA, but expired.
        ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
        expired = write_host_cert(
            dep.root / "ca",
            "host0",
            out=tmp_path / "expired",
            not_before=ago - dt.timedelta(days=1),
            not_after=ago,
        )
        _try(dep.addresses[0], _context(expired.cert, expired.key, dep.ca))
        log = _wait_for(log_path, "4 TLS handshakes from 127.0.0.1 failed")
        latest = log.split("4 TLS handshakes from 127.0.0.1 failed; the latest: ")[1]
        assert "expired" in latest.splitlines()[0].lower(), log
        _garbage(dep.addresses[0])
        log = _wait_for(log_path, "5 TLS handshakes from 127.0.0.1 failed")
        assert "5 TLS handshakes from 127.0.0.1 failed; the latest: " in log, log
        # The coordinator's handshake still succeeds, and it is told the counts.
        described = ask_describe(dep, dep.coordinator)
        assert isinstance(described, ctl.Described)
        assert described.node == 0
        assert dict(described.failed_handshakes) == {"127.0.0.1": 5}
        coordinator = Coordinator(
            directory=dep.directory, ca=dep.ca, state=dep.coordinator, round_seconds=2.0
        )
        execute(counting_plan(), rng=1, backend=coordinator, block_size=ROWS)
        assert coordinator.describe()["failed_handshakes"] == {0: {"127.0.0.1": 5}}
        assert "Traceback" not in log_path.read_text()
    finally:
        pids = daemons.pids
        daemons.terminate()
        daemons.close()
        assert_all_gone(pids, [port])


def test_spawned_hosts_count_failed_handshakes_in_their_stats(tmp_path: Path) -> None:
    from crowdhide.backends.tls.backend import TlsBackend
    from crowdhide.engine.backend import Job

    backend = TlsBackend(hosts=2)
    try:
        backend.open(Job(plan=counting_plan(), seed=1, block_size=ROWS))
        for _ in range(2):
            _garbage(f"127.0.0.1:{backend.ports[1]}")
        deadline = time.monotonic() + 20
        stats = backend.host_stats()
        while not stats[1].failed_handshakes and time.monotonic() < deadline:
            time.sleep(0.1)
            stats = backend.host_stats()
        assert dict(stats[1].failed_handshakes) == {"127.0.0.1": 2}
        assert stats[1].stats["failed_handshakes"] == 2
        assert dict(stats[0].failed_handshakes) == {}
    finally:
        backend.close()
