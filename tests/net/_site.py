"""Four node daemons on 127.0.0.1, fresh for each test, and the coordinator runs aimed at
them: what test_coordinator_signals.py and test_coordinator_idle.py share (each test file's
``site`` fixture opens one with :func:`serving`, the idle tests with their own serve options).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.net._deploy import Daemons, Deployment, _env, enrol, free_ports
from tests.net._signals import Ended, interrupt, start
from tests.net.conftest import assert_all_gone, sockets_of
from tests.net.test_faults import NODES, split, write_plan

BLOCK = 100
#: Fixed round length: a signal one round after the daemons were linked lands inside a round
#: (the diabetes plan has 3 rounds since groups of one level share them).
ROUND = 2.0


@dataclass
class Site:
    root: Path
    deployment: Deployment
    daemons: Daemons
    plan: Path
    ports: list[int]

    def args(self, out: str, *extra: str) -> list[str]:
        dep = self.deployment
        return [
            *("run", str(self.plan), "--backend", "tls", "--directory", str(dep.directory)),
            *("--ca", str(dep.ca), "--state", str(dep.coordinator), "--block-size", str(BLOCK)),
            *("--out", str(self.root / out), "--allow-unmet", *extra),
        ]

    def sessions(self) -> int:
        """Established TCP connections the daemons hold (control connections and links)."""
        return sum(" ESTAB " in f" {line} " for line in sockets_of(self.daemons.pids))

    def log(self, node: int) -> str:
        return (self.root / f"daemon{node}.log").read_text(errors="replace")

    def signal_mid_round(self, sig: int, out: str) -> Ended:
        """``sig`` to the coordinator a round after it linked every daemon."""
        proc = start(self.args(out, "--round-seconds", str(ROUND)), cwd=self.root, env=_env())
        return interrupt(proc, sig, ready=self.linked, settle=ROUND)

    def linked(self) -> bool:
        """Whether the daemons are linked to each other and the coordinator (a run is on)."""
        return self.sessions() >= NODES * NODES  # a control connection and links each

    def wait_idle(self, timeout: float = 30.0) -> float:
        """Seconds until the daemons hold no connection (the run dropped everywhere)."""
        began = time.monotonic()
        while self.sessions() and time.monotonic() < began + timeout:
            time.sleep(0.05)
        return time.monotonic() - began

    def clean_run(self, out: str) -> None:
        """A run with no fault completes on the same daemons: they were not wedged."""
        done = subprocess.run(
            [sys.executable, "-m", "crowdhide", *self.args(out), "--json"],
            cwd=self.root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        net = json.loads(done.stdout)["network"]
        assert net["complete"] is True
        assert net["dead_hosts"] == []


@contextmanager
def serving(root: Path, *serve_args: str) -> Iterator[Site]:
    """Four daemons (``crowdhide node serve`` with ``serve_args``) enrolled under ``root``,
    holding the diabetes plan's rows; on leaving, every one is stopped and its ports freed."""
    ports = free_ports(NODES)
    dep = enrol(root, [f"127.0.0.1:{p}" for p in ports])
    plan = write_plan(root)
    daemons = Daemons(dep, split(plan, root / "rows"), serve_args=serve_args)
    pids = daemons.pids
    try:
        yield Site(root, dep, daemons, plan, ports)
    finally:
        daemons.terminate()
        daemons.close()
        assert_all_gone(pids, ports)
