"""Command line of the scrambler and local areas."""

from __future__ import annotations

import pytest

from tests.cli_helpers import run_cli

BASE = ["--targets", "20", "--sigma", "0.2", "--n", "100", "--dummies", "50"]


def test_scrambler_epsilon_json(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "scrambler", "epsilon", *BASE, "--delta", "1e-4", "--json")
    assert result.code == 0
    data = result.json()
    assert data["source"] == "lemma2-exact"
    assert data["kind"] == "upper"
    assert data["is_certificate"] is True
    assert data["conditions_met"] is True
    assert data["epsilon"] == pytest.approx(2.3268, abs=1e-4)
    assert data["inputs"] == {"targets": 20, "sigma": 0.2, "n": 100, "dummies": 50, "capped": False}
    assert data["delta"] == 1e-4


def test_scrambler_epsilon_all_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys, "scrambler", "epsilon", *BASE, "--delta", "1e-4", "--method", "all", "--json"
    )
    assert result.code == 0
    methods = {row["source"]: row for row in result.json()}
    assert methods["montecarlo"]["is_certificate"] is False
    assert methods["montecarlo"]["kind"] == "estimate"
    assert methods["bennett-published"]["is_certificate"] is False
    assert methods["exact"]["conditions_met"] is False
    assert methods["exact"]["epsilon"] is None
    table = run_cli(capsys, "scrambler", "epsilon", *BASE, "--delta", "1e-4")
    assert table.code == 0
    assert "lemma2-exact" in table.out
    # Tables of every evaluator, including one that does not apply (no numbers: NaN).
    for query in (["epsilon", "--delta", "1e-4"], ["delta", "--epsilon", "1"]):
        every = run_cli(capsys, "scrambler", query[0], *BASE, *query[1:], "--method", "all")
        assert every.code == 0, every.err
        assert "lower-bound" in every.out
    alone = run_cli(capsys, "scrambler", "epsilon", *BASE, "--delta", "1e-4", "--method", "exact")
    assert alone.code == 0, alone.err
    assert "unavailable" in alone.out


def test_scrambler_capped_and_sigma_zero(capsys: pytest.CaptureFixture[str]) -> None:
    capped = run_cli(
        capsys,
        "scrambler",
        "epsilon",
        "--targets",
        "3",
        "--sigma",
        "0.3",
        "--n",
        "3",
        "--dummies",
        "1",
        "--delta",
        "1e-3",
        "--capped",
        "--method",
        "all",
        "--json",
    )
    assert capped.code == 0
    rows = {r["source"]: r for r in capped.json()}
    assert rows["theorem3-published"]["is_certificate"] is False
    assert rows["theorem3-published"]["epsilon"] < rows["exact-pure"]["epsilon"]
    zero = run_cli(
        capsys,
        "scrambler",
        "epsilon",
        "--targets",
        "20",
        "--sigma",
        "0",
        "--n",
        "500",
        "--dummies",
        "50",
        "--delta",
        "1e-4",
        "--json",
    )
    assert zero.code == 0
    assert zero.json()["epsilon"] is None
    assert "180" in zero.json()["notes"]


def test_scrambler_delta(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys,
        "scrambler",
        "delta",
        "--targets",
        "4",
        "--sigma",
        "0.2",
        "--n",
        "20",
        "--dummies",
        "20",
        "--epsilon",
        "1",
        "--method",
        "lemma2-exact",
        "--json",
    )
    assert result.code == 0
    assert result.json()["delta"] == pytest.approx(5.818e-3, rel=1e-3)
    every = run_cli(
        capsys,
        "scrambler",
        "delta",
        "--targets",
        "3",
        "--sigma",
        "0.2",
        "--n",
        "3",
        "--dummies",
        "2",
        "--epsilon",
        "1",
        "--method",
        "all",
        "--json",
    )
    assert every.code == 0
    rows = {r["source"]: r for r in every.json()}
    assert rows["lemma2-exact"]["delta"] >= rows["exact"]["delta"] - 1e-12


def test_scrambler_calibrate(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys,
        "scrambler",
        "calibrate",
        "--targets",
        "20",
        "--epsilon",
        "1",
        "--delta",
        "1e-4",
        "--max-channels",
        "620",
        "--json",
    )
    assert result.code == 0
    data = result.json()
    assert data["feasible"] is True
    assert data["meets_target"] is True
    assert data["epsilon"] <= 1.0
    assert data["device_channels"] <= 620
    # --max-overhead is messages of the protected route / unprotected messages (>= 1).
    tight = run_cli(
        capsys, "scrambler", "calibrate", "--targets", "20", "--epsilon", "1", "--delta", "1e-4",
        "--max-overhead", "2.2", "--json",
    )  # fmt: skip
    assert tight.code == 0
    assert tight.json()["overhead"] <= 2.2


def test_local_epsilon(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys,
        "local",
        "epsilon",
        "--targets",
        "20",
        "--sigma",
        "0.5",
        "--dummies",
        "3",
        "--json",
    )
    assert result.code == 0
    assert result.json()["epsilon"] == pytest.approx(1.791759, abs=1e-6)
    table = run_cli(capsys, "local", "epsilon", "--targets", "20", "--sigma", "0.5")
    assert table.code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["scrambler", "epsilon", *BASE, "--delta", "0"],
        ["scrambler", "epsilon", *BASE, "--delta", "1e-4", "--method", "bogus"],
        [
            "scrambler",
            "epsilon",
            "--targets",
            "0",
            "--sigma",
            "0.2",
            "--n",
            "5",
            "--dummies",
            "1",
            "--delta",
            "1e-3",
        ],
        ["scrambler", "delta", *BASE, "--epsilon", "-1"],
        ["local", "epsilon", "--targets", "5", "--sigma", "1.5"],
        ["local", "epsilon", "--targets", "5", "--sigma", "0.5", "--dummies", "9"],
        ["scrambler", "calibrate", "--targets", "20", "--epsilon", "0", "--delta", "1e-4"],
        [
            "scrambler",
            "calibrate",
            "--targets",
            "20",
            "--epsilon",
            "1",
            "--delta",
            "1e-4",
            "--max-overhead",
            "0.5",
        ],
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    result = run_cli(capsys, *args)
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
