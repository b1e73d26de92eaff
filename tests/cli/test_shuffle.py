"""``crowdhide shuffle ...`` commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli


@pytest.mark.slow
def test_readme_main_job_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "epsilon", "--eps0", "2", "--n", "10000", "--delta", "1e-6")
    result = run_cli(capsys, *args, "--k", "4", "--bound", "all")
    assert result.code == 0, result.err
    for name in ("feldman2023", "balle2019_bennett", "krr_lower", "best valid upper bound"):
        assert name in result.out


def test_table_all_small(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "epsilon", "--eps0", "2", "--n", "500", "--delta", "1e-6", "--k", "4")
    result = run_cli(capsys, *args, "--bound", "all")
    assert result.code == 0, result.err
    for name in ("feldman2023", "exact", "krr_lower", "best valid upper bound"):
        assert name in result.out


def test_epsilon_json_all(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "epsilon", "--eps0", "1", "--n", "5000", "--delta", "1e-6")
    result = run_cli(capsys, *args, "--bound", "all", "--json")
    assert result.code == 0, result.err
    rows = result.json()
    assert isinstance(rows, list)
    assert len(rows) == 8
    for row in rows:
        assert {"epsilon", "delta", "source", "conditions_met", "inputs", "lower"} <= set(row)
        assert row["lower"]["source"] == "ldp_lower"
        assert 0.0 < row["lower"]["epsilon"] <= rows[4]["epsilon"]  # below feldman2021
        assert row["inputs"]["n"] == 5000
        assert row["inputs"]["eps0"] == 1.0
        assert row["inputs"]["k"] is None
    assert {r["source"]: r["conditions_met"] for r in rows}["feldman2023"] is False


def test_epsilon_json_best(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "epsilon", "--eps0", "4", "--n", "100000", "--delta", "1e-6")
    result = run_cli(capsys, *args, "--k", "2", "--json")
    assert result.code == 0
    data = result.json()
    assert data["source"] == "binary_rr_blocks"  # was feldman2023, 0.118153 (issue 15)
    assert data["conditions_met"] is True
    assert data["epsilon"] == pytest.approx(0.085083, abs=1e-5)
    assert data["epsilon"] / data["lower"]["epsilon"] < 1.005


def test_delta_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "delta", "--eps0", "4", "--n", "10000", "--epsilon", "0.1", "--k", "2")
    result = run_cli(capsys, *args, "--bound", "feldman2023", "--json")
    assert result.code == 0
    assert result.json()["delta"] == pytest.approx(0.0092092, abs=1e-6)
    table = run_cli(capsys, *args, "--bound", "all")
    assert table.code == 0
    assert "feldman2021" in table.out


def test_calibrate_eps0_and_n(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("shuffle", "calibrate", "--epsilon", "0.5", "--delta", "1e-6")
    result = run_cli(capsys, *base, "--n", "50000", "--k", "2", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["solved_for"] == "eps0"
    assert data["epsilon"] <= 0.5
    assert data["eps0"] > 2
    result = run_cli(capsys, *base, "--eps0", "3", "--json")
    assert result.code == 0, result.err
    assert result.json()["solved_for"] == "n"
    table = run_cli(capsys, *base, "--n", "10000")
    assert table.code == 0
    assert "eps0" in table.out


def test_plot_writes_png(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "eps_vs_n.png"
    args = ("shuffle", "plot", "--eps0", "1", "--delta", "1e-6", "--k", "3", "--out", str(out))
    result = run_cli(capsys, *args, "--n-min", "10", "--n-max", "90", "--points", "3")
    assert result.code == 0, result.err
    assert out.exists()
    assert out.read_bytes()[:4] == b"\x89PNG"
    generic = ("shuffle", "plot", "--eps0", "1", "--delta", "1e-6", "--out", str(out))
    result = run_cli(capsys, *generic, "--points", "2", "--n-max", "1000", "--json")
    assert result.json()["n"] == [100, 1000]


@pytest.mark.parametrize(
    "args",
    [
        ("shuffle", "epsilon", "--eps0", "-1", "--n", "10", "--delta", "1e-6"),
        ("shuffle", "epsilon", "--eps0", "1", "--n", "0", "--delta", "1e-6"),
        ("shuffle", "epsilon", "--eps0", "1", "--n", "10", "--delta", "2"),
        ("shuffle", "epsilon", "--eps0", "1", "--n", "10", "--delta", "1e-6", "--k", "1"),
        ("shuffle", "epsilon", "--eps0", "1", "--n", "10", "--delta", "1e-6", "--bound", "x"),
        ("shuffle", "epsilon", "--eps0", "1", "--n", "10", "--delta", "1e-6", "--bound", "exact"),
        ("shuffle", "epsilon", "--eps0", "abc", "--n", "10", "--delta", "1e-6"),
        ("shuffle", "delta", "--eps0", "1", "--n", "10", "--epsilon", "-1"),
        (
            "shuffle",
            "delta",
            "--eps0",
            "1",
            "--n",
            "10",
            "--epsilon",
            "1",
            "--bound",
            "all",
            "--k",
            "0",
        ),
        ("shuffle", "calibrate", "--epsilon", "0.5", "--delta", "1e-6"),
        ("shuffle", "calibrate", "--epsilon", "0.5", "--delta", "1e-6", "--n", "5", "--eps0", "1"),
        ("shuffle", "plot", "--eps0", "1", "--delta", "1e-6", "--out", "x.png", "--points", "1"),
        ("shuffle", "epsilon", "--n", "10", "--delta", "1e-6"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    result = run_cli(capsys, *args)
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
