"""The Aggregate query of Ladjel, Anciaux, Bellet and Scerri (Section II-A, Example 1): SQL with
GROUPING SETS.

DuckDB parses the SQL (``json_serialize_sql``) and computes the exact central answer; the
decentralized plan sends each tuple once per grouping set to the compute node owning its
group (the domain of each grouping set is split into C contiguous parts), the compute
nodes aggregate the real tuples they receive, and report to the result node.

Supported: ``SELECT <grouping columns>, <aggregates> FROM <table> GROUP BY GROUPING SETS
((..), (..))`` (or a plain ``GROUP BY a, b``) with ``count(*)``, ``count(col)``,
``sum``, ``avg``, ``min``, ``max`` of columns. Anything the plan would not honour
(WHERE, HAVING, ORDER BY, LIMIT, DISTINCT, ``AS`` aliases, ...) is refused naming it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._extras import require
from crowdhide._tables import Rows, TableLike
from crowdhide._validation import check_int
from crowdhide.engine.library import named
from crowdhide.errors import DataError, InvalidParameterError
from crowdhide.plans.data import as_table
from crowdhide.plans.model import ExecutionPlan, PlanBuilder

__all__ = [
    "Aggregate",
    "AggregateQuery",
    "AggregateSetup",
    "aggregate_plan",
    "aggregate_schema_plan",
    "compare",
    "domains_digest",
    "exact_answer",
    "run_sql",
    "sums_overflow",
]

_FUNCTIONS = {
    "count_star": "count",
    "count": "count",
    "sum": "sum",
    "avg": "avg",
    "min": "min",
    "max": "max",
}
Table = Mapping[str, npt.NDArray[Any]]


@dataclass(frozen=True)
class Aggregate:
    """One aggregate of the select list: ``function(column)`` (column ``None`` for count(*))."""

    function: str
    column: str | None

    @property
    def label(self) -> str:
        """SQL-like label, e.g. ``avg(insulin)``."""
        return f"{self.function}({self.column or '*'})"

    def sql(self) -> str:
        """The aggregate as DuckDB SQL (double for avg/sum so the comparison is exact)."""
        if self.column is None:
            return "count(*)"
        return f'{self.function}("{self.column}")'


@dataclass(frozen=True)
class AggregateQuery:
    """A parsed GROUPING SETS query.

    Examples
    --------
    >>> q = AggregateQuery.from_sql(
    ...     "SELECT A, B, AVG(I) FROM D GROUP BY GROUPING SETS ((A), (B))")
    >>> q.table, q.grouping_sets, [a.label for a in q.aggregates]
    ('D', (('A',), ('B',)), ['avg(I)'])
    >>> AggregateQuery.from_sql("SELEC A")
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: query.sql does not parse: syntax error ... "SELEC"
    """

    sql: str
    table: str
    grouping_sets: tuple[tuple[str, ...], ...]
    aggregates: tuple[Aggregate, ...]
    #: Output columns in the order of the SQL's select list (grouping columns by name,
    #: aggregates by :attr:`Aggregate.label`); empty when built by hand.
    select: tuple[str, ...] = ()

    @classmethod
    def from_sql(cls, sql: str) -> AggregateQuery:
        """Parse ``sql`` with DuckDB; raise ``ValueError`` naming ``query.sql`` otherwise."""
        node = _select_node(sql)
        source = node.get("from_table") or {}
        if source.get("type") != "BASE_TABLE":
            raise InvalidParameterError("query.sql must select FROM one table")
        if node.get("where_clause") or node.get("having"):
            raise InvalidParameterError(
                "query.sql: WHERE/HAVING are not supported in the decentralized plan"
            )
        _refuse_unhonoured(node)
        columns = [_column(e) for e in node.get("group_expressions", [])]
        sets = tuple(tuple(columns[i] for i in s) for s in node.get("group_sets", []))
        if not sets or any(not s for s in sets):
            raise DataError("query.sql must GROUP BY at least one column in every grouping set")
        aggregates, select = _select_list(node["select_list"], columns)
        if not aggregates:
            raise InvalidParameterError("query.sql must compute at least one aggregate")
        return cls(
            sql=sql,
            table=str(source["table_name"]),
            grouping_sets=sets,
            aggregates=tuple(aggregates),
            select=tuple(select),
        )

    @property
    def value_columns(self) -> tuple[str, ...]:
        """Columns aggregated."""
        return tuple(dict.fromkeys(a.column for a in self.aggregates if a.column is not None))

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        """Columns of sum/avg/min/max (count(col) needs no values: columns have no NULLs)."""
        return tuple(
            dict.fromkeys(
                a.column for a in self.aggregates if a.column is not None and a.function != "count"
            )
        )


def _select_node(sql: str) -> dict[str, Any]:
    """DuckDB's parse tree of ``sql``, which must be one SELECT statement."""
    duckdb = require("duckdb", purpose="parsing a plan's SQL (DuckDB)")

    if not isinstance(sql, str) or not sql.strip():
        raise InvalidParameterError(
            f"query.sql must be a non-empty SQL string, got {sql!r}",
            parameter="query.sql",
            value=sql,
        )
    con = duckdb.connect()
    try:
        raw = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    finally:
        con.close()
    tree: dict[str, Any] = json.loads(raw[0]) if raw else {"error": True, "error_message": "empty"}
    if tree.get("error"):
        raise InvalidParameterError(f"query.sql does not parse: {tree.get('error_message')}")
    statements = tree["statements"]
    if len(statements) != 1 or statements[0]["node"].get("type") != "SELECT_NODE":
        raise InvalidParameterError("query.sql must be a single SELECT statement")
    node: dict[str, Any] = statements[0]["node"]
    return node


def _select_list(
    items: list[dict[str, Any]], columns: list[str]
) -> tuple[list[Aggregate], list[str]]:
    """The aggregates and the selected labels; plain columns must be grouped ones."""
    aggregates: list[Aggregate] = []
    select: list[str] = []
    for item in items:
        if item["class"] == "COLUMN_REF":
            if _column(item) not in columns:
                raise InvalidParameterError(f"query.sql selects {_column(item)!r} outside GROUP BY")
            select.append(_column(item))
            continue
        if item["class"] != "FUNCTION" or item["function_name"] not in _FUNCTIONS:
            raise InvalidParameterError(
                "query.sql aggregates must be count/sum/avg/min/max, got "
                f"{item.get('function_name', item['class'])!r}"
            )
        if item.get("distinct"):
            raise InvalidParameterError("query.sql: DISTINCT aggregates are not supported")
        args = item["arguments"]
        column = None if item["function_name"] == "count_star" else _column(args[0]["expression"])
        aggregates.append(Aggregate(_FUNCTIONS[item["function_name"]], column))
        select.append(aggregates[-1].label)
    return aggregates, select


_MODIFIERS = {
    "ORDER_MODIFIER": "ORDER BY",
    "LIMIT_MODIFIER": "LIMIT/OFFSET",
    "LIMIT_PERCENT_MODIFIER": "LIMIT … PERCENT",
    "DISTINCT_MODIFIER": "SELECT DISTINCT",
}


def _refuse_unhonoured(node: Mapping[str, Any]) -> None:
    """Refuse, naming it, every clause the decentralized plan would otherwise ignore.

    The plan computes every group of every grouping set and labels its columns by the
    source column and ``function(column)``: an ORDER BY, LIMIT, DISTINCT, QUALIFY, SAMPLE,
    WITH or ``AS`` alias would silently not change the answer.
    """
    for modifier in node.get("modifiers") or []:
        name = _MODIFIERS.get(str(modifier.get("type")), str(modifier.get("type")))
        raise InvalidParameterError(f"query.sql: {name} is not supported in the decentralized plan")
    for key, name in (("qualify", "QUALIFY"), ("sample", "USING SAMPLE")):
        if node.get(key):
            raise InvalidParameterError(
                f"query.sql: {name} is not supported in the decentralized plan"
            )
    if (node.get("cte_map") or {}).get("map"):
        raise InvalidParameterError("query.sql: WITH (common table expressions) is not supported")
    for item in node.get("select_list", []):
        if item.get("alias"):
            raise DataError(
                f"query.sql: AS aliases are not supported (got AS {item['alias']!r}); "
                "result columns are named by column and function(column)"
            )


def _column(expression: Mapping[str, Any]) -> str:
    if expression.get("class") != "COLUMN_REF":
        raise InvalidParameterError("query.sql may group and aggregate plain columns only")
    return str(expression["column_names"][-1])


@dataclass(frozen=True)
class AggregateSetup:
    """The decentralized plan of a query plus what is needed to read its result.

    Attributes
    ----------
    plan
        Unprotected plan: sources, one compute group ``C<g>`` per grouping set, result R.
    query
        The parsed query.
    domains
        Per grouping set: the sorted domain of each of its columns.
    routes
        Data route name per grouping set.
    """

    plan: ExecutionPlan
    query: AggregateQuery
    domains: tuple[tuple[npt.NDArray[Any], ...], ...]
    routes: tuple[str, ...]

    def result_rows(self, result_state: Mapping[str, Any]) -> Rows:
        """Rows ``{grouping_set, <columns>, <aggregates>}`` of the result node's state
        (a list with ``.to_pandas()``)."""
        rows = Rows()
        for g, columns in enumerate(self.query.grouping_sets):
            part = result_state[f"set{g}"]
            keys = part["key"]
            values = _decode(keys, self.domains[g])
            for i in range(len(keys)):
                row: dict[str, Any] = {"grouping_set": g}
                for c, column in enumerate(columns):
                    row[column] = _plain(values[c][i])
                for agg in self.query.aggregates:
                    row[agg.label] = _final(agg, part, i)
                rows.append(row)
        return rows


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _final(agg: Aggregate, part: Mapping[str, Any], i: int) -> float:
    count = float(part["count"][i])
    if agg.function == "count":
        return count
    column = agg.column
    if agg.function == "sum":
        return float(part[f"sum:{column}"][i])
    if agg.function == "avg":
        return float(part[f"sum:{column}"][i]) / count
    return float(part[f"{agg.function}:{column}"][i])


def _decode(
    keys: npt.NDArray[np.int64], domains: Sequence[npt.NDArray[Any]]
) -> list[npt.NDArray[Any]]:
    out: list[npt.NDArray[Any]] = []
    rest = keys.copy()
    for domain in reversed(domains):
        out.append(domain[rest % len(domain)])
        rest = rest // len(domain)
    return out[::-1]


def _encode(
    table: Table, columns: Sequence[str], domains: Sequence[npt.NDArray[Any]]
) -> npt.NDArray[np.int64]:
    key = np.zeros(len(next(iter(table.values()))), dtype=np.int64)
    for column, domain in zip(columns, domains, strict=True):
        values = np.asarray(table[column])
        code = _object_codes(values, domain) if values.dtype == object else None
        if code is None:
            code = np.searchsorted(domain, values)
            code = np.clip(code, 0, len(domain) - 1)
            if not np.array_equal(domain[code], values):
                code = None
        if code is None:
            raise DataError(f"data column {column!r} has values outside its declared domain")
        key = key * len(domain) + code
    return key


def _object_codes(
    values: npt.NDArray[Any], domain: npt.NDArray[Any]
) -> npt.NDArray[np.intp] | None:
    """Positions of Python-object values (e.g. strings) in ``domain`` by a dict lookup (a
    binary search compares objects one pair at a time); ``None`` if one is missing."""
    try:
        index = {v: i for i, v in enumerate(domain.tolist())}
        return np.fromiter((index[v] for v in values.tolist()), dtype=np.intp, count=len(values))
    except (KeyError, TypeError):  # outside the domain, or unhashable: the caller decides
        return None


def _domain(values: Any) -> npt.NDArray[Any]:
    """Sorted distinct values of a grouping column (``np.unique``; Python objects through a
    set, far faster than sorting every object)."""
    array = np.asarray(values)
    if array.dtype != object:
        return np.unique(array)
    try:
        items = sorted(set(array.tolist()))
    except TypeError:  # unhashable or unorderable objects: numpy's own comparison sort
        return np.unique(array)
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def aggregate_plan(
    table: TableLike,
    query: AggregateQuery,
    *,
    compute_nodes: int,
    domains: Mapping[str, Sequence[Any]] | None = None,
    message_size: int = 64,
) -> AggregateSetup:
    """Build the decentralized plan of ``query`` over ``table`` (one tuple per source).

    Parameters
    ----------
    table
        Column arrays of equal length: a mapping, a ``pandas.DataFrame``, a
        ``pyarrow.Table`` or a CSV / Parquet path (:func:`crowdhide.plans.data.as_table`).
    query
        Parsed query.
    compute_nodes
        C: compute nodes per grouping set; the grouping domain (mixed-radix codes of its
        columns) is split into C contiguous parts (fewer if the domain is smaller).
    domains
        Public domain of each grouping column. Missing ones are read from the data (then
        the domain itself is assumed public, as in the paper).
    message_size
        Bytes per message on the wire; a compute node's message to the result node is at
        least its largest possible partial aggregate (``⌈domain / C⌉`` keys).

    Examples
    --------
    >>> import numpy as np
    >>> t = {"A": np.array([1, 2, 2, 3]), "I": np.array([1.0, 2.0, 4.0, 8.0])}
    >>> q = AggregateQuery.from_sql("SELECT A, AVG(I) FROM D GROUP BY A")
    >>> setup = aggregate_plan(t, q, compute_nodes=2)
    >>> from crowdhide.backends import execute
    >>> run = execute(setup.plan, rng=0)
    >>> [(r["A"], r["avg(I)"]) for r in setup.result_rows(run.states["R"])]
    [(1, 1.0), (2, 3.0), (3, 8.0)]

    A ``pandas.DataFrame`` or a ``pyarrow.Table`` is taken as it is:

    >>> import pandas as pd, pyarrow as pa
    >>> df = pd.DataFrame(t)
    >>> run = execute(aggregate_plan(df, q, compute_nodes=2).plan, rng=0)
    >>> setup.result_rows(run.states["R"])
    Rows(3 rows × 3 columns: grouping_set, A, avg(I))
    >>> aggregate_plan(pa.Table.from_pandas(df), q, compute_nodes=2).plan == setup.plan
    True
    """
    C = check_int("query.compute_nodes", compute_nodes, low=1)
    table = as_table(table)
    _check_columns(table, query)
    grouped = {c for columns in query.grouping_sets for c in columns}
    if domains and set(domains) - grouped:
        raise DataError(
            f"query.domains names column(s) {sorted(set(domains) - grouped)} that the query "
            f"does not group by (grouped: {sorted(grouped)})"
        )
    source: dict[str, npt.NDArray[Any]] = {c: np.asarray(table[c]) for c in query.numeric_columns}
    all_domains: list[tuple[npt.NDArray[Any], ...]] = []
    builder = PlanBuilder()
    sizes: list[int] = []
    universes: list[int] = []
    for g, columns in enumerate(query.grouping_sets):
        doms = tuple(_domain(domains[c] if domains and c in domains else table[c]) for c in columns)
        all_domains.append(doms)
        keys = _encode(table, columns, doms)
        universe = math.prod(len(d) for d in doms)
        nodes = min(C, universe)
        # The smallest integer type holding the mixed-radix code (memory follows the data).
        source[f"__key{g}"] = keys.astype(np.min_scalar_type(max(universe - 1, 0)))
        sizes.append(nodes)
        universes.append(universe)
    builder.sources("S", source)
    return AggregateSetup(
        plan=_assemble(builder, query, sizes, all_domains, message_size),
        query=query,
        domains=tuple(all_domains),
        routes=tuple(f"S->C{g}" for g in range(len(sizes))),
    )


def _assemble(
    builder: PlanBuilder,
    query: AggregateQuery,
    sizes: Sequence[int],
    domains: Sequence[tuple[npt.NDArray[Any], ...]],
    message_size: int,
) -> ExecutionPlan:
    """The compute groups, result node and routes after the sources ``S`` of ``builder``."""
    universes = [math.prod(len(d) for d in ds) for ds in domains]
    for g, nodes in enumerate(sizes):
        builder.compute(
            f"C{g}",
            size=nodes,
            process=named(
                "aggregate.compute",
                g=g,
                columns=list(query.numeric_columns),
                route=f"S->C{g}",
                universe=universes[g],
            ),
            combine=named("aggregate.combine"),  # partial aggregates merge: a block streams
        )
    builder.result("R", process=named("aggregate.result", sets=len(sizes)))
    for g in range(len(sizes)):
        builder.route(
            "S",
            f"C{g}",
            by=named(
                "aggregate.router",
                g=g,
                nodes=sizes[g],
                universe=universes[g],
                domains=domains_digest(domains[g]),
            ),
            message_size=message_size,
            columns=(f"__key{g}", *query.numeric_columns),
        )
    # A compute node sends its partial aggregates (the keys of its part of the domain that
    # occur) in one message: size it for a full part, so no data set makes it overflow.
    record = 16 + 32 * len(query.numeric_columns)  # key, count; sum, sumsq, min, max each
    for g, nodes in enumerate(sizes):
        full = -(-universes[g] // nodes) * record
        builder.route(f"C{g}", "R", kind="fixed", message_size=max(message_size, full))
    return builder.build()


def aggregate_schema_plan(
    rows: int,
    query: AggregateQuery,
    *,
    columns: Sequence[str],
    domains: Mapping[str, Sequence[Any]],
    compute_nodes: int,
    message_size: int = 64,
) -> AggregateSetup:
    """The plan of ``query`` over ``rows`` tuples that this process never sees (``[data]
    held_by = "nodes"``): built from the column names, the public ``domains`` of every
    grouping column and the row count alone. Its sources hold no row (an empty
    :class:`~crowdhide.engine.blocks.BlockRows`); each node daemon fills in its own, as
    the columns :func:`aggregate_plan` would give them (``__key<g>``: codes over ``domains``).

    Examples
    --------
    >>> q = AggregateQuery.from_sql("SELECT A, AVG(I) FROM D GROUP BY A")
    >>> setup = aggregate_schema_plan(
    ...     4, q, columns=["A", "I"], domains={"A": [1, 2, 3]}, compute_nodes=2)
    >>> setup.plan.group("S").size, list(setup.plan.group("S").data), setup.domains
    (4, ['I', '__key0'], ((array([1, 2, 3]),),))
    >>> t = {"A": np.array([1, 2, 2, 3]), "I": np.array([1.0, 2.0, 4.0, 8.0])}
    >>> aggregate_plan(t, q, compute_nodes=2, domains={"A": [1, 2, 3]}).plan == setup.plan
    True
    >>> aggregate_schema_plan(4, q, columns=["A", "I"], domains={}, compute_nodes=2)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: query.domains has no domain for grouping column(s)...
    """
    from dataclasses import replace

    from crowdhide.engine.blocks import BlockRows

    C = check_int("query.compute_nodes", compute_nodes, low=1)
    n = check_int("data.rows", rows, low=1)
    grouped = {c for s in query.grouping_sets for c in s}
    needed = sorted((grouped | set(query.value_columns)) - set(columns))
    if needed:
        raise InvalidParameterError(
            f"data.columns {list(columns)} lacks column(s) {needed} used by query.sql",
            parameter="data.columns",
            value=list(columns),
        )
    for problem, names in (
        ("has no domain for", grouped - set(domains)),
        ("names column(s) the query does not group by:", set(domains) - grouped),
    ):
        if names:
            raise InvalidParameterError(
                f"query.domains {problem} grouping column(s) {sorted(names)} "
                f"(grouped: {sorted(grouped)})",
                parameter="query.domains",
                value=sorted(names),
            )
    doms = tuple(tuple(_domain(domains[c]) for c in s) for s in query.grouping_sets)
    universes = [math.prod(len(d) for d in ds) for ds in doms]
    # One placeholder row to build the groups and routes; replaced by no row at all.
    placeholder = {c: np.zeros(1) for c in query.numeric_columns}
    placeholder |= {f"__key{g}": np.zeros(1, dtype=np.int64) for g in range(len(doms))}
    builder = PlanBuilder().sources("S", placeholder)
    plan = _assemble(builder, query, [min(C, u) for u in universes], doms, message_size)
    held = BlockRows({}, tuple(placeholder))
    groups = tuple(replace(g, size=n, data=held) if g.role == "source" else g for g in plan.groups)
    return AggregateSetup(
        plan=replace(plan, groups=groups),
        query=query,
        domains=doms,
        routes=tuple(f"S->C{g}" for g in range(len(doms))),
    )


def domains_digest(domains: Sequence[npt.NDArray[Any]]) -> str:
    """A short digest of a grouping set's domains (what its ``__key<g>`` codes are over):
    the plan's router carries it and a node daemon compares it with its rows file's.

    Examples
    --------
    >>> domains_digest((np.array([1, 2]),)) == domains_digest((np.array([1.0, 2.0]),))
    True
    >>> domains_digest((np.array([1, 2]),)) == domains_digest((np.array([1, 3]),))
    False
    """
    # Numbers as floats: 1 and 1.0 get the same code (the codes are positions in the domain).
    plain = [
        [
            float(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for v in d.tolist()
        ]
        for d in domains
    ]
    text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _check_columns(table: Table, query: AggregateQuery) -> None:
    """Every column the query uses exists; aggregated ones are numeric without NaN."""
    needed = {c for s in query.grouping_sets for c in s} | set(query.value_columns)
    missing = sorted(needed - set(table))
    if missing:
        raise DataError(
            f"data has no column(s) {missing} used by query.sql (columns: {sorted(table)})"
        )
    for column in query.numeric_columns:
        values = np.asarray(table[column])
        if not np.issubdtype(values.dtype, np.number):
            raise DataError(
                f"data column {column!r} must be numeric to aggregate, got {values.dtype}"
            )
        finite = np.isfinite(values.astype(np.float64))
        if not finite.all():  # NaN, or ±inf (a sum of them is not a number either)
            bad = values[~finite][0]
            raise DataError(
                f"data column {column!r} must hold finite numbers, got {bad!r} "
                f"({int((~finite).sum())} value(s) not finite)"
            )
        _check_sums_fit(column, values.astype(np.float64))


def sums_overflow(values: npt.NDArray[np.float64]) -> float | None:
    """``None`` if the sum and the sum of squares of ``|values|`` are finite in float64,
    else the magnitude up to which any ``len(values)`` values always fit (for the message).

    A group's sum is at most the column's sum of magnitudes, so checking the whole column
    covers every group and every partial sum of the plan (the intervals' variance needs the
    sum of squares).

    Examples
    --------
    >>> sums_overflow(np.array([1.0, -2.0])) is None
    True
    >>> f"{sums_overflow(np.array([1e200, 1.0])):.3g}"
    '9.48e+153'
    """
    with np.errstate(over="ignore"):
        magnitude = np.abs(values)
        fits = bool(np.isfinite(magnitude.sum()) and np.isfinite(np.square(magnitude).sum()))
    return None if fits else math.sqrt(np.finfo(np.float64).max / max(len(values), 1))


def _check_sums_fit(column: str, values: npt.NDArray[np.float64]) -> None:
    """Refuse a column whose sum or sum of squares (the intervals' variance) overflows."""
    safe = sums_overflow(values)
    if safe is not None:
        raise DataError(
            f"data column {column!r}: its sum or sum of squares overflows float64 "
            f"(largest |value| {float(np.abs(values).max()):.3g} over {len(values)} rows; "
            f"values up to {safe:.3g} in magnitude always fit)"
        )


def exact_answer(
    table: TableLike, query: AggregateQuery, *, masks: Sequence[npt.NDArray[np.bool_]] | None = None
) -> Rows:
    """The central answer computed by DuckDB, in :meth:`AggregateSetup.result_rows` form.

    With ``masks`` (one boolean mask over rows per grouping set) each grouping set is
    answered on the masked rows only — the tuples a decentralized run actually used.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"A": [1, 2, 2], "I": [1.0, 2.0, 4.0]})
    >>> q = AggregateQuery.from_sql("SELECT A, AVG(I) FROM D GROUP BY A")
    >>> exact_answer(df, q).to_pandas()
       grouping_set  A  avg(I)
    0             0  1     1.0
    1             0  2     3.0
    """
    duckdb = require("duckdb", purpose="answering a plan query exactly (DuckDB)")

    table = as_table(table)
    con = duckdb.connect()
    try:
        rows = Rows()
        aggs = ", ".join(a.sql() for a in query.aggregates)
        for g, columns in enumerate(query.grouping_sets):
            data = {c: np.asarray(table[c]) for c in set(columns) | set(query.value_columns)}
            if masks is not None:
                data = {c: v[masks[g]] for c, v in data.items()}
            con.register("t", data)
            cols = ", ".join(f'"{c}"' for c in columns)
            sql = f"SELECT {cols}, {aggs} FROM t GROUP BY {cols} ORDER BY {cols}"
            for record in con.execute(sql).fetchall():
                row: dict[str, Any] = {"grouping_set": g}
                for c, column in enumerate(columns):
                    row[column] = record[c]
                for a, agg in enumerate(query.aggregates):
                    row[agg.label] = float(record[len(columns) + a])
                rows.append(row)
            con.unregister("t")
        return rows
    finally:
        con.close()


def run_sql(table: TableLike, query: AggregateQuery) -> list[tuple[Any, ...]]:
    """Run the user's SQL verbatim in DuckDB (the table registered under its name)."""
    duckdb = require("duckdb", purpose="running a plan's SQL (DuckDB)")

    table = as_table(table)
    con = duckdb.connect()
    try:
        con.register(query.table, table)
        return list(con.execute(query.sql).fetchall())
    finally:
        con.close()


def compare(
    rows: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]], query: AggregateQuery
) -> dict[str, Any]:
    """Per-group comparison of two answers: groups missing, max abs/relative error."""

    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        g = int(r["grouping_set"])
        return (g, *[r[c] for c in query.grouping_sets[g]])

    ours = {key(r): r for r in rows}
    ref = {key(r): r for r in reference}
    missing = [k for k in ref if k not in ours]
    extra = [k for k in ours if k not in ref]
    max_abs = dict.fromkeys((a.label for a in query.aggregates), 0.0)
    max_rel = dict.fromkeys((a.label for a in query.aggregates), 0.0)
    for k, r in ref.items():
        if k not in ours:
            continue
        for agg in query.aggregates:
            a, b = float(ours[k][agg.label]), float(r[agg.label])
            max_abs[agg.label] = max(max_abs[agg.label], abs(a - b))
            max_rel[agg.label] = max(max_rel[agg.label], abs(a - b) / max(abs(b), 1e-300))
    return {
        "groups": len(ref),
        "groups_missing": len(missing),
        "groups_extra": len(extra),
        "max_abs_error": max_abs,
        "max_rel_error": max_rel,
    }
