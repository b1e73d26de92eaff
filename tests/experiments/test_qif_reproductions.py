"""Jurado et al. reproductions: quick runs write files and match the reference values."""

from __future__ import annotations

from pathlib import Path

import pytest

from crowdhide.experiments.registry import run_experiment

NAMES = [
    *(
        pytest.param(f"jurado-fig{i}", marks=() if i == 3 else pytest.mark.slow)
        for i in range(2, 8)
    ),
    pytest.param("qif-scrambler", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name", NAMES)
def test_quick_reproduction(name: str, tmp_path: Path) -> None:
    result = run_experiment(name, tmp_path, seed=0, quick=True)
    assert result.files
    for path in result.files:
        assert path.exists()
        assert path.stat().st_size > 0
    assert result.comparison
    assert not [line for line in result.comparison if "MISMATCH" in line]
    assert sum("[OK]" in line for line in result.comparison) >= 3
