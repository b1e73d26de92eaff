"""A small real run of the diabetes example shared by the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from crowdhide.plans.run_report import RunReport
from crowdhide.plans.runner import run_spec
from crowdhide.plans.spec import parse_spec

SMALL_DIABETES = {
    "name": "diabetes-small",
    "data": {"generator": "diabetes", "rows": 4000, "seed": 7},
    "query": {
        "kind": "aggregate",
        "sql": "SELECT age_range, bmi, AVG(insulin), COUNT(*), MIN(insulin), MAX(insulin) "
        "FROM D GROUP BY GROUPING SETS ((age_range), (bmi))",
        "compute_nodes": 10,
    },
    "privacy": {"epsilon": 3.0, "delta": 1e-4},
    "run": {"seed": 0},
}


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunReport, Path]:
    out = tmp_path_factory.mktemp("run")
    report = run_spec(parse_spec(SMALL_DIABETES), out)
    return report, out
