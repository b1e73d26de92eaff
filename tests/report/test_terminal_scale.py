"""Issue #28: the terminal report is linear in its groups and prints a bounded number."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

from rich.console import Console

from crowdhide.plans.aggregate import AggregateQuery
from crowdhide.plans.query import AggregateAnswer, AggregateUtility
from crowdhide.report import terminal


class Key:
    """A group key that counts how often it is compared (the work of matching groups)."""

    comparisons = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        Key.comparisons += 1
        return isinstance(other, Key) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return f"g{self.value}"


def _answer(groups: int) -> AggregateAnswer:
    keys = [Key(i) for i in range(groups)]
    exact = [{"grouping_set": 0, "g": k, "count(*)": 3.0} for k in keys]
    estimates: list[dict[str, Any]] = [
        {
            "grouping_set": 0,
            "g": Key(k.value),  # equal, not identical: matching must compare or hash
            "tuples_used": 3,
            "count(*)": 3.0,
            "count(*) low": 2.0,
            "count(*) high": 4.0,
        }
        for k in keys
    ]
    return AggregateAnswer(
        query=AggregateQuery.from_sql("SELECT g, COUNT(*) FROM D GROUP BY g"),
        result=[{"grouping_set": 0, "g": k, "count(*)": 3.0} for k in keys],
        exact=exact,
        estimates=estimates,
        inclusion_probability={"S->C0": 1.0},
        traffic=[],
        route_names={},
        utility=AggregateUtility(
            tuples=3 * groups,
            tuples_used_per_grouping_set=(3 * groups,),
            vs_exact={},
            vs_duckdb_on_used_tuples={"max_abs_error": {"count(*)": 0.0}},
            duckdb_rows_of_original_sql=groups,
        ),
    )


def test_rendering_many_groups_is_linear_and_capped_with_a_note() -> None:
    groups = 3000
    answer = _answer(groups)
    report: Any = SimpleNamespace(files={"estimates": "/out/estimates.csv"})
    console = Console(file=io.StringIO(), width=80)
    Key.comparisons = 0
    terminal._result(answer, report, console)
    # A scan per group compares ~groups² / 2 = 4.5e6 keys; hashing compares ~1 per group.
    assert Key.comparisons <= 10 * groups
    text = console.file.getvalue()
    assert f"g{terminal.MAX_GROUP_ROWS - 1} " in text
    assert f"g{terminal.MAX_GROUP_ROWS} " not in text
    assert "/out/estimates.csv" in " ".join(text.split())
    assert f"{groups} of {groups}" in text  # every group still counted in the accuracy
