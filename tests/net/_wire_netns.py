"""Run inside a loopback-only network namespace (see test_wire_capture.py): tls runs captured
with ``tcpdump`` on ``lo``; the capture is parsed (``tests.net._pcap``) and summarised as
JSON at the path given as argument, next to what the runs report about themselves."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide.audit import transcript_link_counts, wire_link_counts
from crowdhide.backends import execute
from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.engine.library import named
from crowdhide.engine.plan import PlanBuilder
from crowdhide.plans.semantics import protect
from tests.net._pcap import tls_records
from tests.net._programs import use_test_hosts
from tests.net.conftest import BLOCK, small_plan
from tests.net.netns import loopback_mark, start_tcpdump, stop_tcpdump

HOSTS = 3
CHAIN, ITERATIONS, TARGETS, ROUND = 100, 17, 20, 0.6


def chain_plan(sigma: float) -> Any:
    """ITERATIONS rounds of CHAIN sources -> TARGETS compute nodes (a data route with target
    sampling σ: real fraction 1 − σ + σ/T) and back (fanout): equal frame counts for every σ.
    Each compute node's work grows with the real messages it gets (about 0.2 ms each)."""
    b = PlanBuilder()
    g = np.arange(CHAIN) % TARGETS
    for i in range(ITERATIONS):
        b.sources(f"src@{i}", {"g": g}, device="S")
        b.compute(
            f"C@{i}",
            size=TARGETS,
            process=named("test.busy", route=f"src@{i}->C@{i}", per_message=2e-4),
        )
        b.route(f"src@{i}", f"C@{i}", by=named("route.column", column="g"), name=f"src@{i}->C@{i}")
        if i + 1 < ITERATIONS:
            b.route(f"C@{i}", f"src@{i + 1}", kind="fanout")
    return protect(b.build(), sigma=sigma)


def _client_ports(pids: list[int]) -> dict[int, int]:
    """Local port -> host index of every TCP socket the hosts hold (``ss``)."""
    out = subprocess.run(["ss", "-tanpH"], capture_output=True, text=True, check=True).stdout
    ports = {}
    for line in out.splitlines():
        for h, pid in enumerate(pids):
            if f"pid={pid}," in line:
                ports[int(line.split()[3].rsplit(":", 1)[1])] = h
    return ports


def run_case(plan: Any, *, rng: int, block: int, **options: Any) -> dict[str, Any]:
    backend = TlsBackend(hosts=HOSTS, placement="modulo", **options)
    seen: dict[int, int] = {}

    def progress(done: int, total: int, group: str) -> None:
        if not seen:
            seen.update(_client_ports(backend.pids[:HOSTS]))

    began = time.time()
    try:
        run = execute(plan, rng=rng, backend=backend, block_size=block, progress=progress)
    finally:
        backend.close()
    t = run.transcript
    states = {k: v["took"].tolist() for k, v in run.states.items() if "took" in v}
    return {
        "began": began,
        "ended": time.time(),
        "frame": backend.frame,
        "round_seconds": backend.round_seconds,
        "servers": {str(port): h for h, port in backend.ports.items()},
        "clients": {str(port): h for port, h in seen.items()},
        "transcript_links": transcript_link_counts(
            t.source, t.target, groups=t.groups, block_size=block, hosts=HOSTS
        ).tolist(),
        "messages": len(t),
        "opened_lengths": {
            str(h): {str(m): list(v) for m, v in s.opened_lengths.items()}
            for h, s in backend.final_stats.items()
        },
        "missing": backend.missing.to_dict(),
        "took": states,
    }


def summarise(case: dict[str, Any], records: list[Any]) -> None:
    """Add the capture's view of one case: per-link data frames, record lengths, bursts."""
    servers = {int(p): h for p, h in case["servers"].items()}
    clients = {int(p): h for p, h in case["clients"].items()}
    rows, lengths = [], set()
    app: dict[tuple[int, int], list[int]] = {}
    for r in records:
        if not case["began"] <= r.time <= case["ended"] + 1:
            continue
        if r.dst in servers and r.src in clients:
            link, direction = (clients[r.src], servers[r.dst]), 0
        elif r.src in servers and r.dst in clients:
            link, direction = (clients[r.dst], servers[r.src]), 1
        else:
            continue
        rows.append((*link, r.src if direction == 0 else r.dst, direction, r.kind, r.length, 0))
        if r.kind == 23:
            app.setdefault((r.src, r.dst), []).append(r.length)
        if direction == 0 and r.kind == 23 and r.length == case["frame"] + 17:
            case.setdefault("frame_times", []).append(r.time)
    for seq in app.values():
        first = seq.index(case["frame"] + 17) if case["frame"] + 17 in seq else len(seq)
        case.setdefault("handshake_records", []).append(first)
        lengths.update(seq[first:])
    counts = wire_link_counts(np.array(rows), frame_record=case["frame"] + 17, hosts=HOSTS)
    # Frame records per link and direction (forward: welcome, data, an END a round;
    # backward: welcome, an ACK a round), named in a failure: a lost ACK shows here.
    per: dict[str, list[int]] = {}
    for a, b, _, direction, kind, length, _ in rows:
        if kind == 23 and length == case["frame"] + 17:
            per.setdefault(f"{a}->{b}", [0, 0])[direction] += 1
    case["link_records"] = per
    case["wire_links"] = counts.tolist()
    case["app_lengths"] = sorted(lengths)
    times = np.sort(np.array(case.get("frame_times", [])))
    gaps = np.flatnonzero(np.diff(times) > case["round_seconds"] / 4) + 1
    starts = np.concatenate([times[:1], times[gaps]]) if times.size else times
    # The first cluster is the welcome frames (links coming up), not a round.
    case["burst_starts"] = starts[1:].tolist()
    case.pop("frame_times", None)


def main(out: Path) -> None:
    pcap = out.parent / "wire.pcap"
    dump = start_tcpdump((), "lo", pcap, snaplen=0)  # listening once it returns
    cases = {}
    try:
        cases["protected"] = run_case(small_plan(protected=True), rng=3, block=BLOCK)
        for name, sigma in (("real_1.0", 0.0), ("real_0.05", 1.0)):
            plan = chain_plan(sigma)
            cases[name] = run_case(plan, rng=1, block=50, round_seconds=ROUND)
    finally:
        # Stop only once the capture holds a marker sent after the last case: stopped on a
        # guess (the file still for 0.5 s), it lost the last round's ACKs under load — one
        # more data frame than the transcript on every link that lost its ACK.
        dropped = stop_tcpdump(dump, pcap, loopback_mark)
    if dropped:
        raise RuntimeError(f"tcpdump: the kernel dropped {dropped} packets of the capture")
    gaps: list[tuple[str, int, str, int]] = []
    records = tls_records(pcap, gaps)
    if gaps:
        raise RuntimeError(f"the capture lost bytes of the TCP streams {gaps}")
    for case in cases.values():
        summarise(case, records)
    out.write_text(json.dumps({"cases": cases}), encoding="utf-8")


if __name__ == "__main__":
    use_test_hosts(setattr)  # hosts that know the test programs
    main(Path(sys.argv[1]))
