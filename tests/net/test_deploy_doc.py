"""docs/deploy.md, executed: three node daemons and a coordinator in four network namespaces
on a bridge run the diabetes example through the guide's own commands.

The guide's shell blocks are run as written (``# on: MACHINE`` says where: ``nodeI`` and
``coordinator`` in their namespaces, ``ca`` here), with the namespaces' addresses for
``$NODE0..2`` and ``$COORD``. Checked: the released result has the local backend's columns
and frame count (each daemon keys its draws with its own secret, so not its values); the
bridge capture carries, between each pair of daemons, the frames the coordinator counted on
that link (bytes bracket them); a daemon killed by SIGKILL mid-run ends the next run with
one line naming it and exit code 5, no traceback; SIGTERM stops the others with exit 0; no
process, socket or namespace is left.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crowdhide.plans.query import NO_EXACT
from tests.net._deploy import _env
from tests.net.conftest import assert_all_gone
from tests.net.netns import Bridge, available, leftovers, tcp_payload_bytes

pytestmark = [pytest.mark.net, pytest.mark.slow]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
ROWS = 600
MACHINES = {"node0": 0, "node1": 1, "node2": 2, "coordinator": 3}


def guide_commands() -> list[tuple[str, str]]:
    """``(machine, command)`` of every line of the guide's ``sh`` blocks, in order."""
    text = GUIDE.read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        machine = None
        for line in block.splitlines():
            if line.startswith("# on: "):
                machine = line[len("# on: ") :].strip()
            elif line.strip():
                assert machine is not None, line
                out.append((machine, line.strip()))
    return out


@pytest.fixture
def bridge() -> Iterator[Bridge]:
    why = available()
    if why is not None:
        pytest.skip(why)
    made = Bridge(4, tag="d")
    try:
        yield made
    finally:
        made.close()
    assert leftovers(made.prefix) == []


def write_plan(folder: Path) -> Path:
    example = Path(__file__).resolve().parents[2] / "src/crowdhide/examples/diabetes.toml"
    text = example.read_text(encoding="utf-8").replace("rows = 20000", f"rows = {ROWS}")
    assert f"rows = {ROWS}" in text
    plan = folder / "plan.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    return plan


class Machines:
    """Runs the guide's lines where they say (a namespace per machine, the CA here)."""

    def __init__(self, bridge: Bridge, cwd: Path) -> None:
        self.bridge, self.cwd = bridge, cwd
        self.variables = {f"NODE{i}": bridge.addresses[i] for i in range(3)}
        self.variables["COORD"] = bridge.addresses[3]
        self.daemons: dict[int, subprocess.Popen[bytes]] = {}

    def argv(self, machine: str, command: str) -> list[str]:
        for name, value in self.variables.items():
            command = command.replace(f"${name}", value)
        words = shlex.split(command.rstrip("&"))
        assert words[0] == "crowdhide", command
        words = [sys.executable, "-m", "crowdhide", *words[1:]]
        if machine == "ca":
            return words
        return ["ip", "netns", "exec", self.bridge.nodes[MACHINES[machine]], *words]

    def run(
        self, machine: str, command: str, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        if command.startswith("cp "):
            _, a, b = command.split()
            shutil.copy(self.cwd / a, self.cwd / b)
            return subprocess.CompletedProcess([command], 0, "", "")
        if command.endswith("&"):
            self.start(machine, command)
            return subprocess.CompletedProcess([command], 0, "", "")
        return subprocess.run(
            self.argv(machine, command),
            cwd=self.cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, machine: str, command: str) -> None:
        index = MACHINES[machine]
        with (self.cwd / f"{machine}.log").open("wb") as log:
            proc = subprocess.Popen(
                self.argv(machine, command),
                cwd=self.cwd,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self.daemons[index] = proc
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()  # one line once listening (or EOF on error)
        assert f"node {index} listening on" in line, (self.cwd / f"{machine}.log").read_text()

    def coordinator_connected(self, node: int) -> bool:
        ss = subprocess.run(
            ["ip", "netns", "exec", self.bridge.nodes[node], "ss", "-tnH", "state", "established"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        return f"{self.variables['COORD']}:" in ss

    def stop(self) -> dict[int, int | None]:
        codes: dict[int, int | None] = {}
        for proc in self.daemons.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for index, proc in self.daemons.items():
            try:
                codes[index] = proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[index] = None
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        return codes


def test_the_deploy_guide_runs_diabetes_over_three_daemons(bridge: Bridge, tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    machines = Machines(bridge, tmp_path)
    commands = guide_commands()
    assert [m for m, c in commands if c.startswith("crowdhide run")] == ["coordinator"]
    pcap = tmp_path / "bridge.pcap"
    capture = None
    report = None
    try:
        for machine, command in commands:
            if command.startswith("crowdhide run"):
                capture = bridge.capture(pcap)
                done = machines.run(machine, command)
                bridge.stop_capture(capture)
                assert done.returncode == 0, done.stderr[-3000:]
                report = json.loads(done.stdout)
            else:
                done = machines.run(machine, command)
                assert done.returncode == 0, (command, done.stderr[-2000:])
        assert report is not None
        # The coordinator's plan is the schema (net split --coordinator-plan): no exact answer.
        assert "held_by" in (tmp_path / "coordinator.toml").read_text(encoding="utf-8")
        assert report["exact"] == NO_EXACT
        assert "exact" not in report["files"]
        local = subprocess.run(
            [
                sys.executable,
                "-m",
                "crowdhide",
                "run",
                str(plan),
                "--block-size",
                "100",
                "--out",
                str(tmp_path / "local"),
                "--json",
                "--allow-unmet",
            ],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert local.returncode == 0, local.stderr[-2000:]
        expected = json.loads(local.stdout)
        # Secret per-daemon randomness: other σ draws than the local run's, same columns.
        for key in ("result", "estimates"):
            assert report[key], key
            assert {tuple(sorted(r)) for r in report[key]} <= {
                tuple(sorted(r)) for r in expected[key]
            }, key
        assert any("own secret" in n for n in report["notes"])
        assert report["network"]["randomness"] == "secret per host"
        net = report["network"]
        assert any("coordinator does not observe" in n for n in report["notes"])
        assert net["dead_hosts"] == []
        assert net["messages_lost"] == 0
        # every frame of the local run crossed a link (dummies included)
        assert net["data_frames_delivered"] == expected["costs"]["messages"]
        check_capture(bridge, pcap, net)
        check_kill(machines, bridge, tmp_path, commands)
    finally:
        pids = [p.pid for p in machines.daemons.values()]
        codes = machines.stop()
    assert codes == {0: 0, 1: -signal.SIGKILL, 2: 0}
    assert_all_gone(pids, [7000])
    for name in ("node0", "node2"):
        assert "Traceback" not in (tmp_path / f"{name}.log").read_text()


def check_capture(bridge: Bridge, pcap: Path, net: dict[str, object]) -> None:
    """Between each pair of daemons the bridge carried the frames the coordinator counted on
    that link, plus control frames and handshakes (never another frame)."""
    seen = tcp_payload_bytes(pcap)
    record = int(net["tls_record_bytes"])  # type: ignore[call-overload]
    per_link = net["delivered_per_link"]
    assert isinstance(per_link, dict)
    rounds = 8
    for a in range(3):
        for b in range(3):
            if a == b:
                continue  # a daemon's link to itself stays in its namespace
            frames = int(per_link.get(f"{a}->{b}", 0))
            got = seen.get((bridge.addresses[a], bridge.addresses[b]), 0)
            assert got >= frames * record, (a, b, got, frames)
            assert got <= (frames + 3 * rounds + 2) * record + 2 * 4096, (a, b, got, frames)


def check_kill(
    machines: Machines, bridge: Bridge, cwd: Path, commands: list[tuple[str, str]]
) -> None:
    """SIGKILL daemon 1 once the coordinator has reached it: one line, exit code 5."""
    machine, command = next((m, c) for m, c in commands if c.startswith("crowdhide run"))
    argv = machines.argv(machine, command.replace("--out results/", "--out results2/"))
    proc = subprocess.Popen(
        argv, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 600
        while not machines.coordinator_connected(1) and time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
        time.sleep(3.0)  # inside the run: setup or a round
        os.kill(machines.daemons[1].pid, signal.SIGKILL)
        _out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    lines = err.strip().splitlines()
    assert proc.returncode == 5, err[-3000:]
    assert len(lines) == 1, err
    assert lines[0].startswith("crowdhide: NODE FAILURE: node 1 (")
    assert f"node 1 ({bridge.addresses[1]}:7000) died during" in lines[0]
    assert "Traceback" not in err
