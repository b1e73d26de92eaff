"""Benchmark of the sharded engine: wall time and peak memory per process, vs DuckDB.

Workload: a protected diabetes-like Aggregate plan of seed 000 — S sources, G = 4 grouping
sets of 20 intervals each (C = 20 compute nodes per set), target sampling σ = 0.1 and
scramblers n = 100, d = 50 on every data route. For each S it measures, each in a fresh
subprocess so that peak resident memory (``ru_maxrss``) is that configuration's own:

* ``local``     — the streaming local backend (1 shard), protected plan;
* ``ray``       — the Ray backend with 2 shards (actors) on this machine, protected plan;
  peak RSS of the driver and of the largest actor. It runs inside a loopback-only network
  namespace made for it (``unshare -n``, then ``ip link set lo up``; needs root and
  util-linux/iproute2), and refuses to start if it can see any interface but ``lo``: Ray
  never listens on or connects to a real interface;
* ``local-unprotected`` (S <= 1e6) — the same plan without countermeasures;
* ``duckdb``    — ``GROUP BY GROUPING SETS ((g1), (g2), (g3), (g4))`` with AVG on the same
  data (the central, unprotected answer);
* ``numpy-floor`` (opt-in) — only the essential array work of the protected plan, written
  as one numpy pipeline with no engine around it: per grouping set, target sampling, the
  scramblers' dummies and in-row shuffles (int64 entries packing target and payload), and
  the compute nodes' counts and sums of the real messages. No transcript, counters or
  blocks. It estimates how fast a vectorized single-process engine could be at all.

Times are the ``execute`` call (data generation and plan building excluded, reported as
setup). For Ray, ``execute`` includes creating the actors and shipping each its blocks'
rows, but not ``ray.init`` (on an existing cluster it is already done): that start-up is
the ``init s`` column (also part of setup), and the Ray/local ratio is printed both
without and with it. Ratios are computed within one run of this script (the machine may be
shared).

    python benchmarks/bench_engine.py --quick             # S = 1e4, 1e5
    python benchmarks/bench_engine.py                     # S = 1e5 ... 1e8
    python benchmarks/bench_engine.py --sizes 1e6 1e7     # chosen sizes
    python benchmarks/bench_engine.py --sizes 1e6 --modes local numpy-floor duckdb

Targets (issue 10): 1e7 sources <= 2 GB peak per process; 1e8 completes; Ray <= 1.5x local
at 1e7; protected plan at 1e6 <= 8x DuckDB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SQL = "SELECT g1, g2, g3, g4, AVG(v) FROM D GROUP BY GROUPING SETS ((g1), (g2), (g3), (g4))"
CHUNK = 1 << 22


def table(sources: int) -> dict[str, Any]:
    """Diabetes-like data, compact dtypes, generated in chunks (seeded)."""
    import numpy as np

    g = np.random.default_rng(0)
    out = {f"g{i}": np.empty(sources, dtype=np.int8) for i in range(1, 5)}
    out["v"] = np.empty(sources, dtype=np.float32)
    for start in range(0, sources, CHUNK):
        stop = min(sources, start + CHUNK)
        for i in range(1, 5):
            out[f"g{i}"][start:stop] = g.integers(0, 20, stop - start)
        out["v"][start:stop] = 100.0 + 5.0 * out["g1"][start:stop] + g.normal(0, 15, stop - start)
    return out


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _RssSampler:
    """Largest resident set of this process while ``execute`` runs (``ru_maxrss`` also
    counts data generation and plan building), sampled from ``/proc/self/statm``."""

    def __init__(self, every: float = 0.05) -> None:
        import threading

        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while True:
            with open("/proc/self/statm", encoding="ascii") as handle:
                self.peak = max(self.peak, int(handle.read().split()[1]) * page)
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def numpy_floor(
    data: dict[str, Any], *, sigma: float = 0.1, per: int = 100, dummies: int = 50
) -> int:
    """The essential work of the protected plan (module docstring); returns messages."""
    import numpy as np

    rng = np.random.Generator(np.random.Philox(1))
    sources = len(data["v"])
    count = sources // per  # full scramblers only (S is a multiple of 100 here)
    messages = 0
    for g in ("g1", "g2", "g3", "g4"):
        key = data[g]
        true_target = key.astype(np.int64)  # one compute node per interval (20 and 20)
        sampled = rng.random(sources, dtype=np.float32) < sigma
        drawn = rng.integers(0, 20, sources)
        real = ~sampled | (drawn == true_target)
        final = np.where(sampled, drawn, true_target)
        table = np.empty((count, per + dummies), dtype=np.int64)
        table[:, :per] = ((final << 32) | np.arange(sources)).reshape(count, per)
        table[:, per:] = (rng.integers(0, 20, (count, dummies)) << 32) | 0xFFFFFFFF
        rng.permuted(table, axis=1, out=table)
        target = (table >> 32).astype(np.int32).ravel()  # the forwarded hop's receivers
        payload = (table & 0xFFFFFFFF).ravel()
        rows = payload[payload != 0xFFFFFFFF]
        rows = rows[real[rows]]
        np.bincount(key[rows], minlength=20)
        np.bincount(key[rows], weights=data["v"][rows], minlength=20)
        messages += sources + target.size
    return messages


def one(sources: int, mode: str) -> dict[str, Any]:
    """Run one configuration in this process and return its measurements."""
    t0 = time.perf_counter()
    data = table(sources)
    if mode == "numpy-floor":
        t1 = time.perf_counter()
        messages = numpy_floor(data)
        t2 = time.perf_counter()
        return {
            "sources": sources,
            "mode": mode,
            "setup_s": t1 - t0,
            "execute_s": t2 - t1,
            "messages": messages,
            "rows": 80,
            "peak_rss_mb": _peak_mb(),
            "execute_rss_mb": 0.0,
            "worker_rss_mb": 0.0,
        }
    if mode == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads TO 2")
        con.register("D", data)
        t1 = time.perf_counter()
        rows = con.execute(SQL).fetchall()
        t2 = time.perf_counter()
        con.close()
        return {
            "sources": sources,
            "mode": mode,
            "setup_s": t1 - t0,
            "execute_s": t2 - t1,
            "messages": 0,
            "rows": len(rows),
            "peak_rss_mb": _peak_mb(),
            "execute_rss_mb": 0.0,
            "worker_rss_mb": 0.0,
        }
    from crowdhide.backends import execute
    from crowdhide.plans import protect
    from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan

    setup = aggregate_plan(data, AggregateQuery.from_sql(SQL), compute_nodes=20)
    del data
    plan = setup.plan
    if mode != "local-unprotected":
        plan = protect(plan, sigma=0.1, per_scrambler=100, dummies=50)
    backend: Any = "local"
    startup = 0.0
    if mode == "ray":
        from crowdhide.backends.ray import RayBackend, start_ray

        lines = Path("/proc/net/dev").read_text(encoding="utf-8").splitlines()[2:]
        interfaces = sorted(line.split(":")[0].strip() for line in lines)  # this namespace's
        if interfaces != ["lo"]:
            raise SystemExit(f"ray mode runs in a loopback-only namespace only, saw {interfaces}")

        # Ray is started before the clock (as an existing cluster would be); reported apart.
        began = time.perf_counter()
        store = int(os.environ.get("BENCH_OBJECT_STORE_MB", "512")) * 2**20
        start_ray(num_cpus=2, object_store_memory=store)
        startup = time.perf_counter() - began
        backend = RayBackend()
    t1 = time.perf_counter()
    with _RssSampler() as sampler:
        run = execute(plan, rng=1, backend=backend, shards=2 if mode == "ray" else 1)
    t2 = time.perf_counter()
    rows = len(setup.result_rows(run.states["R"]))
    workers = getattr(backend, "worker_peak_rss_mb", [0.0])
    if mode == "ray":
        import ray

        ray.shutdown()
    return {
        "sources": sources,
        "mode": mode,
        "setup_s": t1 - t0,
        "execute_s": t2 - t1,
        "messages": len(run.transcript),
        "rows": rows,
        "peak_rss_mb": _peak_mb(),
        "execute_rss_mb": sampler.peak / 2**20,
        "worker_rss_mb": max(workers, default=0.0),
        "ray_startup_s": startup,
    }


def _command(sources: int, mode: str) -> list[str] | None:
    """The subprocess of one configuration; Ray's inside a fresh loopback-only namespace."""
    command = [sys.executable, str(Path(__file__).resolve()), "--one", str(sources), mode]
    if mode != "ray":
        return command
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return None
    return ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {shlex.join(command)}"]


def _sub(sources: int, mode: str, env: dict[str, str]) -> dict[str, Any] | None:
    started = time.perf_counter()
    command = _command(sources, mode)
    if command is None:
        print(f"{sources:>11.0e} {mode:>18} skipped: needs root, unshare and ip (netns)")
        return None
    out = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        tail = out.stderr.strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        spent = time.perf_counter() - started
        print(f"{sources:>11.0e} {mode:>18} failed after {spent:.0f} s: {tail[0]}")
        return None
    r: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"{r['sources']:>11.0e} {r['mode']:>18} {r['messages']:>14,} {r['setup_s']:>8.1f} "
        f"{r['execute_s']:>10.2f} {r['peak_rss_mb']:>9.0f} {r['execute_rss_mb']:>9.0f} "
        f"{r['worker_rss_mb']:>10.0f} {r.get('ray_startup_s', 0.0):>8.1f}",
        flush=True,
    )
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="S = 1e4 and 1e5 only")
    parser.add_argument("--sizes", nargs="+", type=float, help="S values (default 1e5..1e8)")
    parser.add_argument(
        "--modes", nargs="+", default=["local", "ray", "local-unprotected", "duckdb"]
    )
    parser.add_argument(
        "--object-store-mb",
        type=int,
        default=512,
        help="Ray object store (MB; the backend's default 512): smaller spills to disk sooner",
    )
    parser.add_argument("--one", nargs=2, metavar=("S", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(int(float(args.one[0])), args.one[1])))
        return
    sizes = [10**4, 10**5] if args.quick else [int(s) for s in (args.sizes or (1e5, 1e6, 1e7, 1e8))]
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env["BENCH_OBJECT_STORE_MB"] = str(args.object_store_mb)
    print(
        f"{'S':>11} {'mode':>18} {'messages':>14} {'setup s':>8} {'execute s':>10} "
        f"{'peak MB':>9} {'exec MB':>9} {'worker MB':>10} {'init s':>8}"
    )
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for size in sizes:
        for mode in args.modes:
            if mode == "local-unprotected" and size > 10**6:
                continue
            r = _sub(size, mode, env)
            if r is not None:
                rows[(size, mode)] = r
    _verdicts(rows, args.modes, sizes)


def _verdicts(
    rows: dict[tuple[int, str], dict[str, Any]], modes: list[str], sizes: list[int]
) -> None:
    print()
    for (size, mode), r in sorted(rows.items()):
        if (
            mode in ("local", "ray", "local-unprotected", "numpy-floor")
            and (
                size,
                "duckdb",
            )
            in rows
        ):
            ratio = r["execute_s"] / rows[(size, "duckdb")]["execute_s"]
            print(f"S={size:.0e}: {mode} / DuckDB GROUPING SETS = {ratio:.1f}x")
        if mode == "ray" and (size, "local") in rows:
            local = rows[(size, "local")]["execute_s"]
            print(
                f"S={size:.0e}: ray (2 shards) / local = {r['execute_s'] / local:.2f}x "
                f"({(r['execute_s'] + r['ray_startup_s']) / local:.2f}x counting ray.init)"
            )
    checks = []
    for mode in ("local", "ray"):
        r = rows.get((10**7, mode))
        if r:
            peak = max(r["peak_rss_mb"], r["worker_rss_mb"])
            checks.append(
                f"1e7 {mode} peak per process {peak:.0f} MB (target <= 2048): "
                f"{'met' if peak <= 2048 else 'NOT met'}"
            )
    if (10**7, "ray") in rows and (10**7, "local") in rows:
        ray, local = rows[(10**7, "ray")], rows[(10**7, "local")]["execute_s"]
        q = ray["execute_s"] / local
        q_init = (ray["execute_s"] + ray["ray_startup_s"]) / local
        checks.append(
            f"1e7 ray/local {q:.2f}x (target <= 1.5): {'met' if q <= 1.5 else 'NOT met'}; "
            f"counting ray.init {q_init:.2f}x: {'met' if q_init <= 1.5 else 'NOT met'}"
        )
    if (10**6, "local") in rows and (10**6, "duckdb") in rows:
        q = rows[(10**6, "local")]["execute_s"] / rows[(10**6, "duckdb")]["execute_s"]
        checks.append(
            f"1e6 protected/DuckDB {q:.1f}x (target <= 8): {'met' if q <= 8 else 'NOT met'}"
        )
    for mode in ("local", "ray"):
        if mode in modes and 10**8 in sizes:
            done = (10**8, mode) in rows
            checks.append(f"1e8 {mode}: {'completed' if done else 'did NOT complete'}")
    for line in checks:
        print(line)


if __name__ == "__main__":
    main()
