"""Fixtures of the ``net`` tests: every backend is closed and every child stopped by its pid."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.engine.library import named
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.model import ExecutionPlan

# A test refused for load (an overrun or outlier on a loaded machine) runs again: _load.py.
from tests.net._load import pytest_runtest_makereport, pytest_runtest_protocol  # noqa: F401

SOURCES = 300
#: Nodes per block in these tests: sources spread over every host (block b on host b mod H).
BLOCK = 50


def small_plan(*, protected: bool) -> ExecutionPlan:
    """300 sources counting themselves into 4 compute nodes (optionally protected)."""
    b = PlanBuilder()
    b.sources("S", {"g": np.arange(SOURCES) % 4})
    b.compute(
        "C",
        size=4,
        process=named("compute.count", route="S->C", size=4),  # plans travel as data
    )
    b.route("S", "C", by=named("route.column", column="g"))
    plan = b.build()
    return protect(plan, sigma=0.5, per_scrambler=10, dummies=5) if protected else plan


def sockets_of(pids: list[int]) -> list[str]:
    """Lines of ``ss -tanp`` owned by any of ``pids``."""
    out = subprocess.run(["ss", "-tanpH"], capture_output=True, text=True, timeout=10).stdout
    return [line for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]


def assert_all_gone(pids: list[int], ports: list[int]) -> None:
    """No process with these ids, no socket of theirs, nothing listening on their ports."""
    assert pids
    alive = [p for p in pids if Path(f"/proc/{p}").exists()]
    assert alive == [], f"children still running: {alive}"
    assert sockets_of(pids) == []
    out = subprocess.run(["ss", "-tlnH"], capture_output=True, text=True, timeout=10).stdout
    listening = [line for line in out.splitlines() if any(f":{port} " in line for port in ports)]
    assert listening == []


@pytest.fixture
def backends() -> Iterator[Callable[..., TlsBackend]]:
    """Factory of backends; the finalizer closes them and kills any survivor by pid."""
    made: list[TlsBackend] = []

    def make(**options: Any) -> TlsBackend:
        # Most tests compare the tls run with the local backend's (same seed, same result
        # and transcript): that needs the shared seed; secret-randomness tests pass False.
        options.setdefault("shared_seed", True)
        backend = TlsBackend(**options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        pids = backend.pids
        try:
            backend.close()
        finally:
            for pid in pids:
                if Path(f"/proc/{pid}").exists():
                    os.kill(pid, signal.SIGKILL)
