"""Sampling-corrected estimates: exact coverage of the count interval, unbiasedness and
coverage of the whole pipeline over seeds, and the CSV answer format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.backends import execute
from crowdhide.plans import protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan, exact_answer
from crowdhide.plans.estimates import (
    count_interval,
    estimate_rows,
    inclusion_probabilities,
    inclusion_probability,
    write_answer,
)


@pytest.mark.parametrize("p", [0.3, 0.55, 0.825, 0.97])
@pytest.mark.parametrize("N", [0, 1, 5, 40, 300])
def test_count_interval_exact_coverage(N: int, p: float) -> None:
    """Coverage of N, summed exactly over the binomial law of n, is at least 95 %."""
    n = np.arange(N + 1)
    low, high = count_interval(n, p)
    inside = (low <= N) & (high >= N)
    coverage = float(binom.pmf(n, N, p)[inside].sum())
    assert coverage >= 0.95 - 1e-12
    # And it is not trivially wide: the interval of the expected n excludes 3N + 20.
    assert high[int(N * p)] < 3 * N + 20


def test_count_interval_without_sampling_is_exact() -> None:
    low, high = count_interval([0, 3, 1000], 1.0)
    assert low.tolist() == [0.0, 3.0, 1000.0]
    assert high.tolist() == [0.0, 3.0, 1000.0]


def test_inclusion_probability_validates() -> None:
    with pytest.raises(ValueError, match="sigma"):
        inclusion_probability(sigma=1.5, targets=3)
    with pytest.raises(ValueError, match="targets"):
        inclusion_probability(sigma=0.5, targets=0)


def _population(rng: np.random.Generator, rows: int) -> dict[str, np.ndarray]:
    group = rng.choice(4, size=rows, p=[0.5, 0.3, 0.15, 0.05])
    value = rng.gamma(2.0, 10.0, size=rows) + 5.0 * group
    return {"g": group, "v": value}


SQL = "SELECT g, COUNT(*), SUM(v), AVG(v) FROM D GROUP BY g"


def _runs(sigma: float, seeds: int) -> tuple[list[dict], list[list[dict]], float]:
    table = _population(np.random.default_rng(1), 400)
    query = AggregateQuery.from_sql(SQL)
    setup = aggregate_plan(table, query, compute_nodes=4)
    plan = protect(setup.plan, route="S->C0", sigma=sigma, per_scrambler=50, dummies=5)
    pis = inclusion_probabilities(plan, setup.routes)
    runs = [estimate_rows(setup, execute(plan, rng=seed).states["R"], pis) for seed in range(seeds)]
    return exact_answer(table, query), runs, pis["S->C0"]


def test_pipeline_unbiased_and_covered() -> None:
    """Over 300 seeds of the real engine: mean estimate ≈ truth, intervals cover ≈ 95 %."""
    exact, runs, pi = _runs(sigma=0.6, seeds=300)
    assert pi == pytest.approx(1 - 0.6 + 0.6 / 4)
    for ref in exact:
        g = ref["g"]
        per_seed = [next((r for r in rows if r["g"] == g), None) for rows in runs]
        for label, min_cover in (("count(*)", 0.94), ("sum(v)", 0.88), ("avg(v)", 0.88)):
            est = np.array([r[label] if r else 0.0 for r in per_seed])
            if label == "avg(v)":
                est = est[[r is not None for r in per_seed]]
            # Unbiased: the mean over seeds is within 4 standard errors of the truth.
            se = est.std(ddof=1) / np.sqrt(len(est))
            assert abs(est.mean() - ref[label]) <= 4 * se + 1e-9, (g, label)
            inside = [
                r is not None and r[f"{label} low"] <= ref[label] <= r[f"{label} high"]
                for r in per_seed
            ]
            assert np.mean(inside) >= min_cover, (g, label, np.mean(inside))


def test_raw_count_would_be_biased() -> None:
    """The test above can fail: the raw count (no 1/π) misses the truth by far."""
    exact, runs, pi = _runs(sigma=0.6, seeds=40)
    biggest = max(exact, key=lambda r: r["count(*)"])
    raw = np.mean([next(r for r in rows if r["g"] == biggest["g"])["tuples_used"] for rows in runs])
    assert raw < 0.7 * biggest["count(*)"]
    assert raw / pi == pytest.approx(biggest["count(*)"], rel=0.1)


def test_write_answer_keeps_sql_order_integer_counts_stripped_keys(tmp_path: Path) -> None:
    table = {
        "name": np.array([" a", " b", " a"], dtype=object),
        "x": np.array([1.0, 2.0, 4.0]),
    }
    query = AggregateQuery.from_sql("SELECT COUNT(*), name, AVG(x) FROM D GROUP BY name")
    rows = exact_answer(table, query)
    path = write_answer(tmp_path / "exact.csv", rows, query)
    with path.open() as handle:
        got = list(csv.reader(handle))
    assert got[0] == ["count(*)", "name", "avg(x)", "grouping_set"]
    assert got[1] == ["2", "a", "2.5", "0"]
    assert got[2] == ["1", "b", "2.0", "0"]
