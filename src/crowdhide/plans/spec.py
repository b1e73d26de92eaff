"""``PLAN.toml``: what to run (data, query, privacy target, constraints or fixed σ, n, d).

Example (``crowdhide/examples/diabetes.toml``, run as ``crowdhide run example:diabetes``)::

    name = "diabetes"

    [data]
    generator = "diabetes"      # or path = "file.csv" / "file.parquet"
    rows = 20000
    seed = 7

    [query]
    kind = "aggregate"
    sql = "SELECT age_range, bmi, AVG(insulin) FROM D GROUP BY GROUPING SETS ((age_range), (bmi))"
    compute_nodes = 10

    [privacy]
    epsilon = 2.0
    delta = 1e-4

    [constraints]
    max_channels = 300

Sections and keys are checked; an unknown or invalid key raises ``ValueError`` naming it
(``privacy.epsilon must be > 0.0, got -1``).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crowdhide._validation import check_bool, check_int, check_probability, check_real
from crowdhide.errors import DataError, InvalidParameterError, ResourceLimitError
from crowdhide.plans.countermeasure_costs import Constraints
from crowdhide.plans.examples import resolve_plan

__all__ = [
    "BACKENDS",
    "DataSpec",
    "FixedCountermeasures",
    "QuerySpec",
    "RunSpec",
    "check_backend",
    "check_work",
    "held_plan_text",
    "load_spec",
    "parse_spec",
]

#: Keys of ``[data]`` that say where this process gets the rows from: none applies when the
#: rows are held by the node daemons.
_ROW_SOURCE_KEYS = (
    "path",
    "generator",
    "distribution",
    "skew",
    "attributes",
    "intervals",
    "seed",
    "mnist_dir",
    "test_rows",
)

_SECTIONS = {
    "data": {"rows", "held_by", "columns", *_ROW_SOURCE_KEYS},
    "query": {"kind", "sql", "compute_nodes", "k", "iterations", "domains"},
    "privacy": {"epsilon", "delta"},
    "constraints": {"max_channels", "max_overhead", "max_consents"},
    "countermeasures": {"sigma", "n", "d", "local_dummies", "cap"},
    "run": {
        "seed",
        "message_size",
        "round_seconds",
        "shared_seed",
        "plots",
        "transcript_csv_max_rows",
        "backend",
        "shards",
        "address",
        "block_size",
    },
}
_AGG_GENERATORS = ("diabetes", "aggregate")
_KMEANS_GENERATORS = ("auto", "mnist", "digits", "synthetic")


#: Most shards of a run (also the limit of ``crowdhide run --shards``).
MAX_SHARDS = 4096
#: Most dummies per scrambler in a run (``countermeasures.d``).
MAX_DUMMIES = 10**6
#: Most grouping columns of the ``aggregate`` generator (``data.attributes``).
MAX_ATTRIBUTES = 64
#: Most values per grouping column of the ``aggregate`` generator (``data.intervals``; the
#: skewed law holds one weight per value).
MAX_INTERVALS = 10**6
#: Most tuples × data routes (grouping sets, or K-means iterations) of one run on the local
#: and Ray engines: measured here, 400,000 diabetes tuples × 2 grouping sets ran in 44 s and
#: 20,000 points × 40 K-means iterations in 55 s (certification, execution, exact answer, files).
MAX_TUPLE_ROUTES = 800_000
#: The same on the tls runtime (every message one sealed frame whose inner body is sealed
#: with a fresh X25519 key): measured here, 100,000 diabetes users × 2 grouping sets took
#: 124 CPU-s of 8 spawned hosts (0.62 ms per tuple-route; ``benchmarks/bench_net.py
#: --million --rows 100000``), so 10^6 users (this limit) need about 1,300 CPU-s, plus the
#: wait of the fixed rounds (their length is derived from the plan and echoed by the run).
MAX_TUPLE_ROUTES_TLS = 2_000_000
#: Largest accepted tuple-routes and what it costs here, by backend.
WORK_LIMITS: Mapping[str, tuple[int, str]] = {
    "local": (MAX_TUPLE_ROUTES, "about 60 s here"),
    "ray": (MAX_TUPLE_ROUTES, "about 60 s here"),
    "tls": (MAX_TUPLE_ROUTES_TLS, "about 1,300 CPU-s of the hosts here, plus the rounds' wait"),
}


def check_work(
    rows: int,
    routes: int,
    *,
    what: str,
    routes_key: str | None = None,
    backend: str = "local",
) -> None:
    """Refuse, before any work, a run of more tuple-routes than the limit of the
    ``backend`` it runs on (:data:`WORK_LIMITS`), naming the largest accepted ``data.rows``
    (``what`` says what the routes are; with ``routes_key`` also the most routes accepted
    at these rows).

    Examples
    --------
    >>> check_work(20_000, 40, what="K-means iterations")
    >>> check_work(10**9, 2, what="grouping sets")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.ResourceLimitError: data.rows × 2 grouping sets = 2e+09 ... is 400000
    >>> check_work(10**6, 2, what="grouping sets", backend="tls")
    """
    if backend not in WORK_LIMITS:
        raise InvalidParameterError(
            f"backend must be one of {tuple(WORK_LIMITS)}, got {backend!r}",
            parameter="backend",
            value=backend,
        )
    limit, cost = WORK_LIMITS[backend]
    if rows * routes > limit:
        raise ResourceLimitError(
            f"data.rows × {routes} {what} = {rows * routes:.0e} tuple-routes exceeds "
            f"{limit:.0e} on the {backend} backend ({cost}): the largest accepted data.rows "
            f"for this query is {limit // routes}"
            + (
                f" (or {routes_key} <= {limit // rows} at these rows)"
                if routes_key and rows <= limit
                else ""
            ),
            parameter="data.rows",
            value=rows,
        )


@dataclass(frozen=True)
class DataSpec:
    """``[data]``: a file (``path``) or a generator with its parameters.

    ``table`` is a table given from Python (:func:`crowdhide.certify_plan`'s ``data=``);
    when set it replaces ``path`` and the generator.
    """

    path: Path | None
    generator: str | None
    rows: int
    distribution: str
    skew: float
    attributes: int
    intervals: int
    seed: int
    mnist_dir: Path | None
    table: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    #: ``"nodes"``: a deployment's schema-only ``[data]`` (the rows stay on the node
    #: daemons; this process has ``rows``, ``columns`` and ``[query] domains`` only).
    held_by: str | None = None
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuerySpec:
    """``[query]``: ``kind = "aggregate"`` (sql, compute_nodes) or ``"kmeans"`` (k, iterations)."""

    kind: str
    sql: str | None
    compute_nodes: int
    k: int
    iterations: int
    domains: Mapping[str, list[Any]] | None


@dataclass(frozen=True)
class FixedCountermeasures:
    """``[countermeasures]``: fixed σ, n, d (skip the planner)."""

    sigma: float
    n: int | None
    d: int
    local_dummies: int
    cap: bool


@dataclass(frozen=True)
class RunSpec:
    """A parsed ``PLAN.toml``."""

    name: str
    data: DataSpec
    query: QuerySpec
    epsilon: float | None
    delta: float
    constraints: Constraints
    fixed: FixedCountermeasures | None
    seed: int
    message_size: int
    plots: bool
    transcript_csv_max_rows: int
    backend: str = "local"
    shards: int = 1
    address: str | None = None
    block_size: int = 1 << 14
    #: Whether ``[run] block_size`` was written (else a tls run chooses its own default).
    block_size_given: bool = False
    round_seconds: float | None = None
    shared_seed: bool = False

    def __repr__(self) -> str:
        """One line: name, query kind, data size, target and backend."""
        return (
            f"RunSpec(name={self.name!r}, query={self.query.kind!r}, rows={self.data.rows}, "
            f"target=(ε={self.epsilon}, δ={self.delta:g}), backend={self.backend!r})"
        )


BACKENDS = ("local", "ray")


def check_backend(value: Any, name: str = "backend") -> str:
    """Validate a backend name (``local`` or ``ray``).

    Examples
    --------
    >>> check_backend("ray")
    'ray'
    >>> check_backend("spark", "run.backend")
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: run.backend must be one of ('local', 'ray'), got 'spark'
    """
    if value not in BACKENDS:
        raise InvalidParameterError(f"{name} must be one of {BACKENDS}, got {value!r}")
    return str(value)


def _section(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, Mapping):
        raise InvalidParameterError(f"[{name}] must be a table, got {value!r}")
    unknown = sorted(set(value) - _SECTIONS[name])
    if unknown:
        raise InvalidParameterError(
            f"{name}.{unknown[0]} is not a known key (known: {sorted(_SECTIONS[name])})"
        )
    return dict(value)


def parse_spec(raw: Mapping[str, Any], *, base: Path | None = None) -> RunSpec:
    """Validate a TOML document (already parsed) into a :class:`RunSpec`.

    Examples
    --------
    >>> spec = parse_spec({"query": {"kind": "kmeans", "k": 3}, "privacy": {"epsilon": 1}})
    >>> spec.query.kind, spec.query.k, spec.epsilon, spec.delta
    ('kmeans', 3, 1.0, 0.0001)
    >>> parse_spec({"query": {"kind": "kmeans"}, "privacy": {"epsilon": -1}})
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: privacy.epsilon must be > 0.0, got -1
    """
    unknown = sorted(set(raw) - set(_SECTIONS) - {"name"})
    if unknown:
        raise InvalidParameterError(
            f"{unknown[0]} is not a known section (known: name, {sorted(_SECTIONS)})"
        )
    name = raw.get("name", "plan")
    # The default output folder is results/<name>: a plain folder name, nothing above it.
    if not isinstance(name, str) or not name.strip() or Path(name).name != name or name == "..":
        raise InvalidParameterError(
            f"name must be a plain folder name (no '/', not '..'), got {name!r}"
        )
    sections = {section: _section(raw, section) for section in _SECTIONS}
    privacy, limits, run = sections["privacy"], sections["constraints"], sections["run"]
    kind = _query_kind(sections["query"])
    data_spec = (
        _held_spec(sections["data"], kind, sections["query"].get("domains"))
        if "held_by" in sections["data"]
        else _data_spec(sections["data"], kind, base)
    )
    query_spec = _query_spec(sections["query"], kind)
    epsilon = privacy.get("epsilon")
    eps = (
        None if epsilon is None else check_real("privacy.epsilon", epsilon, low=0.0, low_open=True)
    )
    delta = check_probability("privacy.delta", privacy.get("delta", 1e-4), allow_one=False)
    fixed_spec = _fixed_spec(sections["countermeasures"])
    if fixed_spec is None and eps is None:
        raise InvalidParameterError(
            "privacy.epsilon is required unless [countermeasures] fixes sigma, n, d"
        )
    return RunSpec(
        name=name,
        data=data_spec,
        query=query_spec,
        epsilon=eps,
        delta=delta,
        constraints=Constraints(
            # Plan files require >= 2 (the smallest scrambler opens n + T >= 2 channels).
            max_channels=None
            if limits.get("max_channels") is None
            else check_int("constraints.max_channels", limits["max_channels"], low=2),
            max_overhead=limits.get("max_overhead"),
            max_consents=limits.get("max_consents"),
        ),
        fixed=fixed_spec,
        seed=check_int("run.seed", run.get("seed", 0), low=0),
        message_size=check_int("run.message_size", run.get("message_size", 64), low=1),
        round_seconds=None
        if run.get("round_seconds") is None
        else check_real("run.round_seconds", run["round_seconds"], low=0.05, high=3600.0),
        plots=check_bool("run.plots", run.get("plots", True)),
        # tls: hosts key their randomness by the seed (reproducible, replayable by every host)
        shared_seed=check_bool("run.shared_seed", run.get("shared_seed", False)),
        transcript_csv_max_rows=check_int(
            "run.transcript_csv_max_rows", run.get("transcript_csv_max_rows", 500_000), low=0
        ),
        **_backend_keys(run),
    )


def _query_kind(query: Mapping[str, Any]) -> str:
    """``[query] kind``, checked with the SQL (aggregate) and the domains."""
    kind = query.get("kind", "aggregate")
    if kind not in ("aggregate", "kmeans"):
        raise InvalidParameterError(f"query.kind must be 'aggregate' or 'kmeans', got {kind!r}")
    sql = query.get("sql")
    if kind == "aggregate" and not isinstance(sql, str):
        raise InvalidParameterError(
            f"query.sql must be an SQL string for kind='aggregate', got {sql!r}"
        )
    domains = query.get("domains")
    if domains is not None and not (
        isinstance(domains, Mapping) and all(_scalar_list(v) for v in domains.values())
    ):
        raise InvalidParameterError(
            "query.domains must map columns to non-empty lists of numbers or of strings, "
            f"got {domains!r}"
        )
    return str(kind)


def _scalar_list(values: Any) -> bool:
    """A non-empty list of numbers, or of strings (a domain must sort)."""
    if not isinstance(values, list) or not values:
        return False
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    return numbers or all(isinstance(v, str) for v in values)


def _query_spec(query: Mapping[str, Any], kind: str) -> QuerySpec:
    """``[query]`` of a checked ``kind``: sql, compute nodes, k, iterations, domains."""
    return QuerySpec(
        kind=kind,
        sql=query.get("sql"),
        compute_nodes=check_int("query.compute_nodes", query.get("compute_nodes", 20), low=1),
        k=check_int("query.k", query.get("k", 10), low=1),
        iterations=check_int("query.iterations", query.get("iterations", 10), low=1),
        domains=query.get("domains"),
    )


def _held_spec(data: Mapping[str, Any], kind: str, domains: Any) -> DataSpec:
    """``[data] held_by = "nodes"``: the schema of rows this process never sees.

    Examples
    --------
    >>> spec = _held_spec({"held_by": "nodes", "rows": 6, "columns": ["a"]}, "aggregate", {})
    >>> spec.held_by, spec.rows, spec.columns, spec.path, spec.generator
    ('nodes', 6, ('a',), None, None)
    >>> _held_spec({"held_by": "nodes", "seed": 1}, "aggregate", {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: data.seed = 1 contradicts data.held_by = 'nodes'...
    """
    held = data["held_by"]
    if held != "nodes":
        raise InvalidParameterError(
            f"data.held_by must be 'nodes' (the rows stay on the node daemons), got {held!r}",
            parameter="data.held_by",
            value=held,
        )
    for key in _ROW_SOURCE_KEYS:
        if key in data:
            raise InvalidParameterError(
                f"data.{key} = {data[key]!r} contradicts data.held_by = 'nodes': this process "
                "reads no rows (the node daemons hold them); remove it",
                parameter=f"data.{key}",
                value=data[key],
            )
    if kind != "aggregate":
        raise InvalidParameterError(
            f"data.held_by = 'nodes' supports query.kind = 'aggregate' only, got {kind!r}",
            parameter="query.kind",
            value=kind,
        )
    for key in ("rows", "columns"):
        if key not in data:
            raise InvalidParameterError(
                f"data.{key} is required with data.held_by = 'nodes' (the "
                + (
                    "number of rows the daemons hold together)"
                    if key == "rows"
                    else "columns every daemon's rows have)"
                ),
                parameter=f"data.{key}",
            )
    columns = _schema_columns(data["columns"])
    if domains is None:
        raise InvalidParameterError(
            "query.domains is required with data.held_by = 'nodes': the public domain of "
            "every grouping column (this process cannot read it from rows it never sees)",
            parameter="query.domains",
        )
    return DataSpec(
        path=None,
        generator=None,
        rows=check_int("data.rows", data["rows"], low=1),
        distribution="uniform",
        skew=1.0,
        attributes=1,
        intervals=1,
        seed=0,
        mnist_dir=None,
        held_by="nodes",
        columns=columns,
    )


def _schema_columns(columns: Any) -> tuple[str, ...]:
    """``data.columns``: distinct non-empty names."""
    if not (
        isinstance(columns, list)
        and columns
        and all(isinstance(c, str) and c for c in columns)
        and len(set(columns)) == len(columns)
    ):
        raise InvalidParameterError(
            f"data.columns must be a non-empty list of distinct column names, got {columns!r}",
            parameter="data.columns",
            value=columns,
        )
    return tuple(columns)


def _data_spec(data: Mapping[str, Any], kind: str, base: Path | None) -> DataSpec:
    """``[data]``: a file (paths relative to ``base``) or a generator of the query's kind."""
    if "columns" in data and "held_by" not in data:
        raise InvalidParameterError(
            "data.columns applies to data.held_by = 'nodes' only (a file or generator has "
            f"its own columns), got {data['columns']!r}",
            parameter="data.columns",
            value=data["columns"],
        )
    path = data.get("path")
    if path is not None and not isinstance(path, str):
        raise InvalidParameterError(f"data.path must be a string, got {path!r}")
    resolved = (
        None
        if path is None
        else (
            base / path
            if base and not Path(path).is_absolute() and not path.startswith("builtin:")
            else Path(path)
        )
    )
    generator = data.get("generator")
    allowed = _AGG_GENERATORS if kind == "aggregate" else _KMEANS_GENERATORS
    if path is None:
        generator = allowed[0] if generator is None else generator  # "" is no generator
        if generator not in allowed:
            raise InvalidParameterError(
                f"data.generator must be one of {allowed} for {kind}, got {generator!r}"
            )
    elif generator is not None:
        raise InvalidParameterError("data.path and data.generator are exclusive")
    if kind == "kmeans" and path is not None:
        raise InvalidParameterError(
            "data.path is not supported for kind='kmeans' (use data.generator)"
        )
    distribution = data.get("distribution", "uniform")
    if distribution not in ("uniform", "skewed"):
        raise InvalidParameterError(
            f"data.distribution must be 'uniform' or 'skewed', got {distribution!r}"
        )
    mnist_dir = data.get("mnist_dir")
    return DataSpec(
        path=resolved,
        generator=generator,
        rows=check_int("data.rows", data.get("rows", 10_000), low=1),
        distribution=distribution,
        skew=check_real("data.skew", data.get("skew", 1.0), low=0.0),
        attributes=check_int(
            "data.attributes", data.get("attributes", 4), low=1, high=MAX_ATTRIBUTES
        ),
        intervals=check_int("data.intervals", data.get("intervals", 20), low=1, high=MAX_INTERVALS),
        seed=check_int("data.seed", data.get("seed", 0), low=0),
        mnist_dir=None if mnist_dir is None else Path(str(mnist_dir)),
    )


def _fixed_spec(fixed: Mapping[str, Any]) -> FixedCountermeasures | None:
    """``[countermeasures]`` (``None`` when the section is absent or empty: the planner)."""
    if not fixed:
        return None
    n = fixed.get("n")
    spec = FixedCountermeasures(
        sigma=check_probability("countermeasures.sigma", fixed.get("sigma", 0.0), allow_one=False),
        n=None if n is None else check_int("countermeasures.n", n, low=1),
        # Each scrambler forwards its n inputs and d dummies: memory grows with d.
        d=check_int("countermeasures.d", fixed.get("d", 0), low=0, high=MAX_DUMMIES),
        local_dummies=check_int(
            "countermeasures.local_dummies", fixed.get("local_dummies", 0), low=0
        ),
        cap=check_bool("countermeasures.cap", fixed.get("cap", False)),
    )
    if spec.n is None and spec.d:
        raise InvalidParameterError("countermeasures.d needs countermeasures.n (scramblers)")
    return spec


def _backend_keys(run: Mapping[str, Any]) -> dict[str, Any]:
    """``[run] backend, shards, address, block_size`` (address: an existing Ray cluster;
    block_size: nodes per block, the unit of execution and of counter-based randomness)."""
    backend = check_backend(run.get("backend", "local"), "run.backend")
    address = run.get("address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise InvalidParameterError(f"run.address must be a non-empty string, got {address!r}")
    if address is not None and backend != "ray":
        raise InvalidParameterError(
            f"run.address needs run.backend = 'ray', got backend {backend!r}"
        )
    return {
        "backend": backend,
        "shards": check_int("run.shards", run.get("shards", 1), low=1, high=MAX_SHARDS),
        "address": address,
        "block_size": check_int("run.block_size", run.get("block_size", 1 << 14), low=1),
        "block_size_given": run.get("block_size") is not None,
    }


def load_spec(path: Path | str) -> RunSpec:
    """Read and validate a ``PLAN.toml`` file (paths inside are relative to it).

    ``example:NAME`` reads the shipped example ``NAME`` (:mod:`crowdhide.plans.examples`).
    """
    file = resolve_plan(path)
    if not file.exists():
        raise FileNotFoundError(2, "No such file or directory", str(file))
    if file.is_dir():
        raise DataError(f"plan file {file} is a directory, not a PLAN.toml")
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{file}: not a text (UTF-8) PLAN.toml file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidParameterError(f"{file}: invalid TOML: {exc}") from None
    return parse_spec(raw, base=file.parent)


def held_plan_text(
    raw: Mapping[str, Any],
    *,
    rows: int,
    columns: Sequence[str],
    domains: Mapping[str, Sequence[Any]],
    header: str = "",
) -> str:
    """``raw`` (a parsed PLAN.toml) as the coordinator's plan of a deployment: ``[data]``
    replaced by ``held_by = "nodes"``, ``rows`` and ``columns``, ``[query] domains`` set
    to ``domains``; checked by :func:`parse_spec` and by reading the text back.

    Examples
    --------
    >>> raw = {"name": "x", "data": {"generator": "aggregate", "rows": 6, "seed": 3},
    ...        "query": {"sql": "SELECT g1, SUM(v) FROM D GROUP BY g1"},
    ...        "privacy": {"epsilon": 1.0}}
    >>> text = held_plan_text(raw, rows=6, columns=["g1", "v"], domains={"g1": [0, 1]})
    >>> print(text)
    name = "x"
    <BLANKLINE>
    [data]
    held_by = "nodes"
    rows = 6
    columns = ["g1", "v"]
    <BLANKLINE>
    [query]
    sql = "SELECT g1, SUM(v) FROM D GROUP BY g1"
    domains = { g1 = [0, 1] }
    <BLANKLINE>
    [privacy]
    epsilon = 1.0
    <BLANKLINE>
    """
    document = {k: dict(v) if isinstance(v, Mapping) else v for k, v in raw.items()}
    document["data"] = {"held_by": "nodes", "rows": int(rows), "columns": list(columns)}
    query = dict(document.get("query", {}))
    query["domains"] = {c: [_plain(v) for v in values] for c, values in domains.items()}
    document["query"] = query
    parse_spec(document)  # the plan it writes must parse
    lines = [header] if header else []
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in document.items() if k == "name"]
    for section, keys in document.items():
        if section == "name":
            continue
        lines += ["", f"[{_toml_key(section)}]"]
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in keys.items()]
    text = "\n".join(lines) + "\n"
    try:
        same = tomllib.loads(text) == document
    except tomllib.TOMLDecodeError:
        same = False
    if not same:  # a value this small writer does not render (a control character, ...)
        raise InvalidParameterError("the coordinator plan does not read back as written")
    return text


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value TOML writes."""
    return value.item() if hasattr(value, "item") else value


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    """A TOML value: strings (JSON escapes are TOML's), numbers, booleans, arrays, tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    raise InvalidParameterError(f"cannot write {value!r} to a plan file")
