"""The runner's report: costs count what the countermeasures add, and report.html via the API."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from crowdhide.plans.runner import prepare, run_spec
from crowdhide.plans.spec import parse_spec
from crowdhide.report.html import run_with_html

KMEANS = {
    "name": "kmeans-small",
    "data": {"generator": "synthetic", "rows": 1500, "seed": 3},
    "query": {"kind": "kmeans", "k": 4, "iterations": 2},
    "countermeasures": {"sigma": 0.5, "n": 100, "d": 20},
    "privacy": {"delta": 1e-4},
    "run": {"seed": 0, "plots": False, "transcript_csv_max_rows": 0},
}
AGGREGATE = {
    "name": "diabetes-small",
    "data": {"generator": "diabetes", "rows": 1500, "seed": 7},
    "query": {
        "sql": "SELECT age_range, bmi, COUNT(*) FROM D GROUP BY GROUPING SETS ((age_range), (bmi))",
        "compute_nodes": 4,
    },
    "countermeasures": {"sigma": 0.2, "n": 100, "d": 20},
    "privacy": {"delta": 1e-4},
    "run": {"seed": 0, "plots": False, "transcript_csv_max_rows": 0},
}


def test_kmeans_unprotected_messages_count_the_plan_that_ran(tmp_path: Path) -> None:
    """With scramblers the centroids go back through relays (one message of K centroids per
    source); the unprotected count is that plan without countermeasures, counted by hand."""
    report = run_spec(parse_spec(KMEANS), tmp_path)
    rows, k, iterations, relays = 1500, 4, 2, math.ceil(1500 / 100)
    data = rows * iterations  # one message per source and iteration
    back = (iterations - 1) * (k * relays + rows)  # centroids → relays → sources
    chain = k * (iterations - 1) + k  # centroid → next iteration, last → result node
    assert report.costs.unprotected_messages == data + back + chain


@pytest.mark.parametrize("spec", [KMEANS, AGGREGATE], ids=["kmeans", "aggregate"])
def test_added_messages_are_those_of_the_data_routes(spec: dict[str, Any], tmp_path: Path) -> None:
    """Countermeasures only add messages on data routes: added = Σ (messages − senders)."""
    report = run_spec(parse_spec(spec), tmp_path)
    sets = 2 if spec is AGGREGATE else spec["query"]["iterations"]
    senders = spec["data"]["rows"] * sets
    expected = (report.costs.data_route_overhead - 1.0) * senders
    assert report.costs.added_messages == pytest.approx(expected, abs=1e-6)
    assert report.costs.added_messages > 0
    assert report.costs.overhead > 1.0
    # report.json keeps its document: the same sections in the same order.
    answer = (
        ["result", "exact", "estimates", "inclusion_probability", "traffic", "route_names"]
        if spec is AGGREGATE
        else ["result", "exact"]
    )
    assert list(report.to_dict()) == [
        *["provenance", "name", "query", "data", "mode", "target", "target_met", "routes"],
        *["countermeasures", "clusters_per_path", "privacy", "protection", "execution"],
        *answer,
        *["utility", "costs", "timings", "files"],
    ]
    written = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert list(written) == list(report.to_dict())


def test_html_report_through_the_api(tmp_path: Path) -> None:
    report = run_with_html(parse_spec(AGGREGATE), tmp_path)
    assert Path(report.files["html"]).is_file()
    written = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert written["files"]["html"] == str(tmp_path / "report.html")
    assert written["files"] == dict(report.files)
    assert written["privacy"]["epsilon"] == pytest.approx(report.privacy.epsilon, rel=1e-15)
    assert "inputs" not in written  # set by the CLI for --json only
    assert written["provenance"]["command"] is None  # started from Python, not the CLI


def test_even_delta_split_meets_its_own_target() -> None:
    """Six scrambled clusters per path: δ/6 summed six times used to exceed δ by one ulp; the
    certifier's share is rounded down so the path's δ stays within the budget, and the
    target is checked exactly (a truly smaller target δ is missed)."""
    spec = parse_spec(
        {
            "name": "six-sets",
            "data": {"generator": "aggregate", "rows": 600, "attributes": 6, "intervals": 5},
            "query": {
                "sql": "SELECT g1, g2, g3, g4, g5, g6, COUNT(*) FROM D GROUP BY GROUPING SETS "
                "((g1), (g2), (g3), (g4), (g5), (g6))",
                "compute_nodes": 5,
            },
            "privacy": {"epsilon": 50.0, "delta": 1e-4},
            "countermeasures": {"sigma": 0.5, "n": 100, "d": 20},
            "run": {"plots": False},
        }
    )
    prepared = prepare(spec)
    assert prepared.privacy.delta <= 1e-4  # 1.0000000000000002e-4 before the rounded share
    assert prepared.privacy.meets_target is True
    # The same certificate against a target δ it really exceeds.
    tighter = replace(prepared, spec=replace(spec, delta=0.99e-4))
    assert tighter.privacy.meets_target is False


def test_channels_count_distinct_peers_like_np_unique() -> None:
    import numpy as np

    from crowdhide.engine import Transcript
    from crowdhide.plans.runner import _channels

    g = np.random.default_rng(5)
    n, total = 20_000, 600
    src = g.integers(0, total, n).astype(np.int32)
    dst = g.integers(0, total, n).astype(np.int32)
    zeros = np.zeros(n, dtype=np.int32)
    groups = {"A": (0, 100), "B": (100, 500)}
    t = Transcript(np.zeros(n, np.int16), src, dst, zeros, zeros, groups)
    pairs = np.unique(src.astype(np.int64) * total + dst)
    degree = np.bincount(pairs // total, minlength=total) + np.bincount(
        pairs % total, minlength=total
    )
    assert _channels(t) == {k: int(degree[f : f + s].max()) for k, (f, s) in groups.items()}
