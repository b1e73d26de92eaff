"""The load rerun of tests/net/_load.py when the refusal comes from a module fixture's setup
(the daemon runs shared by a module's tests: test_daemon_rounds, test_daemon_audit,
test_wire_capture), on fake tests in a child pytest: the fixture is set up again (pytest
would raise its kept exception to every later test), at most 3 times in all over the
module's tests, and only for a refusal on a loaded machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
from pathlib import Path

from tests.net import _load
from tests.net._load import pytest_runtest_makereport, pytest_runtest_protocol

# The busy loop's share, faked: 0.1 of a CPU (loaded) unless idle.txt exists (1.0).
HERE = Path(__file__).parent
_load.cpu_share = lambda seconds=0.3: 1.0 if (HERE / "idle.txt").exists() else 0.1
"""

FIXTURE = """
from pathlib import Path

import pytest

from crowdhide.errors import RoundOverrunError

HERE = Path(__file__).parent


def _count(name):
    path = HERE / f"{name}.n"
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n


@pytest.fixture(scope="module")
def daemons():
    n = _count(NAME)
    if FAILS(n):
        raise ERROR
    yield n
    _count(NAME + "-teardown")


@pytest.mark.parametrize("case", [1, 2, 3])
def test_case(daemons, case):
    _count(f"{NAME}-test")
"""

TRACEBACK = (
    "coordinator failed: Traceback (most recent call last):\n  ...\n"
    "crowdhide.errors.RoundOverrunError: round 1 overran its fixed length by 0.2 s\n"
)
#: Module -> (the fixture fails on its n-th run when, the exception it raises).
MODULES = {
    "once": ("n == 1", 'RoundOverrunError("round 1 overran its fixed length by 0.2 s")'),
    "always": ("True", 'RoundOverrunError("round 2 overran its fixed length by 0.1 s")'),
    # as _daemon_rounds reports its coordinator child's traceback
    "cli": ("n == 1", f"RuntimeError({TRACEBACK!r})"),
    "other": ("n == 1", 'RuntimeError("coordinator failed: daemon 1 did not start")'),
    "idle": ("n == 1", 'RoundOverrunError("round 1 overran its fixed length by 0.2 s")'),
}


def _module(name: str) -> str:
    fails, error = MODULES[name]
    head = f"NAME = {name!r}\nFAILS = lambda n: {fails}\nERROR = {error}\n"
    return FIXTURE.replace("HERE = Path", head + "HERE = Path", 1)


def _run(tmp_path: Path, name: str) -> tuple[dict[str, int], str]:
    """Run the fake module ``name`` in a child pytest: the counts and the output."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / f"test_{name}.py").write_text(_module(name))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    if name == "idle":
        (tmp_path / "idle.txt").write_text("")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(tmp_path)]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    runs = {p.stem: int(p.read_text()) for p in tmp_path.glob("*.n")}
    return runs, done.stdout + done.stderr


def test_a_fixture_refused_under_load_is_set_up_again(tmp_path: Path) -> None:
    runs, out = _run(tmp_path, "once")
    assert runs == {"once": 2, "once-test": 3, "once-teardown": 1}, out
    assert "3 passed" in out, out
    assert "test_once.py::test_case[1]: attempt 1 refused under load" in out, out
    assert "load reruns" in out, out


def test_a_fixture_that_always_overruns_runs_three_times_in_all(tmp_path: Path) -> None:
    runs, out = _run(tmp_path, "always")
    assert runs == {"always": 3}, out  # not 3 per test: the later tests fail at once
    assert "3 errors" in out, out
    assert "RoundOverrunError" in out, out


def test_a_childs_traceback_of_an_overrun_in_a_fixture_is_one(tmp_path: Path) -> None:
    runs, out = _run(tmp_path, "cli")
    assert runs == {"cli": 2, "cli-test": 3, "cli-teardown": 1}, out
    assert "3 passed" in out, out


def test_other_fixture_failures_and_an_idle_machine_are_reported_at_once(
    tmp_path: Path,
) -> None:
    for name in ("other", "idle"):
        runs, out = _run(tmp_path / name, name)
        assert runs == {name: 1}, out
        assert "3 errors" in out, out
