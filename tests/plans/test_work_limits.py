"""Issue #27: the tuple-route limit of a run is its backend's (the tls runtime's is measured
apart), and a refusal names the backend and the largest accepted data.rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crowdhide.errors import InvalidParameterError, ResourceLimitError
from crowdhide.plans.query import load_query
from crowdhide.plans.runner import run_spec
from crowdhide.plans.spec import (
    MAX_TUPLE_ROUTES,
    MAX_TUPLE_ROUTES_TLS,
    WORK_LIMITS,
    RunSpec,
    check_work,
    parse_spec,
    work_backend,
)

SQL = "SELECT g1, g2, COUNT(*) FROM D GROUP BY GROUPING SETS ((g1), (g2))"


def _spec(rows: int) -> RunSpec:
    return parse_spec(
        {
            "data": {"generator": "aggregate", "rows": rows},
            "query": {"sql": SQL},
            "countermeasures": {"sigma": 0.0},
        }
    )


@pytest.mark.parametrize("backend", sorted(WORK_LIMITS))
def test_each_backend_accepts_its_limit_and_refuses_one_more(backend: str) -> None:
    limit = WORK_LIMITS[backend][0]
    with work_backend(backend):
        check_work(limit // 2, 2, what="grouping sets")
        with pytest.raises(ResourceLimitError) as refused:
            check_work(limit // 2 + 1, 2, what="grouping sets")
    text = str(refused.value)
    assert f"on the {backend} backend" in text
    assert f"largest accepted data.rows for this query is {limit // 2}" in text


def test_the_tls_limit_admits_a_million_diabetes_users_and_the_local_one_does_not() -> None:
    assert MAX_TUPLE_ROUTES < 2 * 10**6 <= MAX_TUPLE_ROUTES_TLS
    with pytest.raises(ResourceLimitError, match="is 400000"):
        check_work(10**6, 2, what="grouping sets")
    with work_backend("tls"):
        check_work(10**6, 2, what="grouping sets")
    # The limit is the block's only: outside it the local one applies again.
    with pytest.raises(ResourceLimitError, match="local backend"):
        check_work(10**6, 2, what="grouping sets")


def test_an_unknown_backend_is_refused_naming_it() -> None:
    with pytest.raises(InvalidParameterError, match="'spark'"), work_backend("spark"):
        pass


def test_a_tls_run_beyond_its_limit_is_refused_before_any_host_starts(tmp_path: Path) -> None:
    rows = MAX_TUPLE_ROUTES_TLS // 2 + 1
    with pytest.raises(ResourceLimitError, match=re.escape(f"is {MAX_TUPLE_ROUTES_TLS // 2}")):
        run_spec(_spec(rows), tmp_path / "refused", network={"hosts": 2})
    assert not (tmp_path / "refused").exists()
    with pytest.raises(ResourceLimitError, match="on the local backend"):
        load_query(_spec(MAX_TUPLE_ROUTES // 2 + 1))
