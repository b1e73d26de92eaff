"""The net tests' rerun of a refusal due to load (tests/net/_load.py), run on fake tests in
a child pytest: a test runs again only when it failed with an overrun (or an outlier
refusal) AND a busy loop then gets less than 0.75 of a CPU; at most 3 runs; any other
failure, or an overrun on an idle machine, is reported at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.net import _load

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
from pathlib import Path

from tests.net import _load
from tests.net._load import pytest_runtest_makereport, pytest_runtest_protocol

# The busy loop's share, faked: what the failed test wrote last (an idle machine: 1.0).
SHARE = Path(__file__).with_name("share.txt")
_load.cpu_share = lambda seconds=0.3: float(SHARE.read_text())
"""

TESTS = """
from pathlib import Path

import pytest

from crowdhide.errors import NodeFailureError, RoundOverrunError

HERE = Path(__file__).parent
OUTLIER = "node 2 (x) measured frame costs 65x the other daemons' median ({})"
CLI = "progress\\ncrowdhide: ROUND OVERRUN: round 1 overran its fixed length by 0.2 s\\n"


def _count(name, share=0.1):
    (HERE / "share.txt").write_text(str(share))
    path = HERE / f"{name}.n"
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n


@pytest.mark.parametrize("share", [0.1, 0.74, 0.75, 1.0])
def test_overrun_once(share):
    if _count(f"once-{share}", share) == 1:
        raise RoundOverrunError("round 2 overran its fixed length by 0.300 s")


def test_overrun_always():
    _count("always")
    raise RoundOverrunError("round 2: a node's program ended 0.100 s after the answer")


def test_cli_overrun_once():
    assert _count("cli") > 1, CLI


def test_cli_line_quoted_is_not_one():
    assert _count("quoted") > 1, "\\n".join(f"E   {line}" for line in CLI.splitlines())


def test_cli_outlier_once():
    line = "crowdhide: NODE FAILURE: " + OUTLIER
    assert _count("cli-outlier") > 1, line


def test_cli_other_node_failure():
    assert _count("cli-death") > 1, "crowdhide: NODE FAILURE: node 1 (127.0.0.1:5) died"


def test_outlier_once():
    if _count("outlier") == 1:
        raise NodeFailureError(OUTLIER)


def test_other_node_failure():
    _count("death")
    raise NodeFailureError("node 1 (127.0.0.1:5) died")


def test_other_failure():
    _count("other")
    assert 1 == 2, "round 1 overran its fixed length (a message, not an overrun)"


def test_fixtures_are_fresh_on_each_run(tmp_path):
    first = HERE / "first.txt"
    if _count("fresh") == 1:
        first.write_text(str(tmp_path))
        raise RoundOverrunError("round 1 overran its fixed length by 0.1 s")
    assert first.read_text() != str(tmp_path)
"""


def test_a_refusal_under_load_runs_again_and_nothing_else_does(tmp_path: Path) -> None:
    """Fake tests in a child pytest, each failing its first run (or every run) with a
    refusal or another failure, the busy loop's share faked."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_fake.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(tmp_path)]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    out = done.stdout + done.stderr
    runs = {p.stem: int(p.read_text()) for p in tmp_path.glob("*.n")}
    assert runs == {
        # Below 0.75 of a CPU the machine is loaded: one rerun; at or above: none.
        "once-0.1": 2,
        "once-0.74": 2,
        "once-0.75": 1,
        "once-1.0": 1,
        "always": 3,  # at most 3 runs
        "cli": 2,
        "quoted": 1,  # a line quoting the CLI's is not its stderr
        "outlier": 2,
        "cli-outlier": 2,
        "cli-death": 1,
        "fresh": 2,
        "death": 1,  # other failures: never again
        "other": 1,
    }, out
    failed = {line.split("::")[1].split()[0] for line in out.splitlines() if "FAILED" in line}
    assert failed == {
        "test_overrun_once[0.75]",
        "test_overrun_once[1.0]",
        "test_overrun_always",
        "test_cli_line_quoted_is_not_one",
        "test_other_node_failure",
        "test_cli_other_node_failure",
        "test_other_failure",
    }, out
    assert "7 failed, 6 passed" in out, out
    # The last run's report names the earlier ones; the terminal says each rerun.
    assert "load reruns" in out, out
    assert "attempt 2 refused under load (a busy loop got 0.10 of a CPU)" in out, out
    assert "test_fake.py::test_outlier_once: attempt 1 refused under load" in out, out


@pytest.mark.parametrize("load", [False, True])
def test_the_busy_loop_measures_the_share_of_a_cpu(load: bool) -> None:
    """The probe itself: about one CPU when nothing competes; below the bar when 3 busy
    loops per core, of the same priority, share this machine's cores with it."""
    procs = []
    if load:
        busy = [sys.executable, "-c", "while True: pass"]
        procs = [subprocess.Popen(busy) for _ in range(2 * (os.cpu_count() or 1))]
        time.sleep(1.0)  # the loops are running
    try:
        shares = [_load.cpu_share(0.2) for _ in range(3)]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)
    assert all(0.0 < s <= 1.05 for s in shares), shares
    if load:
        assert max(shares) < _load.BUSY_SHARE, shares
