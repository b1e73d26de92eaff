"""Benchmark of the TLS runtime: connection set-up, frame throughput, a real run end to end.

1. Time to open 1,000 mutual-TLS 1.3 connections (ECDSA P-256 both ways, plus the welcome
   frame exchange that makes a link count as up) from this process to one node-host process,
   50 at a time. Target: <= 10 s.
2. Frames per second of one host process: it seals ``N`` 256-byte frames end to end (HPKE,
   one ephemeral X25519 key per frame), writes them one TLS record each to another host,
   which opens each on arrival; the round closes with END/ACK. Target: >= 15,000 frames/s.
3. The diabetes example (example:diabetes, 20,000 users) end to end over TLS on 3 hosts
   vs the local backend, same seed and block size: time, frames, bytes on the wire.
4. The traffic-analysis attack on per-link frame counts, audited (lower bound on ε) next to
   the certificate, without and with countermeasures.

    python benchmarks/bench_net.py            # full
    python benchmarks/bench_net.py --quick    # 200 connections, 20,000 frames, 3,000 users

Everything runs on 127.0.0.1; every process is stopped by its id. Peak memory of a host can be
read with /usr/bin/time -v on the host command if needed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
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


def throughput(frames: int) -> dict[str, Any]:
    """Frames per second of host 0 sending to host 1 (256-byte frames)."""
    from crowdhide.backends.tls import control as ctl
    from crowdhide.backends.tls.backend import TlsBackend

    with TlsBackend(hosts=2, frame_size=256, deadline=300.0) as backend:
        backend.start()
        start = time.perf_counter()
        backend._all(lambda h: ctl.Blast(peer=1, count=frames), hosts=[0])
        sealed = time.perf_counter()
        replies = backend._all(lambda h: ctl.Flush(epoch=1, alive=(0, 1), deadline=300.0))
        done = time.perf_counter()
        received = replies[1].received[0]
    return {
        "frames": frames,
        "received": received,
        "seal_s": sealed - start,
        "send_s": done - sealed,
        "frames_per_s": frames / (done - start),
    }


def diabetes(rows: int, hosts: int, block_size: int) -> dict[str, Any]:
    """The diabetes example over TLS and locally (same seed, same block size)."""
    import tomllib

    from crowdhide.plans.runner import run_spec
    from crowdhide.plans.spec import parse_spec

    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    raw["data"]["rows"] = rows
    raw.setdefault("run", {})["plots"] = False
    spec = parse_spec(raw, base=EXAMPLE.parent)
    out: dict[str, Any] = {"rows": rows, "hosts": hosts, "block_size": block_size}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        local = run_spec(spec, Path(tmp) / "local", block_size=block_size).to_dict()
        out["local_s"] = time.perf_counter() - start
        start = time.perf_counter()
        tls = run_spec(
            spec, Path(tmp) / "tls", network={"hosts": hosts}, block_size=block_size
        ).to_dict()
        out["tls_s"] = time.perf_counter() - start
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
    out["frames_per_s_per_host"] = net["data_frames_delivered"] / out["tls_execute_s"] / hosts
    return out


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--rows", type=int, default=None, help="diabetes users (e.g. 200000)")
    args = parser.parse_args()
    quick = args.quick
    results = {
        "connections": connections(200 if quick else 1000),
        "throughput": throughput(20_000 if quick else 200_000),
        "diabetes": diabetes(args.rows or (3000 if quick else 20_000), 3, 500 if quick else 2000),
        "attack": attack(2_000 if quick else 20_000),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    c, t, d = results["connections"], results["throughput"], results["diabetes"]
    print("| measurement | value | target |")
    print("|---|---|---|")
    print(
        f"| open {c['connections']} mutual-TLS connections | {c['seconds']:.2f} s "
        f"({c['per_second']:.0f}/s) | <= 10 s for 1,000 |"
    )
    print(
        f"| frames/s, one host process, 256-byte frames ({t['frames']:,}) | "
        f"{t['frames_per_s']:,.0f} (seal {t['seal_s']:.2f} s, send {t['send_s']:.2f} s) "
        f"| >= 15,000 |"
    )
    print(
        f"| diabetes {d['rows']:,} users, {d['hosts']} hosts, block {d['block_size']} | "
        f"tls {d['tls_s']:.1f} s (execute {d['tls_execute_s']:.1f} s) vs local "
        f"{d['local_s']:.1f} s (execute {d['local_execute_s']:.2f} s) | same result: "
        f"{d['same_result']} |"
    )
    print(
        f"| diabetes end to end, frames/s per host process (fixed rounds of "
        f"{d['round_seconds']} s) | {d['frames_per_s_per_host']:,.0f} | >= 50,000 |"
    )
    print(
        f"| diabetes frames / local messages | {d['tls_data_frames']:,} / "
        f"{d['local_messages']:,} | equal |"
    )
    print(
        f"| diabetes bytes on the wire (data records, {d['frame_bytes']}-byte frames) | "
        f"{d['wire_bytes_data']:,} | |"
    )
    for name, a in results["attack"].items():
        cert = a["certificate"]
        target = f"certificate eps {cert:.2f}" if cert < float("inf") else "no certificate"
        print(
            f"| wire attack, {name}, {a['runs']:,} runs per dataset | accuracy "
            f"{a['accuracy']:.3f}, audit eps >= {a['epsilon_lower']:.2f} | {target} |"
        )


if __name__ == "__main__":
    main()
