"""Honest labels and provenance in the run report (terminal, report.json, report.html).

ε certifies the traffic, not the values: every report says so. Groups with fewer than
``MIN_TUPLES_FOR_INTERVAL`` used tuples print "too few tuples" instead of a sum/avg interval
(an infinite or meaningless normal interval). ``report.json`` and ``report.html`` record
crowdhide's version, the seed, the backend and the command line.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import crowdhide
from crowdhide._json import jsonable
from crowdhide.plans.estimates import MIN_TUPLES_FOR_INTERVAL, _too_few
from crowdhide.plans.run_report import PROTECTION, RunReport
from crowdhide.report.html import render_html
from crowdhide.report.terminal import render_run
from tests.cli_helpers import run_cli


def _terminal(report: RunReport) -> str:
    buffer = io.StringIO()
    render_run(report, Console(file=buffer, width=100, force_terminal=False))
    return buffer.getvalue()


def _few(report: RunReport) -> list[dict]:
    few = [r for r in report.answer.estimates if r["too_few_tuples"]]
    assert few, "the fixture must have groups with too few tuples (else nothing is tested)"
    return few


def test_small_groups_have_no_sum_avg_interval_but_keep_the_exact_count_interval(
    small_run: tuple[RunReport, Path],
) -> None:
    report, _ = small_run
    for row in report.answer.estimates:
        assert row["too_few_tuples"] == (row["tuples_used"] < MIN_TUPLES_FOR_INTERVAL)
    for row in _few(report):
        assert np.isnan(row["avg(insulin) low"])
        assert np.isnan(row["avg(insulin) high"])
        assert row["count(*) low"] <= row["tuples_used"] / row["inclusion"] <= row["count(*) high"]
    record = jsonable(report.to_dict())  # what report.json holds
    assert all(r["avg(insulin) low"] is None for r in record["estimates"] if r["too_few_tuples"])


def test_the_threshold_is_five_and_only_where_tuples_were_sampled() -> None:
    n = np.array([1.0, 4.0, 5.0, 40.0])
    assert _too_few(n, 0.8).tolist() == [True, True, False, False]
    # π = 1: nothing was sampled, each interval is the exact answer, whatever the size.
    assert _too_few(n, 1.0).tolist() == [False] * 4


def test_terminal_says_too_few_tuples_and_what_epsilon_protects(
    small_run: tuple[RunReport, Path],
) -> None:
    report, _ = small_run
    text = _terminal(report)
    assert "-∞" not in text
    assert "∞ –" not in text
    assert text.count("too few tuples") >= len(_few(report))
    assert "What ε protects, and what it does not" in text
    flat = " ".join(text.split())
    assert "NOT noised, not a DP output" in flat
    assert "protected by (ε, δ)" in flat


def test_html_says_too_few_tuples_what_epsilon_protects_and_provenance(
    small_run: tuple[RunReport, Path],
) -> None:
    report, out = small_run
    page = render_html(report, out)
    assert "-∞" not in page
    assert page.count("too few tuples") >= len(_few(report))
    assert "id='protection'" in page
    assert "NOT noised, not a DP output" in page
    assert "id='provenance'" in page
    assert f"<td class='k'>{crowdhide.__version__}</td>" in page


def test_report_json_labels_and_provenance(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(
        'name = "p"\n[data]\ngenerator = "diabetes"\nrows = 1500\nseed = 2\n[query]\n'
        'kind = "aggregate"\nsql = "SELECT bmi, AVG(insulin) FROM D GROUP BY bmi"\n'
        "compute_nodes = 4\n[privacy]\nepsilon = 8.0\ndelta = 1e-4\n[run]\nseed = 3\n"
        "plots = false\n",
        encoding="utf-8",
    )
    args = ("run", str(plan), "--out", str(tmp_path / "out"), "--json", "--shards", "2")
    res = run_cli(capsys, *args)
    assert res.code == 0, res.err
    written = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    for record in (written, res.json()):
        assert record["protection"] == dict(PROTECTION)
        prov = record["provenance"]
        assert prov["crowdhide"] == crowdhide.__version__
        assert prov["command"] == ["crowdhide", *args]
        assert (prov["seed"], prov["backend"]) == (3, "local")
        assert prov["dependencies"]["numpy"] == np.__version__
        assert prov["created_utc"].endswith("Z")
    assert next(iter(written)) == "provenance"


def test_terminal_prints_the_run_notes(small_run: tuple[RunReport, Path]) -> None:
    """A run without matplotlib says its plots were skipped (the note was JSON-only)."""
    report, _ = small_run
    note = "plots skipped: the privacy/load plots of a run needs matplotlib"
    assert note in " ".join(_terminal(replace(report, notes=(note,))).split())
