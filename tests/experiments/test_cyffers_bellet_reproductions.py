"""The reproductions of Cyffers & Bellet (``crowdhide reproduce``) run and fall back to
synthetic data when the offline data set is missing."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cyffers-fig1", "cyffers-fig2", "cyffers-fig3"])
def test_experiments_quick(tmp_path, name: str) -> None:  # type: ignore[no-untyped-def]
    from crowdhide.experiments.registry import run_experiment

    result = run_experiment(name, tmp_path, seed=0, quick=True)
    assert result.files
    assert all(f.exists() for f in result.files)
    assert result.comparison


def test_fig2_data_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crowdhide.experiments.cyffers_bellet_walks import load_houses

    monkeypatch.setenv("CROWDHIDE_DATA_DIR", str(tmp_path))  # an empty data folder
    x, y, source = load_houses(np.random.default_rng(0))
    assert x.shape == (20640, 8)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert "synthetic stand-in" in source
    assert "not found" in source
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0)
