"""A data owner's rows, coded for a node daemon from the coordinator's schema-only plan.

In a deployment each daemon serves the rows of whoever runs it (``crowdhide node serve
--data``). ``net split`` cuts a simulation's population into those files; a real owner
holds only their own table, and :func:`owner_rows` codes it for the plan of the
coordinator (``[data] held_by = "nodes"``): the grouping columns as the ``__key<g>`` codes
over the plan's public ``[query] domains`` and the aggregated columns as they are, exactly
the source columns :func:`~crowdhide.plans.aggregate.aggregate_plan` gives the same rows
(so the file equals ``net split``'s for them). It refuses a table the daemons would refuse
at job load — a column of ``[data] columns`` missing, a grouping value outside its domain,
an aggregated value that is not a finite number — naming the column and counting the rows,
never showing a value: the rows are private, and an error message is often pasted into a
ticket.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import DataError, InvalidParameterError
from crowdhide.plans.aggregate import (
    AggregateSetup,
    aggregate_plan,
    domains_digest,
    sums_overflow,
)
from crowdhide.plans.query import AggregateOverTable, load_query
from crowdhide.plans.spec import RunSpec

__all__ = ["OwnerRows", "owner_rows", "source_digests"]


@dataclass(frozen=True)
class OwnerRows:
    """What a node daemon's data file holds
    (:func:`crowdhide.backends.tls.node_rows.write_rows`)."""

    #: ``{group: {column: values}}`` of the plan's source group(s).
    columns: Mapping[str, Mapping[str, npt.NDArray[Any]]]
    #: ``{"group/column": digest}`` of the domains each ``__key<g>`` code is over.
    digests: Mapping[str, str]
    rows: int


def source_digests(setup: AggregateSetup) -> dict[str, str]:
    """The domains each coded column of an aggregate's sources is over (the daemons
    compare them with the plan's before using a row)."""
    return {f"S/__key{g}": domains_digest(d) for g, d in enumerate(setup.domains)}


def owner_rows(spec: RunSpec, table: Mapping[str, npt.NDArray[Any]], *, where: str) -> OwnerRows:
    """Code ``table`` (one owner's rows) for the schema-only plan ``spec``; ``where`` names
    the table in errors (e.g. ``"--csv 'mine.csv'"``).

    Examples
    --------
    >>> from crowdhide.plans.spec import parse_spec
    >>> spec = parse_spec({
    ...     "data": {"held_by": "nodes", "rows": 10, "columns": ["g", "v"]},
    ...     "query": {"sql": "SELECT g, SUM(v) FROM D GROUP BY g", "domains": {"g": ["a", "b"]}},
    ...     "privacy": {"epsilon": 1.0}})
    >>> mine = {"g": np.array(["b", "a", "b"], dtype=object), "v": np.array([1.0, 2.0, 3.0])}
    >>> rows = owner_rows(spec, mine, where="mine")
    >>> rows.rows, rows.columns["S"]["__key0"].tolist(), list(rows.digests)
    (3, [1, 0, 1], ['S/__key0'])
    >>> mine["g"][2] = "secret"
    >>> owner_rows(spec, mine, where="mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.DataError: mine: column 'g' has 1 of 3 rows outside query.domains (the...
    """
    # The daemon's own check, one copy (the backends layer is below this one); imported
    # here so that `net split`, which needs only source_digests, does not load the daemon.
    from crowdhide.backends.tls.node_rows import not_finite

    if spec.data.held_by is None:
        raise InvalidParameterError(
            "the plan must be the coordinator's (data.held_by = 'nodes': its [data] columns "
            "and [query] domains say what a daemon's rows are), got a plan whose [data] "
            "generates or loads the rows",
            parameter="data.held_by",
            value=None,
        )
    query = load_query(spec, backend="tls")  # checks the schema against the SQL; no row
    assert isinstance(query, AggregateOverTable)  # held_by = "nodes" is aggregate-only
    setup = query.setup
    missing = [c for c in spec.data.columns if c not in table]
    if missing:
        raise DataError(
            f"{where} lacks {len(missing)} of the plan's {len(spec.data.columns)} data.columns: "
            f"{missing} (it has {len(table)} column(s))"
        )
    count = len(next(iter(table.values()))) if table else 0
    if count == 0:
        raise DataError(f"{where} holds no row")
    outside = {
        name: (_outside(np.asarray(table[name]), domain), "query.domains")
        for names, domains in zip(setup.query.grouping_sets, setup.domains, strict=True)
        for name, domain in zip(names, domains, strict=True)
    }
    for name in setup.query.numeric_columns:
        outside[name] = (not_finite(np.asarray(table[name])), "finite numbers to aggregate")
    _refuse(where, outside, count)
    for name in setup.query.numeric_columns:
        _refuse_overflow(where, name, np.asarray(table[name], dtype=np.float64))
    coded = aggregate_plan(
        {c: table[c] for c in spec.data.columns},
        setup.query,
        compute_nodes=spec.query.compute_nodes,
        domains=spec.query.domains,
        message_size=spec.message_size,
    )
    sources = [g for g in coded.plan.groups if g.role == "source"]
    columns = {g.name: {c: np.asarray(v) for c, v in (g.data or {}).items()} for g in sources}
    return OwnerRows(columns, source_digests(coded), count)


def _refuse(where: str, outside: Mapping[str, tuple[int, str]], count: int) -> None:
    """One line counting, for every column with any, the rows outside its public domain."""
    bad = [
        f"column {c!r} has {n} of {count} rows outside {d}" for c, (n, d) in outside.items() if n
    ]
    if bad:
        raise DataError(
            f"{where}: " + "; ".join(bad) + " (the plan's public domain; values not shown: "
            "the rows are private)"
        )


def _outside(values: npt.NDArray[Any], domain: npt.NDArray[Any]) -> int:
    """Rows whose value is not an element of ``domain`` (by equality, as the coding)."""
    if values.dtype == object or domain.dtype == object or values.dtype.kind != domain.dtype.kind:
        if values.dtype.kind in "biuf" and domain.dtype.kind in "biuf":
            return int((~np.isin(values, domain)).sum())  # int vs float: compared as numbers
        allowed = set(domain.tolist())
        try:
            return sum(1 for v in values.tolist() if v not in allowed)
        except TypeError:  # unhashable objects: no such value is in a TOML domain
            return len(values)
    return int((~np.isin(values, domain)).sum())


def _refuse_overflow(where: str, column: str, values: npt.NDArray[np.float64]) -> None:
    """The plan's sums and sums of squares must stay finite (no magnitude is shown)."""
    safe = sums_overflow(values)
    if safe is not None:
        raise DataError(
            f"{where}: column {column!r} has values whose sum or sum of squares overflows "
            f"float64 (values up to {safe:.3g} in magnitude always fit; values not shown)"
        )
