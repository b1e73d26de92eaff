"""Issue #28: what the decentralized plan would ignore or get wrong is refused, naming it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from crowdhide.errors import ResourceLimitError, UnmetTargetError
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from crowdhide.plans.query import load_query
from crowdhide.plans.runner import run_spec
from crowdhide.plans.spec import parse_spec


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT g, COUNT(*) FROM D GROUP BY g ORDER BY g", "ORDER BY"),
        ("SELECT g, COUNT(*) FROM D GROUP BY g LIMIT 3", "LIMIT"),
        ("SELECT g, COUNT(*) FROM D GROUP BY g ORDER BY g LIMIT 3", "ORDER BY"),
        ("SELECT DISTINCT g, COUNT(*) FROM D GROUP BY g", "DISTINCT"),
        ("SELECT g AS h, COUNT(*) FROM D GROUP BY g", "AS"),
        ("SELECT g, COUNT(*) AS n FROM D GROUP BY g", "'n'"),
        ("WITH t AS (SELECT 1) SELECT g, COUNT(*) FROM D GROUP BY g", "WITH"),
        ("SELECT g, COUNT(*) FROM D GROUP BY g QUALIFY g > 1", "QUALIFY"),
    ],
)
def test_sql_the_plan_does_not_honour_is_refused_naming_the_clause(sql: str, named: str) -> None:
    with pytest.raises(ValueError, match=r"query\.sql") as info:
        AggregateQuery.from_sql(sql)
    assert named in str(info.value)


def test_a_sum_that_overflows_is_an_error_naming_the_column() -> None:
    table = {"g": np.array([1, 1, 2]), "x": np.array([1e308, 1e308, 1.0])}
    query = AggregateQuery.from_sql("SELECT g, SUM(x) FROM D GROUP BY g")
    with pytest.raises(ValueError, match=r"'x'.*overflows"):
        aggregate_plan(table, query, compute_nodes=2)


def test_squares_that_overflow_are_refused_too() -> None:
    # The sum fits but the sum of squares (the 95 % intervals' variance) does not.
    table = {"g": np.array([1, 2]), "x": np.array([1e200, 1.0])}
    query = AggregateQuery.from_sql("SELECT g, AVG(x) FROM D GROUP BY g")
    with pytest.raises(ValueError, match=r"'x'.*always fit"):
        aggregate_plan(table, query, compute_nodes=2)


def test_values_that_fit_are_accepted() -> None:
    table = {"g": np.array([1, 2]), "x": np.array([1e150, -1e150])}
    query = AggregateQuery.from_sql("SELECT g, SUM(x) FROM D GROUP BY g")
    aggregate_plan(table, query, compute_nodes=2)


UNMET = {
    "data": {"generator": "diabetes", "rows": 300},
    "query": {"kind": "aggregate", "sql": "SELECT age_range, COUNT(*) FROM D GROUP BY age_range"},
    "privacy": {"epsilon": 1.0, "delta": 1e-4},
    "countermeasures": {"sigma": 0.0},  # no protection: ε is infinite, the target unmet
    "run": {"plots": False},
}


def test_run_spec_refuses_an_unmet_target_like_the_cli(tmp_path: Path) -> None:
    spec = parse_spec(UNMET)
    with pytest.raises(UnmetTargetError, match="allow_unmet"):
        run_spec(spec, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    report = run_spec(spec, tmp_path / "ran", allow_unmet=True)
    assert report.privacy.meets_target is False
    assert (tmp_path / "ran" / "report.json").exists()


@pytest.mark.parametrize(
    ("section", "values", "named"),
    [
        ("data", {"rows": 10**9}, "largest accepted data.rows for this query is 400000"),
        ("data", {"attributes": 10**6}, "data.attributes must be <= 64"),
        ("data", {"intervals": 10**9}, "data.intervals must be <= 1000000"),
    ],
)
def test_aggregate_work_beyond_the_cost_model_is_refused_before_any_work(
    section: str, values: dict[str, int], named: str, tmp_path: Path
) -> None:
    raw = {
        "data": {"generator": "aggregate", "rows": 1000},
        "query": {"sql": "SELECT g1, g2, COUNT(*) FROM D GROUP BY GROUPING SETS ((g1), (g2))"},
        "countermeasures": {"sigma": 0.0},
    }
    raw[section] = {**raw[section], **values}
    with pytest.raises(ValueError, match=re.escape(named)):
        load_query(parse_spec(raw))


def test_kmeans_iterations_beyond_the_cost_model_are_refused_naming_the_largest() -> None:
    raw = {
        "data": {"generator": "synthetic", "rows": 20_000},
        "query": {"kind": "kmeans", "k": 3, "iterations": 1000},
        "countermeasures": {"sigma": 0.0},
    }
    with pytest.raises(ResourceLimitError, match=r"query\.iterations <= 40 at these rows"):
        load_query(parse_spec(raw))


def test_a_data_file_is_checked_after_loading(tmp_path: Path) -> None:
    file = tmp_path / "big.csv"
    file.write_text("g\n" + "1\n" * 400_001, encoding="utf-8")
    raw = {
        "data": {"path": str(file)},
        "query": {"sql": "SELECT g, COUNT(*) FROM D GROUP BY GROUPING SETS ((g), (g))"},
        "countermeasures": {"sigma": 0.0},
    }
    with pytest.raises(ResourceLimitError, match="is 400000"):
        load_query(parse_spec(raw))
