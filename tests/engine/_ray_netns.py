"""Run inside a loopback-only network namespace (see test_ray.py): the shard-equality
workloads on Ray with 2 shards, a socket census with ``ss`` while Ray is up, then a clean
shutdown. Writes JSON to the path given as argument."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ALLOWED = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


def sockets() -> list[dict[str, str]]:
    out = subprocess.run(["ss", "-tanupH"], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 6:
            continue
        rows.append(
            {
                "proto": fields[0],
                "state": fields[1],
                "local": fields[4],
                "peer": fields[5],
                "process": " ".join(fields[6:]),
            }
        )
    return rows


def host(address: str) -> str:
    name = address.rsplit(":", 1)[0].strip("[]")
    return name.split("%")[0]


def main(path: Path) -> None:
    import ray

    from crowdhide.backends.ray import start_ray
    from tests.engine._workloads import WORKLOADS

    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    start_ray(num_cpus=2)  # one session for every workload (start-up is slow)
    node_ip = ray.util.get_node_ip_address()
    logs = Path(ray._private.worker._global_node.get_logs_dir_path())
    results = {}
    started = time.perf_counter()
    for name, workload in WORKLOADS.items():
        results[name] = workload(path.parent, backend="ray", shards=2)
    census = sockets()
    pids = sorted(
        {
            int(p.split("pid=")[1].split(",")[0])
            for s in census
            for p in s["process"].split("),(")
            if "pid=" in p
        }
    )
    ray.shutdown()
    lookups = _route_lookups(logs)
    deadline = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p != os.getpid() and _exists(p)]
        time.sleep(0.2)
    # Local ends must be loopback (a wildcard listener would count as foreign); the peer of a
    # listening socket is a wildcard by definition.
    foreign = [
        s
        for s in census
        if host(s["local"]) not in ALLOWED
        or (host(s["peer"]) not in ALLOWED and s["state"] not in ("LISTEN", "UNCONN"))
    ]
    path.write_text(
        json.dumps(
            {
                "results": results,
                "links": links.stdout,
                "sockets": census,
                "foreign": foreign,
                "left_behind": alive,
                "node_ip": node_ip,
                "route_lookups": lookups,
                "seconds": time.perf_counter() - started,
            }
        ),
        encoding="utf-8",
    )


#: What Ray logs when it looks for the route to 8.8.8.8:53 and the namespace has none.
LOOKUP = "Failed to determine local IP via external connectivity"


def _route_lookups(logs: Path) -> list[str]:
    """Names of Ray's log files (of this session) that hold :data:`LOOKUP`."""
    return sorted(
        f.name
        for f in logs.iterdir()
        if f.is_file() and LOOKUP in f.read_text(encoding="utf-8", errors="replace")
    )


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


if __name__ == "__main__":
    main(Path(sys.argv[1]))
