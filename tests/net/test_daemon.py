"""Node daemons (``crowdhide node serve``) on 127.0.0.1 and a coordinator that knows little.

Three daemons, each with its own enrolled keys and its own rows, run an aggregate plan
(diabetes, grouping sets, scramblers) driven by :class:`Coordinator`: the released result
has the local backend's shape and frame count (each daemon keys its randomness with its own
secret, so the noisy answer is not the local run's); every byte the coordinator receives is
recorded and holds no block report, no real/dummy counter, no origin, no ``used`` mask, no
daemon's secret and no state but the result's (the same check flags the spawn-hosts
driver, which still receives block reports); a plan asking for a shared seed is refused;
SIGTERM stops every daemon with exit 0 and nothing left; a peer or coordinator whose
certificate is not the directory's is refused; a daemon killed mid-run is named in one line.
"""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls import workload
from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.backends.tls.coordinator import Coordinator, _Conn
from crowdhide.backends.tls.enrol import EnrolmentError
from crowdhide.backends.tls.node_rows import write_rows
from crowdhide.engine.backend import BlockReport, Job
from crowdhide.errors import NodeFailureError
from crowdhide.plans import protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from crowdhide.plans.data import synth_diabetes
from crowdhide.plans.model import ExecutionPlan
from tests.net._deploy import Daemons, Deployment, ask_describe, enrol, free_ports
from tests.net._secret_hook import encodings, install, secrets_drawn
from tests.net.conftest import assert_all_gone

pytestmark = pytest.mark.net

ROWS = 240
BLOCK = 40
NODES = 3
SQL = (
    "SELECT age_range, bmi, COUNT(*), AVG(insulin) FROM D "
    "GROUP BY GROUPING SETS ((age_range), (bmi))"
)


def diabetes_plan() -> ExecutionPlan:
    """The diabetes aggregate on ``ROWS`` users, 2 compute nodes, scramblers and dummies."""
    table = synth_diabetes(rows=ROWS, rng=7)
    setup = aggregate_plan(table, AggregateQuery.from_sql(SQL), compute_nodes=2)
    return protect(setup.plan, sigma=0.6, per_scrambler=10, dummies=2)


def split_rows(plan: ExecutionPlan, root: Path, nodes: int = NODES) -> list[Path]:
    """One data file per daemon: contiguous whole blocks of every source group."""
    blocks = -(-ROWS // BLOCK)
    out = []
    for i in range(nodes):
        first, stop = blocks * i // nodes * BLOCK, min(ROWS, blocks * (i + 1) // nodes * BLOCK)
        columns = {
            g.name: {c: np.asarray(v)[first:stop] for c, v in (g.data or {}).items()}
            for g in plan.groups
            if g.role == "source"
        }
        out.append(write_rows(root / f"rows-{i}.npz", first=first, columns=columns))
    return out


@pytest.fixture
def deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Deployment, Daemons]]:
    # The daemons report every secret they draw to the test (a test-only import hook).
    for key, value in install(tmp_path / "hooks", tmp_path / "drawn").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CROWDHIDE_TEST_HOOKS", str(tmp_path / "hooks"))
    ports = free_ports(NODES)
    dep = enrol(tmp_path, [f"127.0.0.1:{p}" for p in ports])
    daemons = Daemons(dep, split_rows(diabetes_plan(), tmp_path))
    try:
        yield dep, daemons
    finally:
        pids = daemons.pids
        daemons.terminate()
        daemons.close()
        assert_all_gone(pids, ports)


def assert_same_shape(a: Any, b: Any) -> None:
    """States with the same keys at every level and arrays of the same dtype kind."""
    if isinstance(b, dict):
        assert isinstance(a, dict)
        assert a.keys() == b.keys()
        for key in b:
            assert_same_shape(a[key], b[key])
    else:
        assert np.asarray(a).dtype.kind == np.asarray(b).dtype.kind


def coordinator(dep: Deployment, **options: Any) -> Coordinator:
    return Coordinator(directory=dep.directory, ca=dep.ca, state=dep.coordinator, **options)


# -- what the coordinator may learn -----------------------------------------------------
FORBIDDEN_FIELDS = {"traffic", "used", "stats", "src", "origin", "real_delivered", "dummies"}


def leaks(message: Any, results: set[str]) -> list[str]:
    """Everything in a decoded message the coordinator must not learn: block reports (per
    message traffic, counters, ``used`` masks), fields naming origins or real/dummy counts,
    and states of groups other than the result groups ``results``."""
    found: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, BlockReport):
            found.append(f"{where}: a block report of {value.block.group}")
        if isinstance(value, ctl.Released) and value.group not in results:
            found.append(f"{where}: the state of {value.group}")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                if f.name in FORBIDDEN_FIELDS:
                    found.append(f"{where}.{f.name}")
                walk(getattr(value, f.name), f"{where}.{f.name}")
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and k in FORBIDDEN_FIELDS:
                    found.append(f"{where}[{k}]")
                walk(v, f"{where}[{k!r}]")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]")

    walk(message, type(message).__name__)
    return found


def decode_stream(data: bytes) -> list[Any]:
    """Every length-prefixed control message in ``data`` (what one peer sent)."""
    out, at = [], 0
    while at < len(data):
        length = int.from_bytes(data[at : at + 8], "little")
        out.append(ctl.decode(data[at + 8 : at + 8 + length]))
        at += 8 + length
    assert at == len(data)
    return out


def test_daemons_release_the_local_result_and_the_coordinator_learns_counts_only(
    deployment: tuple[Deployment, Daemons], monkeypatch: pytest.MonkeyPatch
) -> None:
    dep, _ = deployment
    plan = diabetes_plan()
    local = execute(plan, rng=5, block_size=BLOCK)
    received: dict[int, bytearray] = {}
    read = _Conn._read

    def recording(self: _Conn, size: int) -> bytes:
        chunk = read(self, size)
        received.setdefault(self.node, bytearray()).extend(chunk)
        return chunk

    monkeypatch.setattr(_Conn, "_read", recording)
    backend = coordinator(dep)
    run = execute(plan, rng=5, backend=backend, block_size=BLOCK)
    assert set(run.states) == {"R"}  # the released output only
    assert_same_shape(run.states["R"], local.states["R"])
    # Secret randomness: other σ draws than the local run's, the same population counted.
    for g in (0, 1):  # each grouping set's route draws its own σ: real messages counted
        assert 0 < int(np.sum(run.states["R"][f"set{g}"]["count"])) <= ROWS
    assert not backend.missing
    assert backend.frames_sent == len(local.transcript)  # dummies included, counts only
    # The data-dependent hop crosses nodes: scramblers and compute nodes on other daemons.
    assert backend.placement.ranges == ((0, 80), (80, 160), (160, 240))
    assert len(run.transcript) == 0
    assert all(r.real_delivered == 0 for r in run.routes.values())
    messages = [m for node in sorted(received) for m in decode_stream(bytes(received[node]))]
    assert sorted(received) == [0, 1, 2]
    kinds = {type(m).__name__ for m in messages}
    assert {"Described", "Ran", "Flushed", "JobLoaded"} <= kinds
    # The default round fits the slowest daemon's own measured frame costs: each daemon's
    # last figures (under load an outlier makes the coordinator ask all to re-measure).
    last: dict[int, ctl.Described] = {}
    for node in sorted(received):
        for m in decode_stream(bytes(received[node])):
            if isinstance(m, ctl.Described):
                last[node] = m
    costs = workload.slowest([m.costs for m in last.values()])
    job = Job(plan=plan, seed=5, block_size=BLOCK)
    assert backend.round_seconds == workload.round_seconds(job, backend.placement, costs=costs)
    assert [x for m in messages for x in leaks(m, {"R"})] == []
    drawn = secrets_drawn(dep.root / "drawn")
    assert len(drawn) == NODES  # one secret per daemon for this job (the hook ran)
    everything = b"".join(bytes(received[node]) for node in sorted(received))
    assert [s for s in drawn for e in encodings(s) if e in everything] == []


def test_a_daemon_refuses_a_plan_asking_for_a_shared_seed(
    deployment: tuple[Deployment, Daemons], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coordinator picks the seed: a daemon keyed by it could be replayed by it."""
    import functools

    from crowdhide.backends.tls import shipping

    dep, _ = deployment
    shared = functools.partial(shipping.ship_job, shared_seed=True)
    monkeypatch.setattr(shipping, "ship_job", shared)
    with pytest.raises(NodeFailureError, match="a plan asking for a shared seed is refused"):
        execute(diabetes_plan(), rng=5, backend=coordinator(dep), block_size=BLOCK)
    assert secrets_drawn(dep.root / "drawn") == []


def test_the_leak_check_flags_the_spawn_hosts_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: the driver that spawns its hosts still receives block
    reports (per-message traffic, real/dummy counters, used masks)."""
    from crowdhide.backends.tls import _control

    seen: list[Any] = []
    recv = _control.Channel.recv

    def recording(self: _control.Channel, timeout: float) -> Any:
        message = recv(self, timeout)
        seen.append(message)
        return message

    monkeypatch.setattr(_control.Channel, "recv", recording)
    plan = diabetes_plan()
    with TlsBackend(hosts=NODES) as backend:
        execute(plan, rng=5, backend=backend, block_size=BLOCK)
    found = [x for m in seen for x in leaks(m, {"R"})]
    assert any("block report" in x for x in found)
    assert any("real_delivered" in x for x in found)


def test_sigterm_stops_every_daemon_cleanly(tmp_path: Path) -> None:
    ports = free_ports(NODES)
    dep = enrol(tmp_path, [f"127.0.0.1:{p}" for p in ports])
    daemons = Daemons(dep, split_rows(diabetes_plan(), tmp_path))
    pids = daemons.pids
    try:
        assert [line.split(" listening")[0] for line in daemons.lines] == [
            f"node {i}" for i in range(NODES)
        ]
        assert daemons.terminate() == [0] * NODES
    finally:
        daemons.close()
    assert_all_gone(pids, ports)
    for i in range(NODES):
        assert "Traceback" not in (tmp_path / f"daemon{i}.log").read_text()


def test_a_coordinator_outside_the_directory_is_refused(
    deployment: tuple[Deployment, Daemons], tmp_path: Path
) -> None:
    dep, _ = deployment
    # Another CA's coordinator: its certificate is not this directory's (refused before it
    # dials), and with its own CA and directory the daemons' TLS handshake refuses it.
    other = enrol(tmp_path / "other", list(dep.addresses))
    with pytest.raises(EnrolmentError, match=r"is not the directory's"):
        Coordinator(directory=dep.directory, ca=dep.ca, state=other.coordinator)
    rogue = Coordinator(directory=other.directory, ca=other.ca, state=other.coordinator)
    with pytest.raises(NodeFailureError, match="node 0"):
        execute(diabetes_plan(), rng=5, backend=rogue, block_size=BLOCK)


@pytest.mark.parametrize(("victim", "on_missing"), [(1, "fail"), (2, "report")])
def test_a_daemon_killed_mid_run_is_named_in_one_line(
    deployment: tuple[Deployment, Daemons],
    victim: int,
    on_missing: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Node 2 serves the result group: even under ``report`` its death ends the run with
    one line (nothing was released), not a KeyError. The victim dies as the first round
    closes (not at a wall-clock time, which a loaded machine may reach during the setup);
    rounds of 4 s leave each program window 0.75 s (2 s rounds overran under load)."""
    dep, daemons = deployment
    backend = coordinator(dep, round_seconds=4.0, deadline=3.0, on_missing=on_missing)
    close = backend._close_round

    def close_then_kill() -> None:
        close()
        if backend.ledger.epoch == 1:
            daemons.procs[victim].send_signal(signal.SIGKILL)

    monkeypatch.setattr(backend, "_close_round", close_then_kill)
    with pytest.raises(NodeFailureError) as caught:
        execute(diabetes_plan(), rng=5, backend=backend, block_size=BLOCK)
    assert backend.ledger.epoch >= 1  # the run got past its first round
    text = str(caught.value)
    assert "\n" not in text
    assert f"node {victim} ({dep.addresses[victim]}) died" in text
    assert daemons.procs[victim].wait(10) == -signal.SIGKILL


def test_daemon_and_run_options_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.cli_helpers import run_cli

    (port,) = free_ports(1)
    dep = enrol(tmp_path, [f"127.0.0.1:{port}"])
    (rows,) = split_rows(diabetes_plan(), tmp_path, nodes=1)
    serve = (
        *("node", "serve", "--data", str(rows)),
        *("--directory", str(dep.directory), "--ca", str(dep.ca)),
    )
    (dep.nodes[0] / "cert.pem").rename(tmp_path / "cert.pem")
    cases = [
        ((*serve, "--listen", "127.0.0.1:x", "--state", str(dep.nodes[0])), "IP:PORT"),
        ((*serve, "--listen", f"127.0.0.1:{port}", "--state", str(dep.nodes[0])), "cert.pem"),
        ((*serve, "--listen", f"127.0.0.1:{port}", "--state", str(dep.coordinator)), "not a node"),
        (
            ("run", "example:diabetes", "--directory", str(dep.directory)),
            "applies to --backend tls only",
        ),
        (
            ("run", "example:diabetes", "--backend", "tls", "--directory", str(dep.directory)),
            "--ca is needed",
        ),
        (
            (
                *("run", "example:diabetes", "--backend", "tls", "--hosts", "3"),
                *("--directory", str(dep.directory), "--ca", str(dep.ca)),
                *("--state", str(dep.coordinator)),
            ),
            "--hosts 3 does not apply",
        ),
        (
            (
                *("run", "example:diabetes", "--backend", "tls", "--shared-seed"),
                *("--directory", str(dep.directory), "--ca", str(dep.ca)),
                *("--state", str(dep.coordinator)),
            ),
            "--shared-seed does not apply to a run on node daemons",
        ),
    ]
    for args, message in cases:
        result = run_cli(capsys, *args)
        assert result.code == 2, (args, result.err)
        assert message in result.err, (args, result.err)
        assert len(result.err.strip().splitlines()) == 1, result.err


def test_a_daemon_refuses_an_address_it_cannot_listen_on(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        dep = enrol(tmp_path, [f"127.0.0.1:{port}"])
        (rows,) = split_rows(diabetes_plan(), tmp_path, nodes=1)
        with pytest.raises(RuntimeError, match=r"--listen 127\.0\.0\.1:\d+: cannot listen"):
            Daemons(dep, [rows])
    assert "Traceback" not in (tmp_path / "daemon0.log").read_text()


def test_a_coordinator_swapping_a_sealing_key_is_refused(
    deployment: tuple[Deployment, Daemons], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coordinator relays the nodes' sealing keys; each daemon signed its own (bound to
    the plan's digest), so a key the coordinator substitutes does not verify."""
    dep, _ = deployment
    send = _Conn.send

    def swapping(self: _Conn, message: Any) -> None:
        if isinstance(message, ctl.Learn):
            keys, signature = message.signed[1]
            forged = {node: bytes(32) for node in keys}  # the coordinator's own keys
            message = dataclasses.replace(
                message, signed={**message.signed, 1: (forged, signature)}
            )
        send(self, message)

    monkeypatch.setattr(_Conn, "send", swapping)
    with pytest.raises(NodeFailureError, match="sealing keys of node 1 are not signed by it"):
        execute(diabetes_plan(), rng=5, backend=coordinator(dep), block_size=BLOCK)


def test_a_certificate_of_the_ca_outside_the_directory_is_dropped(
    deployment: tuple[Deployment, Daemons], tmp_path: Path
) -> None:
    """A coordinator the CA signed but the directory lists under another key completes the
    TLS handshake and is dropped unanswered; the directory's coordinator is answered."""
    import shutil

    from crowdhide.backends.tls.enrol import ca_sign, node_init

    dep, _ = deployment
    rogue = tmp_path / "rogue"
    card = node_init(rogue, node=100, address="127.0.0.1:9", role="coordinator")
    shutil.copy(ca_sign(dep.root / "ca", card), rogue / "cert.pem")
    assert ask_describe(dep, dep.coordinator) is not None  # the check can tell
    assert ask_describe(dep, rogue) is None


def test_a_daemon_reuses_its_fresh_frame_costs(
    deployment: tuple[Deployment, Daemons],
) -> None:
    """A run's setup does not pay the 0.3 s measurement when the figure is fresh: the same
    frame size gets the same figures (two measurements never agree to the last bit), another
    frame size is measured, and ``fresh`` asks for a new measurement."""
    dep, _ = deployment
    first = ask_describe(dep, dep.coordinator, frame=256)
    again = ask_describe(dep, dep.coordinator, frame=256)
    other = ask_describe(dep, dep.coordinator, frame=512)
    renewed = ask_describe(dep, dep.coordinator, frame=256, fresh=True)
    assert first.costs
    assert first.costs == again.costs
    assert other.costs != first.costs
    assert renewed.costs
    assert renewed.costs != first.costs
