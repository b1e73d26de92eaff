"""Run inside a loopback-only network namespace and its own PID namespace (see
test_ray_sigint.py): start ``crowdhide run --backend ray``, press Ctrl-C (SIGINT) once Ray's
workers are up, then list every Ray process still alive. Writes JSON to the path given."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PLAN = """
name = "sigint"
[data]
generator = "diabetes"
rows = 300000
[query]
sql = "SELECT age_range, bmi, AVG(insulin) FROM D GROUP BY GROUPING SETS ((age_range), (bmi))"
compute_nodes = 4
[countermeasures]
sigma = 0.1
n = 50
d = 10
[run]
plots = false
block_size = 2000
"""
RAY_WORDS = ("ray::", "raylet", "gcs_server", "dashboard", "ray/_private")


def ray_processes() -> list[str]:
    """Command lines of the live (not zombie) Ray processes of this PID namespace."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z" and any(word in command for word in RAY_WORDS):
            found.append(command.strip())
    return found


def main(out: Path) -> None:
    plan = out.parent / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    args = [sys.executable, "-m", "crowdhide", "run", str(plan), "--backend", "ray"]
    run = subprocess.Popen(
        [*args, "--shards", "2", "--out", str(out.parent / "o"), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        if any(p.startswith("ray::") for p in ray_processes()):
            break
        time.sleep(0.2)
    time.sleep(1.0)  # the actors are working
    interrupted = run.poll() is None and "--no-signal" not in sys.argv
    if interrupted:
        run.send_signal(signal.SIGINT)
    try:
        _, err = run.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        run.kill()
        _, err = run.communicate()
    end = time.monotonic() + 20
    left = ray_processes()
    while left and time.monotonic() < end:
        time.sleep(0.5)
        left = ray_processes()
    out.write_text(
        json.dumps(
            {"interrupted": interrupted, "code": run.returncode, "stderr": err, "left": left}
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
