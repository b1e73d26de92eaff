"""A long-lived Python process that answers one JSON line per JSON line (shared by the scripts
that time two checkouts alternately in one run: each checkout gets its own worker, started
once with its ``src`` first on the path, so imports and caches are paid outside the clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def start_worker(src: str, code: str) -> subprocess.Popen[str]:
    """Start ``python -c code`` with ``PYTHONPATH=src``; ``code`` reads JSON lines from stdin
    and prints one JSON line per line read."""
    env = dict(os.environ, PYTHONPATH=src)
    return subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip


def ask_worker(proc: subprocess.Popen[str], cell: list[Any]) -> list[float]:
    """Send ``cell`` as one JSON line; return the numbers of the line the worker answers."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(json.dumps(cell) + "\n")
    proc.stdin.flush()
    return [float(x) for x in json.loads(proc.stdout.readline())]
