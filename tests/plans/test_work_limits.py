"""Issue #27: the tuple-route limit of a run is its backend's (the tls runtime's is measured
apart), and a refusal names the backend and the largest accepted data.rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crowdhide.errors import InvalidParameterError, ResourceLimitError
from crowdhide.plans.query import load_query
from crowdhide.plans.runner import prepare, run_spec
from crowdhide.plans.spec import (
    MAX_TUPLE_ROUTES,
    MAX_TUPLE_ROUTES_TLS,
    WORK_LIMITS,
    RunSpec,
    check_work,
    parse_spec,
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
    check_work(limit // 2, 2, what="grouping sets", backend=backend)
    with pytest.raises(ResourceLimitError) as refused:
        check_work(limit // 2 + 1, 2, what="grouping sets", backend=backend)
    text = str(refused.value)
    assert f"on the {backend} backend" in text
    assert f"largest accepted data.rows for this query is {limit // 2}" in text


def test_the_tls_limit_admits_a_million_diabetes_users_and_the_local_one_does_not() -> None:
    assert MAX_TUPLE_ROUTES < 2 * 10**6 <= MAX_TUPLE_ROUTES_TLS
    with pytest.raises(ResourceLimitError, match="is 400000"):
        check_work(10**6, 2, what="grouping sets")
    check_work(10**6, 2, what="grouping sets", backend="tls")
    # The local limit is the default: a caller that names no backend gets the tighter one.
    with pytest.raises(ResourceLimitError, match="local backend"):
        check_work(10**6, 2, what="grouping sets")


def test_an_unknown_backend_is_refused_naming_it() -> None:
    with pytest.raises(InvalidParameterError, match="'spark'"):
        check_work(10, 2, what="grouping sets", backend="spark")
    with pytest.raises(InvalidParameterError, match="'spark'"):
        load_query(_spec(10), backend="spark")


def test_the_backend_reaches_the_check_through_prepare_and_load_query() -> None:
    """prepare and load_query pass the backend down: the tls limit admits what the local
    one refuses (checked before the data is generated, so nothing is built here)."""
    rows = MAX_TUPLE_ROUTES // 2 + 1
    for call in (load_query, prepare):
        with pytest.raises(ResourceLimitError, match="on the ray backend"):
            call(_spec(rows), backend="ray")
        with pytest.raises(ResourceLimitError, match="on the tls backend"):
            call(_spec(MAX_TUPLE_ROUTES_TLS // 2 + 1), backend="tls")


def test_a_tls_run_beyond_its_limit_is_refused_before_any_host_starts(tmp_path: Path) -> None:
    rows = MAX_TUPLE_ROUTES_TLS // 2 + 1
    with pytest.raises(ResourceLimitError, match=re.escape(f"is {MAX_TUPLE_ROUTES_TLS // 2}")):
        run_spec(_spec(rows), tmp_path / "refused", network={"hosts": 2})
    assert not (tmp_path / "refused").exists()
    with pytest.raises(ResourceLimitError, match="on the local backend"):
        load_query(_spec(MAX_TUPLE_ROUTES // 2 + 1))
