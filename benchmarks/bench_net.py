"""Benchmark of the TLS runtime: the wire's cost, frame throughput, a real run end to end.

1. Bare sealing and opening in one process (no network), 256-byte PLAIN frames: before
   (one single-shot HPKE per frame: two X25519 operations to seal, one to open) against one
   HPKE context per link and round (one ChaCha20-Poly1305 call per frame).
2. Frames per second of one host process end to end: host 0 queues ``N`` 256-byte frames
   for host 1, seals them at the flush, writes them one TLS record each; host 1 opens each
   on arrival and acknowledges at the END. Per wall second, and per CPU second of the
   busier host process (the machine is shared: wall time measures the other load too).
   Target: >= 50,000 frames/s.
3. The diabetes example end to end over TLS (default round length model,
   :mod:`crowdhide.backends.tls.workload`) vs the local backend, same seed and block size:
   time, frames, bytes on the wire, frames per host process per wall and CPU second;
   ``--baseline /work/main/src`` runs the same measurement on another source tree
   ("before").
4. The traffic-analysis attack on per-link frame counts, audited (lower bound on ε) next to
   the certificate, without and with countermeasures (``--no-attack`` skips it).
5. (full run only) Time to open 1,000 mutual-TLS 1.3 connections to one host process.
6. ``--daemons`` (root, network namespaces; only this section runs): node daemons on a
   bridge, captured with ``tcpdump``. (a) Round timing from the capture: two plans with
   equal frame counts and real fractions 1.0 vs 0.05, with fixed-length rounds and without
   (test hook): means, sds, Mann–Whitney and permutation p-values, difference as % of the
   round. (b) The traffic-analysis audit of the captured pcap (per-link counts, round
   periods) of the diabetes job on neighbouring data sets, with the planner's
   countermeasures and without, next to the certificate (``--audit-runs`` per data set).
7. ``--million`` (only this section): the diabetes example with ``--rows`` users (10^6 by
   default) on ``--hosts`` spawned hosts (8), default options but the round schedule (frames
   leave when processing ends; the default model's round length is echoed): wall, CPU and
   peak RSS per process, frames, and the X25519 + AEAD floor of the run's inner bodies and
   frames (CPU of this process), so the ratio runtime / floor shows. Stopped past
   ``--timeout`` seconds or 10 GiB resident in the hosts.

    python benchmarks/bench_net.py                       # full
    python benchmarks/bench_net.py --quick --no-attack   # 50,000 frames, 3,000 users
    python benchmarks/bench_net.py --quick --baseline /work/main/src
    python benchmarks/bench_net.py --daemons --audit-runs 20
    python benchmarks/bench_net.py --million --rows 100000   # 10^5 users, 8 hosts (~4 min)

8. ``--memory-slope 20000,50000`` (only this section): section 7 at each size in turn, then a
   least-squares line ``peak = a + b * users`` through the busiest host's peak RSS (and each
   host's), projected to ``--project`` users (10^6): whether 1 GB (10^9 B) per process
   holds. ``--fit A.json B.json ...`` fits section 7 ``--json`` outputs already measured.

    python benchmarks/bench_net.py --memory-slope 20000,50000,100000
    python benchmarks/bench_net.py --fit run20k.json run50k.json

Everything runs on 127.0.0.1; every process is stopped by its id. Peak memory of a host can be
read with /usr/bin/time -v on the host command if needed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[1] / "src" / "crowdhide" / "examples" / "diabetes.toml"


async def _connect_many(port: int, pki: Path, count: int, parallel: int, frame: int) -> float:
    from crowdhide.backends.tls import frames as fr

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(pki / "host1.pem", pki / "host1.key")
    ctx.load_verify_locations(pki / "ca.pem")
    welcome = fr.pack_control(fr.WELCOME, epoch=0, count=0, origin=1, size=frame)
    gate = asyncio.Semaphore(parallel)

    async def one() -> None:
        async with gate:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=ctx, server_hostname="host0"
            )
            writer.write(welcome)
            # host1 is linked already: the server checks the certificate and the name, then
            # refuses a second link under that identity (closes it) — what is timed here.
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                await asyncio.wait_for(reader.readexactly(frame), 30)
            writer.close()
            await writer.wait_closed()

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    return time.perf_counter() - start


def connections(count: int) -> dict[str, Any]:
    """Open ``count`` mutual-TLS connections to a host process; return the timing."""
    from crowdhide.backends.tls.backend import TlsBackend
    from crowdhide.backends.tls.pki import make_pki

    with tempfile.TemporaryDirectory() as tmp:
        pki = Path(tmp)
        make_pki(hosts=2, out=pki)
        with TlsBackend(hosts=2, pki=pki) as backend:
            backend.start()
            seconds = asyncio.run(_connect_many(backend.ports[0], pki, count, 50, backend.frame))
    return {"connections": count, "seconds": seconds, "per_second": count / seconds}


def bare(frames: int, *, frame: int = 256, before: int = 2000) -> dict[str, Any]:
    """In-process sealing and opening of PLAIN frames (no network): ``before``, main's wire
    (one single-shot HPKE per frame: two X25519 operations to seal, one to open) against
    ``frames`` with one HPKE context per link and round (one AEAD call per frame)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from crowdhide.backends.tls import codec, hpke
    from crowdhide.backends.tls import frames as fr

    values = codec.values_bytes(frame)
    plain = codec.pack_fields(1, 0, 0, 0) + codec.encode_values(None, 0, -1, values)
    head = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, 7)
    node = X25519PrivateKey.generate()
    public = hpke.public_bytes(node)
    start = time.perf_counter()
    for _ in range(before):
        body = hpke.seal_base(public, fr.INFO, head, plain)
        hpke.open_base(node, fr.INFO, head, body)
    old = before / (time.perf_counter() - start)
    a, b = fr.Sealer(host=0), fr.Sealer(host=1)
    a.learn(hosts={1: b.link_public()}, nodes={})
    length = len(plain) + hpke.TAG
    start = time.perf_counter()
    sealed = a.seal_frames(1, 1, [(head, plain)] * frames, frame)
    mid = time.perf_counter()
    for seq, data in enumerate(sealed):
        b.open_frame(0, 1, seq, data, length)
    done = time.perf_counter()
    return {
        "frames": frames,
        "before_per_s": old,
        "seal_per_s": frames / (mid - start),
        "open_per_s": frames / (done - mid),
        "after_per_s": frames / (done - start),
    }


def _tiny_job() -> Any:
    """A two-host job: loading it exchanges the hosts' link keys."""
    import numpy as np

    from crowdhide.engine.backend import Job
    from crowdhide.engine.library import named
    from crowdhide.plans import PlanBuilder

    b = PlanBuilder()
    b.sources("S", {"g": np.arange(4) % 2})
    b.compute("C", size=2, process=named("compute.count", route="S->C", size=2))
    b.route("S", "C", by=named("route.column", column="g"))
    return Job(plan=b.build(), seed=0, block_size=2)


def throughput(frames: int) -> dict[str, Any]:
    """Frames per second of host 0 sending to host 1 (256-byte frames), end to end: queued,
    sealed (one context per link and round), written one TLS record each, read, opened
    and acknowledged (the flush returns once host 1 acknowledged and counted them)."""
    from crowdhide.backends.tls import control as ctl
    from crowdhide.backends.tls.backend import TlsBackend

    with TlsBackend(hosts=2, frame_size=256, deadline=300.0, round_seconds=1.0) as backend:
        backend.open(_tiny_job())
        pids = [child.proc.pid for child in backend._procs]
        cpu = [_cpu_of(pid) for pid in pids]
        start = time.perf_counter()
        backend._all(lambda h: ctl.Blast(peer=1, count=frames), hosts=[0])
        queued = time.perf_counter()
        replies = backend._all(lambda h: ctl.Flush(epoch=1, alive=(0, 1), deadline=300.0))
        done = time.perf_counter()
        busiest = max(_cpu_of(pid) - before for pid, before in zip(pids, cpu, strict=True))
        received = replies[1].received[0]
        stats = backend._all(lambda h: ctl.GetStats())
        opened = stats[1].opened_lengths
    return {
        "frames": frames,
        "received": received,
        "opened": bool(opened),
        "queue_s": queued - start,
        "send_s": done - queued,
        "frames_per_s": frames / (done - start),
        "busiest_cpu_s": busiest,
        "frames_per_cpu_s": frames / max(busiest, 1e-9),
    }


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of a running process, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the host processes of a run)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def diabetes(
    rows: int, hosts: int, block_size: int, *, round_seconds: float | None = None
) -> dict[str, Any]:
    """The diabetes example over TLS and locally (same seed, shared by the hosts; same block size).

    ``round_seconds``: a fixed round length instead of the default model's. The end-to-end
    rate is given per host process and wall second, and per CPU second of the host
    processes (robust to other load on the machine)."""
    import tomllib

    from crowdhide.plans.runner import run_spec
    from crowdhide.plans.spec import parse_spec

    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    raw["data"]["rows"] = rows
    raw.setdefault("run", {})["plots"] = False
    spec = parse_spec(raw, base=EXAMPLE.parent)
    out: dict[str, Any] = {"rows": rows, "hosts": hosts, "block_size": block_size}
    # Hosts key their draws with their own secret by default; the comparison with the local
    # backend needs the seed-keyed mode, or the noisy answer differs by design.
    network: dict[str, Any] = {"hosts": hosts, "shared_seed": True}
    if round_seconds is not None:
        network["round_seconds"] = round_seconds
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        local = run_spec(spec, Path(tmp) / "local", block_size=block_size).to_dict()
        out["local_s"] = time.perf_counter() - start
        cpu, start = _children_cpu(), time.perf_counter()
        tls = run_spec(spec, Path(tmp) / "tls", network=network, block_size=block_size).to_dict()
        out["tls_s"] = time.perf_counter() - start
        out["hosts_cpu_s"] = _children_cpu() - cpu
    net = tls["network"]
    out["local_execute_s"] = local["timings"]["execute_s"]
    out["tls_execute_s"] = tls["timings"]["execute_s"]
    out["local_messages"] = local["costs"]["messages"]
    out["tls_data_frames"] = net["data_frames_delivered"]
    out["frame_bytes"] = net["frame_bytes"]
    out["wire_bytes_data"] = net["data_frames_delivered"] * net["tls_record_bytes"]
    out["same_result"] = local["result"] == tls["result"] and local["costs"] == tls["costs"]
    out["round_seconds"] = net["round_seconds"]
    # End to end: every frame sealed, written, acknowledged and opened, per host process.
    frames = net["data_frames_delivered"]
    out["frames_per_s_per_host"] = frames / out["tls_execute_s"] / hosts
    out["frames_per_cpu_s_per_host"] = frames / max(out["hosts_cpu_s"] / hosts, 1e-9)
    return out


def baseline(src: str, rows: int, hosts: int, block_size: int) -> dict[str, Any]:
    """:func:`diabetes` with another source tree first on the path (e.g. main's, for the
    figures before this wire), in a child process."""
    env = {**os.environ, "PYTHONPATH": src}
    args = [sys.executable, __file__, "--diabetes-only", "--json", "--rows", str(rows)]
    args += ["--hosts", str(hosts), "--block-size", str(block_size)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


class _Stopped(BaseException):
    """The section 7 run was stopped (time or memory): not an error the backend handles
    (it reads a control timeout as a dead host), so it unwinds to the end, closing it."""


class _Watch:
    """Samples the CPU seconds and peak resident memory (``VmHWM``) of processes by id from
    ``/proc`` every ``every`` seconds in a thread; keeps each process's last figures. Past
    ``limit`` bytes resident in all of them it stops the run (``SIGALRM`` to this process:
    the machine is shared)."""

    def __init__(self, every: float = 0.5, limit: float = 10 * 2**30) -> None:
        import threading

        self.limit, self.reason = limit, ""
        self.pids: list[int] = []
        self.cpu: dict[int, float] = {}
        self.rss: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(every,), daemon=True)

    def start(self, pids: list[int]) -> None:
        self.pids = list(pids)
        self._thread.start()

    def _loop(self, every: float) -> None:
        import signal

        while not self._stop.wait(every):
            self.sample()
            now = sum(_resident(pid) for pid in self.pids)
            if now > self.limit:
                self.reason = f"the hosts held {now / 2**30:.1f} GiB (limit {self.limit:.3g} B)"
                os.kill(os.getpid(), signal.SIGALRM)
                return

    def sample(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(OSError, ValueError, IndexError):
                self.cpu[pid] = _cpu_of(pid)
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.rss[pid] = int(line.split()[1]) * 1024

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()


def _resident(pid: int) -> int:
    """Resident bytes of a running process now (0 once it ended)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


def crypto_floor(batches: int = 10, bodies: int = 50) -> dict[str, float]:
    """CPU seconds (this process) of the X25519 operations of one inner body alone: sealing
    (a fresh key pair and one Diffie-Hellman) and opening (one Diffie-Hellman); and of a
    link frame's AEAD both ways. The least of ``batches`` batches each: the machine is
    shared, and the least loaded batch is the closest to the operations' own cost."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from crowdhide.backends.tls import frames as fr

    node = X25519PrivateKey.generate()
    public = node.public_key()
    a, b = fr.Sealer(host=0), fr.Sealer(host=1)
    a.learn(hosts={1: b.link_public()}, nodes={})
    body = bytes(200)
    head = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, 7)
    seal = open_ = link = float("inf")
    for _ in range(batches):
        start = time.process_time()
        keys = [X25519PrivateKey.generate() for _ in range(bodies)]
        encs = [k.public_key() for k in keys]
        for k in keys:
            k.exchange(public)
        mid = time.process_time()
        for enc in encs:
            node.exchange(enc)
        done = time.process_time()
        frames = a.seal_frames(1, 1, [(head, body)] * (50 * bodies), 300)
        b.open_frames(0, 1, 0, frames, {fr.PLAIN: len(body) + 16})
        end = time.process_time()
        seal, open_ = min(seal, (mid - start) / bodies), min(open_, (done - mid) / bodies)
        link = min(link, (end - done) / (50 * bodies))
    return {"inner_seal": seal, "inner_open": open_, "link": link}


def _inner_bodies(plan: Any) -> tuple[float, float]:
    """Inner bodies sealed and opened by a run of ``plan`` whatever its data: one per
    source message on a scrambled route and per scrambler dummy, each opened by its target."""
    from crowdhide.backends.tls.workload import _hops

    sealed = opened = 0.0
    for _, _, mode, frames in _hops(plan):
        if mode == "onion":
            sealed += frames["total"]
        elif mode == "forward":
            sealed += frames.get("dummies", 0.0)
            opened += frames["total"] + frames.get("dummies", 0.0)
    return sealed, opened


def million(rows: int, hosts: int, block_size: int | None, timeout: float) -> dict[str, Any]:
    """Section 7: the diabetes example with ``rows`` users over ``hosts`` spawned host
    processes, default options except the round schedule: frames leave when the processing
    ends (benchmark hook), so the figures are the runtime's work; the default model's round
    length, and the wall time a default run would take with it, are reported next to them.

    Per process: CPU seconds and peak resident memory of each host (``/proc``, sampled),
    the driver's from ``getrusage``; the crypto floor is the X25519 work of the run's inner
    bodies alone at this process's measured CPU cost per operation."""
    from crowdhide.backends.tls.backend import TlsBackend

    watch, seen = _Watch(), dict[str, Any]()
    opened = TlsBackend.open

    def open_unscheduled(self: TlsBackend, job: Any) -> None:
        opened(self, job)
        seen.update(round_s=self.round_seconds, basis=self.round_basis, plan=job.plan)
        seen["schedule"] = self.round_schedule
        seen["hosts_of_groups"] = self.placement.groups(job)
        seen["backend"] = self
        self.ledger.rounds = None  # unscheduled: rounds close as the hosts answer
        self.round_seconds = None
        # Unscheduled, a round closes once every END is acknowledged: allow the model's
        # round for it (the receivers open every frame before acknowledging).
        self.deadline = max(self.deadline, seen["round_s"])
        watch.start(self.pids)

    TlsBackend.open = open_unscheduled  # type: ignore[method-assign]
    try:
        out = _million_run(rows, hosts, block_size, timeout, watch)
    finally:
        TlsBackend.open = opened  # type: ignore[method-assign]
        watch.stop()
    floor = crypto_floor()
    sealed, opened_bodies = _inner_bodies(seen["plan"])
    frames = out["frames"]
    out["floor_cpu_s"] = (
        sealed * floor["inner_seal"] + opened_bodies * floor["inner_open"] + frames * floor["link"]
    )
    out.update(floor=floor, inner_sealed=sealed, inner_opened=opened_bodies)
    out["rounds"] = seen["backend"].ledger.epoch
    out["default_round_s"], out["round_basis"] = seen["round_s"], seen["basis"]
    out["default_schedule_s"] = list(seen["schedule"])
    out["hosts_cpu_s_max"] = max(watch.cpu.values())
    out["hosts_rss_max"] = max(watch.rss.values())
    # Per host, in host order: which host is the busiest, and what it serves.
    out["hosts_cpu_s_each"] = [round(watch.cpu.get(pid, 0.0), 1) for pid in watch.pids]
    out["hosts_rss_each"] = [watch.rss.get(pid, 0) for pid in watch.pids]
    out["hosts_of_groups"] = seen["hosts_of_groups"]
    out["ratio"] = out["hosts_cpu_s"] / max(out["floor_cpu_s"], 1e-9)
    return out


def _million_run(
    rows: int, hosts: int, block_size: int | None, timeout: float, watch: _Watch
) -> dict[str, Any]:
    """Run the diabetes plan over tls (``run_spec``, as ``crowdhide run``) and measure it."""
    import signal
    import tomllib

    from crowdhide.plans.runner import run_spec
    from crowdhide.plans.spec import parse_spec

    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    raw["data"]["rows"] = rows
    raw.setdefault("run", {})["plots"] = False
    spec = parse_spec(raw, base=EXAMPLE.parent)

    def expired(*_: object) -> None:
        why = watch.reason or f"it took more than {timeout:.0f} s"
        raise _Stopped(f"the {rows:,}-user run was stopped: {why}")

    signal.signal(signal.SIGALRM, expired)
    signal.alarm(int(timeout))
    cpu, start = _children_cpu(), time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            report = run_spec(spec, Path(tmp), network={"hosts": hosts}, block_size=block_size)
            found = report.to_dict()
    finally:
        signal.alarm(0)
    wall = time.perf_counter() - start
    watch.sample()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    net = found["network"]
    return {
        "rows": rows,
        "hosts": hosts,
        "wall_s": wall,
        "prepare_s": found["timings"].get("prepare_s"),
        "execute_s": found["timings"]["execute_s"],
        "hosts_cpu_s": _children_cpu() - cpu,
        "driver_cpu_s": usage.ru_utime + usage.ru_stime,
        "driver_rss_max": usage.ru_maxrss * 1024,
        "frames": net["data_frames_delivered"],
        "complete": net["complete"],
    }


def _million_table(m: dict[str, Any]) -> None:
    mib = 2**20
    cpu_max = max(m["hosts_cpu_s_max"], 1e-9)
    print(
        "| users | hosts | wall s | execute s | CPU s per host (max) | CPU s all hosts | "
        "driver CPU s | peak RSS per host (max) | driver peak RSS | frames | "
        "frames per CPU s (all hosts) | X25519 + AEAD floor CPU s | runtime / floor |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {m['rows']:,} | {m['hosts']} | {m['wall_s']:.0f} | {m['execute_s']:.0f} | "
        f"{cpu_max:.0f} | {m['hosts_cpu_s']:.0f} | {m['driver_cpu_s']:.0f} | "
        f"{m['hosts_rss_max'] / mib:.0f} MiB | {m['driver_rss_max'] / mib:.0f} MiB | "
        f"{m['frames']:,} | {m['frames'] / max(m['hosts_cpu_s'], 1e-9):,.0f} | "
        f"{m['floor_cpu_s']:.0f} | {m['ratio']:.2f} |"
    )
    f = m["floor"]
    print(
        f"floor: {m['inner_sealed']:,.0f} inner bodies sealed x {f['inner_seal'] * 1e6:.0f} us + "
        f"{m['inner_opened']:,.0f} opened x {f['inner_open'] * 1e6:.0f} us + "
        f"{m['frames']:,} link frames x {f['link'] * 1e6:.1f} us (AEAD both ends; CPU of "
        f"the least loaded batch, after the run); complete: {m['complete']}"
    )
    mib_each = " ".join(f"{r / mib:.0f}" for r in m["hosts_rss_each"])
    print(
        f"peak RSS per process (MiB, hosts 0..{m['hosts'] - 1}, then the relay if any): {mib_each}"
    )
    print(f"CPU s per host: {' '.join(str(c) for c in m['hosts_cpu_s_each'])}")
    print(f"hosts of groups: {m['hosts_of_groups']}")
    schedule = m["default_schedule_s"]
    print(
        f"rounds: {m['rounds']}, sent when processing ended (benchmark hook); the default "
        f"model's schedule is {schedule} s ({m['round_basis']}): a default run waits about "
        f"{sum(schedule):,.0f} s in rounds"
    )


def attack(runs: int) -> dict[str, Any]:
    """Traffic analysis of per-link frame counts: 30 users, 3 hosts, block size 1.

    User 0 sends to compute node 1 (host 1) on dataset x and to node 2 (host 2) on x'. The
    per-link counts are computed from engine transcripts with the node map (the tests check
    they equal the relay's capture exactly), so many runs are cheap.
    """
    import numpy as np

    from crowdhide.audit import link_attack, transcript_link_counts
    from crowdhide.backends import execute
    from crowdhide.plans import PlanBuilder, protect
    from crowdhide.plans.certify import certify

    def plan(target: int, protected: bool) -> Any:
        g = np.arange(30) % 4
        g[0] = target
        b = PlanBuilder()
        b.sources("S", {"g": g})
        b.compute("C", size=4, process=lambda inbox, rng: {})
        b.route("S", "C", by=lambda s: s["g"])
        base = b.build()
        return protect(base, sigma=0.5, per_scrambler=10, dummies=4) if protected else base

    def counts(p: Any, seed: int) -> Any:
        t = execute(p, rng=seed).transcript
        return transcript_link_counts(t.source, t.target, groups=t.groups, block_size=1, hosts=3)

    out: dict[str, Any] = {}
    for protected in (False, True):
        px, py = plan(1, protected), plan(2, protected)
        n = runs if protected else min(runs, 2000)
        x = [counts(px, s) for s in range(n)]
        y = [counts(py, s) for s in range(n, 2 * n)]
        result, accuracy = link_attack(x, y, link_x=(0, 1), link_x_prime=(0, 2), delta=1e-4)
        cert = certify(px, delta=1e-4).privacy.epsilon if protected else float("inf")
        out["protected" if protected else "unprotected"] = {
            "runs": n,
            "accuracy": accuracy,
            "epsilon_lower": result.privacy.epsilon,
            "certificate": cert,
        }
    return out


def _table(results: dict[str, Any]) -> None:
    b, t, d = results["bare"], results["throughput"], results["diabetes"]
    print("| measurement | value | target |")
    print("|---|---|---|")
    if "connections" in results:
        c = results["connections"]
        print(
            f"| open {c['connections']} mutual-TLS connections | {c['seconds']:.2f} s "
            f"({c['per_second']:.0f}/s) | <= 10 s for 1,000 |"
        )
    print(
        f"| bare sealing + opening, one process, 256-byte PLAIN frames | before (one "
        f"single-shot HPKE per frame) {b['before_per_s']:,.0f}/s; after (one context per "
        f"link and round) {b['after_per_s']:,.0f}/s (seal {b['seal_per_s']:,.0f}/s, open "
        f"{b['open_per_s']:,.0f}/s) | |"
    )
    print(
        f"| frames/s host 0 -> host 1 end to end (sealed, written, read, opened, "
        f"acknowledged; {t['frames']:,} frames) | {t['frames_per_s']:,.0f} per wall s; "
        f"{t['frames_per_cpu_s']:,.0f} per CPU s of the busier host | >= 50,000 |"
    )
    runs = [("after", d)] + ([("before", results["before"])] if "before" in results else [])
    for label, r in runs:
        print(
            f"| diabetes {r['rows']:,} users, {r['hosts']} hosts, block {r['block_size']} "
            f"({label}) | tls {r['tls_s']:.1f} s (execute {r['tls_execute_s']:.1f} s, rounds "
            f"of {r['round_seconds']} s) vs local {r['local_s']:.1f} s | same result "
            f"(shared seed): {r['same_result']} |"
        )
        per_cpu = r.get("frames_per_cpu_s_per_host")
        cpu = f"; {per_cpu:,.0f} per CPU s of a host" if per_cpu else ""
        print(
            f"| diabetes ({label}) end to end, frames per host process | "
            f"{r['frames_per_s_per_host']:,.0f} per wall s{cpu} | >= 50,000 |"
        )
    print(
        f"| diabetes frames / local messages | {d['tls_data_frames']:,} / "
        f"{d['local_messages']:,} | equal |"
    )
    for name, a in results.get("attack", {}).items():
        cert = a["certificate"]
        target = f"certificate eps {cert:.2f}" if cert < float("inf") else "no certificate"
        print(
            f"| wire attack, {name}, {a['runs']:,} runs per dataset | accuracy "
            f"{a['accuracy']:.3f}, audit eps >= {a['epsilon_lower']:.2f} | {target} |"
        )


def daemons(audit_runs: int) -> dict[str, Any]:
    """Section 6: timing and audit over node daemons in network namespaces."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.net._daemon_audit import run_audit
    from tests.net._daemon_rounds import ROUND, compare, run_timing

    out: dict[str, Any] = {"timing": {}, "audit": None}
    with tempfile.TemporaryDirectory(prefix="bench-daemons-") as tmp:
        timing = run_timing(Path(tmp) / "timing")
        for kind in ("fixed", "unfixed"):
            a = timing["cases"][f"{kind} real 1.0"]["features"]
            b = timing["cases"][f"{kind} real 0.05"]["features"]
            for feature in ("span", "period", "reply"):
                out["timing"][f"{kind} {feature}"] = compare(a[feature], b[feature], length=ROUND)
        if audit_runs:
            out["audit"] = run_audit(Path(tmp) / "audit", runs=audit_runs)
    return out


def _daemon_tables(results: dict[str, Any]) -> None:
    from tests.net._daemon_rounds import ROUND

    print(
        f"round timing from the bridge capture, real fraction 1.0 (x) vs 0.05 (y), {ROUND} s rounds"
    )
    print(
        "| rounds | feature | n | mean x (s) | sd x | mean y (s) | sd y | p Mann-Whitney "
        "| p permutation | diff (% of round) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, t in results["timing"].items():
        kind, feature = name.split()
        print(
            f"| {kind} | {feature} | {t['n_x']:.0f}/{t['n_y']:.0f} | {t['mean_x']:.4f} | "
            f"{t['sd_x']:.4f} | {t['mean_y']:.4f} | {t['sd_y']:.4f} | {t['p_mannwhitney']:.2g} | "
            f"{t['p_permutation']:.2g} | {t['diff_percent']:.2f} % |"
        )
    audit = results.get("audit")
    if not audit:
        return
    eps, delta = audit["certificate"]
    print()
    print(
        f"traffic-analysis audit of the captured pcap, diabetes, certificate (eps {eps:.3f}, "
        f"delta {delta:g})"
    )
    print(
        "| job | runs per data set | score | held-out accuracy | audit eps >= (95 %) | "
        "certified eps |"
    )
    print("|---|---|---|---|---|---|")
    for job in ("protected", "unprotected"):
        entry = audit[job]
        for score in ("links", "timing"):
            e = entry[score]
            cert = f"{eps:.3f}" if job == "protected" else "none"
            print(
                f"| {job} | {entry['runs']} | {score} | {e['accuracy']:.3f} | "
                f"{e['epsilon_lower']:.3f} | {cert} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--rows", type=int, default=None, help="diabetes users (e.g. 200000)")
    parser.add_argument(
        "--hosts",
        type=int,
        default=None,
        dest="hosts_given",
        help="diabetes host processes (default 3; 8 with --million)",
    )
    parser.add_argument("--block-size", type=int, default=None, help="diabetes block size")
    parser.add_argument(
        "--baseline", default=None, help="source tree for the 'before' diabetes run (main's src)"
    )
    parser.add_argument("--no-attack", action="store_true", help="skip the attack audit")
    parser.add_argument("--diabetes-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--daemons", action="store_true", help="only section 6 (root, network namespaces)"
    )
    parser.add_argument(
        "--audit-runs", type=int, default=20, help="section 6: runs per data set (>= 20; 0 skips)"
    )
    parser.add_argument(
        "--million",
        action="store_true",
        help="only section 7: --rows users (default 10^6) over --hosts spawned hosts (default 8)",
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="section 7: give up after this many s"
    )
    parser.add_argument(
        "--memory-slope",
        default=None,
        help="only section 8: comma-separated user counts, section 7 at each, fitted",
    )
    parser.add_argument("--fit", nargs="+", default=None, help="section 8 on --json files")
    parser.add_argument("--project", type=int, default=10**6, help="section 8: users")
    args = parser.parse_args()
    if args.memory_slope or args.fit:
        hosts = 8 if args.hosts_given is None else args.hosts_given
        if args.fit:
            runs = [json.loads(Path(f).read_text(encoding="utf-8")) for f in args.fit]
        else:
            sizes = [int(float(x)) for x in args.memory_slope.split(",")]
            runs = [million(n, hosts, args.block_size, args.timeout) for n in sizes]
            for r in runs:
                r.pop("plan", None)
        from _memory_fit import fit_table, memory_fit

        fit = memory_fit(runs, args.project)
        if args.json:
            print(json.dumps({"runs": runs, "fit": fit}, indent=2))
        else:
            fit_table(fit)
        return
    if args.million:
        found = million(
            args.rows or 10**6,
            8 if args.hosts_given is None else args.hosts_given,
            args.block_size,
            args.timeout,
        )
        found.pop("plan", None)
        if args.json:
            print(json.dumps(found, indent=2))
        else:
            _million_table(found)
        return
    args.hosts = 3 if args.hosts_given is None else args.hosts_given
    if args.daemons:
        found = daemons(args.audit_runs)
        if args.json:
            print(json.dumps(found, indent=2))
        else:
            _daemon_tables(found)
        return
    quick = args.quick
    rows = args.rows or (3000 if quick else 20_000)
    block = args.block_size or (500 if quick else 2000)
    if args.diabetes_only:  # the --baseline child: whatever crowdhide is on the path
        print(json.dumps(diabetes(rows, args.hosts, block)))
        return
    results: dict[str, Any] = {
        "bare": bare(50_000 if quick else 200_000, before=500 if quick else 2000),
        "throughput": throughput(50_000 if quick else 200_000),
        "diabetes": diabetes(rows, args.hosts, block),
    }
    if not quick:
        results["connections"] = connections(1000)
    if args.baseline:
        results["before"] = baseline(args.baseline, rows, args.hosts, block)
    if not args.no_attack:
        results["attack"] = attack(2_000 if quick else 20_000)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    _table(results)


if __name__ == "__main__":
    main()
