"""Run one case of a benchmark script in a fresh Python process (shared by the scripts that
time first queries: nothing cached, imports paid before the clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def run_fresh(script: str, src: str, case: Any, repeat: int) -> list[Any]:
    """Run ``script --one JSON(case)`` ``repeat`` times with ``PYTHONPATH=src``; return the
    JSON value each run printed on its last line."""
    env = dict(os.environ, PYTHONPATH=src)
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, script, "--one", json.dumps(case)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs
