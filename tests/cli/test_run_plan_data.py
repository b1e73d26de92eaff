"""CLI: crowdhide run / plan / data synth; invalid configs exit 2 naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from crowdhide.plans.examples import example_path
from tests.cli_helpers import run_cli

SMALL = '''
name = "small"
[data]
generator = "diabetes"
rows = 3000
seed = 1
[query]
kind = "aggregate"
sql = """SELECT age_range, bmi, AVG(insulin), COUNT(*) FROM D
         GROUP BY GROUPING SETS ((age_range), (bmi))"""
compute_nodes = 4
[privacy]
epsilon = 6.0
delta = 1e-4
[run]
plots = false
'''


def _write(tmp_path: Path, text: str, name: str = "plan.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_run_json_reports_result_privacy_costs_and_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _write(tmp_path, SMALL)
    res = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "out"), "--json")
    assert res.code == 0, res.err
    report = res.json()
    assert report["privacy"]["epsilon"] <= 6.0 + 1e-9
    assert report["privacy"]["paths"][0]["origin"] == "S"
    assert report["utility"]["vs_duckdb_on_used_tuples"]["groups_missing"] == 0
    assert max(report["utility"]["vs_duckdb_on_used_tuples"]["max_rel_error"].values()) < 1e-9
    assert report["costs"]["messages"] >= report["costs"]["unprotected_messages"]
    assert Path(report["files"]["transcript"]).exists()
    assert Path(report["files"]["report"]).exists()
    assert report["inputs"]["plan"] == str(plan)


def test_run_table_output_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = _write(tmp_path, SMALL.replace("plots = false", "plots = true"))
    res = run_cli(capsys, "run", str(plan), "--out", str(tmp_path / "o"))
    assert res.code == 0, res.err
    assert "Privacy guarantee of each data path" in res.out
    assert (tmp_path / "o" / "privacy_vs_network_load.png").exists()
    assert (tmp_path / "o" / "privacy_vs_individual_load.png").exists()


def test_fixed_countermeasures_with_scramblers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SMALL.replace(
        "[privacy]\nepsilon = 6.0\n", "[countermeasures]\nsigma = 0.2\nn = 100\nd = 20\n[privacy]\n"
    )
    res = run_cli(
        capsys, "run", _write(tmp_path, text).as_posix(), "--out", str(tmp_path / "o"), "--json"
    )
    assert res.code == 0, res.err
    report = res.json()
    assert report["mode"] == "fixed"
    assert report["countermeasures"]["S->C0"]["n"] == 100
    assert report["costs"]["scramblers"]["S->C0"] == 30


def test_plan_shows_clusters_without_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = run_cli(capsys, "plan", str(_write(tmp_path, SMALL)), "--json")
    assert res.code == 0, res.err
    summary = res.json()
    names = [c["cluster"] for c in summary["privacy"]["clusters"]]
    assert names[:2] == ["S/S->C0", "S/S->C1"]
    assert "R" in names
    assert summary["clusters_per_path"] == 2
    res = run_cli(capsys, "plan", str(_write(tmp_path, SMALL)))
    assert res.code == 0
    assert "Theorem 1" in res.out


def test_kmeans_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = example_path("kmeans").read_text().replace("rows = 20000", "rows = 1500")
    text = text.replace('generator = "auto"', 'generator = "synthetic"').replace(
        "iterations = 5", "iterations = 2"
    )
    text += "\nplots = false\n"
    res = run_cli(
        capsys, "run", str(_write(tmp_path, text)), "--out", str(tmp_path / "k"), "--json"
    )
    assert res.code == 0, res.err
    report = res.json()
    assert 0.0 <= report["utility"]["rand_index"] <= 1.0
    assert len(report["utility"]["tuples_used_per_iteration"]) == 2
    assert report["privacy"]["notes"]  # centroid-dependent routing is flagged


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("epsilon = 6.0", "epsilon = -1"), "privacy.epsilon"),
        (("delta = 1e-4", "delta = 2"), "privacy.delta"),
        (("compute_nodes = 4", "compute_nodes = 0"), "query.compute_nodes"),
        (("compute_nodes = 4", "compute_nodes = 4\nbogus = 1"), "query.bogus"),
        (('kind = "aggregate"', 'kind = "join"'), "query.kind"),
        (("SELECT age_range", "SELEC age_range"), "query.sql"),
        (("AVG(insulin)", "AVG(nope)"), "nope"),
        (("rows = 3000", "rows = 0"), "data.rows"),
        (('generator = "diabetes"', 'generator = "mnist"'), "data.generator"),
        (("[run]", "[runs]"), "runs"),
        (("[privacy]", "[constraints]\nmax_channels = 1\n[privacy]"), "constraints.max_channels"),
        (("plots = false", "plots = 3"), "run.plots"),
    ],
)
def test_invalid_config_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], field: str
) -> None:
    assert change[0] in SMALL
    res = run_cli(capsys, "plan", str(_write(tmp_path, SMALL.replace(*change))))
    assert res.code == 2
    errors = [line for line in res.err.splitlines() if line.startswith("crowdhide: error:")]
    assert len(errors) == 1
    assert field in errors[0]


def test_missing_and_malformed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "run", str(tmp_path / "none.toml"))
    assert res.code == 2
    assert "none.toml" in res.err
    res = run_cli(capsys, "plan", str(_write(tmp_path, "name = [")))
    assert res.code == 2
    assert "invalid TOML" in res.err
    text = SMALL.replace('generator = "diabetes"', 'path = "missing.csv"')
    res = run_cli(capsys, "plan", str(_write(tmp_path, text)))
    assert res.code == 2
    assert "missing.csv" in res.err


def test_infeasible_target_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SMALL.replace("epsilon = 6.0", "epsilon = 0.001").replace(
        "[run]", "[constraints]\nmax_overhead = 1.5\n[run]"
    )
    res = run_cli(capsys, "plan", str(_write(tmp_path, text)))
    assert res.code == 2
    assert "no countermeasure reaches" in res.err


@pytest.mark.parametrize("kind", ["aggregate", "diabetes", "kmeans"])
def test_data_synth_writes_csv_and_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    for suffix in (".csv", ".parquet"):
        out = tmp_path / f"{kind}{suffix}"
        res = run_cli(capsys, "data", "synth", kind, "--rows", "50", "--out", str(out), "--json")
        assert res.code == 0, res.err
        assert out.exists()
        assert res.json()["rows"] == 50
    from crowdhide.plans.data import load_table

    table = load_table(tmp_path / f"{kind}.parquet")
    assert len(next(iter(table.values()))) == 50


def test_csv_data_file_is_answered_like_duckdb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d.csv"
    assert (
        run_cli(capsys, "data", "synth", "diabetes", "--rows", "800", "--out", str(out)).code == 0
    )
    text = SMALL.replace('generator = "diabetes"\nrows = 3000', 'path = "d.csv"')
    res = run_cli(
        capsys, "run", str(_write(tmp_path, text)), "--out", str(tmp_path / "r"), "--json"
    )
    assert res.code == 0, res.err
    assert res.json()["utility"]["tuples"] == 800


def test_data_synth_rejects_bad_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "data", "synth", "images", "--out", str(tmp_path / "x.csv"))
    assert res.code == 2
    assert "kind" in res.err
    res = run_cli(
        capsys, "data", "synth", "aggregate", "--rows", "0", "--out", str(tmp_path / "x.csv")
    )
    assert res.code == 2
    assert "rows" in res.err


@pytest.mark.slow
def test_shipped_examples_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("diabetes", "kmeans"):
        res = run_cli(capsys, "run", f"example:{name}", "--out", str(tmp_path / name), "--json")
        assert res.code == 0, res.err
        assert res.json()["timings"]["total_s"] < 60
