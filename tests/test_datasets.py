"""The data folder (crowdhide.datasets) and the loaders' behaviour without real data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdhide import datasets
from crowdhide.datasets import DATA_DIR_VARIABLE, data_dir, data_path, describe_data_path


def test_variable_names_the_folder_even_when_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path))
    assert data_dir() == tmp_path
    assert data_path("mnist") is None
    (tmp_path / "mnist").mkdir()
    assert data_path("mnist") == tmp_path / "mnist"
    assert describe_data_path("adult").startswith(str(tmp_path / "adult"))


def test_repository_relative_folder_only_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATA_DIR_VARIABLE, raising=False)
    monkeypatch.setattr(datasets, "_CHECKOUT_PARENT", tmp_path)
    assert data_dir() is None
    assert data_path("mnist") is None
    assert "set $CROWDHIDE_DATA_DIR" in describe_data_path("mnist")
    (tmp_path / "shared" / "data").mkdir(parents=True)
    assert data_dir() == tmp_path / "shared" / "data"


def test_loaders_fall_back_or_fail_clearly_without_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crowdhide.experiments.cyffers_bellet_walks import load_houses
    from crowdhide.plans.data import load_kmeans_data
    from crowdhide.protocols.data import load_column, load_gowalla_points

    monkeypatch.setenv(DATA_DIR_VARIABLE, str(tmp_path))
    assert load_kmeans_data(source="auto", rng=0).source in ("digits", "synthetic")
    with pytest.raises(FileNotFoundError, match="MNIST not found") as caught:
        load_kmeans_data(source="mnist")
    assert str(tmp_path / "mnist") in str(caught.value)
    adult = load_column("builtin:adult", column="age")
    assert adult.note is not None
    assert str(tmp_path / "adult") in adult.note
    grid = load_column("builtin:gowalla-paris", column="cell")
    assert grid.note is not None
    assert str(tmp_path / "gowalla") in grid.note
    assert load_gowalla_points("gowalla-paris").note is not None
    x, _, source = load_houses(np.random.default_rng(0))
    assert x.shape == (20640, 8)
    assert "synthetic stand-in" in source
    assert str(tmp_path) in source
