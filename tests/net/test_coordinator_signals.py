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

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net._deploy import _env
from tests.net._signals import one_line, start
from tests.net._site import ROUND, Site, serving
from tests.net.test_faults import (  # cluster: daemons in network namespaces (a fixture)
    NODES,
    Cluster,
    clean_run,
    cluster,  # noqa: F401
    wait_connected,
)

pytestmark = pytest.mark.net


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with serving(tmp_path) as running:
        yield running


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
