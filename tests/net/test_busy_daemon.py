"""A daemon serving one coordinator tells a second coordinator so, and only a coordinator.

A user re-running right after an aborted run (over a slow link the old coordinator's close
can sit behind a backlog) met "node 1 (ADDR) died during describing the nodes": the daemon,
still holding the old control connection, had aborted the new one without a word. Against
real daemons in network namespaces (the fault tests' set-up, :func:`serving`): the second
coordinator's run ends in one line saying which daemon refused it and why (exit code 5),
the first connection or run is not disturbed, and a peer that is not the directory's
coordinator is still told nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.net._deploy import _env
from tests.net.test_faults import (
    NODES,
    PORT,
    Cluster,
    clean_run,
    finish,
    one_line,
    serving,
    wait_connected,
)

pytestmark = [pytest.mark.net, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with serving(tmp_path_factory.mktemp("busy"), tag="b") as made:
        yield made


def peer(cluster: Cluster, node: int, mode: str, state: Path) -> subprocess.Popen[str]:
    """tests/net/_rogue_peer.py against daemon ``node``, from the coordinator's namespace."""
    return subprocess.Popen(
        [
            *("ip", "netns", "exec", cluster.bridge.nodes[NODES], sys.executable, "-m"),
            *("tests.net._rogue_peer", f"{cluster.bridge.addresses[node]}:{PORT}", mode),
            str(state),
        ],
        cwd=REPO,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_reply(cluster: Cluster, node: int, state: Path) -> str:
    """The type of daemon ``node``'s first message to a peer presenting ``state``."""
    out, err = peer(cluster, node, "first", state).communicate(timeout=60)
    assert out.strip(), err[-2000:]
    return out.strip()


@contextmanager
def held(cluster: Cluster, node: int) -> Iterator[subprocess.Popen[str]]:
    """A control connection to daemon ``node`` with the coordinator's own credentials, held
    open (answered a ``Describe``) until the block ends."""
    proc = peer(cluster, node, "hold", cluster.deployment.coordinator)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "Described", proc.stderr
        yield proc
    finally:
        assert proc.stdin is not None
        if not proc.stdin.closed:
            proc.stdin.close()  # it asks once more, then closes
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def refusal(cluster: Cluster, node: int) -> str:
    """The start of the error line naming daemon ``node``'s refusal of this coordinator."""
    coordinator = re.escape(cluster.bridge.addresses[NODES])
    return (
        rf"node {node} \({re.escape(cluster.bridge.addresses[node])}:{PORT}\) refused this "
        rf"coordinator: it is serving another coordinator connection \(from {coordinator}:\d+ "
        r"since \d\d:\d\d:\d\d UTC, last message \d+\.\d s ago, "
    )


def test_a_held_connection_turns_the_next_coordinator_away_with_its_reason(
    cluster: Cluster,
) -> None:
    """Daemon 1 holds a coordinator connection: a run is refused in one line naming node 1
    and the held connection (exit 5), not "died"; a peer with any other certificate still
    gets nothing; the held connection is still served, and once closed a run completes."""
    dep = cluster.deployment
    with held(cluster, 1) as holder:
        done = cluster.run("turned-away")
        # Told only to the directory's coordinator: another node's certificate (outside a
        # run) learns nothing.
        to_coordinator = first_reply(cluster, 1, dep.coordinator)
        to_node = first_reply(cluster, 1, dep.nodes[2])
        holder.stdin.close()  # type: ignore[union-attr]
        held_after = holder.stdout.readline().strip()  # type: ignore[union-attr]
    line = one_line(done.stderr)
    assert done.returncode == 5, done.stderr
    assert done.stdout == ""
    assert re.fullmatch(
        r"crowdhide: NODE FAILURE: " + refusal(cluster, 1) + r"no run in progress\); wait for "
        r"that connection to end \(a daemon drops a silent coordinator\) or restart the daemon",
        line,
    ), line
    assert "died" not in line
    assert (to_coordinator, to_node) == ("Busy", "nothing")
    assert held_after == "Described"  # the held connection is still served
    log = cluster.log(1)
    assert re.search(
        rf"node 1: refused a connection from {re.escape(cluster.bridge.addresses[NODES])}:\d+: "
        r"a second coordinator connection \(id 100\); told it this daemon serves ",
        log,
    ), log[-2000:]
    assert "Traceback" not in log
    clean_run(cluster, "after-held")


def test_a_second_coordinator_mid_run_is_turned_away_and_the_first_run_completes(
    cluster: Cluster,
) -> None:
    """A run in progress on every daemon: a second coordinator's run ends in one line
    naming each daemon's refusal (a run in progress), and the first run completes."""
    first = cluster.start("first", "--round-seconds", "4")
    try:
        wait_connected(cluster, first, NODES - 1)  # it dials the daemons in order
        time.sleep(1.0)  # past the setup: the daemons' sessions are live
        second = cluster.run("second", timeout=120)
        assert first.poll() is None, "the first run ended before the second began"
    finally:
        code, out, err = finish(first)
    line = one_line(second.stderr)
    assert second.returncode == 5, second.stderr
    told = [refusal(cluster, h) + r"a run in progress\)" for h in range(NODES)]
    pattern = "; ".join(told) + "; wait for that run to end or restart the daemons"
    assert re.fullmatch("crowdhide: NODE FAILURE: " + pattern, line), line
    assert code == 0, err[-3000:]
    assert json.loads(out)["network"]["complete"] is True
