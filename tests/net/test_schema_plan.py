"""A coordinator that holds no row (issue #27): ``[data] held_by = "nodes"`` on node daemons.

``net split --coordinator-plan`` cuts a simulated diabetes population into one file per
daemon and writes the coordinator's schema-only plan. Checked on three daemons on
127.0.0.1: the coordinator runs that plan from a folder without any row, its process never
opens the row files or the simulation's plan (a Python audit hook records every file it
opens; the row files are even deleted once the daemons have read them), and its report has
the released result and the certificate and says the exact answer is not available,
without an ``exact.csv`` or a comparison. A daemon whose rows lie outside the plan's public
domain, or lack a column, refuses the plan naming itself, the column and the number of rows
outside, never a value, or whose codes were made over other domains than the plan's; the
coordinator refuses daemons whose rows do not tile ``rows``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls.coordinator import Coordinator
from crowdhide.backends.tls.node_rows import NodeRows, write_rows
from crowdhide.errors import InvalidParameterError, NodeFailureError
from crowdhide.plans.model import ExecutionPlan
from crowdhide.plans.query import NO_EXACT
from crowdhide.plans.runner import prepare
from crowdhide.plans.spec import load_spec, parse_spec
from tests.cli_helpers import run_cli
from tests.net._deploy import Daemons, Deployment, _env, enrol, free_ports
from tests.net.conftest import assert_all_gone

pytestmark = pytest.mark.net

ROWS, BLOCK, NODES = 240, 40, 3
EXAMPLE = Path(__file__).resolve().parents[2] / "src/crowdhide/examples/diabetes.toml"
#: Runs ``crowdhide`` with an audit hook recording the files it opens under the watched
#: paths (``argv[1]``, ``os.pathsep``-separated), printed on standard error at exit.
AUDITED = """
import os, sys
watched = [os.path.abspath(p) for p in sys.argv[1].split(os.pathsep)]
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if any(path == w or path.startswith(w + os.sep) for w in watched):
            opened.append(path)
sys.addaudithook(hook)
from crowdhide.cli import main
code = main(sys.argv[2:])
print("OPENED " + repr(opened), file=sys.stderr)
sys.exit(code)
"""


@pytest.fixture
def split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, list[Path]]:
    """The simulation's plan, the coordinator's plan and the daemons' row files."""
    text = EXAMPLE.read_text(encoding="utf-8").replace("rows = 20000", f"rows = {ROWS}")
    sim = tmp_path / "plan.toml"
    sim.write_text(text + "plots = false\n", encoding="utf-8")
    coordinator = tmp_path / "coordinator.toml"
    result = run_cli(
        capsys, "net", "split", str(sim), "--nodes", str(NODES), "--block-size", str(BLOCK),
        "--out", str(tmp_path / "rows"), "--coordinator-plan", str(coordinator), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    return sim, coordinator, [Path(f) for f in result.json()["files"]]


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    root = tmp_path / "deployment"
    root.mkdir()
    return enrol(root, [f"127.0.0.1:{p}" for p in free_ports(NODES)])


@contextlib.contextmanager
def serve(dep: Deployment, rows: list[Path]) -> Iterator[Daemons]:
    daemons = Daemons(dep, rows)
    try:
        yield daemons
    finally:
        pids = daemons.pids
        daemons.terminate()
        daemons.close()
        assert_all_gone(pids, [int(a.rsplit(":", 1)[1]) for a in dep.addresses])


def test_the_coordinator_runs_without_a_row_and_reports_no_exact_answer(
    split: tuple[Path, Path, list[Path]], deployment: Deployment, tmp_path: Path
) -> None:
    sim, coordinator, rows = split
    with serve(deployment, rows) as daemons:
        assert len(daemons.lines) == NODES
        shutil.rmtree(rows[0].parent)  # read by the daemons; no longer on this machine
        here = tmp_path / "coordinator"
        here.mkdir()
        shutil.copy(coordinator, here / "coordinator.toml")
        (tmp_path / "audited.py").write_text(AUDITED, encoding="utf-8")
        watched = f"{rows[0].parent}{os.pathsep}{sim}"
        done = subprocess.run(
            [sys.executable, str(tmp_path / "audited.py"), watched, "run", "coordinator.toml",
             "--backend", "tls", "--directory", str(deployment.directory),
             "--ca", str(deployment.ca), "--state", str(deployment.coordinator),
             "--block-size", str(BLOCK), "--out", "results", "--allow-unmet"],
            cwd=here, env={**_env(), "COLUMNS": "120"}, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stderr.strip().splitlines()[-1] == "OPENED []"
        assert NO_EXACT in " ".join(done.stdout.split())  # the terminal says so
        assert "largest relative error" not in done.stdout  # and compares nothing
        out = here / "results"
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        assert report["exact"] == NO_EXACT
        assert report["utility"]["vs_exact"] == {"not_available": NO_EXACT}
        assert report["utility"]["duckdb_rows_of_original_sql"] is None
        assert "exact" not in report["files"]
        assert not (out / "exact.csv").exists()
        assert NO_EXACT in (out / "report.html").read_text(encoding="utf-8")
        counts = [r["count(*)"] for r in report["result"] if r["grouping_set"] == 0]
        assert 0 < sum(counts) <= ROWS  # the released result, from the daemons' rows
        assert report["network"]["rows_of_nodes"] == {"0": "0..79", "1": "80..159", "2": "160..239"}
        assert not any(n.startswith("SIMULATION") for n in report.get("notes", ()))
        # The same certificate as the simulation whose population the daemons hold.
        assert report["privacy"]["epsilon"] == prepare(load_spec(sim)).privacy.epsilon


def test_daemons_refuse_rows_outside_the_plans_domain_naming_column_and_count(
    split: tuple[Path, Path, list[Path]], deployment: Deployment
) -> None:
    _, coordinator, rows = split
    # Node 0: codes over other domains than the plan's (the file's digest differs);
    # node 1: three grouping codes outside the plan's domain; node 2: a column missing.
    held = NodeRows.load(rows[0])
    assert set(held.digests) == {"S/__key0", "S/__key1"}  # written by net split
    digests = {**held.digests, "S/__key1": "0" * 16}
    write_rows(rows[0], first=held.first, columns=held.columns, digests=digests)
    held = NodeRows.load(rows[1])
    columns = {g: dict(c) for g, c in held.columns.items()}
    key = columns["S"]["__key0"].astype(np.int64)
    key[:3] = 7777
    columns["S"]["__key0"] = key
    write_rows(rows[1], first=held.first, columns=columns)
    held = NodeRows.load(rows[2])
    columns = {g: {c: v for c, v in cs.items() if c != "insulin"} for g, cs in held.columns.items()}
    write_rows(rows[2], first=held.first, columns=columns)
    plan = prepare(load_spec(coordinator)).plan
    with serve(deployment, rows):
        with pytest.raises(NodeFailureError) as info:
            run_on(deployment, plan)
        message = str(info.value)
        assert "node 1 refused the plan: data column '__key0' has 3 of 80 rows outside " in message
        assert "node 2 refused the plan: this node's data has no column ['insulin']" in message
        assert "7777" not in message  # a count, never a value
        assert "node 0 refused the plan: data column '__key1' holds codes over other " in message
        # The daemons' rows (240) must tile the plan's: a plan of 300 rows is refused.
        raw = tomllib.loads(coordinator.read_text(encoding="utf-8"))
        raw["data"]["rows"] = 300
        with pytest.raises(InvalidParameterError, match=r"must tile the plan's 300 sources"):
            run_on(deployment, prepare(parse_spec(raw)).plan)


def run_on(dep: Deployment, plan: ExecutionPlan) -> None:
    """Run ``plan`` on the daemons of ``dep`` (the coordinator closed whatever happens)."""
    backend = Coordinator(directory=dep.directory, ca=dep.ca, state=dep.coordinator)
    try:
        execute(plan, rng=0, backend=backend, block_size=BLOCK)
    finally:
        backend.close()
