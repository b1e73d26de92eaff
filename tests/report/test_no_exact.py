"""A run whose coordinator holds no data (``[data] held_by = "nodes"``): every report says the
exact answer is not available and compares nothing (no exact column, no error figures,
no ``exact.csv``), and still shows the released result and its estimates.

The answer is the small diabetes run's with its exact part removed, as
:meth:`~crowdhide.plans.query.AggregateOverTable.answer` builds it without a table (the
end-to-end run on node daemons is ``tests/net/test_schema_plan.py``).
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from crowdhide.plans.query import NO_EXACT
from crowdhide.plans.run_report import RunReport
from crowdhide.report.html import render_html
from crowdhide.report.terminal import render_run


@pytest.fixture
def no_exact(small_run: tuple[RunReport, Path]) -> RunReport:
    report, _ = small_run
    answer = report.answer
    utility = dataclasses.replace(
        answer.utility,  # type: ignore[attr-defined]
        vs_exact={"not_available": NO_EXACT},
        vs_duckdb_on_used_tuples={"not_available": NO_EXACT},
        duckdb_rows_of_original_sql=None,
    )
    return dataclasses.replace(
        report,
        answer=dataclasses.replace(answer, exact=None, utility=utility),  # type: ignore[type-var]
    )


def test_the_terminal_says_not_available_and_compares_nothing(
    no_exact: RunReport, small_run: tuple[RunReport, Path]
) -> None:
    texts = []
    for report in (small_run[0], no_exact):
        buffer = io.StringIO()
        render_run(report, Console(file=buffer, width=120))
        texts.append(buffer.getvalue())
    with_exact, without = texts
    assert NO_EXACT not in with_exact
    assert "largest relative error" in with_exact  # the comparison the other one lacks
    assert NO_EXACT in " ".join(without.split())
    assert "largest relative error" not in without
    assert "exact value is inside" not in without
    assert "estimate" in without  # the released result is still shown


def test_html_json_and_files_say_not_available(no_exact: RunReport, tmp_path: Path) -> None:
    page = render_html(no_exact, tmp_path)
    assert NO_EXACT in page
    assert "<th>exact</th>" not in page
    assert "Result vs exact answer" not in page
    record = json.loads(json.dumps(no_exact.to_dict(), default=str))
    assert record["exact"] == NO_EXACT
    assert record["utility"]["vs_exact"] == {"not_available": NO_EXACT}
    assert record["result"]
    assert "exact" not in no_exact.tables()
    files = no_exact.answer.write(tmp_path)
    assert sorted(files) == ["estimates", "result"]
    assert not (tmp_path / "exact.csv").exists()
