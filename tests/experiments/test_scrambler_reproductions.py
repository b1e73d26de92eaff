"""Ladjel et al. reproductions (quick mode) and the vectorised scrambler simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdhide.accounting.scrambler import enumeration as brute
from crowdhide.experiments.ladjel_scramblers import simulate_scrambler_counts
from crowdhide.experiments.registry import run_experiment


def test_simulator_matches_exact_distribution() -> None:
    T, sigma, d = 3, 0.3, 2
    inputs = [2, 2, 0]
    counts = simulate_scrambler_counts(
        targets=T,
        sigma=sigma,
        inputs=inputs,
        dummies=d,
        runs=400_000,
        rng=np.random.default_rng(1),
        chunk=100_000,
    )
    exact = brute.count_distribution(targets=T, sigma=sigma, inputs=inputs, dummies=d).ravel()
    empirical = counts / counts.sum()
    assert counts.sum() == 400_000
    assert np.all(counts[exact == 0] == 0)
    # Total variation of 400k samples over <= 28 outputs: well below 0.01.
    assert 0.5 * np.abs(empirical - exact).sum() < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ladjel-fig3", "ladjel-fig5"])
def test_reproductions_quick(tmp_path: Path, name: str) -> None:
    result = run_experiment(name, tmp_path / name, seed=0, quick=True)
    assert result.files
    for f in result.files:
        assert f.exists()
        assert f.stat().st_size > 0
    assert result.comparison


@pytest.mark.slow
def test_fig7_quick_values_match_note(tmp_path: Path) -> None:
    result = run_experiment("ladjel-fig7", tmp_path, seed=0, quick=True)
    for f in result.files:
        assert f.stat().st_size > 0
    rows = {(r["sigma"], r["n"], r["dummies"]): r for r in result.data["rows"]}
    assert rows[(0.2, 100, 50)]["lemma2-exact"] == pytest.approx(2.3268, abs=1e-4)
    assert rows[(0.2, 100, 1000)]["bennett"] == pytest.approx(0.6488, abs=2e-4)
    assert rows[(0.2, 100, 1000)]["bennett-published"] == pytest.approx(0.2680, abs=2e-4)
    assert any("overstates privacy" in line for line in result.comparison)


@pytest.mark.slow
def test_fig6_quick(tmp_path: Path) -> None:
    result = run_experiment("ladjel-fig6", tmp_path, seed=0, quick=True)
    assert result.data["runs"] == 800_000
    assert any("12341" in line for line in result.comparison)
