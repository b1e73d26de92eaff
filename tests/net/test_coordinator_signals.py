"""Signals during a run on node daemons (``crowdhide run --backend tls --directory``).

The coordinator stopped mid-round by SIGTERM (a service manager, a CI timeout) or Ctrl-C
tells every daemon to abandon the run (:class:`~crowdhide.backends.tls.control.Abandon`: a
typed message, handled at once, not after the request in hand) and exits with one line,
143 or 130; a coordinator killed outright (SIGKILL) is noticed by its closed connection. In
every case the daemons drop the run's state and links, log one line, and serve the next
run, which completes. A daemon stopped by SIGTERM mid-run exits 0 and the coordinator
reports it dead in one line (exit 5). Four daemons on 127.0.0.1, fresh for each test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.net._deploy import Daemons, Deployment, _env, enrol, free_ports
from tests.net._signals import Ended, interrupt, one_line, start
from tests.net.conftest import assert_all_gone, sockets_of
from tests.net.test_faults import (  # cluster: daemons in network namespaces (a fixture)
    NODES,
    Cluster,
    clean_run,
    cluster,  # noqa: F401
    split,
    wait_connected,
    write_plan,
)

pytestmark = pytest.mark.net

BLOCK = 100
#: Fixed round length: a signal one round after the daemons were linked lands inside a round
#: (the diabetes plan has 3 rounds since groups of one level share them).
ROUND = 2.0


@dataclass
class Site:
    root: Path
    deployment: Deployment
    daemons: Daemons
    plan: Path
    ports: list[int]

    def args(self, out: str, *extra: str) -> list[str]:
        dep = self.deployment
        return [
            *("run", str(self.plan), "--backend", "tls", "--directory", str(dep.directory)),
            *("--ca", str(dep.ca), "--state", str(dep.coordinator), "--block-size", str(BLOCK)),
            *("--out", str(self.root / out), "--allow-unmet", *extra),
        ]

    def sessions(self) -> int:
        """Established TCP connections the daemons hold (control connections and links)."""
        return sum(" ESTAB " in f" {line} " for line in sockets_of(self.daemons.pids))

    def log(self, node: int) -> str:
        return (self.root / f"daemon{node}.log").read_text(errors="replace")

    def signal_mid_round(self, sig: int, out: str) -> Ended:
        """``sig`` to the coordinator a round after it linked every daemon."""
        proc = start(self.args(out, "--round-seconds", str(ROUND)), cwd=self.root, env=_env())
        return interrupt(proc, sig, ready=self.linked, settle=ROUND)

    def linked(self) -> bool:
        """Whether the daemons are linked to each other and the coordinator (a run is on)."""
        return self.sessions() >= NODES * NODES  # a control connection and links each

    def wait_idle(self, timeout: float = 30.0) -> float:
        """Seconds until the daemons hold no connection (the run dropped everywhere)."""
        began = time.monotonic()
        while self.sessions() and time.monotonic() < began + timeout:
            time.sleep(0.05)
        return time.monotonic() - began

    def clean_run(self, out: str) -> None:
        """A run with no fault completes on the same daemons: they were not wedged."""
        done = subprocess.run(
            [sys.executable, "-m", "crowdhide", *self.args(out), "--json"],
            cwd=self.root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        net = json.loads(done.stdout)["network"]
        assert net["complete"] is True
        assert net["dead_hosts"] == []


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    ports = free_ports(NODES)
    dep = enrol(tmp_path, [f"127.0.0.1:{p}" for p in ports])
    plan = write_plan(tmp_path)
    daemons = Daemons(dep, split(plan, tmp_path / "rows"))
    pids = daemons.pids
    try:
        yield Site(tmp_path, dep, daemons, plan, ports)
    finally:
        daemons.terminate()
        daemons.close()
        assert_all_gone(pids, ports)


ABANDONED = "the coordinator abandoned the run ({}); its state is dropped"


@pytest.mark.parametrize(
    ("sig", "code", "reason"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted (Ctrl-C)")],
)
def test_a_coordinator_stopped_mid_round_abandons_the_run_on_every_daemon(
    site: Site, sig: int, code: int, reason: str
) -> None:
    ended = site.signal_mid_round(sig, "stopped")
    line = f"crowdhide: {reason}; files already written are incomplete"
    assert (ended.code, one_line(ended.err)) == (code, line), ended.err[-3000:]
    idle = site.wait_idle()
    print(
        f"signal {sig}: coordinator exited after {ended.seconds:.2f} s, daemons idle {idle:.2f} s"
    )
    # Abandon is handled at once, not after the round in hand.
    assert ended.seconds < 5, f"the coordinator took {ended.seconds:.1f} s to stop"
    assert idle < 5  # every control connection and link dropped
    for node in range(NODES):
        assert site.log(node).count(ABANDONED.format(reason)) == 1, site.log(node)[-2000:]
        assert "Traceback" not in site.log(node)
    assert not (site.root / "stopped" / "report.json").exists()
    site.clean_run("after")


def test_daemons_of_a_killed_coordinator_drop_its_run(site: Site) -> None:
    """SIGKILL: no Abandon, the kernel closes the coordinator's sockets; each daemon drops
    the run at once (a coordinator whose machine vanished: TCP keepalive, below)."""
    ended = site.signal_mid_round(signal.SIGKILL, "killed")
    assert ended.code == -signal.SIGKILL
    idle = site.wait_idle()
    print(f"SIGKILL: daemons idle {idle:.2f} s after the coordinator's end")
    assert idle < 5
    for node in range(NODES):
        log = site.log(node)
        assert log.count("the coordinator's connection closed during a run") == 1, log[-2000:]
    site.clean_run("after")


def test_a_control_connection_has_tcp_keepalive(site: Site) -> None:
    """A coordinator whose machine vanishes sends no FIN: keepalive probes (10 s idle, 5 s
    apart, 3 of them) let each daemon drop its run within about 25 s, not hours."""
    proc = start(site.args("kept", "--round-seconds", str(ROUND)), cwd=site.root, env=_env())
    kept: set[int] = set()  # daemons seen with a keepalive timer on an established socket
    try:
        deadline = time.monotonic() + 120
        while not site.linked() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        # A socket with data in flight shows its retransmission timer instead: look a while.
        for _ in range(20):
            timers = subprocess.run(
                ["ss", "-tnpoH", "state", "established"], capture_output=True, text=True, timeout=10
            ).stdout
            for line in timers.splitlines():
                if "timer:(keepalive" in line:
                    kept |= {p for p in site.daemons.pids if f"pid={p}," in line}
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    assert kept == set(site.daemons.pids)


def test_a_daemon_stopped_by_sigterm_mid_run_is_reported_dead(site: Site) -> None:
    victim = 1
    proc = start(site.args("victim", "--round-seconds", str(ROUND)), cwd=site.root, env=_env())
    try:
        deadline = time.monotonic() + 120
        while not site.linked() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(ROUND)
        assert proc.poll() is None, proc.communicate()
        site.daemons.procs[victim].send_signal(signal.SIGTERM)
        assert site.daemons.procs[victim].wait(10) == 0  # a clean exit
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    line = one_line(err)
    print(line)
    assert proc.returncode == 5, err[-3000:]
    assert line.startswith(
        f"crowdhide: NODE FAILURE: node {victim} ({site.deployment.addresses[victim]}) died during "
    )
    assert "Traceback" not in site.log(victim)


@pytest.mark.slow
def test_daemons_drop_the_run_of_a_coordinator_cut_off_for_good(cluster: Cluster) -> None:  # noqa: F811
    """The coordinator's link goes down mid-round and it is killed behind it: no FIN, no RST
    reaches the daemons (network namespaces on a bridge, test_faults.py's cluster). Keepalive
    and the user timeout drop the run on every daemon within about 25 s; once the link is
    back, a clean run completes."""
    closed = "the coordinator's connection closed during a run"
    before = [cluster.log(n).count(closed) for n in range(NODES)]
    proc = cluster.start("cut", "--round-seconds", str(ROUND))
    wait_connected(cluster, proc, NODES - 1)
    time.sleep(ROUND)
    cluster.bridge.link(NODES, False)
    try:
        proc.kill()
        proc.communicate(timeout=30)
        began = time.monotonic()
        while time.monotonic() < began + 90:
            if all(cluster.log(n).count(closed) > before[n] for n in range(NODES)):
                break
            time.sleep(0.5)
        took = time.monotonic() - began
    finally:
        cluster.bridge.link(NODES, True)
    print(f"cut off: every daemon dropped the run {took:.1f} s after")
    assert took < 45, f"the daemons held a vanished coordinator's run for {took:.0f} s"
    clean_run(cluster, "after-cut")
