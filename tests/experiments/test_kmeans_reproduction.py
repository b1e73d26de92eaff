"""ladjel-kmeans: K-means executed protected vs unprotected, ε certified for the executed plan."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.experiments.claims import HOLDS, NOT_HOLD
from crowdhide.experiments.ladjel_kmeans import (
    DELTA,
    KmeansScale,
    kmeans_verdicts,
    run_kmeans,
)
from crowdhide.experiments.registry import run_experiment
from crowdhide.plans.certify import default_accountant
from crowdhide.plans.data import synth_kmeans

SMALL = KmeansScale(
    rows=None,
    iterations=3,
    k=4,
    configs=((0.9, 50, 0), (0.9, 50, 20), (0.9, 50, 80), (0.9, 200, 80)),
)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Any:
    X, y = synth_kmeans(rows=1200, dim=6, clusters=4, rng=3)
    out = tmp_path_factory.mktemp("km")
    return run_kmeans(out, X[:800], X[800:], y[800:], SMALL, source="blobs", seed=1)


def test_runs_write_files_and_count_messages_like_the_formula(small: Any) -> None:
    assert {Path(f).suffix for f in small.files} == {".csv", ".json", ".png"}
    rows = small.data["runs"]
    assert rows[0]["run"] == "unprotected"
    assert math.isinf(rows[0]["epsilon"])
    for r in rows[1:]:
        assert r["data_messages"] == r["messages_formula"]
        # Sampling at σ keeps the true target w.p. 1 − σ + σ/K: about 32.5% of 800 sources.
        assert abs(r["real_used_mean"] - 800 * (0.1 + 0.9 / 4)) < 5 * math.sqrt(800 * 0.25)


def test_certified_epsilon_is_iterations_times_the_per_cluster_accountant(small: Any) -> None:
    acct = default_accountant()
    for r in small.data["runs"][1:]:
        one = acct.scrambled(
            targets=SMALL.k, sigma=r["sigma"], n=r["n"], dummies=r["d"],
            delta=DELTA / SMALL.iterations, capped=False,
        )  # fmt: skip
        assert r["epsilon"] == pytest.approx(SMALL.iterations * one.epsilon, rel=1e-12)
        assert r["delta"] <= DELTA


def test_claims_are_judged_from_the_runs(small: Any) -> None:
    outcomes = {v.claim.text: v.outcome for v in small.verdicts}
    assert outcomes["messages of a plan = the formula"] == HOLDS
    assert outcomes["ε decreases with d, the first dummies matter most"] == HOLDS
    assert len(outcomes) == 6


def _rows(ri: list[float], eps: list[float]) -> list[dict[str, Any]]:
    base = {"run": "unprotected", "rand_index": 0.88, "epsilon": math.inf, "n": 0, "d": 0}
    configs = [(100, 0), (100, 50), (100, 200), (500, 200)]
    return [base] + [
        {"run": f"n={n} d={d}", "sigma": 0.9, "n": n, "d": d, "rand_index": a, "epsilon": e,
         "network_load": 2.0 + d / 100, "data_messages": 1, "messages_formula": 1}
        for (n, d), a, e in zip(configs, ri, eps, strict=True)
    ]  # fmt: skip


def test_verdicts_can_fail() -> None:
    fine = kmeans_verdicts(_rows([0.88, 0.879, 0.881, 0.88], [1.5, 1.2, 0.8, 0.6]))
    assert all(v.outcome == HOLDS for v in fine)
    worse = kmeans_verdicts(_rows([0.80, 0.879, 0.881, 0.88], [1.5, 1.6, 0.8, 0.9]))
    outcome = {v.claim.text: v.outcome for v in worse}
    assert outcome["the Rand index at σ = 0.9 is very close to the one without sampling"] != HOLDS
    assert outcome["ε decreases with d, the first dummies matter most"] == NOT_HOLD
    assert outcome["a higher individual load gives better privacy"] == NOT_HOLD


def test_without_mnist_the_target_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CROWDHIDE_DATA_DIR", str(tmp_path / "absent"))
    result = run_experiment("ladjel-kmeans", tmp_path / "out", seed=0, quick=True)
    assert not result.verdicts
    assert result.comparison[0].startswith("skipped: MNIST not found")
    assert str(tmp_path) not in result.comparison[0]  # no machine path in outputs


@pytest.mark.slow
def test_quick_target_on_mnist(tmp_path: Path) -> None:
    from crowdhide.datasets import data_path

    if data_path("mnist") is None:
        pytest.skip("MNIST not in the data folder")
    result = run_experiment("ladjel-kmeans", tmp_path, seed=0, quick=True)
    rows = result.data["runs"]
    assert all(abs(r["rand_index"] - rows[0]["rand_index"]) < 0.02 for r in rows)
    assert np.isfinite([r["epsilon"] for r in rows[1:]]).all()


def test_fig5_local_comparison_at_equal_total_dummies() -> None:
    from crowdhide.experiments._ladjel_local import local_rows, local_verdicts

    rows = local_rows(quick=True)
    for r in rows:  # Theorem 2, recomputed: ln(1 + (1 − σ) T / (σ (d + 1))) below a broadcast
        T, s, d = r["targets"], r["sigma"], r["d_local"]
        want = 0.0 if d == T - 1 else math.log1p((1 - s) * T / (s * (d + 1)))
        assert r["local_pure_epsilon"] == pytest.approx(want, rel=1e-12)
        assert r["total_dummies"] == r["n"] * d
    exact = [r for r in rows if r["scrambler_delta"] == 0.0 and r["d_local"] == 1]
    assert exact
    assert all(r["scrambler_epsilon"] > r["local_pure_epsilon"] for r in exact)
    first, second = local_verdicts(rows)
    assert (first.outcome, second.outcome) == (HOLDS, NOT_HOLD)
    swapped = [
        {
            **r,
            "scrambler_epsilon": r["local_pure_epsilon"],
            "local_pure_epsilon": r["scrambler_epsilon"],
        }
        for r in rows
    ]
    first, second = local_verdicts(swapped)
    assert (first.outcome, second.outcome) == (NOT_HOLD, HOLDS)
