"""``crowdhide qif ...`` commands."""

from __future__ import annotations

import math

import pytest

from tests.cli_helpers import run_cli


def test_vulnerability_informed_json(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "qif",
        "vulnerability",
        "--k",
        "2",
        "--n",
        "201",
        "--eps0",
        repr(math.log(4)),
        "--adversary",
        "informed",
        "--others",
        "100,100",
        "--json",
    )
    assert res.code == 0
    data = res.json()
    assert round(data["vulnerability"], 5) == 0.52116
    assert data["prior_vulnerability"] == 0.5
    assert set(data["leakage"]) == {"multiplicative", "additive"}
    assert data["others"] == [100, 100]
    assert data["n"] == 201
    assert data["k"] == 2


def test_vulnerability_defaults_others_all_equal(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "qif",
        "vulnerability",
        "--k",
        "3",
        "--n",
        "10",
        "--eps0",
        "1",
        "--adversary",
        "informed",
        "--others-value",
        "2",
        "--json",
    )
    assert res.code == 0
    assert res.json()["others"] == [0, 0, 9]


def test_vulnerability_uninformed_table_and_shuffle(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "qif", "vulnerability", "--k", "2", "--n", "3", "--channel", "shuffle")
    assert res.code == 0
    assert "0.75" in res.out
    res = run_cli(
        capsys, "qif", "vulnerability", "--k", "2", "--n", "1000000000", "--eps0", "1", "--json"
    )
    assert res.code == 0
    assert 0.5 < res.json()["vulnerability"] < 0.50001


def test_capacity_json(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys, "qif", "capacity", "--k", "3", "--n", "2", "--eps0", repr(math.log(3)), "--json"
    )
    assert res.code == 0
    data = res.json()
    assert data["capacity"] == pytest.approx(2.28)
    assert data["unshuffled_capacity"] == pytest.approx(3.24)
    res = run_cli(capsys, "qif", "capacity", "--k", "2", "--n", "5", "--eps0", "1")
    assert res.code == 0


def test_scrambler_json(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "qif",
        "scrambler",
        "--targets",
        "4",
        "--sigma",
        "0.2",
        "--n",
        "20",
        "--dummies",
        "20",
        "--adversary",
        "informed",
        "--json",
    )
    assert res.code == 0
    data = res.json()
    assert 0.25 < data["vulnerability"] < 0.85
    assert data["targets"] == 4
    assert data["dummies"] == 20
    assert data["local_epsilon"] == pytest.approx(math.log(0.8 * 4 / 0.2 + 1))
    res = run_cli(capsys, "qif", "scrambler", "--targets", "4", "--sigma", "0", "--n", "3")
    assert res.code == 0  # infinite local epsilon shown as "inf" in the table


@pytest.mark.parametrize(
    "args",
    [
        ("qif", "vulnerability", "--k", "1", "--n", "5", "--eps0", "1"),
        ("qif", "vulnerability", "--k", "2", "--n", "5"),
        ("qif", "vulnerability", "--k", "2", "--n", "5", "--eps0", "-1"),
        ("qif", "vulnerability", "--k", "2", "--n", "5", "--eps0", "1", "--channel", "x"),
        (
            "qif",
            "vulnerability",
            "--k",
            "3",
            "--n",
            "5",
            "--eps0",
            "1",
            "--adversary",
            "informed",
            "--others",
            "1,x",
        ),
        ("qif", "vulnerability", "--k", "3", "--n", "5", "--eps0", "1", "--others", "4,0,0"),
        ("qif", "capacity", "--k", "2", "--n", "0", "--eps0", "1"),
        ("qif", "scrambler", "--targets", "3", "--sigma", "2", "--n", "5"),
        ("qif", "scrambler", "--targets", "3", "--sigma", "0.5", "--n", "5", "--dummies", "-1"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    res = run_cli(capsys, *args)
    assert res.code == 2
    assert res.err.count("\n") == 1
    assert "Traceback" not in res.err


def test_n_accepts_scientific_notation(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys, "qif", "vulnerability", "--k", "2", "--n", "1e9", "--channel", "shuffle", "--json"
    )
    assert res.code == 0
    assert res.json()["n"] == 10**9
    res = run_cli(capsys, "qif", "vulnerability", "--k", "2", "--n", "2.5", "--eps0", "1")
    assert res.code == 2
    assert "--n" in res.err
    assert "integer" in res.err


def test_capacity_record_has_vulnerability_and_leakage(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys, "qif", "capacity", "--k", "2", "--n", "2", "--eps0", repr(math.log(3)), "--json"
    )
    data = res.json()
    assert data["prior_vulnerability"] == pytest.approx(0.25)
    assert data["vulnerability"] == pytest.approx(1.75 / 4)  # Σ_y max_x π_x C[x, y]
    assert data["leakage"]["multiplicative"] == pytest.approx(1.75)
    assert data["leakage"]["additive"] == pytest.approx(0.75 / 4)
    res = run_cli(
        capsys,
        "qif",
        "capacity",
        "--k",
        "2",
        "--n",
        "1e9",
        "--channel",
        "krr",
        "--eps0",
        "1",
        "--json",
    )
    data = res.json()
    assert data["capacity"] is None  # overflows a float: JSON null, log given
    assert math.isfinite(data["log_capacity"])
    assert math.isfinite(data["log_vulnerability"])
