"""A node daemon's data file: the source rows one data owner holds, as ``.npz``.

Written by ``crowdhide node rows`` (from the owner's own table) or ``crowdhide net split``
(a simulation) with :func:`write_rows`; read by the daemon (:mod:`crowdhide.backends.tls.daemon`)
as :class:`NodeRows`, which hands a loaded plan the rows of the blocks it places on the node.
:func:`check_domains` refuses rows outside the plan's public domains before any program runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import DataError

__all__ = ["NodeRows", "check_domains", "not_finite", "write_rows"]

#: Prefix of a data file's entries that are not columns: ``digest/<group>/<column>``.
_DIGEST = "digest/"


def write_rows(
    path: Path,
    *,
    first: int,
    columns: Mapping[str, Mapping[str, Any]],
    digests: Mapping[str, str] | None = None,
) -> Path:
    """Write a node's data file: its rows ``[first, first + n)`` of every source group
    (``{group: {column: values}}``), as ``.npz`` (arrays only, loaded without pickle).
    ``digests`` (``{"group/column": digest}``): the public domains coded columns are codes
    over (:func:`crowdhide.plans.aggregate.domains_digest`), checked against the plan's.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "rows.npz"
    >>> _ = write_rows(path, first=4, columns={"S": {"g": np.arange(3)}})
    >>> rows = NodeRows.load(path)
    >>> rows.first, rows.count, rows.columns["S"]["g"].tolist()
    (4, 3, [0, 1, 2])
    """
    arrays: dict[str, Any] = {"first": np.asarray(int(first), dtype=np.int64)}
    for group, cols in columns.items():
        for name, values in cols.items():
            arrays[f"{group}/{name}"] = np.asarray(values)
    for where, digest in (digests or {}).items():
        arrays[f"{_DIGEST}{where}"] = np.asarray(str(digest))
    with Path(path).open("wb") as handle:
        np.savez(handle, **arrays)
    return Path(path)


@dataclass(frozen=True)
class NodeRows:
    """The source rows one daemon holds: ``count`` rows from global row ``first``."""

    first: int
    count: int
    columns: Mapping[str, Mapping[str, npt.NDArray[Any]]] = field(repr=False)
    #: ``{"group/column": digest of the domains its codes are over}`` (may be empty).
    digests: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: Path) -> NodeRows:
        """Read a data file written by :func:`write_rows` (:class:`DataError` otherwise)."""
        try:
            with np.load(Path(path), allow_pickle=False) as npz:
                first = int(npz["first"])
                columns: dict[str, dict[str, npt.NDArray[Any]]] = {}
                digests = {
                    k[len(_DIGEST) :]: str(npz[k]) for k in npz.files if k.startswith(_DIGEST)
                }
                for key in npz.files:
                    if key != "first" and not key.startswith(_DIGEST):
                        group, _, name = key.partition("/")
                        columns.setdefault(group, {})[name] = npz[key]
        except (OSError, ValueError, KeyError) as exc:
            raise DataError(f"--data {str(path)!r} is not a node data file ({exc})") from None
        lengths = {len(v) for cols in columns.values() for v in cols.values()}
        if len(lengths) != 1 or first < 0:
            raise DataError(
                f"--data {str(path)!r}: every column must have the same number of rows "
                f"and first >= 0, got lengths {sorted(lengths)} and first {first}"
            )
        return cls(first, lengths.pop(), columns, digests)

    def parts(self, document: Mapping[str, Any], mine: tuple[int, int]) -> dict[str, Any]:
        """``{group: {first row of block: {column: values}}}`` of the source blocks the plan
        puts on this node (its rows ``mine``); :class:`ValueError` naming what differs."""
        if mine != (self.first, self.first + self.count):
            raise DataError(
                f"the plan places rows {mine[0]}..{mine[1] - 1} on this node, which holds "
                f"rows {self.first}..{self.first + self.count - 1}"
            )
        size = int(document["run"]["block_size"])
        out: dict[str, Any] = {}
        for g in document["groups"]:
            if g["role"] != "source":
                continue
            held = self.columns.get(g["name"], {})
            missing = [c for c in g["columns"] or () if c not in held]
            if missing:
                raise DataError(f"this node's data has no column {missing} of group {g['name']!r}")
            parts = {}
            start = -(-mine[0] // size) * size
            for begin in range(start, mine[1], size):
                stop = min(begin + size, int(g["size"]))
                if stop > mine[1]:
                    raise DataError(f"block at row {begin} of {g['name']!r} ends past this node")
                a, z = begin - self.first, stop - self.first
                parts[begin] = {c: held[c][a:z] for c in g["columns"] or ()}
            out[g["name"]] = parts
        return out


def check_domains(
    document: Mapping[str, Any], parts: Mapping[str, Any], digests: Mapping[str, str] | None = None
) -> None:
    """Refuse this node's rows (``parts``, from :meth:`NodeRows.parts`) unless every value
    lies in the plan's public domain: an aggregate's grouping codes ``__key<g>`` in
    ``0 .. universe-1`` (the codes of the grouping columns over ``[query] domains``), its
    aggregated columns finite numbers; with ``digests`` (:attr:`NodeRows.digests`), codes
    made over the same domains as the plan's. The :class:`DataError` names the column and
    counts the rows outside, never a value (the rows are private).

    Examples
    --------
    >>> route = {"kind": "data", "sender": "S", "columns": ["__key0", "v"],
    ...          "by": {"name": "aggregate.router", "params": {"g": 0, "universe": 3}}}
    >>> doc = {"routes": [route]}
    >>> check_domains(doc, {"S": {0: {"__key0": np.array([0, 2]), "v": np.ones(2)}}})
    >>> check_domains(doc, {"S": {0: {"__key0": np.array([0, 7]), "v": np.ones(2)}}})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.DataError: data column '__key0' has 1 of 2 rows outside the plan's public...
    """
    for route in document["routes"]:
        by = route.get("by") or {}
        if route.get("kind") != "data" or by.get("name") != "aggregate.router":
            continue
        g, universe = int(by["params"]["g"]), int(by["params"]["universe"])
        held = list(parts.get(route["sender"], {}).values())
        for column in route.get("columns") or ():
            chunks = [np.asarray(part[column]) for part in held if column in part]
            if not chunks:
                continue
            values = np.concatenate(chunks)
            _check_digest(by["params"], (digests or {}).get(f"{route['sender']}/{column}"), column)
            if column == f"__key{g}":
                bad, domain = (
                    _outside_codes(values, universe),
                    (f"codes 0..{universe - 1} of grouping set {g} over query.domains"),
                )
            else:
                bad, domain = not_finite(values), "finite numbers to aggregate"
            if bad:
                raise DataError(
                    f"data column {column!r} has {bad} of {len(values)} rows outside the "
                    f"plan's public domain ({domain})"
                )


def _check_digest(params: Mapping[str, Any], held: str | None, column: str) -> None:
    """Codes over other domains than the plan's would be counted under the wrong groups."""
    planned = params.get("domains")
    if planned and held and planned != held and column == f"__key{params['g']}":
        raise DataError(
            f"data column {column!r} holds codes over other domains than the plan's "
            f"query.domains (grouping set {params['g']}: digest {held}, the plan's {planned}); "
            "write the rows with the plan's domains"
        )


def _outside_codes(values: npt.NDArray[Any], universe: int) -> int:
    """Rows that are not an integer code in ``0 .. universe-1``."""
    if not np.issubdtype(values.dtype, np.number) or np.issubdtype(
        values.dtype, np.complexfloating
    ):
        return len(values)
    with np.errstate(invalid="ignore"):
        ok = (
            np.isfinite(values) & (values >= 0) & (values < universe) & (values == np.floor(values))
        )
    return int((~ok).sum())


def not_finite(values: npt.NDArray[Any]) -> int:
    """Rows that are not a finite real number (a text column: every row); also what a data
    owner's table is checked with (:mod:`crowdhide.plans.owner_rows`).

    >>> not_finite(np.array([1.0, np.nan, np.inf])), not_finite(np.array(["a", "b"]))
    (2, 2)
    """
    if not np.issubdtype(values.dtype, np.number) or np.issubdtype(
        values.dtype, np.complexfloating
    ):
        return len(values)
    return int((~np.isfinite(values)).sum())
