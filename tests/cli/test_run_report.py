"""``crowdhide run`` writes the readable report; ``--ledger`` refuses over-budget runs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

PLAN = """
name = "tiny"
[data]
generator = "diabetes"
rows = 3000
seed = 7
[query]
kind = "aggregate"
sql = "SELECT age_range, COUNT(*), AVG(insulin) FROM D GROUP BY age_range"
compute_nodes = 4
[privacy]
epsilon = 3.0
delta = 1e-4
[run]
seed = 0
plots = false
"""


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(PLAN, encoding="utf-8")
    return path


def test_run_writes_html_and_sql_ordered_csv(
    capsys: pytest.CaptureFixture[str], plan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "out"
    result = run_cli(capsys, "run", str(plan), "--out", str(out))
    assert result.code == 0, result.err
    assert max(len(line) for line in result.out.splitlines()) <= 80
    assert "full-population estimate" in result.out
    assert (out / "report.html").stat().st_size > 1000
    with (out / "result.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["age_range", "count(*)", "avg(insulin)", "grouping_set", "tuples_used"]
    assert all(r[1].isdigit() and r[0] == r[0].strip() for r in rows[1:])


def test_ledger_refuses_before_sending(
    capsys: pytest.CaptureFixture[str], plan: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.json"
    budget = ["--ledger", str(ledger), "--budget-epsilon", "4", "--budget-delta", "1e-3"]
    first = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "a"), "--json", *budget)
    assert first.code == 0, first.err
    second = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "b"), "--json", *budget)
    assert second.code == 2
    assert "refused" in second.err
    assert "nothing was sent" in second.err
    assert len(second.err.strip().splitlines()) == 1
    assert not (tmp_path / "b" / "transcript.npz").exists()
    shown = run_cli(capsys, "ledger", "show", str(ledger), "--json")
    (row,) = shown.json()
    assert row["runs"] == 1
    assert row["population"] == "diabetes(rows=3000, seed=7)"
    assert 0 < row["epsilon_spent"] <= 3.0


def test_budget_needs_ledger(capsys: pytest.CaptureFixture[str], plan: Path) -> None:
    result = run_cli(capsys, "run", str(plan), "--budget-epsilon", "1")
    assert result.code == 2
    assert "--ledger" in result.err
