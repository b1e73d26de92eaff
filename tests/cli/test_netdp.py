"""Tests of crowdhide.cli.netdp: the three commands, exit codes and option errors."""

from __future__ import annotations

import pytest

from tests.cli_helpers import run_cli


def test_cli_epsilon_calibrate_audit(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "complete",
        "--task",
        "sum",
        "--n",
        "10000",
        "--steps",
        "1000000",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
        "--json",
    )
    assert res.code == 0
    out = res.json()
    assert out["theorem"] == "theorem3"
    assert out["epsilon"] < out["ldp_epsilon"]
    res = run_cli(
        capsys,
        "netdp",
        "calibrate",
        "--topology",
        "complete",
        "--task",
        "sgd",
        "--n",
        "2000",
        "--steps",
        "20000",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--json",
    )
    assert res.code == 0
    assert 15 < res.json()["sigma"] < 25
    res = run_cli(
        capsys,
        "netdp",
        "audit",
        "--topology",
        "complete",
        "--n",
        "20",
        "--steps",
        "500",
        "--eps0",
        "0.5",
        "--delta",
        "1e-6",
        "--json",
    )
    assert res.code == 0
    assert res.json()["network_worst"] < res.json()["local_mean"] + 10
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "ring",
        "--task",
        "sum",
        "--n",
        "10",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
    )
    assert res.code == 2
    assert "rounds" in res.err
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "torus",
        "--task",
        "sum",
        "--n",
        "10",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
        "--rounds",
        "3",
    )
    assert res.code == 2


def test_cli_epsilon_reports_conditions_and_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--n", "2000", "--steps", "20000", "--eps0", "1", "--delta", "1e-6", "--json"]
    res = run_cli(capsys, "netdp", "epsilon", "--topology", "complete", "--task", "sgd", *args)
    assert res.code == 0
    out = res.json()
    assert out["theorem"] == "theorem4"
    assert out["conditions_met"] is False
    assert "eps0 < 1" in out["notes"]
    res = run_cli(
        capsys, "netdp", "epsilon", "--topology", "ring", "--task", "sgd", "--n", "10",
        "--eps0", "0.1", "--delta", "1e-7", "--rounds", "2",
    )  # fmt: skip
    assert res.code == 2
    assert "complete" in res.err


def test_cli_audit_explains_an_infinite_network_epsilon_below_the_fft_floor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["netdp", "audit", "--topology", "complete", "--n", "20", "--steps", "100"]
    # (two users: invalid, exit 2)
    tiny = run_cli(capsys, *argv, "--eps0", "0.5", "--delta", "1e-12", "--json")
    assert tiny.code == 0
    assert tiny.json()["network_worst"] is None  # inf
    assert "FFT composition" in tiny.json()["note"]
    usual = run_cli(capsys, *argv, "--eps0", "0.5", "--delta", "1e-6", "--json")
    assert "note" not in usual.json()
    two = run_cli(capsys, *argv[:4], "--n", "2", "--steps", "9", "--eps0", "1", "--delta", "0.1")
    assert two.code == 2


def test_cli_histogram_at_large_eps0_does_not_overflow(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("netdp", "epsilon", "--topology", "complete", "--task", "histogram", "--n", "10")
    result = run_cli(capsys, *args, "--eps0", "30", "--steps", "1", "--delta", "1e-6", "--json")
    assert result.code == 0, result.err
