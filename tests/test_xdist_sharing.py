"""The README's ``-n 3 --dist loadfile`` shares the machine as tests/_xdist.py says: a small
suite laid out like this one (timed files under tests/net/ and tests/engine/test_ray*, CPU
files elsewhere), run by pytest-xdist in a subprocess with this suite's plugin, records where,
when and at what niceness every test ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

ROOT = Path(__file__).resolve().parents[1]

# The hooks of tests/conftest.py that involve tests/_xdist.py.
CONFTEST = """
import pytest
from tests import _xdist

def pytest_configure(config):
    config.addinivalue_line("markers", "net: timed")
    config.addinivalue_line("markers", "ray: timed")
    config.pluginmanager.register(_xdist.XdistPlugin(), "crowdhide-xdist")

def pytest_runtest_setup(item):
    _xdist.check_marks(item)

@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _xdist.set_priority(item)
    return (yield)
"""

RECORDER = """
import json, os, time

def record(name):
    start = time.time()
    time.sleep(0.2)
    with open(os.environ["XDIST_LOG"], "a") as log:
        log.write(json.dumps({
            "name": name, "worker": os.environ["PYTEST_XDIST_WORKER"], "start": start,
            "end": time.time(), "nice": os.getpriority(os.PRIO_PROCESS, 0),
        }) + "\\n")
"""

# Six CPU files with more tests each than the timed files together: xdist's own order (the
# largest unit first) would hand the timed unit out last.
CPU_MODULE = "from _rec import record\n" + "".join(
    f"def test_cpu_{i}():\n    record(__name__ + '{i}')\n" for i in range(4)
)
NET_MODULE = (
    "import pytest\nfrom _rec import record\npytestmark = pytest.mark.{mark}\n"
    "def test_timed():\n    record('timed-' + __name__)\n"
)


def _suite(root: Path, stray: str = "") -> None:
    (root / "conftest.py").write_text(CONFTEST)
    (root / "pytest.ini").write_text("[pytest]\n")  # not the repository's configuration
    (root / "_rec.py").write_text(RECORDER)
    for folder in ("tests/net", "tests/engine", "tests/cpu"):
        (root / folder).mkdir(parents=True)
    for i in range(6):
        (root / f"tests/cpu/test_cpu{i}.py").write_text(CPU_MODULE)
    (root / "tests/net/test_net_a.py").write_text(NET_MODULE.format(mark="net"))
    (root / "tests/net/test_net_b.py").write_text(NET_MODULE.format(mark="net"))
    (root / "tests/engine/test_ray_c.py").write_text(NET_MODULE.format(mark="ray"))
    if stray:
        (root / "tests/cpu/test_stray.py").write_text(NET_MODULE.format(mark=stray))


def _pytest(root: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDIST_LOG": str(root / "log.jsonl"),
        "PYTHONPATH": f"{ROOT}{os.pathsep}{root}",
    }
    args = ["-n", "3", "--dist", "loadfile", "-p", "no:cacheprovider", "-q", "-ra", "-c"]
    args.append("pytest.ini")
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--rootdir", str(root), "tests"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _run(root: Path) -> list[dict[str, object]]:
    _suite(root)
    proc = _pytest(root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [json.loads(line) for line in (root / "log.jsonl").read_text().splitlines()]


def test_timed_tests_run_first_one_at_a_time_on_one_worker(tmp_path: Path) -> None:
    runs = _run(tmp_path)
    assert len(runs) == 6 * 4 + 3
    timed = [r for r in runs if str(r["name"]).startswith("timed-")]
    assert len(timed) == 3
    # one worker (so one after another), and they are the first tests it runs
    assert len({r["worker"] for r in timed}) == 1
    mine = sorted((r for r in runs if r["worker"] == timed[0]["worker"]), key=lambda r: r["start"])
    assert all(str(r["name"]).startswith("timed-") for r in mine[:3])
    # every CPU file stays on one worker (its module fixtures are set up once) ...
    for i in range(6):
        workers = {r["worker"] for r in runs if str(r["name"]).startswith(f"test_cpu{i}")}
        assert len(workers) == 1
    # ... and the CPU files ran alongside the timed ones (three workers in use)
    assert len({r["worker"] for r in runs}) == 3


@pytest.mark.parametrize("mark", ["net", "ray"])
def test_a_net_or_ray_test_outside_the_timed_files_is_refused(tmp_path: Path, mark: str) -> None:
    _suite(tmp_path, stray=mark)
    proc = _pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ERROR tests/cpu/test_stray.py::test_timed" in proc.stdout
    assert f"a {mark} test outside tests/_xdist.py's TIMED_PATHS" in proc.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="only root switches niceness back and forth")
def test_timed_tests_keep_the_starting_niceness_the_others_run_nicer(tmp_path: Path) -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base + 10 > 19:
        pytest.skip(f"started at nice {base}: no room for the CPU tests to run 10 nicer")
    runs = _run(tmp_path)
    for run in runs:
        want = base if str(run["name"]).startswith("timed-") else base + 10
        assert run["nice"] == want, run
