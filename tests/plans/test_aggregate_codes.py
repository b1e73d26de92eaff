"""Compute nodes aggregate by key code (small key universe) or by sorting (huge universe):
both answer exactly like DuckDB, on one or several shards."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.engine import execute
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan, compare, exact_answer


@pytest.mark.parametrize("domain", [5, 300])  # universe 125 (by code) or 2.7e7 (sorted)
def test_both_aggregation_paths_match_duckdb(domain: int) -> None:
    g = np.random.default_rng(0)
    table = {
        "a": g.integers(0, domain, 400),
        "b": g.integers(0, domain, 400),
        "c": g.integers(0, domain, 400),
        "v": g.normal(size=400),
    }
    query = AggregateQuery.from_sql(
        "SELECT a, b, c, SUM(v), MIN(v), MAX(v), COUNT(*) FROM T GROUP BY a, b, c"
    )
    setup = aggregate_plan(
        table, query, compute_nodes=3, domains={k: list(range(domain)) for k in "abc"}
    )
    for shards in (1, 2):
        run = execute(setup.plan, rng=0, shards=shards, block_size=150)
        check = compare(setup.result_rows(run.states["R"]), exact_answer(table, query), query)
        assert check["groups_missing"] == 0
        assert check["groups_extra"] == 0
        assert max(check["max_rel_error"].values()) < 1e-12
