"""``crowdhide.calibrate``: one call solves for ε0, n or the countermeasures, answers what
the command line answers, and refuses an input its question does not use."""

from __future__ import annotations

from typing import Any

import pytest

import crowdhide
from tests.cli_helpers import run_cli


def test_solve_eps0_equals_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cal = crowdhide.calibrate(epsilon=0.5, delta=1e-6, n=20_000, k=2)
    assert cal.solved_for == "eps0"
    assert cal.meets_target
    assert cal.privacy.epsilon <= 0.5
    cli = run_cli(capsys, "shuffle", "calibrate", "--epsilon", "0.5", "--delta", "1e-6",
                  "--n", "20000", "--k", "2", "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    assert cli.json()["eps0"] == cal.eps0 == cal.value
    assert cli.json()["epsilon"] == cal.privacy.epsilon


def test_solve_n_equals_cli_and_is_the_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    cal = crowdhide.calibrate(epsilon=0.5, delta=1e-6, eps0=2.0)
    assert cal.solved_for == "n"
    assert cal.n is not None
    fewer = crowdhide.shuffle_epsilon(eps0=2.0, n=cal.n - 1, delta=1e-6)
    assert fewer.epsilon > 0.5 >= cal.privacy.epsilon
    cli = run_cli(capsys, "shuffle", "calibrate", "--epsilon", "0.5", "--delta", "1e-6",
                  "--eps0", "2", "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    assert cli.json()["n"] == cal.n


def test_solve_countermeasures_equals_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cal = crowdhide.calibrate(epsilon=1.0, delta=1e-4, targets=20, max_channels=620)
    assert cal.solved_for == "countermeasures"
    assert cal.countermeasures is not None
    assert cal.meets_target
    cli = run_cli(capsys, "scrambler", "calibrate", "--targets", "20", "--epsilon", "1",
                  "--delta", "1e-4", "--max-channels", "620", "--json")  # fmt: skip
    assert cli.code == 0, cli.err
    record = cli.json()
    assert {k: record[k] for k in ("scheme", "sigma", "n", "dummies")} == {
        k: cal.value[k] for k in ("scheme", "sigma", "n", "dummies")
    }
    assert repr(cal).startswith("Calibration(countermeasures={'scheme': 'scrambler'")
    assert "Calibration" in cal._repr_html_()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"n": 1000, "eps0": 1.0}, "exactly one of n"),
        ({}, "exactly one of n"),
        ({"n": 1000, "max_channels": 10.0}, "max_channels does not apply"),
        ({"eps0": 1.0, "sources": 5}, "sources does not apply"),
        ({"targets": 5, "n": 100}, "n does not apply"),
        ({"targets": 5, "k": 3}, "k does not apply"),
        ({"targets": 5, "bound": "feldman2021"}, "bound does not apply"),
    ],
)
def test_an_input_the_question_does_not_use_is_refused(options: dict[str, Any], named: str) -> None:
    with pytest.raises(crowdhide.InvalidParameterError, match=named):
        crowdhide.calibrate(epsilon=1.0, delta=1e-6, **options)


def test_out_of_reach_n_is_an_unmet_target() -> None:
    with pytest.raises(crowdhide.UnmetTargetError):
        crowdhide.calibrate(epsilon=1e-4, delta=1e-12, eps0=8.0)
