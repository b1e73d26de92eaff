"""Execution model of Ladjel et al. (Examples 1-6): clusters, path composition, errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from crowdhide.plans.certify import LocalBoundAccountant, certify


def _noop(inbox: object, rng: object) -> dict[str, np.ndarray]:
    return {}


def _example_table() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "A": rng.integers(18, 80, size=200),
        "B": rng.integers(16, 40, size=200),
        "I": rng.normal(100.0, 10.0, size=200),
    }


def _example_setup(C: int = 4):  # type: ignore[no-untyped-def]
    q = AggregateQuery.from_sql("SELECT A, B, AVG(I) FROM D GROUP BY GROUPING SETS ((A), (B))")
    return aggregate_plan(_example_table(), q, compute_nodes=C)


def test_example1_sources_route_by_grouping_value() -> None:
    # Example 1: a source with (a_i, b_j, i_k) sends to c_1^i and c_2^j.
    setup = _example_setup()
    run = execute(setup.plan, rng=0)
    t = run.transcript
    src, dst = t.between("S", "C0")
    domain = np.unique(_example_table()["A"])
    expected = np.searchsorted(domain, _example_table()["A"]) * 4 // len(domain)
    assert np.array_equal(dst[np.argsort(src)], expected)
    src, dst = t.between("S", "C1")
    domain = np.unique(_example_table()["B"])
    expected = np.searchsorted(domain, _example_table()["B"]) * 4 // len(domain)
    assert np.array_equal(dst[np.argsort(src)], expected)


def test_example2_node_types_and_simplicity() -> None:
    plan = _example_setup().plan
    assert [r.receiver for r in plan.routes_from("S")] == ["C0", "C1"]  # two outputs
    assert not plan.is_simple("S")  # a source is split into s1, s2 (Definition 3)
    assert plan.is_simple("C0")
    assert plan.is_simple("C1")
    assert plan.routes_from("R") == ()


def test_example3_communication_graph_labels() -> None:
    plan = _example_setup().plan
    run = execute(plan, rng=1)
    t = run.transcript
    first, size = t.groups["S"]
    from_sources = (t.source >= first) & (t.source < first + size)
    to_c0 = (t.target >= t.groups["C0"][0]) & (t.target < t.groups["C0"][0] + t.groups["C0"][1])
    assert set(t.order[from_sources & to_c0].tolist()) == {0}  # edge labelled 1 (first)
    assert set(t.order[from_sources & ~to_c0].tolist()) == {1}  # edge labelled 2
    for g in ("C0", "C1"):
        src, dst = t.between(g, "R")
        assert sorted(src.tolist()) == list(range(plan.group(g).size))
        assert set(dst.tolist()) == {0}


def test_example4_five_clusters() -> None:
    clusters = _example_setup().plan.clusters()
    assert [c.name for c in clusters] == ["S/S->C0", "S/S->C1", "C0/C0->R", "C1/C1->R", "R"]
    assert [c.data_dependent for c in clusters] == [True, True, False, False, False]
    assert clusters[0].targets == 4
    assert clusters[2].targets == 1


def test_scrambler_layer_clusters_are_parallel() -> None:
    plan = protect(_example_setup().plan, sigma=0.2, per_scrambler=30, dummies=5)
    c = plan.clusters()[0]
    assert c.count == 7
    assert c.partition_sizes == (20, 30)
    assert c.members == ("S/S->C0", "S->C0#scramblers")
    assert plan.levels()["C0"] == 2  # source -> scrambler -> compute


def test_groups_by_level_follow_the_levels_in_declaration_order() -> None:
    plan = protect(_example_setup().plan, sigma=0.2, per_scrambler=30, dummies=5)
    declared = [g.name for g in plan.groups]
    assert declared == ["S", "C0", "C1", "R", "S->C0#scramblers", "S->C1#scramblers"]
    # the scramblers, declared last, run between the sources and the compute groups
    assert plan.groups_by_level() == [
        ("S",),
        ("S->C0#scramblers", "S->C1#scramblers"),
        ("C0", "C1"),
        ("R",),
    ]


def test_unprotected_data_route_is_not_private() -> None:
    cert = certify(_example_setup().plan, delta=1e-6, accountant=LocalBoundAccountant())
    assert math.isinf(cert.privacy.epsilon)
    assert cert.clusters[0].privacy.source == "unprotected"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda b: b.route("S", "X", by=lambda s: s["a"]),
            "routes\\[S->X\\].receiver must name a group",
        ),
        (lambda b: b.route("C", "C", kind="fixed"), "must not loop"),
        (lambda b: b.route("C", "S", kind="fixed").route("S", "C", by=lambda s: s["a"]), "acyclic"),
        (lambda b: b.compute("C", size=2, process=_noop), "group names must be unique"),
        (lambda b: b.route("S", "C", kind="data"), "routes\\[S->C\\].by"),
    ],
)
def test_invalid_plans_name_the_field(build, message) -> None:  # type: ignore[no-untyped-def]
    b = PlanBuilder().sources("S", {"a": np.array([0, 1])}).compute("C", size=2, process=_noop)

    def attempt() -> None:
        build(b)
        b.build()

    with pytest.raises((ValueError, TypeError), match=message):
        attempt()


def test_invalid_groups_and_protection() -> None:
    from crowdhide.plans import NodeGroup

    with pytest.raises(ValueError, match=re.escape("groups[S].data['b'] must have 2 rows")):
        NodeGroup("S", 2, "source", data={"b": np.arange(3)})
    with pytest.raises(ValueError, match="columns must have equal lengths"):
        PlanBuilder().sources("S", {"a": np.arange(2), "b": np.arange(3)})
    plan = _example_setup().plan
    with pytest.raises(ValueError, match="local_dummies must be <= T-1 = 3"):
        protect(plan, sigma=0.5, local_dummies=4)
    with pytest.raises(ValueError, match=re.escape("sigma must be <= 1.0")):
        protect(plan, sigma=1.5)
    with pytest.raises(ValueError, match="per_scrambler \\(n\\) must be >= 1"):
        protect(plan, per_scrambler=0)
    with pytest.raises(ValueError, match="need a scrambler layer"):
        protect(plan, dummies=3)
    with pytest.raises(ValueError, match="must name a data route"):
        protect(plan, route="C0->R", sigma=0.5)
    with pytest.raises(ValueError, match="local_dummies must be 0 when scramblers"):
        protect(plan, local_dummies=1, per_scrambler=10)
    with pytest.raises(ValueError, match="already protected"):
        protect(protect(plan, sigma=0.5), sigma=0.5)


def test_routing_function_output_is_checked() -> None:
    b = PlanBuilder().sources("S", {"a": np.array([0, 5])}).compute("C", size=2, process=_noop)
    b.route("S", "C", by=lambda s: s["a"])
    with pytest.raises(
        ValueError, match=re.escape("routes[S->C].by must return targets in [0, 2)")
    ):
        execute(b.build(), rng=0)
    b2 = PlanBuilder().sources("S", {"a": np.array([0.0, 1.0])}).compute("C", size=2, process=_noop)
    b2.route("S", "C", by=lambda s: s["a"])
    with pytest.raises(TypeError, match="integer targets"):
        execute(b2.build(), rng=0)
