"""Tables in and out: every table form a plan takes gives the same plan and answer; row
results are lists with ``to_pandas()``; curves and rows have notebook HTML."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import crowdhide
from crowdhide._tables import Rows, as_table
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan, exact_answer, run_sql
from crowdhide.plans.data import as_table as plan_table
from crowdhide.plans.data import write_table

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

COLUMNS = {"g": np.array(["a", "b", "a", "c"], dtype=object), "v": np.array([1.0, 2.0, 4.0, 8.0])}
QUERY = AggregateQuery.from_sql("SELECT g, SUM(v), COUNT(*) FROM D GROUP BY g")


def _forms(tmp_path: Any) -> dict[str, Any]:
    frame = pd.DataFrame(COLUMNS)
    return {
        "dict": COLUMNS,
        "lists": {k: v.tolist() for k, v in COLUMNS.items()},
        "pandas": frame,
        "arrow": pa.Table.from_pandas(frame),
        "batch": pa.RecordBatch.from_pandas(frame),
        "parquet": write_table(COLUMNS, tmp_path / "t.parquet"),
        "csv": str(write_table(COLUMNS, tmp_path / "t.csv")),
    }


def test_every_table_form_gives_the_same_plan_and_answer(tmp_path: Any) -> None:
    reference = aggregate_plan(COLUMNS, QUERY, compute_nodes=2)
    exact = exact_answer(COLUMNS, QUERY)
    assert [r["sum(v)"] for r in exact] == [5.0, 2.0, 8.0]
    for name, table in _forms(tmp_path).items():
        assert aggregate_plan(table, QUERY, compute_nodes=2).plan == reference.plan, name
        assert exact_answer(table, QUERY) == exact, name
        assert sorted(run_sql(table, QUERY)) == sorted(run_sql(COLUMNS, QUERY)), name


def test_bad_tables_are_typed_errors() -> None:
    with pytest.raises(crowdhide.DataTypeError, match="got list"):
        as_table([1, 2])
    with pytest.raises(crowdhide.DataError, match="different lengths"):
        as_table({"x": [1], "y": [1, 2]})
    with pytest.raises(crowdhide.DataError, match="no columns"):
        as_table(pd.DataFrame())
    with pytest.raises(crowdhide.DataError, match="missing values"):
        as_table(pd.DataFrame({"x": [1.0, None]}))
    with pytest.raises(crowdhide.DataError, match="missing values"):
        as_table(pa.table({"x": [1, None]}))
    with pytest.raises(crowdhide.DataError, match="duplicated"):
        as_table(pd.DataFrame([[1, 2]], columns=["x", "x"]))
    assert plan_table(COLUMNS)["g"].tolist() == ["a", "b", "a", "c"]


def test_plan_data_from_python_is_used_and_refused_for_kmeans() -> None:
    rows = 6000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age_range": rng.choice(["20-39", "40-59", "60+"], rows),
            "bmi": rng.choice(["normal", "high"], rows),
            "insulin": rng.uniform(50, 150, rows),
        }
    )
    report = crowdhide.certify_plan("example:diabetes", data=frame)
    assert report.rows == rows
    assert report.data_source == "table from Python"
    assert report.privacy.is_certificate
    with pytest.raises(crowdhide.InvalidParameterError, match="'kmeans' query"):
        crowdhide.certify_plan("example:kmeans", data=frame)


def test_rows_are_lists_with_to_pandas_and_html(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = exact_answer(COLUMNS, QUERY)
    assert isinstance(rows, Rows)
    assert isinstance(rows, list)
    assert repr(rows) == "Rows(3 rows × 4 columns: grouping_set, g, sum(v), count(*))"
    frame = rows.to_pandas()
    assert frame.to_dict("records") == list(rows)
    html = Rows([{"x": "<b>", "y": 1 / 3}] * 25)._repr_html_()
    assert "&lt;b&gt;" in html
    assert "<b>" not in html
    assert html.count("<tr>") == 21
    assert "5 more rows" in html
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(crowdhide.MissingExtraError, match=r"crowdhide\[pandas\]"):
        rows.to_pandas()


def test_ledger_results_are_rows(tmp_path: Any) -> None:
    book = crowdhide.Ledger(tmp_path / "ledger.json")
    book.charge("p", crowdhide.PrivacyStatement(epsilon=1.0, delta=1e-6), run="a")
    assert isinstance(book.runs("p"), Rows)
    assert isinstance(book.summary(), Rows)
    assert book.summary().to_pandas()["epsilon_spent"].tolist() == [1.0]


def test_curve_html_shows_epsilon_rounded_up() -> None:
    from crowdhide.accounting import DiscretePairCurve

    rr = DiscretePairCurve.from_probabilities([0.75, 0.25], [0.25, 0.75])
    html = rr._repr_html_()
    # binary RR with ε0 = ln 3: ε(δ) = ln((3/4 − δ) / (1/4)); ln(2.996) = 1.09728 → 1.098,
    # and ln 3 = 1.09861 (δ ≤ 1e-5: within 4 digits of ln 3) → 1.099, never 1.098
    assert "<td>0.001</td><td>1.098</td>" in html
    assert html.count("<td>1.099</td>") == 3
