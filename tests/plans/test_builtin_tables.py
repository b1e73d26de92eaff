"""Issue #28: ``builtin:adult`` in plan files; DuckDB's names of header-less CSV columns."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from crowdhide.datasets import ADULT_COLUMNS, DATA_DIR_VARIABLE
from crowdhide.errors import DataError
from crowdhide.plans.data import load_table
from crowdhide.plans.query import load_query
from crowdhide.plans.spec import parse_spec

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plan-reference.md"
ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, "
    "Husband, White, Male, 0, 0, 13, United-States, >50K",
]


def _adult(folder: Path) -> None:
    (folder / "adult").mkdir(parents=True)
    with gzip.open(folder / "adult" / "adult.data.gz", "wt", encoding="utf-8") as f:
        f.write(ROWS[0] + "\n\n")
    with gzip.open(folder / "adult" / "adult.test.gz", "wt", encoding="utf-8") as f:
        f.write("|1x3 Cross validator\n" + ROWS[1] + ".\n")


SPEC = {
    "data": {"path": "builtin:adult"},
    "query": {"kind": "aggregate", "sql": "SELECT sex, AVG(age), SUM(income) FROM D GROUP BY sex"},
    "countermeasures": {"sigma": 0.0},
}


def test_a_plan_file_runs_on_builtin_adult(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _adult(tmp_path / "data")
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "data"))
    table = load_table("builtin:adult")
    assert list(table) == list(ADULT_COLUMNS)
    assert table["age"].tolist() == [39, 50]
    assert table["income"].tolist() == [0, 1]  # the test file's ">50K." counts too
    query = load_query(parse_spec(SPEC, base=tmp_path))
    assert query.rows == 2
    assert query.data_source == "builtin:adult"


def test_builtin_adult_without_the_data_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path / "none"))
    with pytest.raises(DataError, match=r"builtin:adult.*not installed"):
        load_query(parse_spec(SPEC, base=tmp_path))
    with pytest.raises(DataError, match=r"builtin:gowalla-sf.*builtin:adult"):
        load_table("builtin:gowalla-sf")


@pytest.mark.parametrize("columns", [3, 10, 12, 101])
def test_header_less_csv_columns_are_named_as_the_docs_say(tmp_path: Path, columns: int) -> None:
    file = tmp_path / "t.csv"
    rows = (",".join(str(i * 7 + j) for j in range(columns)) for i in range(1, 5))
    file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    names = list(load_table(file))
    width = len(str(columns - 1)) if columns > 10 else 1
    assert names == [f"column{j:0{width}d}" for j in range(columns)]
    assert np.asarray(load_table(file)[names[-1]]).dtype.kind == "i"
    docs = " ".join(DOCS.read_text(encoding="utf-8").split())
    shown = set(re.findall(r"`(column\d+)`", docs))
    assert {names[0], names[-1]} <= shown or columns not in (12, 101)
