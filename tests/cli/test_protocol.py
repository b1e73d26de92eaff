"""``crowdhide protocol ...`` and the Cheu et al. / Biswas et al. reproductions from the
command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli


@pytest.fixture
def bits_file(tmp_path: Path) -> Path:
    path = tmp_path / "bits.csv"
    rows = "\n".join(str((i % 3 == 0 and 1) or 0) for i in range(30_000))
    path.write_text(
        "flag,age\n"
        + "\n".join(f"{b},{20 + i % 50}" for i, b in enumerate(rows.split("\n")))
        + "\n"
    )
    return path


def test_bit_sum_json_echoes_inputs_and_certificate(
    capsys: pytest.CaptureFixture[str], bits_file: Path
) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(bits_file),
        "--column",
        "flag",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--calibration",
        "paper",
        "--seed",
        "3",
        "--json",
    )
    assert result.code == 0, result.err
    record = result.json()
    assert record["data"] == str(bits_file)
    assert record["exact"] == 10_000
    assert record["target_met"] is True
    assert record["epsilon"] <= 1.0
    assert record["messages"] == 30_000
    for key in ("estimate", "error", "delta", "bound", "central_mechanism", "comparison"):
        assert key in record


def test_real_sum_table_output(capsys: pytest.CaptureFixture[str], bits_file: Path) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(bits_file),
        "--column",
        "age",
        "--lower",
        "0",
        "--upper",
        "100",
        "--protocol",
        "real",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--calibration",
        "paper",
        "--messages",
        "1",
    )
    assert result.code == 0, result.err
    assert "central model" in result.out
    assert "estimate" in result.out


def test_out_of_bounds_data_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], bits_file: Path
) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(bits_file),
        "--column",
        "age",
        "--lower",
        "0",
        "--upper",
        "30",
        "--protocol",
        "real",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--calibration",
        "paper",
    )
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "outside the declared bounds" in result.err


def test_clipping_is_reported(capsys: pytest.CaptureFixture[str], bits_file: Path) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(bits_file),
        "--column",
        "age",
        "--lower",
        "0",
        "--upper",
        "30",
        "--protocol",
        "real",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--calibration",
        "paper",
        "--messages",
        "1",
        "--clip",
        "--json",
    )
    assert result.code == 0, result.err
    assert any("clipped" in note for note in result.json()["notes"])


def test_non_numeric_column_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("name\nann\nbob\n")
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(path),
        "--column",
        "name",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
    )
    assert result.code == 2
    assert "must be numeric" in result.err


def test_empty_file_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    result = run_cli(
        capsys,
        "protocol",
        "histogram",
        "--data",
        str(path),
        "--column",
        "x",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
    )
    assert result.code == 2
    assert "empty" in result.err


def test_unknown_protocol_is_exit_2(capsys: pytest.CaptureFixture[str], bits_file: Path) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(bits_file),
        "--column",
        "flag",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--protocol",
        "median",
    )
    assert result.code == 2
    assert "protocol must be one of bits, real, single" in result.err


def test_histogram_json(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "histogram",
        "--data",
        "builtin:gowalla-paris",
        "--column",
        "cell",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--seed",
        "1",
        "--json",
    )
    assert result.code == 0, result.err
    record = result.json()
    assert record["k"] == 192
    assert record["target_met"] is True
    assert abs(sum(record["estimate"]) - 1.0) < 1e-9
    assert min(record["estimate"]) >= 0.0


def test_exact_bit_sum_cli(capsys: pytest.CaptureFixture[str], bits_file: Path) -> None:
    result = run_cli(
        capsys,
        "protocol",
        "sum",
        "--data",
        str(bits_file),
        "--column",
        "flag",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["bound"].startswith("shuffle accountant: ")
    assert result.json()["target_met"] is True


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("seed002-error", marks=pytest.mark.slow),
        pytest.param("seed003-table2", marks=pytest.mark.slow),
        "seed003-fig1",
    ],
)
def test_reproductions_quick(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    result = run_cli(capsys, "reproduce", name, "--out", str(tmp_path), "--quick", "--json")
    assert result.code == 0, result.err
    record = result.json()
    assert record["comparison"]
    for file in record["files"]:
        assert Path(file).is_file()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["seed003-fig2", "seed003-gowalla"])
def test_utility_reproductions_quick(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    result = run_cli(capsys, "reproduce", name, "--out", str(tmp_path), "--quick", "--json")
    assert result.code == 0, result.err
