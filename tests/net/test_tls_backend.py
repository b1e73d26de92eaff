"""The tls backend: same results as local, refusals, equal-length records, faults, cleanup."""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import ssl
from pathlib import Path

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import frames as fr
from crowdhide.backends.tls.backend import MissingContributionsError, TlsBackend
from crowdhide.backends.tls.pki import make_pki, write_host_cert
from crowdhide.engine import Job
from tests.net.conftest import BLOCK, SOURCES, assert_all_gone, small_plan

pytestmark = pytest.mark.net


@pytest.mark.parametrize("protected", [False, True])
def test_same_execution_as_local_backend(backends, protected: bool) -> None:
    plan = small_plan(protected=protected)
    local = execute(plan, rng=3, block_size=BLOCK)
    backend = backends(hosts=3)
    run = execute(plan, rng=3, backend=backend, block_size=BLOCK)  # closes the backend
    pids, ports = backend.pids, list(backend.ports.values())
    stats = backend.final_stats
    np.testing.assert_array_equal(run.states["C"]["count"], local.states["C"]["count"])
    assert run.routes == local.routes
    # No origin travels: the driver never learns which sources' real messages were used.
    assert local.used
    assert run.used == {}
    for column in ("round", "source", "target", "size", "order"):
        np.testing.assert_array_equal(
            getattr(run.transcript, column), getattr(local.transcript, column)
        )
    # Every message, dummies included, crossed a TLS link as one frame.
    assert sum(s.stats["frames_in"] for s in stats.values()) == len(local.transcript)
    assert not backend.missing
    # One plaintext length per mode at every host, real or dummy (onion bodies at the
    # scramblers, inner bodies at the targets): a receiver cannot tell them by length.
    lengths: dict[int, set[int]] = {}
    for s in stats.values():
        for mode, seen in s.opened_lengths.items():
            lengths.setdefault(mode, set()).update(seen)
    assert {m: len(v) for m, v in lengths.items()} == dict.fromkeys(lengths, 1)
    assert set(lengths) == ({fr.ONION, fr.FORWARD, -1} if protected else {fr.PLAIN})
    assert_all_gone(pids, ports)


def test_every_record_after_the_handshake_has_the_frame_length(backends) -> None:
    plan = small_plan(protected=True)
    backend = backends(hosts=2, observe=True, frame_size=192)
    run = execute(plan, rng=1, backend=backend, block_size=BLOCK)
    stats = backend.final_stats
    records = backend.wire().records
    length = 192 + 17  # TLS 1.3: frame + content type byte + 16-byte tag
    seen = 0
    for a in range(2):
        for b in range(2):
            link = records[(records[:, 0] == a) & (records[:, 1] == b)]
            assert np.unique(link[:, 2]).size == 1  # one connection per ordered host pair
            for direction, written in ((0, stats[a].written[b]), (1, stats[b].written_in[a])):
                app = link[(link[:, 3] == direction) & (link[:, 4] == 23), 5]
                first = int(np.argmax(app == length))
                assert app[first] == length
                # Only the encrypted handshake precedes the first frame (server: extensions,
                # certificate request, certificate, verify, finished; client: 3); then all equal.
                assert first <= 5
                assert (app[first:] == length).all()
                assert app[first:].size == written  # one record per frame, none merged or split
                seen += written
    # Welcome + END per link and direction, ACK per epoch; the rest are the messages.
    assert seen > len(run.transcript) > SOURCES


def _rogue(port: int, cert: Path | None, key: Path | None, claim: int, size: int) -> bytes:
    """Connect like a host would, send a welcome and data frames; return what came back."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    frame = fr.pack_control(fr.WELCOME, epoch=0, count=0, origin=claim, size=size)
    data = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, 0) + bytes(size - fr.HEADER.size)
    got = b""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            ctx.wrap_socket(raw) as tls,
        ):
            tls.sendall(frame)
            for _ in range(20):
                tls.sendall(data)
            while len(got) < size:
                chunk = tls.recv(4096)
                if not chunk:
                    break
                got += chunk
    except (ssl.SSLError, OSError):
        pass
    return got


def test_peers_without_valid_credentials_are_refused(backends, tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    make_pki(hosts=2, out=pki)
    make_pki(hosts=2, out=tmp_path / "other")
    now = dt.datetime.now(dt.UTC)
    expired = write_host_cert(
        pki,
        "host1",
        out=tmp_path / "expired",
        not_before=now - dt.timedelta(days=10),
        not_after=now - dt.timedelta(days=1),
    )
    stranger = write_host_cert(pki, "host9", out=tmp_path / "stranger")
    plan = small_plan(protected=False)
    backend = backends(hosts=2, pki=pki)
    backend.open(Job(plan=plan, seed=0, block_size=BLOCK))
    port = backend.ports[0]
    cases = {
        "other CA": (tmp_path / "other" / "host1.pem", tmp_path / "other" / "host1.key", 1),
        "no certificate": (None, None, 1),
        "expired": (expired.cert, expired.key, 1),
        "CA-signed, wrong host name": (stranger.cert, stranger.key, 1),
    }
    for name, (cert, key, claim) in cases.items():
        assert _rogue(port, cert, key, claim, backend.frame) == b"", name
    stats = backend.host_stats()[0].stats
    assert stats["frames_in"] == 0  # nothing any refused peer sent was delivered
    assert stats["refused"] == 1  # the wrong-name peer got past TLS and was refused by name
    # A genuine host certificate passes TLS and the name check, but host 1 is already linked:
    # a second link under its identity is refused (it used to replace the first) and counted.
    assert _rogue(port, pki / "host1.pem", pki / "host1.key", 1, backend.frame) == b""
    stats = backend.host_stats()[0].stats
    assert stats["duplicate_identity"] == 1
    assert stats["frames_in"] == 0


def _killer(backend: TlsBackend, host: int):
    def progress(done: int, total: int, group: str) -> None:
        if group == "S":  # sources emitted; frames leave at the next barrier
            os.kill(backend.pids[host], signal.SIGKILL)
            backend._procs[host].proc.wait(10)

    return progress


@pytest.mark.parametrize("protected", [False, True])
def test_sigkill_of_a_host_reports_exactly_its_sources(backends, protected: bool) -> None:
    plan = small_plan(protected=protected)
    local = execute(plan, rng=5, block_size=BLOCK)
    backend = backends(hosts=3, on_missing="report", deadline=5.0, placement="modulo")
    run = execute(plan, rng=5, backend=backend, progress=_killer(backend, 1), block_size=BLOCK)
    pids, ports = backend.pids, list(backend.ports.values())
    report = backend.missing
    assert report.dead_hosts == (1,)
    assert report.lost_blocks == ()
    # Host 1 serves source blocks 1 and 4 (block b on host b mod 3); C and scramblers: host 0.
    killed = np.zeros(SOURCES, dtype=bool)
    for block in (1, 4):
        killed[block * BLOCK : (block + 1) * BLOCK] = True
    t = local.transcript
    # Exactly the frames host 1 had queued are lost, counted on its links (real or dummy:
    # the report does not say, nor which source they came from).
    assert report.messages == int(np.count_nonzero(killed[t.source[t.source < SOURCES]]))
    assert {a for a, _ in report.links} == {1}
    assert "missing_contributions" not in report.to_dict()
    used = local.used["S->C"]
    g = np.arange(SOURCES) % 4
    np.testing.assert_array_equal(
        run.states["C"]["count"], np.bincount(g[used & ~killed], minlength=4)
    )
    assert_all_gone(pids, ports)


def test_sigkill_fails_the_run_by_default(backends) -> None:
    plan = small_plan(protected=False)
    backend = backends(hosts=3, deadline=5.0)
    with pytest.raises(MissingContributionsError, match="messages lost"):
        execute(plan, rng=0, backend=backend, progress=_killer(backend, 1), block_size=BLOCK)
    pids, ports = backend.pids, list(backend.ports.values())
    assert_all_gone(pids, ports)


def test_sigkill_of_a_scrambler_host_names_the_sources_behind_its_forwards(backends) -> None:
    from crowdhide.plans import protect
    from tests.net.conftest import small_plan as base

    plan = protect(base(protected=False), sigma=0.5, per_scrambler=5, dummies=3)
    scramblers = next(g for g in plan.groups if g.role == "scrambler")
    assert scramblers.size == 60  # blocks 0 (host 0) and 1 (host 1: scramblers 50..59)
    local = execute(plan, rng=2, block_size=BLOCK)
    backend = backends(hosts=3, on_missing="report", deadline=5.0, placement="modulo")

    def progress(done: int, total: int, group: str) -> None:
        if group == scramblers.name:  # host 1 queued its forwards; they never leave
            os.kill(backend.pids[1], signal.SIGKILL)
            backend._procs[1].proc.wait(10)

    run = execute(plan, rng=2, backend=backend, progress=progress, block_size=BLOCK)
    behind = np.zeros(SOURCES, dtype=bool)
    behind[50 * 5 :] = True  # sources of scramblers 50..59
    used = local.used["S->C"]
    t = local.transcript
    first = SOURCES  # global ids: sources, then the scramblers (then C)
    lost = (t.source >= first + 50) & (t.source < first + 60)
    assert backend.missing.messages == int(lost.sum())  # the forwards host 1 never sent
    assert {a for a, _ in backend.missing.links} == {1}
    g = np.arange(SOURCES) % 4
    np.testing.assert_array_equal(
        run.states["C"]["count"], np.bincount(g[used & ~behind], minlength=4)
    )
