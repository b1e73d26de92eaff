"""The deployment path at scale: node daemons in network namespaces, a schema-only coordinator.

What ``docs/deploy.md`` describes, measured: the diabetes example with ``--users`` users is
cut by ``crowdhide net split`` into one row file per daemon and a coordinator plan holding no
row (``[data] held_by = "nodes"``); a CA, ``--daemons`` node daemons and a coordinator are
enrolled; each daemon (``crowdhide node serve``, its own state folder and row file) runs in its
own network namespace, the coordinator (``crowdhide run coordinator.toml --backend tls
--directory ...``) in one more, all joined by a bridge inside a namespace this script creates
(``tests/net/netns.py``: addresses ``10.231.k.i`` exist only inside those namespaces).

Printed: users, daemons, block size and round length (given or the coordinator's model),
wall seconds of the run, CPU seconds per daemon during the run (max and total) and of the
coordinator, peak resident memory per daemon (max) and of the coordinator (``wait4``'s
``ru_maxrss`` of each process, exact), frames delivered, rounds, and the released estimates
against the exact answer, which this script computes from the daemons' row files (the
coordinator never has them): how many 95 % intervals cover it and the largest relative
errors. ``--capture``: ``tcpdump`` on the bridge, TCP payload bytes per pair of daemons
against the run's ``delivered_per_link`` frames times the TLS record size.

The machine is shared: compare CPU seconds, not wall seconds, between runs. Every process is
stopped by its id and every namespace deleted on exit, error, Ctrl-C or SIGTERM; the run is
stopped past ``--timeout`` seconds or ``--memory-limit`` bytes resident in all processes.
Needs root, ``ip``, ``tc`` and ``tcpdump`` (Debian: iproute2, tcpdump).

    python benchmarks/bench_deploy.py --users 1e4
    python benchmarks/bench_deploy.py --users 1e5 --round-seconds 120 --block-size 625 --capture
    python benchmarks/bench_deploy.py --users 300 --daemons 3 --json   # what the test runs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.net: the namespace harness the suite uses

from tests.net._deploy import Daemons, _env, enrol  # noqa: E402
from tests.net.netns import Bridge, available, leftovers, tcp_payload_bytes  # noqa: E402

EXAMPLE = ROOT / "src" / "crowdhide" / "examples" / "diabetes.toml"
PORT = 7000
#: Grouping column of each grouping set of the diabetes query (its ``__key<g>`` codes).
GROUPED = ("age_range", "bmi")
STATS = ("count(*)", "avg(insulin)")


class StoppedError(Exception):
    """The run was stopped (time, memory, a signal): the cleanup still runs."""


def _stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise StoppedError(f"stopped by signal {signal.Signals(signum).name}")


# ---------------------------------------------------------------- the exact answer, offline


def exact_answer(
    rows: list[Path], coordinator_plan: Path
) -> dict[tuple[int, str], dict[str, float]]:
    """``{(grouping set, group value): {statistic: exact value}}`` from the daemons' row files
    (codes ``S/__key<g>`` over the plan's public domains, ``S/insulin``)."""
    domains = tomllib.loads(coordinator_plan.read_text(encoding="utf-8"))["query"]["domains"]
    keys: list[list[np.ndarray[Any, Any]]] = [[] for _ in GROUPED]
    insulin: list[np.ndarray[Any, Any]] = []
    for path in rows:
        with np.load(path, allow_pickle=False) as npz:
            insulin.append(npz["S/insulin"])
            for g in range(len(GROUPED)):
                keys[g].append(npz[f"S/__key{g}"].astype(np.int64))
    values = np.concatenate(insulin)
    out: dict[tuple[int, str], dict[str, float]] = {}
    for g, column in enumerate(GROUPED):
        codes = np.concatenate(keys[g])
        for code, label in enumerate(domains[column]):
            mine = values[codes == code]
            if len(mine):
                out[(g, str(label))] = {
                    "count(*)": float(len(mine)),
                    "avg(insulin)": float(mine.mean()),
                    "min(insulin)": float(mine.min()),
                    "max(insulin)": float(mine.max()),
                }
    return out


def check(
    estimates: list[dict[str, Any]], exact: dict[tuple[int, str], dict[str, float]]
) -> dict[str, Any]:
    """The released estimates against the exact answer: intervals covering it, largest
    relative errors, groups of the exact answer missing from the release."""
    covered = intervals = 0
    worst = dict.fromkeys(STATS, 0.0)
    released = set()
    for row in estimates:
        g = int(row["grouping_set"])
        key = (g, str(row[GROUPED[g]]))
        released.add(key)
        truth = exact.get(key)
        if truth is None or row.get("too_few_tuples"):
            continue
        for stat in STATS:
            low, high, value = row.get(f"{stat} low"), row.get(f"{stat} high"), row.get(stat)
            if value is None:
                continue
            worst[stat] = max(worst[stat], abs(value - truth[stat]) / max(abs(truth[stat]), 1e-12))
            if low is not None and high is not None:
                intervals += 1
                covered += int(low <= truth[stat] <= high)
    return {
        "groups": len(exact),
        "missing_groups": len(set(exact) - released),
        "intervals": intervals,
        "covered": covered,
        "max_rel_error": worst,
    }


# ---------------------------------------------------------------- processes, by id


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, every thread) of a running process, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident(pid: int) -> int:
    """Resident bytes of a running process now (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def reap(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, resource.struct_rusage]:
    """Wait (at most ``timeout`` s) for a child and return its exit status and own usage
    (``wait4``: CPU and peak resident memory of this process alone); kill it past the time."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() > deadline:
            proc.kill()
            deadline = time.monotonic() + 10
        time.sleep(0.05)


@dataclass
class Setup:
    """What to run."""

    users: int
    daemons: int
    block_size: int
    round_seconds: float | None = None
    capture: bool = False
    timeout: float = 3600.0
    memory_limit: float = 12 * 2**30
    json: bool = False
    unscheduled: bool = False
    echo: list[str] = field(default_factory=list)


def write_plan(setup: Setup, work: Path) -> tuple[list[Path], Path]:
    """The diabetes example with ``users`` rows, split for the daemons (``net split``): their
    row files and the coordinator's plan (no row)."""
    text = EXAMPLE.read_text(encoding="utf-8").replace("rows = 20000", f"rows = {setup.users}")
    plan = work / "plan.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    command = ["net", "split", str(plan), "--nodes", str(setup.daemons)]
    command += ["--block-size", str(setup.block_size), "--out", str(work / "rows")]
    command += ["--coordinator-plan", str(work / "coordinator.toml"), "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "crowdhide", *command],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"net split failed: {done.stderr.strip()[-2000:]}")
    files = [work / "rows" / f"rows-{i}.npz" for i in range(setup.daemons)]
    return files, work / "coordinator.toml"


def coordinator_command(setup: Setup, work: Path, ns: str) -> list[str]:
    """``crowdhide run`` of the coordinator's plan on the directory, in namespace ``ns``."""
    hook = [str(ROOT / "benchmarks" / "_unscheduled.py")]
    program = hook if setup.unscheduled else ["-m", "crowdhide"]
    command = ["ip", "netns", "exec", ns, sys.executable, *program, "run"]
    command += [str(work / "coordinator.toml"), "--backend", "tls"]
    command += ["--directory", str(work / "directory.toml"), "--ca", str(work / "ca" / "ca.pem")]
    command += ["--state", str(work / "coord"), "--block-size", str(setup.block_size)]
    if setup.round_seconds is not None:
        command += ["--round-seconds", repr(setup.round_seconds)]
    return [*command, "--out", str(work / "results"), "--json", "--allow-unmet"]


# ---------------------------------------------------------------- the run


@dataclass
class Live:
    """What the cleanup must stop: filled as the run starts things."""

    bridge: Bridge | None = None
    daemons: Daemons | None = None
    coordinator: subprocess.Popen[bytes] | None = None


def deploy(setup: Setup, work: Path) -> dict[str, Any]:
    """Split, enrol, start the daemons, run the coordinator, measure; everything stopped and
    deleted before returning or raising (``leftovers``: what remained, always ``[]``)."""
    rows, plan = write_plan(setup, work)
    exact = exact_answer(rows, plan)
    live = Live()
    old = {s: signal.signal(s, _stop_on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        live.bridge = bridge = Bridge(setup.daemons + 1, tag="b")
        listen = [f"{a}:{PORT}" for a in bridge.addresses[:-1]]
        deployment = enrol(work, listen, coordinator=f"{bridge.addresses[-1]}:{PORT}")
        started = time.perf_counter()
        live.daemons = Daemons(deployment, rows, netns=bridge.nodes[:-1])
        out: dict[str, Any] = {"daemons_start_s": time.perf_counter() - started}
        out.update(measured_run(setup, work, live))
    finally:
        # A second Ctrl-C or SIGTERM must not cut the cleanup short.
        blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            prefix = cleanup(live)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
            for s, handler in old.items():
                signal.signal(s, handler)
    out["check"] = check(out.pop("estimates"), exact)
    out["leftovers"] = leftovers(prefix) if prefix else []
    return out


def cleanup(live: Live) -> str:
    """Stop the coordinator and the daemons by pid, delete the namespaces; the prefix."""
    if live.coordinator is not None and live.coordinator.returncode is None:
        live.coordinator.kill()
        reap(live.coordinator, 10)
    if live.daemons is not None:
        live.daemons.close()
    if live.bridge is None:
        return ""
    live.bridge.close()
    return live.bridge.prefix


def measured_run(setup: Setup, work: Path, live: Live) -> dict[str, Any]:
    """The coordinator's run, watched; then the daemons stopped by SIGTERM (their usage)."""
    assert live.bridge is not None
    assert live.daemons is not None
    bridge, pids = live.bridge, live.daemons.pids
    before = [cpu_seconds(p) for p in pids]
    pcap = work / "bridge.pcap"
    capture = bridge.capture(pcap) if setup.capture else None
    command = coordinator_command(setup, work, bridge.nodes[-1])
    (work / "coordinator.cmd").write_text(" ".join(command) + "\n")
    started = time.perf_counter()
    with (work / "report.json").open("wb") as out, (work / "coordinator.log").open("wb") as err:
        live.coordinator = subprocess.Popen(command, env=_env(), stdout=out, stderr=err)
    code, usage, peak = watch(live.coordinator, pids, setup)
    wall = time.perf_counter() - started
    dropped = bridge.stop_capture(capture) if capture is not None else None
    during = [cpu_seconds(p) - b for p, b in zip(pids, before, strict=True)]
    codes, usages = stop_daemons(live.daemons)
    if code != 0:
        log = (work / "coordinator.log").read_text(errors="replace").strip()
        raise RuntimeError(f"the coordinator exited with {code}: {log[-3000:]}")
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    found = summarise(report, wall, during, usage, usages)
    found.update(daemon_exit_codes=codes, resident_peak_sum=peak, estimates=report["estimates"])
    if capture is not None:
        found["capture"] = compare_capture(bridge, pcap, report["network"], setup.daemons)
        found["capture"]["kernel_dropped"] = dropped
    return found


def watch(
    proc: subprocess.Popen[bytes], pids: list[int], setup: Setup
) -> tuple[int, resource.struct_rusage, int]:
    """Wait for the coordinator, bounded by ``setup.timeout`` and ``setup.memory_limit``
    (resident bytes of it and the daemons together); its exit code, usage and the largest
    resident sum seen."""
    deadline, peak = time.monotonic() + setup.timeout, 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage, peak
        now = sum(resident(p) for p in [*pids, proc.pid])
        peak = max(peak, now)
        if now > setup.memory_limit:
            raise StoppedError(
                f"{now / 2**30:.1f} GiB resident (--memory-limit {setup.memory_limit:.3g})"
            )
        if time.monotonic() > deadline:
            raise StoppedError(f"the run took more than --timeout {setup.timeout:.0f} s")
        time.sleep(0.5)


def stop_daemons(daemons: Daemons) -> tuple[list[int], list[resource.struct_rusage]]:
    """SIGTERM every daemon (a clean shutdown), then reap each (30 s, then SIGKILL)."""
    for proc in daemons.procs:
        proc.send_signal(signal.SIGTERM)
    reaped = [reap(proc, 30) for proc in daemons.procs]
    return [c for c, _ in reaped], [u for _, u in reaped]


def summarise(
    report: dict[str, Any],
    wall: float,
    during: list[float],
    coordinator: resource.struct_rusage,
    daemons: list[resource.struct_rusage],
) -> dict[str, Any]:
    """The figures of one run (``ru_maxrss`` is in KiB on Linux)."""
    net = report["network"]
    return {
        "wall_s": wall,
        "coordinator_timings": report["timings"],
        "daemon_cpu_s": during,
        "daemon_cpu_s_max": max(during),
        "daemon_cpu_s_total": sum(during),
        "daemon_cpu_s_lifetime": [u.ru_utime + u.ru_stime for u in daemons],
        "daemon_rss_bytes": [u.ru_maxrss * 1024 for u in daemons],
        "daemon_rss_bytes_max": max(u.ru_maxrss for u in daemons) * 1024,
        "coordinator_cpu_s": coordinator.ru_utime + coordinator.ru_stime,
        "coordinator_rss_bytes": coordinator.ru_maxrss * 1024,
        "frames": net["data_frames_delivered"],
        "rounds": net.get("rounds"),
        "round_seconds": net["round_seconds"],
        "round_seconds_from": net["round_seconds_from"],
        "round_lateness_max_s": net["round_lateness_max_seconds"],
        "complete": net["complete"],
        "messages_lost": net["messages_lost"],
        "exact_in_report": report["exact"],
        "epsilon": report["privacy"].get("epsilon")
        if isinstance(report["privacy"], dict)
        else None,
    }


def compare_capture(
    bridge: Bridge, pcap: Path, net: dict[str, Any], daemons: int
) -> dict[str, Any]:
    """Per pair of daemons: TCP payload bytes on the bridge against the frames the run
    reports on that link times the TLS record size (the rest: handshakes, control frames)."""
    seen = tcp_payload_bytes(pcap)
    record = int(net["tls_record_bytes"])
    links = {}
    for a in range(daemons):
        for b in range(daemons):
            frames = int(net["delivered_per_link"].get(f"{a}->{b}", 0))
            got = seen.get((bridge.addresses[a], bridge.addresses[b]), 0)
            if a != b and (frames or got):
                links[f"{a}->{b}"] = {
                    "frames": frames,
                    "frame_bytes": frames * record,
                    "captured": got,
                }
    coordinator = bridge.addresses[-1]
    control = sum(n for (s, d), n in seen.items() if coordinator in (s, d))
    return {
        "record_bytes": record,
        "links": links,
        "coordinator_bytes": control,
        "pcap_bytes": pcap.stat().st_size,
        # a daemon's frames to itself never reach the bridge
        "self_frames": sum(
            int(net["delivered_per_link"].get(f"{a}->{a}", 0)) for a in range(daemons)
        ),
    }


# ---------------------------------------------------------------- output


def table(setup: Setup, m: dict[str, Any]) -> None:
    """The figures as a Markdown table and a few lines."""
    mib = 2**20
    c = m["check"]
    print(f"options: {' '.join(setup.echo)}")
    print(
        "| users | daemons | block | round s | rounds | wall s | CPU s per daemon (max) | "
        "CPU s daemons (total) | coordinator CPU s | peak RSS per daemon (max) | "
        "coordinator peak RSS | frames | intervals covering the exact answer |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {setup.users:,} | {setup.daemons} | {setup.block_size} | {m['round_seconds'] or '-'} | "
        f"{m['rounds']} | {m['wall_s']:.0f} | {m['daemon_cpu_s_max']:.1f} | "
        f"{m['daemon_cpu_s_total']:.1f} | {m['coordinator_cpu_s']:.1f} | "
        f"{m['daemon_rss_bytes_max'] / mib:.0f} MiB | {m['coordinator_rss_bytes'] / mib:.0f} MiB | "
        f"{m['frames']:,} | {c['covered']}/{c['intervals']} |"
    )
    err = c["max_rel_error"]
    print(
        f"round length: {m['round_seconds_from']}; latest answer {m['round_lateness_max_s']:.2f} s "
        f"late; complete: {m['complete']}; daemons exited {m['daemon_exit_codes']}"
    )
    print(
        f"exact answer (from the row files; the coordinator's report: {m['exact_in_report']!r}): "
        f"{c['groups']} groups, {c['missing_groups']} not released, largest relative error "
        f"count {err['count(*)']:.3%}, average {err['avg(insulin)']:.3%}"
    )
    if "capture" in m:
        cap = m["capture"]
        print(
            f"bridge capture ({cap['pcap_bytes'] / mib:.0f} MiB, kernel dropped "
            f"{cap['kernel_dropped']}): TLS record {cap['record_bytes']} B; "
            f"coordinator <-> daemons {cap['coordinator_bytes']:,} B; "
            f"frames a daemon sent itself (not on the bridge): {cap['self_frames']:,}"
        )
        print("| link | frames reported | x record bytes | TCP payload bytes captured | ratio |")
        print("|---|---|---|---|---|")
        quiet = []
        for link, v in cap["links"].items():
            if not v["frames"]:
                quiet.append(v["captured"])
                continue
            ratio = v["captured"] / v["frame_bytes"]
            print(
                f"| {link} | {v['frames']:,} | {v['frame_bytes']:,} | {v['captured']:,} | "
                f"{ratio:.4f} |"
            )
        if quiet:
            print(
                f"{len(quiet)} links without frames carried {min(quiet):,}..{max(quiet):,} B "
                "each (TLS handshakes and per-round control frames)"
            )
    print(f"left over: {m['leftovers'] or 'nothing'}")


def parse(argv: list[str] | None = None) -> Setup:
    """The options (echoed in the output)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--users", type=float, default=1e4, help="users, 1e2 .. 1e6 (default 1e4)")
    p.add_argument("--daemons", type=int, default=8, help="node daemons (default 8)")
    p.add_argument(
        "--block-size", type=int, help="nodes per block (default min(625, users/4/daemons))"
    )
    p.add_argument("--round-seconds", type=float, help="fixed round length (default: the model's)")
    p.add_argument("--capture", action="store_true", help="tcpdump on the bridge, bytes per link")
    p.add_argument("--timeout", type=float, default=3600.0, help="stop the run past it (s)")
    p.add_argument("--memory-limit", type=float, default=12 * 2**30, help="bytes resident, all")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--unscheduled",
        action="store_true",
        help="benchmark hook: rounds close once every daemon answered (measures the work)",
    )
    a = p.parse_args(argv)
    users = int(a.users)
    if users != a.users or not 100 <= users <= 10**6:
        p.error(f"--users {a.users:g}: an integer in [100, 1e6]")
    if a.unscheduled and a.round_seconds is not None:
        p.error("--round-seconds with --unscheduled: give one of them")
    if not 1 <= a.daemons <= 64:
        p.error(f"--daemons {a.daemons}: in [1, 64]")
    block = a.block_size or min(625, max(1, users // (4 * a.daemons)))
    if not 1 <= block <= users:
        p.error(f"--block-size {block}: in [1, users]")
    echo = [f"--users {users}", f"--daemons {a.daemons}", f"--block-size {block}"]
    rounds = "--unscheduled" if a.unscheduled else "--round-seconds model"
    echo.append(f"--round-seconds {a.round_seconds:g}" if a.round_seconds else rounds)
    echo += [f"--timeout {a.timeout:g}", f"--memory-limit {a.memory_limit:.3g}"]
    echo += ["--capture"] * a.capture + ["--json"] * a.json
    return Setup(
        users,
        a.daemons,
        block,
        a.round_seconds,
        a.capture,
        a.timeout,
        a.memory_limit,
        a.json,
        a.unscheduled,
        echo,
    )


def main(argv: list[str] | None = None) -> int:
    setup = parse(argv)
    why = available()
    if why is not None:
        print(f"bench_deploy: cannot run here: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-deploy-") as tmp:
        try:
            found = deploy(setup, Path(tmp))
        except (StoppedError, KeyboardInterrupt) as exc:
            print(
                f"bench_deploy: stopped, everything cleaned up: {exc or 'Ctrl-C'}", file=sys.stderr
            )
            return 130
        except RuntimeError as exc:  # the run failed; everything is cleaned up
            print(f"bench_deploy: {exc}", file=sys.stderr)
            return 1
    if setup.json:
        print(json.dumps({"options": setup.echo, **found}, indent=2, default=str))
    else:
        table(setup, found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
