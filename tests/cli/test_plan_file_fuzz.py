"""Plan files that a fuzz of ``crowdhide plan/run`` turned into tracebacks, a hang or NaN
results (session 11): each is now one line naming the key or file, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

QUERY = """
[query]
sql = "SELECT g1, SUM(v) FROM D GROUP BY g1"
compute_nodes = 2
[countermeasures]
sigma = 0.0
[run]
plots = false
"""
GENERATED = """
[data]
generator = "aggregate"
rows = 100
attributes = 1
intervals = 3
[query]
sql = "SELECT g1, COUNT(*) FROM D GROUP BY g1"
compute_nodes = 3
"""
PRIVACY = "[privacy]\nepsilon = 1.0\n"


def _fails(tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: str, *args: str) -> str:
    file = tmp_path / "plan.toml"
    file.write_text(plan, encoding="utf-8")
    out = ("--out", str(tmp_path / "out")) if args[0] == "run" else ()
    result = run_cli(capsys, *args, str(file), *out)
    assert result.code == 2, (result.code, result.err)
    assert result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    return result.err


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "is not a file"),  # the path is a folder
        (b"", "is empty"),
        (b"\x00\x01\x02\xff\xfe binary", "could not be read"),
    ],
)
def test_unreadable_data_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, says: str
) -> None:
    data = tmp_path / "data.csv"
    if content is None:
        data.mkdir()
    else:
        data.write_bytes(content)
    err = _fails(tmp_path, capsys, f'[data]\npath = "{data}"\n{QUERY}', "plan")
    assert says in err
    assert str(data) in err


@pytest.mark.parametrize("bad", ["inf", "-inf", "nan"])
def test_non_finite_aggregated_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    data = tmp_path / "data.csv"
    data.write_text(f"g1,v\n0,1.0\n0,2.0\n1,{bad}\n", encoding="utf-8")
    err = _fails(tmp_path, capsys, f'[data]\npath = "{data}"\n{QUERY}', "run")
    assert "must hold finite numbers" in err


@pytest.mark.parametrize("domain", ["[]", "[1979-05-27]", "[{a = 1}]", "[1, 'a']"])
def test_domains_must_be_lists_of_numbers_or_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], domain: str
) -> None:
    plan = GENERATED + f"domains = {{ g1 = {domain} }}\n" + PRIVACY
    assert "query.domains" in _fails(tmp_path, capsys, plan, "plan")


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("[countermeasures]\nsigma = 0.1\nn = 10\nd = 1000000000\n", "countermeasures.d"),
        (PRIVACY + "[run]\nshards = 1000000000\n", "run.shards"),  # looped over every shard
    ],
)
def test_sizes_beyond_the_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, key: str
) -> None:
    assert key in _fails(tmp_path, capsys, GENERATED + extra, "run")


@pytest.mark.parametrize("name", ["../escape", "/tmp/abs", "", "..", "."])
def test_plan_name_is_a_plain_folder_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    plan = f'name = "{name}"\n' + GENERATED + PRIVACY
    assert "name must be" in _fails(tmp_path, capsys, plan, "plan")


def test_ledger_that_is_a_folder_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(GENERATED + PRIVACY, encoding="utf-8")
    args = ("run", str(plan), "--out", str(tmp_path / "out"), "--ledger", str(tmp_path))
    result = run_cli(capsys, *args, "--budget-epsilon", "3", "--budget-delta", "1e-3")
    assert result.code == 2
    assert "--ledger" in result.err


def test_domains_of_columns_not_grouped_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = GENERATED + "domains = { nope = [1, 2] }\n" + PRIVACY
    assert "does not group by" in _fails(tmp_path, capsys, plan, "plan")


def test_an_empty_generator_is_not_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = GENERATED.replace('generator = "aggregate"', 'generator = ""') + PRIVACY
    assert "data.generator must be one of" in _fails(tmp_path, capsys, plan, "plan")
