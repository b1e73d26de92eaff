"""Theorem 1 of Ladjel et al. (Examples 5-6, Remark 1): composition along data paths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from crowdhide.plans.certify import LocalBoundAccountant, certify
from crowdhide.plans.model import ExecutionPlan, PlanBuilder
from crowdhide.plans.semantics import compose_along_paths, data_clusters_per_path, protect


def _noop(inbox: object, rng: object) -> dict[str, np.ndarray]:
    return {}


def _example_plan() -> ExecutionPlan:
    rng = np.random.default_rng(0)
    table = {
        "A": rng.integers(18, 80, size=200),
        "B": rng.integers(16, 40, size=200),
        "I": rng.normal(100.0, 10.0, size=200),
    }
    q = AggregateQuery.from_sql("SELECT A, B, AVG(I) FROM D GROUP BY GROUPING SETS ((A), (B))")
    return aggregate_plan(table, q, compute_nodes=4).plan


def test_example5_path_sums_clusters_of_one_tuple() -> None:
    plan = _example_plan()
    eps, delta, rows = compose_along_paths(plan, {"S/S->C0": (0.7, 1e-5), "S/S->C1": (0.4, 2e-5)})
    assert eps == pytest.approx(1.1)
    assert delta == pytest.approx(3e-5)
    assert len(rows) == 1
    assert rows[0][0].clusters[:2] == ("S/S->C0", "S/S->C1")


def test_example6_disjoint_contributors_take_the_max() -> None:
    b = PlanBuilder()
    b.sources("Sa", {"a": np.array([0, 1, 1])})
    b.sources("Sb", {"b": np.array([1, 0])})
    b.compute("C1", size=2, process=_noop)
    b.compute("C2", size=2, process=_noop)
    b.result("R", process=_noop)
    b.route("Sa", "C1", by=lambda s: s["a"])
    b.route("Sb", "C2", by=lambda s: s["b"])
    b.route("C1", "R", kind="fixed")
    b.route("C2", "R", kind="fixed")
    plan = b.build()
    assert [p.clusters for p in plan.data_paths()] == [
        ("Sa/Sa->C1", "C1/C1->R", "R"),
        ("Sb/Sb->C2", "C2/C2->R", "R"),
    ]
    eps, delta, _ = compose_along_paths(plan, {"Sa/Sa->C1": (0.7, 1e-5), "Sb/Sb->C2": (0.4, 2e-5)})
    assert (eps, delta) == (0.7, 2e-5)


def test_theorem1_iterations_add_up_kmeans_style() -> None:
    # Remark 1: unrolled iterations are logical groups of the same devices -> one path.
    b = PlanBuilder()
    x = {"g": np.arange(6) % 3}
    for i in range(3):
        b.sources(f"src@{i}", x, device="S")
        b.compute(f"c@{i}", size=3, process=_noop)
        b.route(f"src@{i}", f"c@{i}", by=lambda s: s["g"])
        if i:
            b.route(f"c@{i - 1}", f"src@{i}", kind="broadcast")
    plan = protect(b.build(), sigma=0.5)
    cert = certify(plan, delta=1e-6, accountant=LocalBoundAccountant())
    per = math.log1p(0.5 * 3 / 0.5)
    assert cert.privacy.epsilon == pytest.approx(3 * per)
    assert len(cert.paths) == 1
    assert cert.privacy.notes  # iterations after the first route on values computed from others


def test_theorem1_rejects_missing_or_unknown_clusters() -> None:
    plan = _example_plan()
    with pytest.raises(ValueError, match="missing data-dependent cluster 'S/S->C1'"):
        compose_along_paths(plan, {"S/S->C0": (1.0, 0.0)})
    with pytest.raises(ValueError, match="unknown cluster 'nope'"):
        compose_along_paths(plan, {"nope": (1.0, 0.0)})


def test_data_clusters_per_path_counts_the_worst_path() -> None:
    assert data_clusters_per_path(_example_plan()) == 2
    b = PlanBuilder()
    b.sources("S", {"a": np.array([0, 1])})
    b.compute("C", size=2, process=_noop)
    b.route("S", "C", kind="fixed")
    assert data_clusters_per_path(b.build()) == 0
