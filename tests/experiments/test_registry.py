"""The experiment registry: current names listed, former ``seedNNN-*`` names still run."""

from __future__ import annotations

from pathlib import Path

import pytest

from crowdhide.experiments.registry import (
    ExperimentResult,
    discover,
    experiment,
    resolve,
    run_experiment,
)
from tests.cli_helpers import run_cli

#: Former target names and the names that replaced them (also listed in the README).
RENAMED = {
    "seed000-fig3": "ladjel-fig3",
    "seed000-fig5": "ladjel-fig5",
    "seed000-fig6": "ladjel-fig6",
    "seed000-fig7": "ladjel-fig7",
    "seed000-fig8": "ladjel-fig8",
    "seed000-fig9": "ladjel-fig9",
    "seed001-fig1": "cyffers-fig1",
    "seed001-fig2": "cyffers-fig2",
    "seed001-fig3": "cyffers-fig3",
    "seed002-error": "cheu-error",
    "seed003-table2": "biswas-table2",
    "seed003-fig1": "biswas-fig1",
    "seed003-fig2": "biswas-fig2",
    "seed003-gowalla": "biswas-gowalla",
    "seed003-table4": "biswas-table4",
    "seed003-table5": "biswas-table5",
    "seed003-table6": "biswas-table6",
    "seed003-fig3": "biswas-fig3",
    "seed003-fig4-5": "biswas-fig4-5",
    "seed003-fig6-7": "biswas-fig6-7",
    "seed004-fig2": "jurado-fig2",
    "seed004-fig3": "jurado-fig3",
    "seed004-fig4": "jurado-fig4",
    "seed004-fig5": "jurado-fig5",
    "seed004-fig6": "jurado-fig6",
    "seed004-fig7": "jurado-fig7",
}


def test_every_former_name_resolves_to_its_replacement() -> None:
    for old, new in RENAMED.items():
        found = resolve(old)
        assert found.name == new
        assert found is resolve(new)
        assert old in found.aliases


def test_list_shows_current_names_only() -> None:
    names = set(discover())
    assert set(RENAMED.values()) <= names
    assert not names & set(RENAMED)
    assert not any(name.startswith("seed") for name in names)


def test_unknown_name_lists_the_current_names() -> None:
    with pytest.raises(ValueError, match=r"ladjel-fig3.*got 'seed999-fig1'"):
        resolve("seed999-fig1")


def test_a_name_cannot_be_taken_twice() -> None:
    def other(out_dir: Path, **_: object) -> ExperimentResult:
        raise AssertionError("never run")

    with pytest.raises(ValueError, match="already registered: 'seed000-fig3'"):
        experiment("fresh-name-for-this-test", "x", aliases=("seed000-fig3",))(other)
    with pytest.raises(ValueError, match="already registered: 'ladjel-fig3'"):
        experiment("ladjel-fig3", "x")(other)


def test_former_name_runs_the_same_reproduction(tmp_path: Path) -> None:
    old = run_experiment("seed004-fig3", tmp_path / "old", seed=0, quick=True)
    new = run_experiment("jurado-fig3", tmp_path / "new", seed=0, quick=True)
    assert old.comparison == new.comparison
    assert [p.name for p in old.files] == [p.name for p in new.files]
    for a, b in zip(old.files, new.files, strict=True):
        if a.suffix in (".csv", ".json"):
            assert a.read_bytes() == b.read_bytes()


def test_cli_hides_former_names_but_runs_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    listed = run_cli(capsys, "reproduce", "list", "--json")
    assert listed.code == 0
    assert "seed004-fig3" not in listed.out
    assert "jurado-fig3" in listed.out
    ran = run_cli(capsys, "reproduce", "seed004-fig3", "--quick", "--json", "--out", str(tmp_path))
    assert ran.code == 0, ran.err
    record = ran.json()
    assert record["experiment"] == "jurado-fig3"
    assert record["out"] == str(tmp_path / "seed004-fig3")
    # every claim the target tests comes back judged, and in claims.json
    outcomes = {v["verdict"] for v in record["verdicts"]}
    assert record["verdicts"]
    assert outcomes <= {"holds", "holds with different magnitude", "does not hold"}
    assert any(f.endswith("claims.json") for f in record["files"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(discover()))
def test_every_target_judges_its_claims_without_machine_paths(tmp_path: Path, name: str) -> None:
    result = run_experiment(name, tmp_path, seed=0, quick=True)
    skipped = isinstance(result.data, dict) and result.data.get("skipped")
    if skipped:  # its data set is absent here: it says why and judges nothing
        assert "not found" in str(skipped)
        assert not result.verdicts
    else:
        assert result.verdicts, f"{name} judges no claim"
    text = "\n".join([*result.comparison, *result.verdict_lines()])
    assert str(tmp_path) not in text
    assert "/work/" not in text
