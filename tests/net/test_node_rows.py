"""``crowdhide node rows``: a data owner codes their own table for the coordinator's plan.

A real owner never sees the population ``net split`` cuts; from their own CSV and the
schema-only plan they write the file their daemon serves. Checked: for every daemon of a
split, the owner's file made from that daemon's rows alone equals ``net split``'s (every
array, its dtype, the domains' digests), and a daemon's loader takes it for the plan (its
rows, the source blocks of its range, the daemon's domain check at job load); a table the
daemons would refuse is refused with one line naming the option, the column and the count
of rows outside — never a value — and no file is written.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from crowdhide.backends.tls.node_rows import NodeRows, check_domains
from crowdhide.engine.document import plan_document
from crowdhide.plans.data import load_table, synth_diabetes, write_table
from crowdhide.plans.runner import prepare
from crowdhide.plans.spec import load_spec
from tests.cli_helpers import run_cli

pytestmark = pytest.mark.net

ROWS, BLOCK, NODES = 240, 40, 3
EXAMPLE = Path(__file__).resolve().parents[2] / "src/crowdhide/examples/diabetes.toml"


@pytest.fixture
def split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, list[Path]]:
    """The population as a CSV, the coordinator's plan and ``net split``'s row files."""
    population = tmp_path / "population.csv"
    write_table(synth_diabetes(rows=ROWS, rng=7), population)
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace("rows = 20000", f"rows = {ROWS}").replace("seed = 7\n", "")
    text = text.replace('generator = "diabetes"', f"path = {str(population)!r}")
    sim = tmp_path / "plan.toml"
    sim.write_text(text, encoding="utf-8")
    coordinator = tmp_path / "coordinator.toml"
    result = run_cli(
        capsys, "net", "split", str(sim), "--nodes", str(NODES), "--block-size", str(BLOCK),
        "--out", str(tmp_path / "rows"), "--coordinator-plan", str(coordinator), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    return population, coordinator, [Path(f) for f in result.json()["files"]]


def test_an_owners_file_equals_net_splits_and_a_daemon_takes_it(
    split: tuple[Path, Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    population, coordinator, files = split
    table = load_table(population)
    plan = prepare(load_spec(coordinator)).plan
    document = plan_document(plan, run={"block_size": BLOCK})
    for node, file in enumerate(files):
        expected = NodeRows.load(file)
        first, stop = expected.first, expected.first + expected.count
        mine = tmp_path / f"owner{node}.csv"  # this owner's rows, and nobody else's
        write_table({c: v[first:stop] for c, v in table.items()}, mine)
        out = tmp_path / f"owner{node}.npz"
        result = run_cli(
            capsys, "node", "rows", "--plan", str(coordinator), "--csv", str(mine),
            "--first", str(first), "--out", str(out), "--json",
        )  # fmt: skip
        assert result.code == 0, result.err
        assert result.json()["rows"] == f"{first}..{stop - 1}"
        held = NodeRows.load(out)  # the daemon's loader
        assert (held.first, held.count) == (first, expected.count)
        assert dict(held.digests) == dict(expected.digests) != {}
        assert held.columns.keys() == expected.columns.keys() == {"S"}
        assert held.columns["S"].keys() == expected.columns["S"].keys()
        for column, values in expected.columns["S"].items():
            assert held.columns["S"][column].dtype == values.dtype, column
            assert np.array_equal(held.columns["S"][column], values), column
        # What the daemon does with it at job load: its source blocks, then the domain check.
        parts = held.parts(document, (first, stop))
        assert sorted(parts["S"]) == list(range(first, stop, BLOCK))
        check_domains(document, parts, held.digests)


SECRET_AGE, SECRET_BMI = "17-secret", 777


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"age_range": (2, SECRET_AGE), "bmi": (5, SECRET_BMI)},
            "--csv '{csv}': column 'age_range' has 1 of 80 rows outside query.domains; "
            "column 'bmi' has 1 of 80 rows outside query.domains (the plan's public domain; "
            "values not shown: the rows are private)",
        ),
        (
            {"insulin": (7, float("inf"))},
            "--csv '{csv}': column 'insulin' has 1 of 80 rows outside finite numbers to "
            "aggregate (the plan's public domain; values not shown: the rows are private)",
        ),
        (
            {"insulin": (7, 1e200)},  # its square overflows: the intervals' variance
            "--csv '{csv}': column 'insulin' has values whose sum or sum of squares overflows "
            "float64 (values up to 1.5e+153 in magnitude always fit; values not shown)",
        ),
        (
            {"insulin": None},
            "--csv '{csv}' lacks 1 of the plan's 3 data.columns: ['insulin'] (it has 2 column(s))",
        ),
    ],
    ids=["outside-domain", "not-finite", "overflow", "missing-column"],
)
def test_a_table_the_daemons_would_refuse_is_refused_without_a_value(
    split: tuple[Path, Path, list[Path]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, tuple[int, object] | None],
    expected: str,
) -> None:
    population, coordinator, _ = split
    table = {c: v[:80].copy() for c, v in load_table(population).items()}
    for column, edit in change.items():
        if edit is None:
            del table[column]
            continue
        row, value = edit
        if isinstance(value, str):
            table[column] = table[column].astype(object)
        table[column][row] = value
    mine = tmp_path / "mine.csv"
    write_table(table, mine)
    out = tmp_path / "mine.npz"
    result = run_cli(
        capsys, "node", "rows", "--plan", str(coordinator), "--csv", str(mine),
        "--first", "0", "--out", str(out),
    )  # fmt: skip
    assert result.code == 2
    assert result.err == f"crowdhide: error: {expected.format(csv=mine)}\n"
    assert SECRET_AGE not in result.err
    assert str(SECRET_BMI) not in result.err
    assert "1e+200" not in result.err
    assert not out.exists()


def test_options_that_cannot_work_are_refused_naming_them(
    split: tuple[Path, Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    population, coordinator, _ = split
    sim = coordinator.parent / "plan.toml"
    mine = tmp_path / "mine.csv"
    write_table({c: v[:80] for c, v in load_table(population).items()}, mine)
    cases = {
        ("--first", str(ROWS - 79)): f"--first {ROWS - 79} with the 80 rows of --csv",
        ("--plan", str(sim)): "--plan must be the coordinator's plan",
        ("--csv", str(tmp_path / "none.csv")): "--csv must be an existing file",
        ("--out", str(tmp_path / "rows.txt")): "--out must end in one of .npz",
    }
    for (option, value), start in cases.items():
        options = {"--plan": str(coordinator), "--csv": str(mine), "--first": "0"}
        options["--out"] = str(tmp_path / "rows.npz")
        options[option] = value
        result = run_cli(capsys, "node", "rows", *(w for kv in options.items() for w in kv))
        assert result.code == 2, (option, result.err)
        assert result.err.startswith(f"crowdhide: error: {start}"), result.err
        assert len(result.err.splitlines()) == 1
        assert not (tmp_path / "rows.npz").exists()


def test_the_deploy_guides_owner_step_writes_net_splits_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/deploy.md's owner line, run as written next to the guide's split (600 rows,
    blocks of 100, three daemons: node 1 holds rows 200..399)."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text("utf-8")
    (line,) = re.findall(r"^crowdhide node rows .*$", guide, flags=re.M)
    monkeypatch.chdir(tmp_path)
    write_table(synth_diabetes(rows=600, rng=7), "population.csv")
    text = EXAMPLE.read_text(encoding="utf-8").replace("rows = 20000", "rows = 600")
    text = text.replace("seed = 7\n", "").replace(
        'generator = "diabetes"', 'path = "population.csv"'
    )
    Path("plan.toml").write_text(text, encoding="utf-8")
    split = run_cli(
        capsys, "net", "split", "plan.toml", "--nodes", "3", "--block-size", "100",
        "--out", "rows/", "--coordinator-plan", "coordinator.toml",
    )  # fmt: skip
    assert split.code == 0, split.err
    table = load_table("population.csv")
    write_table({c: v[200:400] for c, v in table.items()}, "my-rows.csv")
    words = shlex.split(line)
    assert words[:3] == ["crowdhide", "node", "rows"]
    result = run_cli(capsys, *words[1:])
    assert result.code == 0, result.err
    mine, theirs = np.load("rows-1.npz"), np.load("rows/rows-1.npz")
    assert sorted(mine.files) == sorted(theirs.files)
    for key in theirs.files:
        assert mine[key].dtype == theirs[key].dtype, key
        assert np.array_equal(mine[key], theirs[key]), key


def test_a_million_users_plan_is_within_the_tls_limit_not_the_local_one(
    split: tuple[Path, Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The files are for node daemons: the tls runtime's work limit applies (10^6 diabetes
    users are 2*10^6 tuple-routes, above the local backend's limit)."""
    population, coordinator, _ = split
    big = tmp_path / "big.toml"
    text = coordinator.read_text(encoding="utf-8")
    big.write_text(text.replace(f"rows = {ROWS}\n", "rows = 1000000\n", 1), encoding="utf-8")
    assert "rows = 1000000" in big.read_text(encoding="utf-8")
    mine = tmp_path / "mine.csv"
    write_table({c: v[:80] for c, v in load_table(population).items()}, mine)
    result = run_cli(
        capsys, "node", "rows", "--plan", str(big), "--csv", str(mine), "--first", "999920",
        "--out", str(tmp_path / "mine.npz"),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert NodeRows.load(tmp_path / "mine.npz").first == 999920


def test_net_split_is_within_the_tls_limit_not_the_local_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """400,001 diabetes users (just above the local backend's 400,000) split for daemons."""
    text = EXAMPLE.read_text(encoding="utf-8").replace("rows = 20000", "rows = 400001")
    sim = tmp_path / "plan.toml"
    sim.write_text(text, encoding="utf-8")
    result = run_cli(
        capsys, "net", "split", str(sim), "--nodes", "1", "--block-size", "100000",
        "--out", str(tmp_path / "rows"), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.json()["rows"] == ["0..400000"]
