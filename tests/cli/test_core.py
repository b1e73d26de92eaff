from __future__ import annotations

import pytest

from tests.cli_helpers import run_cli


def test_help_lists_areas(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--help")
    assert result.code == 0
    assert "reproduce" in result.out


def test_unknown_option_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "reproduce", "list", "--no-such-flag")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err


def test_unknown_experiment_is_value_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "reproduce", "no-such-figure")
    assert result.code == 2
    assert "no-such-figure" in result.err


def test_reproduce_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "reproduce", "list", "--json")
    assert result.code == 0
    assert isinstance(result.json(), list)
