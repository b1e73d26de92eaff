"""The fault table against real node daemons (issue #27 items 6 and 7).

Four ``crowdhide node serve`` daemons and the coordinator (``crowdhide run ... --backend
tls --directory``) each run in their own network namespace on a bridge (one set per module).
Each test injects one fault — SIGSTOP/SIGCONT of a daemon, its link down and up, a ``tc tbf``
rate limit on its link, rogue peers, SIGKILL — and checks the run's outcome is exact and
honest: the exit code, one line naming the node on failure, and under ``--on-missing
report`` a report whose per-link counts reconcile and that says the run was incomplete. The
daemons keep serving: after every fault the next clean run must release the result with
nothing lost. The table these tests check is in docs/deploy.md ("Fault table").
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.net._deploy import Daemons, Deployment, _env, enrol
from tests.net.conftest import assert_all_gone
from tests.net.netns import Bridge, available, leftovers

pytestmark = [pytest.mark.net, pytest.mark.slow]

ROWS = 400
BLOCK = 100
NODES = 4
PORT = 7000
#: Fixed round length of the fault runs (seconds): faults last longer than a round.
ROUND = 2.0


@dataclass
class Cluster:
    """Daemons in namespaces 0..2, the coordinator's namespace 3, an enrolled deployment."""

    bridge: Bridge
    deployment: Deployment
    daemons: Daemons
    plan: Path
    root: Path

    def run(
        self, out: str, *extra: str, timeout: float = 300, plan: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``crowdhide run`` on the daemons from the coordinator's namespace."""
        return subprocess.run(
            self.argv(out, *extra, plan=plan),
            cwd=self.root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def argv(
        self, out: str, *extra: str, plan: Path | None = None, as_json: bool = True
    ) -> list[str]:
        dep = self.deployment
        return [
            *("ip", "netns", "exec", self.bridge.nodes[NODES]),
            *(sys.executable, "-m", "crowdhide", "run", str(plan or self.plan)),
            *("--backend", "tls", "--directory", str(dep.directory), "--ca", str(dep.ca)),
            *("--state", str(dep.coordinator), "--block-size", str(BLOCK)),
            *("--out", str(self.root / out), "--allow-unmet", *extra),
            *(["--json"] if as_json else []),
        ]

    def start(self, out: str, *extra: str, as_json: bool = True) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(out, *extra, as_json=as_json),
            cwd=self.root,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def connected(self, node: int) -> bool:
        """Whether the coordinator holds a control connection to daemon ``node``."""
        ss = subprocess.run(
            ["ip", "netns", "exec", self.bridge.nodes[node], "ss", "-tnH", "state", "established"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        return f"{self.bridge.addresses[NODES]}:" in ss

    def log(self, node: int) -> str:
        return (self.root / f"daemon{node}.log").read_text(errors="replace")


def write_plan(folder: Path, rows: int = ROWS) -> Path:
    example = Path(__file__).resolve().parents[2] / "src/crowdhide/examples/diabetes.toml"
    text = example.read_text(encoding="utf-8").replace("rows = 20000", f"rows = {rows}")
    text = text.replace("compute_nodes = 10", "compute_nodes = 3")
    plan = folder / "plan.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    return plan


def split(plan: Path, out: Path) -> list[Path]:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "crowdhide", "net", "split", str(plan)),
            *("--nodes", str(NODES), "--block-size", str(BLOCK), "--out", str(out)),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [out / f"rows-{i}.npz" for i in range(NODES)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with serving(tmp_path_factory.mktemp("faults"), tag="f") as made:
        yield made


@contextmanager
def serving(root: Path, *, tag: str) -> Iterator[Cluster]:
    """Daemons in namespaces 0..NODES-1 on a fresh bridge, the coordinator's namespace last;
    afterwards every daemon is stopped and nothing of theirs or the bridge's is left.
    Skips the test where namespaces cannot be made (not root, no iproute2)."""
    why = available()
    if why is not None:
        pytest.skip(why)
    bridge = Bridge(NODES + 1, tag=tag)
    pids: list[int] = []
    try:
        addresses = [f"{a}:{PORT}" for a in bridge.addresses[:NODES]]
        dep = enrol(root, addresses, coordinator=f"{bridge.addresses[NODES]}:{PORT}")
        plan = write_plan(root)
        daemons = Daemons(dep, split(plan, root / "rows"), netns=bridge.nodes[:NODES])
        pids = daemons.pids
        try:
            yield Cluster(bridge, dep, daemons, plan, root)
        finally:
            for proc in daemons.procs:  # a test may leave one stopped
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGCONT)
            daemons.terminate()
            daemons.close()
    finally:
        bridge.close()
    assert leftovers(bridge.prefix) == []
    assert_all_gone(pids, [])


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    assert "Traceback" not in err
    return lines[0]


def wait_connected(cluster: Cluster, proc: subprocess.Popen[str], node: int) -> None:
    """Until the coordinator reached ``node`` (bounded), then a little into the run."""
    deadline = time.monotonic() + 120
    while not cluster.connected(node) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    assert cluster.connected(node)


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return proc.returncode, out, err


def assert_reconciles(net: dict[str, object]) -> None:
    """Per link: delivered + lost = sent (sent: what the sender's blocks emitted, less what
    it withheld)."""
    delivered = net["delivered_per_link"]
    lost = net["lost_per_link"]
    assert isinstance(delivered, dict)
    assert isinstance(lost, dict)
    assert sum(delivered.values()) == net["data_frames_delivered"]
    assert sum(lost.values()) == net["messages_lost"]


def clean_run(cluster: Cluster, out: str) -> dict[str, Any]:
    """A run with no fault: the daemons still serve, nothing lost, exit 0."""
    done = cluster.run(out)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    net = report["network"]
    assert isinstance(net, dict)
    assert net["messages_lost"] == 0
    assert net["dead_hosts"] == []
    assert net["suspect_hosts"] == []
    assert net["complete"] is True
    return report


def test_a_clean_run_is_complete_and_counts_reconcile(cluster: Cluster) -> None:
    report = clean_run(cluster, "clean")
    net = report["network"]
    assert isinstance(net, dict)
    assert_reconciles(net)
    assert not any("INCOMPLETE" in n for n in report["notes"])


def overrun_line(cluster: Cluster, code: int, err: str, node: int | None) -> str:
    """An overrun: exit 4 and one line giving each daemon's answer time, ``node`` first."""
    line = one_line(err)
    assert code == 4, err[-3000:]
    assert line.startswith("crowdhide: ROUND OVERRUN: round ")
    # a round's frames overran it, or a program ended past the scheduled answer
    assert "overran its fixed length" in line or "after the scheduled answer" in line, line
    assert "the daemons answered this round after: " in line, line
    took = line.split("the daemons answered this round after: ")[1].split(", ")
    assert len(took) == NODES, line
    if node is not None:  # a stopped or cut off daemon answers last
        assert took[0].startswith(f"node {node} ({cluster.bridge.addresses[node]}:{PORT}) ")
    return line


@pytest.mark.parametrize("mode", ["fail", "report"])
def test_a_daemon_stopped_longer_than_a_round_is_an_overrun_naming_it(
    cluster: Cluster, mode: str
) -> None:
    """SIGSTOP daemon 1 for several rounds, then SIGCONT: the round is never stretched. The
    run stops as an overrun (exit 4) naming node 1, nothing is released (its late frames are
    neither used nor counted twice), and the resumed daemon serves the next run."""
    proc = cluster.start(f"stop-{mode}", "--round-seconds", str(ROUND), "--on-missing", mode)
    wait_connected(cluster, proc, 1)
    time.sleep(3.0)  # inside the run
    pid = cluster.daemons.procs[1].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(4 * ROUND + 8.0)
    finally:
        os.kill(pid, signal.SIGCONT)
    code, out, err = finish(proc)
    overrun_line(cluster, code, err, 1)
    assert out == ""  # no report over a run that did not finish
    assert not (cluster.root / f"stop-{mode}" / "report.json").exists()
    clean_run(cluster, f"after-stop-{mode}")


def test_a_link_down_then_up_is_an_overrun_naming_the_cut_off_daemon(cluster: Cluster) -> None:
    proc = cluster.start("down", "--round-seconds", str(ROUND), "--on-missing", "report")
    wait_connected(cluster, proc, 1)
    time.sleep(3.0)
    cluster.bridge.link(1, False)
    try:
        time.sleep(4 * ROUND + 8.0)
    finally:
        cluster.bridge.link(1, True)
    code, out, err = finish(proc)
    overrun_line(cluster, code, err, 1)
    assert out == ""
    clean_run(cluster, "after-down")


def unlimit(cluster: Cluster) -> None:
    subprocess.run(
        ["ip", "netns", "exec", cluster.bridge.hub, "tc", "qdisc", "del", "dev", "p1", "root"],
        capture_output=True,
        timeout=20,
    )


def test_a_rate_limited_link_completes_or_is_an_overrun(cluster: Cluster) -> None:
    """``tc tbf`` on daemon 1's link: at 20 Mbit/s the run completes with every count
    reconciled; at 100 kbit/s its rounds do not fit and the run stops as an overrun naming
    it (never a round silently stretched)."""
    try:
        cluster.bridge.rate(1, "20mbit")
        report = clean_run(cluster, "tbf-fast")
        assert_reconciles(report["network"])
        cluster.bridge.rate(1, "100kbit")
        done = cluster.run("tbf-slow", "--round-seconds", str(ROUND), "--on-missing", "report")
        # Both ends of a throttled link wait for it: the line gives every daemon's time.
        overrun_line(cluster, done.returncode, done.stderr, None)
    finally:
        unlimit(cluster)
    # The overrun coordinator's close may still sit behind the throttled link's backlog: the
    # daemon holds that connection until its FIN arrives and meanwhile refuses a second
    # coordinator (seen once in CI, then reported as "node 1 died during describing the
    # nodes"; now "node 1 (ADDR) refused this coordinator: ...", tests/net/test_busy_daemon.py).
    # Wait, bounded, for the release; a daemon that never lets go still fails here.
    released_by = time.monotonic() + 90
    while any(cluster.connected(h) for h in range(NODES)) and time.monotonic() < released_by:
        time.sleep(0.5)
    assert not any(cluster.connected(h) for h in range(NODES)), "a daemon kept the old run"
    clean_run(cluster, "after-tbf")


def rogue(cluster: Cluster, mode: str, state: Path | None = None) -> str:
    """Run tests/net/_rogue_peer.py against daemon 0 from the coordinator's namespace."""
    done = subprocess.run(
        [
            *("ip", "netns", "exec", cluster.bridge.nodes[NODES], sys.executable, "-m"),
            *("tests.net._rogue_peer", f"{cluster.bridge.addresses[0]}:{PORT}", mode),
            *([str(state)] if state is not None else []),
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def refusals(cluster: Cluster) -> list[str]:
    return [line for line in cluster.log(0).splitlines() if "refused a connection" in line]


def test_rogue_peers_are_refused_and_named_and_the_daemon_keeps_serving(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Against a running daemon: another CA's certificate, an expired one, the CA's
    certificate for node 0 under a key the directory does not list (wrong key, duplicate
    identity), and garbage bytes are refused; those that pass the TLS handshake are named
    in one log line each; the honest coordinator is answered before and after."""
    import shutil

    from crowdhide.backends.tls.enrol import ca_sign, node_init

    dep = cluster.deployment
    assert rogue(cluster, "tls", dep.coordinator) == "answered"  # the check can tell
    other = enrol(tmp_path / "other", list(dep.addresses))
    expired = tmp_path / "expired"
    card = node_init(expired, node=100, address="10.0.0.9:9", role="coordinator")
    shutil.copy(ca_sign(dep.root / "ca", card, days=0), expired / "cert.pem")
    twin = tmp_path / "twin"
    card = node_init(twin, node=0, address=dep.addresses[0])
    shutil.copy(ca_sign(dep.root / "ca", card), twin / "cert.pem")
    before = len(refusals(cluster))
    assert rogue(cluster, "tls", other.coordinator) == "refused"
    assert rogue(cluster, "tls", other.nodes[1]) == "refused"
    assert rogue(cluster, "tls", expired) == "refused"
    assert rogue(cluster, "tls", twin) == "refused"
    assert rogue(cluster, "garbage") == "refused"
    time.sleep(0.5)  # the daemon's log line
    lines = refusals(cluster)[before:]
    # One line, for the twin: the others fail the TLS handshake and never reach the daemon.
    pattern = rf"node 0: refused a connection from {re.escape(cluster.bridge.addresses[NODES])}"
    assert len(lines) == 1, lines
    assert re.fullmatch(pattern + r":\d+: its certificate is not the directory's", lines[0])
    assert "Traceback" not in cluster.log(0)
    assert rogue(cluster, "tls", dep.coordinator) == "answered"
    clean_run(cluster, "after-rogues")


ADULT_ROWS = 400
EDUCATION = ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
             "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
             "5th-6th", "Preschool")  # fmt: skip


def adult_folder(folder: Path) -> Path:
    """An Adult-shaped data folder (``builtin:adult``): ``ADULT_ROWS`` seeded rows with the
    UCI files' layout (the real data is not installed on the test machines)."""
    import gzip

    import numpy as np

    rng = np.random.default_rng(27)
    rows = []
    for i in range(ADULT_ROWS):
        rows.append(
            f"{rng.integers(17, 90)}, Private, {rng.integers(10**4, 10**6)}, "
            f"{EDUCATION[i % len(EDUCATION)]}, {rng.integers(1, 17)}, Never-married, "
            f"Sales, Own-child, White, {('Male', 'Female')[i % 2]}, 0, 0, "
            f"{rng.integers(10, 80)}, United-States, {('<=50K', '>50K')[i % 3 == 0]}"
        )
    (folder / "adult").mkdir(parents=True)
    half = ADULT_ROWS // 2
    with gzip.open(folder / "adult" / "adult.data.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(rows[:half]) + "\n")
    with gzip.open(folder / "adult" / "adult.test.gz", "wt", encoding="utf-8") as f:
        f.write("|1x3 Cross validator\n" + ".\n".join(rows[half:]) + ".\n")
    return folder


ADULT_PLAN = """name = "adult"
[data]
path = "builtin:adult"
[query]
kind = "aggregate"
sql = "SELECT education, COUNT(*), AVG(age) FROM D GROUP BY education"
compute_nodes = 2
[privacy]
epsilon = 2.0
delta = 1e-4
[run]
seed = 0
plots = false
"""


def test_an_adult_group_by_over_daemons_matches_the_local_run(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adult ``GROUP BY education`` (16 groups, 2 compute nodes: the frame must hold a
    compute node's groups) on three fresh daemons (port 7001, the same namespaces): the
    certificate, the result's columns and groups, and every frame of the local run, with
    nothing lost. The daemons' own secrets make the noisy values differ from the local ones."""
    monkeypatch.setenv("CROWDHIDE_DATA_DIR", str(adult_folder(tmp_path / "data")))
    plan = tmp_path / "adult.toml"
    plan.write_text(ADULT_PLAN, encoding="utf-8")
    bridge = cluster.bridge
    addresses = [f"{a}:7001" for a in bridge.addresses[:NODES]]
    dep = enrol(tmp_path / "dep", addresses, coordinator=f"{bridge.addresses[NODES]}:7001")
    daemons = Daemons(dep, split(plan, tmp_path / "rows"), netns=bridge.nodes[:NODES])
    pids = daemons.pids
    try:
        other = Cluster(bridge, dep, daemons, plan, tmp_path)
        done = other.run("tls")
        assert done.returncode == 0, done.stderr[-3000:]
        remote = json.loads(done.stdout)
        local_run = subprocess.run(
            [
                *(sys.executable, "-m", "crowdhide", "run", str(plan)),
                *("--block-size", str(BLOCK), "--out", str(tmp_path / "local")),
                *("--json", "--allow-unmet"),
            ],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert local_run.returncode == 0, local_run.stderr[-2000:]
        local = json.loads(local_run.stdout)
        assert daemons.terminate() == [0] * NODES
    finally:
        daemons.close()
    assert_all_gone(pids, [])
    assert remote["privacy"] == local["privacy"]  # the same certificate
    net = remote["network"]
    assert net["complete"] is True
    assert net["messages_lost"] == 0
    assert net["data_frames_delivered"] == local["costs"]["messages"]
    assert_reconciles(net)
    groups = {str(r["education"]) for r in local["result"]}
    assert {str(r["education"]) for r in remote["result"]} <= groups
    assert {tuple(sorted(r)) for r in remote["result"]} == {
        tuple(sorted(r)) for r in local["result"]
    }


def test_z_a_killed_daemon_under_report_gives_an_incomplete_report(cluster: Cluster) -> None:
    """Last (it kills a daemon of the module's set): SIGKILL the daemon serving only source
    blocks under ``--on-missing report``: the run finishes (exit 0), names it dead with its
    blocks not run if any, counts reconcile per link, and the JSON, terminal and HTML reports say
    the run was incomplete (no green "target met")."""
    placed = clean_run(cluster, "before-kill")["network"]
    assert isinstance(placed, dict)
    busy = {
        int(h)
        for group, hosts in placed["hosts_of_groups"].items()
        if group != "S"
        for h in str(hosts).split()
    }
    (victim,) = set(range(NODES)) - busy
    proc = cluster.start(
        "kill", "--round-seconds", str(ROUND), "--on-missing", "report", as_json=False
    )
    wait_connected(cluster, proc, victim)
    time.sleep(1.0)
    os.kill(cluster.daemons.procs[victim].pid, signal.SIGKILL)
    code, out, err = finish(proc)
    assert code == 0, err[-3000:]
    report = json.loads((cluster.root / "kill" / "report.json").read_text())
    net = report["network"]
    assert net["dead_hosts"] == [victim]
    assert net["complete"] is False
    # Its blocks not run (if it died before them) are listed; what it sent is counted.
    assert all(group == "S" for group, _ in net["lost_blocks"])
    assert_reconciles(net)
    note = report["notes"][0]
    assert note.startswith("INCOMPLETE RUN (")
    assert f"dead nodes [{victim}]" in note
    html = (cluster.root / "kill" / "report.html").read_text()
    assert "INCOMPLETE RUN" in html
    assert "<span class='ok'>target met</span>" not in html
    assert "INCOMPLETE RUN" in out  # the terminal report
