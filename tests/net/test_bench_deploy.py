"""benchmarks/bench_deploy.py, kept from rotting: its offline exact answer is the population's,
it runs a few hundred users over three daemons in network namespaces and reports what it
measured, and Ctrl-C mid-run leaves no process and no namespace."""

from __future__ import annotations

import importlib.util
import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from crowdhide.plans.data import synth_diabetes
from crowdhide.plans.query import NO_EXACT
from tests.net._deploy import _env
from tests.net.netns import available, leftovers

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_deploy.py"
USERS = 300
#: Fixed 10 s rounds: the run lasts several rounds, so a signal sent 2 s in lands inside it.
LONG_ROUNDS = ("--round-seconds", "10")
FLAGS = ("--capture", "--json")


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_deploy", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_offline_exact_answer_is_the_populations(tmp_path: Path) -> None:
    """From the split files alone, the benchmark finds each group's count, mean, min and max
    of the generated population (the plan's generator and seed, grouped here by brute force)."""
    b = bench()
    setup = b.Setup(users=USERS, daemons=3, block_size=25)
    rows, plan = b.write_plan(setup, tmp_path)
    assert "held_by" in plan.read_text(encoding="utf-8")
    exact = b.exact_answer(rows, plan)
    table = synth_diabetes(rows=USERS, rng=7)  # [data] of the diabetes example
    expected: dict[tuple[int, str], list[float]] = {}
    for i in range(USERS):
        for g, column in enumerate(b.GROUPED):
            expected.setdefault((g, str(table[column][i])), []).append(float(table["insulin"][i]))
    assert set(exact) == set(expected)
    for key, values in expected.items():
        got = exact[key]
        assert got["count(*)"] == len(values)
        assert got["avg(insulin)"] == pytest.approx(math.fsum(values) / len(values), rel=1e-12)
        assert (got["min(insulin)"], got["max(insulin)"]) == (min(values), max(values))
    # the check counts an interval that misses the truth
    one = {(0, "x"): {"count(*)": 10.0, "avg(insulin)": 5.0}}
    released = [
        {"grouping_set": 0, "age_range": "x", "count(*)": 12.0, "count(*) low": 11.0}
        | {"count(*) high": 13.0, "avg(insulin)": 5.0, "avg(insulin) low": 4.0}
        | {"avg(insulin) high": 6.0}
    ]
    found = b.check(released, one)
    assert (found["covered"], found["intervals"]) == (1, 2)
    assert found["max_rel_error"]["count(*)"] == pytest.approx(0.2)


def _needs_namespaces() -> None:
    why = available()
    if why is not None:
        pytest.skip(why)


@pytest.mark.net
@pytest.mark.slow
def test_the_benchmark_runs_over_daemons_in_namespaces() -> None:
    _needs_namespaces()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--users", str(USERS), "--daemons", "3", *FLAGS],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    m = json.loads(done.stdout)
    assert "--users 300" in m["options"]
    assert m["leftovers"] == []
    assert m["exact_in_report"] == NO_EXACT  # the coordinator had no row
    assert m["complete"]
    assert m["daemon_exit_codes"] == [0, 0, 0]  # SIGTERM: a clean shutdown
    assert m["rounds"] >= 2
    assert m["frames"] > USERS
    assert min(m["daemon_rss_bytes"]) > 0
    assert m["coordinator_rss_bytes"] > 0
    assert m["coordinator_cpu_s"] > 0
    check = m["check"]
    assert check["intervals"] > 0
    assert check["covered"] >= check["intervals"] // 2
    capture = m["capture"]
    record = capture["record_bytes"]
    assert capture["links"]
    for link, v in capture["links"].items():
        # frames on the link plus handshakes and control frames, never fewer bytes
        assert v["captured"] >= v["frames"] * record, link
        assert v["captured"] <= (v["frames"] + 3 * (m["rounds"] + 2)) * record + 2 * 4096, link
    assert capture["coordinator_bytes"] > 0


def _children(pid: int) -> dict[int, str]:
    """Child pids of ``pid`` and their command lines."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline")
            try:
                out[int(child)] = cmdline.read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
    return out


@pytest.mark.net
@pytest.mark.slow
def test_ctrl_c_mid_run_leaves_nothing() -> None:
    _needs_namespaces()
    proc = subprocess.Popen(
        # The model's own rounds for 300 users can all end within the 2 s wait below.
        [sys.executable, str(SCRIPT), "--users", str(USERS), "--daemons", "3", *LONG_ROUNDS],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            seen |= _children(proc.pid)
            if any(" run " in c and "coordinator.toml" in c for c in seen.values()):
                break
            time.sleep(0.2)
        assert any(" node serve " in c for c in seen.values()), seen
        time.sleep(2.0)  # inside the coordinator's run
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 130, err[-3000:]
    assert "stopped, everything cleaned up" in err
    assert out == ""
    alive = [p for p in seen if Path(f"/proc/{p}").exists()]
    assert alive == []
    assert leftovers(f"chd{proc.pid % 100000}b") == []
