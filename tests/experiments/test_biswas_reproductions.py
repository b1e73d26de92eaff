"""Biswas, Jung, Palamidessi: Tables IV–VI and Figs. 3–7 reproductions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.experiments.biswas_tables import table4_rows
from crowdhide.experiments.registry import discover, run_experiment
from tests.cli_helpers import run_cli

#: Table IV recomputed independently with the corrected v_s (3 significant digits):
#: row label -> δ at ε = 0.1, 0.5, 1.0, 1.5 (0 from ε = ε0 on).
CORRECTED = {
    "eps0=1": (8.97e-5, 9.93e-26, 0, 0),
    "eps0=2": (6.15e-3, 2.61e-8, 2.70e-18, 9.67e-32),
    "eps0=3": (2.76e-2, 2.55e-4, 1.03e-7, 7.68e-12),
    "n=50": (1.61e-2, 1.70e-5, 1.83e-10, 5.79e-17),
    "n=100": (6.15e-3, 2.61e-8, 2.70e-18, 9.67e-32),
    "n=150": (2.96e-3, 4.86e-11, 4.84e-26, 1.01e-45),
    "k=5": (1.75e-2, 1.65e-5, 2.07e-11, 1.17e-20),
    "k=10": (6.15e-3, 2.61e-8, 2.70e-18, 9.67e-32),
    "k=15": (2.90e-3, 1.33e-10, 1.08e-23, 3.89e-40),
}
CORRECTED_EPS3 = {"eps0=3": (3.11e-17, 5.20e-26)}  # ε = 2.0, 2.5
#: The three cells the printed formula misses by more than 1.5 % (note §5.2).
KNOWN_MISSES = {("n=50", 0.1), ("n=50", 1.0), ("k=15", 0.1)}


@pytest.fixture(scope="module")
def table4() -> list[dict[str, Any]]:
    return table4_rows(quick=True)


def test_table4_printed_formula_reproduces_the_paper(table4: list[dict[str, Any]]) -> None:
    assert len(table4) == 9 * 7
    for r in table4:
        if r["paper"] == 0:
            assert r["log10_printed_formula"] == -math.inf, r
            continue
        rel = abs(10 ** (r["log10_printed_formula"] - math.log10(r["paper"])) - 1)
        if (r["row"], r["epsilon"]) in KNOWN_MISSES:
            assert rel > 0.015, r
            assert not r["printed_reproduces_paper"], r
        else:
            assert rel <= 0.015, r
            assert r["printed_reproduces_paper"], r


def test_table4_corrected_values(table4: list[dict[str, Any]]) -> None:
    for r in table4:
        eps = r["epsilon"]
        if eps >= r["eps0"]:
            assert r["log10_corrected"] == -math.inf
            continue
        if r["row"] in CORRECTED_EPS3 and eps >= 2.0:
            expected = CORRECTED_EPS3[r["row"]][int((eps - 2.0) / 0.5)]
        else:
            expected = CORRECTED[r["row"]][(0.1, 0.5, 1.0, 1.5).index(eps)]
        # 3 significant digits in the note: within half a unit of the third digit.
        assert abs(10 ** (r["log10_corrected"] - math.log10(expected)) - 1) < 6e-3, r


def test_table4_certificates_are_above_every_lower_bound(table4: list[dict[str, Any]]) -> None:
    for r in table4:
        cert = r["certified_delta"]
        if r["epsilon"] >= r["eps0"]:  # shuffled eps0-LDP reports are (eps0, 0)-DP
            assert cert == 0.0
            continue
        lower = r["log10_lower_bound_true_delta"]
        assert r["log10_corrected"] <= lower + 1e-9
        assert lower <= math.log10(cert) + 1e-6, r
        assert r["paper_below_true_delta"]  # every non-zero published value is below the truth


def test_every_new_target_is_registered() -> None:
    names = set(discover())
    new = {"table4", "table5", "table6", "fig3", "fig4-5", "fig6-7"}
    assert {f"biswas-{x}" for x in new} <= names


def _run(name: str, tmp_path: Path) -> Any:
    result = run_experiment(name, tmp_path / name, seed=1, quick=True)
    for path in result.files:
        assert path.is_file(), path
        assert path.stat().st_size > 0, path
    assert any(p.suffix == ".png" for p in result.files)
    assert any(p.suffix in (".csv", ".json") for p in result.files)
    return result


def test_table4_cli_quick(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = run_cli(capsys, "reproduce", "biswas-table4", "--quick", "--out", str(tmp_path))
    assert out.code == 0, out.err
    assert "33/36 non-zero cells" in out.out
    assert "36/36 non-zero paper values lie below" in out.out


@pytest.mark.parametrize("name", ["biswas-table5", "biswas-table6"])
def test_individual_utility_tables_quick(name: str, tmp_path: Path) -> None:
    result = _run(name, tmp_path)
    rows = result.data["rows"]
    assert len(rows) == 14
    for r in rows:
        # The paper's delta for x0 is 0 at eps = eps0 = 4 in both versions of eq. (6).
        assert r["log10_delta_x0_printed"] == -math.inf == r["log10_delta_x0_corrected"]
        assert r["delta"] == 1e-6
        assert r["certified_epsilon"] <= r["epsilon"] == 4.0
        assert r["eps0_calibrated"] >= 4.0
        assert 0.0 <= r["gaussian_mean"] < 1.0
        assert 0.0 <= r["shuffle_inv_mean"] < 1.0
    assert any("delta = 0 at eps = eps0 = 4" in line for line in result.comparison)


def test_fig3_quick(tmp_path: Path) -> None:
    result = _run("biswas-fig3", tmp_path)
    grids = {r["dataset"]: r["cells"] for r in result.data["rows"]}
    assert grids == {"gowalla-sf": 24 * 17, "gowalla-paris": 16 * 12}


def test_fig4_5_quick(tmp_path: Path) -> None:
    result = _run("biswas-fig4-5", tmp_path)
    assert {p.name for p in result.files} >= {"biswas_fig4.png", "biswas_fig5.png"}
    for r in result.data["rows"]:
        assert r["tvd_gaussian"] < r["tvd_shuffle_inv"] < r["tvd_shuffle"]


def test_fig6_7_quick(tmp_path: Path) -> None:
    result = _run("biswas-fig6-7", tmp_path)
    rows = result.data["rows"]
    assert len(rows) == 2 * 2 * 2
    for r in rows:
        assert len(r["tvd_gaussian"]) == 3
        assert r["certified_epsilon"] <= r["epsilon"]
        assert r["delta"] == 1e-6
    text = "\n".join(result.comparison)
    assert "tends to vanish" in text
    assert "does NOT vanish" in text
    saved = json.loads((tmp_path / "biswas-fig6-7" / "biswas_fig6_7.json").read_text())
    assert len(saved) == len(rows)


def test_gowalla_targets_run_without_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROWDHIDE_DATA_DIR", str(tmp_path / "absent"))
    result = _run("biswas-fig3", tmp_path)
    assert all(r["stand_in"] for r in result.data["rows"])
    assert any("stand-in" in line for line in result.comparison)
    counts = [r["checkins"] for r in result.data["rows"]]
    assert counts == [123_026, 10_079]
    assert np.all(np.array(counts) > 0)
    heat = _run("biswas-fig4-5", tmp_path / "heat")
    assert any("stand-in" in line for line in heat.comparison)
