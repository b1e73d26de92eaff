"""Ctrl-C during Ray's start-up, swept over delays (not a test: a measurement to run by hand).

Run inside the namespaces test_ray_sigint.py uses, e.g. from the repository root::

    PYTHONPATH=src:. unshare -n -p -f --mount-proc sh -c "ip link set lo up && exec \\
        python -m tests.engine._ray_sigint_sweep /tmp/sweep gcs_server@0.05 gcs_server@0.1"

Each ``WORD@DELAY`` starts ``crowdhide run --backend ray`` (the plan of _ray_sigint.py at
60 000 rows), waits for a Ray process whose command line holds ``WORD``, sleeps ``DELAY``
seconds, sends SIGINT and prints one JSON line: exit code, seconds to the signal and to the
exit, whether stderr shows a dropped exception ("Exception ignored") or a traceback, and how
many Ray processes were left 20 s later.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.engine._ray_sigint import PLAN, ray_processes


def trial(out: Path, word: str, delay: float) -> dict[str, Any]:
    plan = out / "plan.toml"
    plan.write_text(PLAN.replace("rows = 300000", "rows = 60000"), encoding="utf-8")
    args = [sys.executable, "-m", "crowdhide", "run", str(plan), "--backend", "ray"]
    start = time.monotonic()
    run = subprocess.Popen(
        [*args, "--shards", "2", "--out", str(out / "o"), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until = start + 240  # Ray starts within seconds; a word that never shows stops here
    while (
        run.poll() is None
        and not any(word in p for p in ray_processes())
        and time.monotonic() < wait_until
    ):
        time.sleep(0.05)
    seen = time.monotonic() - start
    time.sleep(delay)
    run.send_signal(signal.SIGINT)
    try:
        _, err = run.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        _, err = run.communicate()
    ended = time.monotonic() - start
    deadline = time.monotonic() + 20
    while ray_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    return {
        "at": f"{word}@{delay}",
        "signal_s": round(seen + delay, 2),
        "exit_s": round(ended, 1),
        "code": run.returncode,
        "dropped": "Exception ignored" in err,
        "traceback": "Traceback" in err,
        "left": len(ray_processes()),
    }


def main(out: Path, specs: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        word, delay = spec.rsplit("@", 1)
        print(json.dumps(trial(out, word, float(delay))), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
