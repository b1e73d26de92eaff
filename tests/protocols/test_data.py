"""Loading users' data: files, built-in sets, fallbacks and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdhide.protocols.data import (
    DataColumn,
    as_bits,
    as_bounded,
    as_categories,
    load_column,
)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "users.csv"
    path.write_text("age,income,city,score\n30,1,Paris,0.5\n41,0,Rome,0.25\n25,1,Paris,1.0\n")
    return path


def test_load_by_name_and_position(table: Path) -> None:
    assert load_column(table, column="age").values.tolist() == [30, 41, 25]
    col = load_column(table, column="3")
    assert col.column == "score"
    assert col.n == 3


def test_text_column_becomes_categories(table: Path) -> None:
    cats = as_categories(load_column(table, column="city"))
    assert cats.k == 2
    assert cats.labels == ("Paris", "Rome")
    assert cats.values.tolist() == [0, 1, 0]


def test_bits_and_bounds(table: Path) -> None:
    assert as_bits(load_column(table, column="income")).tolist() == [1, 0, 1]
    bounded = as_bounded(load_column(table, column="age"), lower=18, upper=99)
    assert bounded.clipped == 0
    clipped = as_bounded(load_column(table, column="age"), lower=18, upper=35, clip=True)
    assert clipped.clipped == 1
    assert clipped.values.max() == 35


def test_parquet_files_are_read(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1, 0, 1]}), path)
    assert load_column(path, column="x").values.tolist() == [1, 0, 1]


def test_builtin_gowalla_uses_the_paper_grid() -> None:
    sf = load_column("builtin:gowalla-sf", column="cell")
    assert sf.domain_size == 408
    assert as_categories(sf).k == 408
    paris = load_column("builtin:gowalla-paris", column="cell")
    assert as_categories(paris).k == 192


def test_missing_real_data_falls_back_to_a_labelled_stand_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROWDHIDE_DATA_DIR", str(tmp_path / "nothing-here"))
    sf = load_column("builtin:gowalla-sf", column="cell")
    assert sf.note is not None
    assert "synthetic" in sf.note
    assert as_categories(sf).k == 408
    adult = load_column("builtin:adult", column="age")
    assert adult.note is not None
    assert "synthetic" in adult.note
    assert adult.values.min() >= 17
    assert adult.values.max() <= 90


def test_builtin_adult_reads_both_files() -> None:
    col = load_column("builtin:adult", column="income")
    if col.note is None:  # real data present
        assert col.n == 48_842
        assert col.values.sum() == 7_841 + 3_846


# ---- invalid data: one test each ----------------------------------------------------------


def test_missing_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"data file not found"):
        load_column(tmp_path / "none.csv", column="x")


def test_a_folder_or_nothing_is_not_a_data_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not a file"):
        load_column(tmp_path, column="x")
    with pytest.raises(ValueError, match=r"data must name a file"):
        load_column("", column="x")


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(ValueError, match=r"data file is empty"):
        load_column(path, column="x")


def test_header_only_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("x\n")
    with pytest.raises(ValueError, match=r"has no rows"):
        load_column(path, column="x")


def test_unknown_column_lists_the_columns(table: Path) -> None:
    with pytest.raises(ValueError, match=r"column must be one of age, income, city, score"):
        load_column(table, column="salary")


def test_missing_values_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    path.write_text("x,y\n1,2\n,3\n4,5\n")
    with pytest.raises(ValueError, match=r"has 1 missing value"):
        load_column(path, column="x")


def test_non_numeric_column_is_rejected_for_sums(table: Path) -> None:
    with pytest.raises(TypeError, match=r"column 'city' .* must be numeric, got text values"):
        as_bounded(load_column(table, column="city"), lower=0, upper=1)


def test_values_outside_bounds_are_rejected_not_clipped(table: Path) -> None:
    with pytest.raises(ValueError, match=r"1 value\(s\) outside the declared bounds \[18, 35\]"):
        as_bounded(load_column(table, column="age"), lower=18, upper=35)


def test_inverted_bounds_are_rejected(table: Path) -> None:
    with pytest.raises(ValueError, match=r"upper must be > lower"):
        as_bounded(load_column(table, column="age"), lower=5, upper=5)


def test_non_bits_are_rejected(table: Path) -> None:
    with pytest.raises(ValueError, match=r"must hold bits 0/1 .* such as 30"):
        as_bits(load_column(table, column="age"))


def test_real_values_are_rejected_as_categories(table: Path) -> None:
    with pytest.raises(ValueError, match=r"holds non-integer values"):
        as_categories(load_column(table, column="score"))


def test_category_above_bins_is_rejected(table: Path) -> None:
    with pytest.raises(ValueError, match=r"has category 41, outside 0..9"):
        as_categories(load_column(table, column="age"), bins=10)


def test_wrong_bins_for_text_is_rejected(table: Path) -> None:
    with pytest.raises(ValueError, match=r"bins must equal the 2 distinct values"):
        as_categories(load_column(table, column="city"), bins=5)


def test_negative_categories_are_rejected() -> None:
    col = DataColumn(values=np.array([-1, 2]), source="test", column="c")
    with pytest.raises(ValueError, match=r"must hold categories >= 0, got -1"):
        as_categories(col)


def test_unknown_builtin_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"got 'builtin:mnist'"):
        load_column("builtin:mnist", column="x")


def test_empty_column_name_is_rejected(table: Path) -> None:
    with pytest.raises(TypeError, match=r"column must be a non-empty string"):
        load_column(table, column="")
