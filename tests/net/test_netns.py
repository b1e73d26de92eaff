"""Node hosts in separate network namespaces with their own addresses on a bridge: the same
result as local, a capture of the bridge that matches the transcript coarsened by placement,
faults (SIGSTOP/SIGCONT, a token-bucket rate limit, a link taken down), and nothing left."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.audit import transcript_link_counts
from crowdhide.backends import execute
from crowdhide.engine import Job
from tests.net.conftest import BLOCK, assert_all_gone, small_plan
from tests.net.netns import Bridge, available, leftovers, tcp_payload_bytes

pytestmark = [pytest.mark.net, pytest.mark.slow]

HOSTS = 3


@pytest.fixture
def bridge() -> Iterator[Bridge]:
    why = available()
    if why is not None:
        pytest.skip(why)
    made = Bridge(HOSTS)
    try:
        yield made
    finally:
        made.close()
    assert leftovers(made.prefix) == []


def test_the_harness_leaves_nothing() -> None:
    why = available()
    if why is not None:
        pytest.skip(why)
    made = Bridge(2, tag="x")
    try:
        assert len(leftovers(made.prefix)) == 3  # the check sees what exists (can fail)
    finally:
        made.close()
    assert leftovers(made.prefix) == []


def test_hosts_in_namespaces_give_the_local_result_and_the_capture_matches(
    bridge: Bridge, backends: Any, tmp_path: Path
) -> None:
    plan = small_plan(protected=True)
    local = execute(plan, rng=3, block_size=BLOCK)
    pcap = tmp_path / "bridge.pcap"
    capture = bridge.capture(pcap)
    backend = backends(hosts=HOSTS, netns=bridge.netns(), frame_size=256)
    run = execute(plan, rng=3, backend=backend, block_size=BLOCK)
    bridge.stop_capture(capture)
    np.testing.assert_array_equal(run.states["C"]["count"], local.states["C"]["count"])
    assert run.routes == local.routes
    assert not backend.missing
    t = run.transcript
    job = Job(plan=plan, seed=3, block_size=BLOCK)
    # the default placement puts the scramblers and C on different hosts: the
    # data-dependent hop crosses the bridge
    placed = backend.placement.groups(job)
    scramblers = next(g.name for g in plan.groups if g.role == "scrambler")
    assert set(placed[scramblers]).isdisjoint(placed["C"])
    frames = transcript_link_counts(
        t.source,
        t.target,
        groups=t.groups,
        block_size=BLOCK,
        hosts=HOSTS,
        node_hosts=backend.placement.node_hosts(job),
    )
    seen = tcp_payload_bytes(pcap)
    assert set(seen) <= {(a, b) for a in bridge.addresses for b in bridge.addresses if a != b}
    record = backend.frame + 22  # one TLS 1.3 record per frame
    rounds = len({int(r) for r in t.round}) + 2
    for a in range(HOSTS):
        for b in range(HOSTS):
            if a == b:
                continue  # a host's link to itself stays inside its namespace
            got = seen.get((bridge.addresses[a], bridge.addresses[b]), 0)
            # data frames a -> b, plus control frames (welcome, END/ACK per round) and the
            # two TLS handshakes between a and b
            assert got >= frames[a, b] * record, (a, b)
            assert got <= (frames[a, b] + 3 * rounds + 2) * record + 2 * 4096, (a, b)
    assert_all_gone(backend.pids, [])


def test_a_stopped_host_and_a_slow_link_change_nothing(bridge: Bridge, backends: Any) -> None:
    plan = small_plan(protected=True)
    local = execute(plan, rng=6, block_size=BLOCK)
    bridge.rate(1, "2mbit")  # every frame to host 1 through a token bucket
    # Rounds have a fixed length: one long enough for the 2 s stop and the slow link (a
    # round that does not fit is an overrun, which is reported: tests/net/test_rounds.py).
    backend = backends(hosts=HOSTS, netns=bridge.netns(), deadline=30.0, round_seconds=8.0)
    resumed: list[threading.Timer] = []

    def progress(done: int, total: int, group: str) -> None:
        # Host 2 stops between rounds with frames queued (the scramblers'), resumes 2 s later,
        # before the next round's start (a host stopped across a round's start is an overrun).
        if done == 2:
            pid = backend.pids[2]
            os.kill(pid, signal.SIGSTOP)
            timer = threading.Timer(2.0, os.kill, (pid, signal.SIGCONT))
            timer.start()
            resumed.append(timer)

    run = execute(plan, rng=6, backend=backend, progress=progress, block_size=BLOCK)
    for timer in resumed:
        timer.join()
    np.testing.assert_array_equal(run.states["C"]["count"], local.states["C"]["count"])
    assert run.routes == local.routes
    assert not backend.missing


def test_a_link_taken_down_is_reported_as_lost(bridge: Bridge, backends: Any) -> None:
    plan = small_plan(protected=False)
    backend = backends(hosts=HOSTS, netns=bridge.netns(), deadline=3.0, on_missing="report")

    def progress(done: int, total: int, group: str) -> None:
        if group == "S":  # host 1's source frames are queued: its link goes down
            bridge.link(1, up=False)

    run = execute(plan, rng=1, backend=backend, progress=progress, block_size=BLOCK)
    bridge.link(1, up=True)
    report = backend.missing
    assert report.messages > 0
    delivered = int(run.states["C"]["count"].sum())
    # No origins are reported (which source's message was lost would reveal its value):
    # every S message is one real frame here, lost on a link of host 1 or delivered.
    assert delivered + report.messages == 300
    assert all(1 in link for link in report.links)
