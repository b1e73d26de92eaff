"""``crowdhide shuffle epsilon|delta --rounds/--sample-rate/--relation``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

BASE = ("--eps0", "4", "--n", "10000", "--k", "2")


def test_epsilon_rounds_json_matches_anchor(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(
        capsys, "shuffle", "epsilon", *BASE, "--delta", "1e-6", "--rounds", "2", "--json"
    )
    assert result.code == 0, result.err
    record = result.json()
    assert record["epsilon"] == pytest.approx(0.5910, abs=1e-4)
    assert record["inputs"]["rounds"] == 2
    assert record["source"] == "feldman2023"
    assert record["conditions_met"] is True


def test_delta_subsampled_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("shuffle", "delta", *BASE, "--epsilon", "0.5", "--sample-rate", "0.1")
    result = run_cli(capsys, *args, "--relation", "add_remove")
    assert result.code == 0, result.err
    assert "add_remove" in result.out
    assert "composed shuffle delta" in result.out


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("--rounds", "0"), "rounds"),
        (("--sample-rate", "1.5"), "--sample-rate"),
        (("--relation", "replace"), "relation"),
        (("--rounds", "2", "--bound", "exact"), "--bound"),
    ],
)
def test_invalid_options_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], needle: str
) -> None:
    result = run_cli(capsys, "shuffle", "epsilon", *BASE, "--delta", "1e-6", *extra)
    assert result.code == 2
    assert needle in result.err
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_library_messages_name_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "shuffle", "epsilon", *BASE, "--delta", "1e-6", "--bound", "xyz")
    assert result.code == 2
    assert result.err.startswith("crowdhide: error: --bound must be one of")
    assert result.err.count("\n") == 1


def test_plot_creates_the_missing_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = f"{tmp_path}/new/folder/eps.png"
    result = run_cli(capsys, "shuffle", "plot", "--eps0", "1", "--delta", "1e-6", "--points", "2",
                     "--out", out)  # fmt: skip
    assert result.code == 0, result.err
    assert (tmp_path / "new" / "folder" / "eps.png").stat().st_size > 0


@pytest.mark.parametrize("command", ["epsilon", "delta"])
@pytest.mark.parametrize("setting", [("--rounds", "3"), ("--sample-rate", "0.5")])
def test_mechanism_answers_compose_and_echo_the_setting(
    capsys: pytest.CaptureFixture[str], command: str, setting: tuple[str, str]
) -> None:
    """Issue 28: ``--mechanism oue --rounds 100`` printed the one-round answer, exit 0."""
    query = ("--delta", "1e-6") if command == "epsilon" else ("--epsilon", "0.3")
    base = ("shuffle", command, "--eps0", "1", "--n", "300", *query, "--mechanism", "oue")
    one = run_cli(capsys, *base, "--d", "8", "--json")
    more = run_cli(capsys, *base, "--d", "8", *setting, "--json")
    assert one.code == more.code == 0, more.err
    key = setting[0][2:].replace("-", "_")
    assert more.json()["inputs"][key] == float(setting[1])
    grows = setting[0] == "--rounds"
    assert (more.json()[command] > one.json()[command]) == grows


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("--mechanism", "krr", "--d", "4", "--k", "8"), "--k does not apply"),
        (("--d", "4"), "--d applies only with mechanism"),
        (("--mechanism", "oue", "--d", "4", "--bound", "all"), "--bound 'all'"),
    ],
)
def test_options_that_do_not_apply_are_refused(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], needle: str
) -> None:
    result = run_cli(capsys, "shuffle", "epsilon", "--eps0", "1", "--n", "300", "--delta", "1e-6",
                     *extra)  # fmt: skip
    assert result.code == 2
    assert needle in result.err
    assert len(result.err.strip().splitlines()) == 1
