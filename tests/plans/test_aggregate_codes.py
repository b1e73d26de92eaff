"""Compute nodes aggregate by key code (small key universe) or by sorting (huge universe):
both answer exactly like DuckDB, on one or several shards."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.backends import execute
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


def test_object_columns_are_coded_like_a_sorted_search() -> None:
    """Strings are coded by a dict lookup and their domain built from a set: the same codes
    and domain as numpy's comparison sort and binary search."""
    from crowdhide.plans.aggregate import _domain, _encode

    g = np.random.default_rng(3)
    words = np.array(["x-1", "a", "b b", "zz", "é", "10", "9"], dtype=object)
    values = words[g.integers(0, len(words), 2000)]
    domain = _domain(values)
    assert domain.dtype == object
    assert domain.tolist() == np.unique(values).tolist()
    codes = _encode({"w": values}, ["w"], [domain])
    assert codes.tolist() == np.searchsorted(np.unique(values), values).tolist()
    with pytest.raises(ValueError, match="outside its declared domain"):
        _encode({"w": values}, ["w"], [domain[1:]])
    # Unhashable objects fall back to numpy's own sort and search.
    lists = np.empty(3, dtype=object)
    lists[0], lists[1], lists[2] = [1], [0], [1]
    assert list(_domain(lists)) == [[0], [1]]
