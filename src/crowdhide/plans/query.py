"""What the runner needs from a built-in query: the :class:`Query` protocol.

A query bound to its data builds its unprotected plan, names its data routes in plain
words, and, once the protected plan has run, reads the answer (the result, the exact
answer for comparison and the utility) and writes its files. The runner
(:mod:`crowdhide.plans.runner`) and the renderers (:mod:`crowdhide.report`) only use these
methods; the two implementations are :class:`AggregateOverTable` (SQL with GROUPING SETS,
exact answer from DuckDB) and :class:`KmeansOverPoints` (decentralized K-means, Rand index
against the same K-means run without protection).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from crowdhide._output import write_csv
from crowdhide.backends import execute
from crowdhide.engine import Execution
from crowdhide.plans.aggregate import (
    AggregateQuery,
    AggregateSetup,
    aggregate_plan,
    aggregate_schema_plan,
    compare,
    exact_answer,
    run_sql,
)
from crowdhide.plans.data import load_kmeans_data, load_table, synth_aggregate, synth_diabetes
from crowdhide.plans.estimates import estimate_rows, inclusion_probabilities, write_answer
from crowdhide.plans.kmeans import KmeansSetup, kmeans_plan, nearest, rand_index
from crowdhide.plans.model import ExecutionPlan
from crowdhide.plans.spec import RunSpec, check_work
from crowdhide.plans.traffic import traffic_per_node

__all__ = [
    "NO_EXACT",
    "AggregateAnswer",
    "AggregateOverTable",
    "Answer",
    "KmeansAnswer",
    "KmeansOverPoints",
    "Query",
    "load_query",
]


#: What the report says instead of an exact answer when the rows stay on the node daemons.
NO_EXACT = "exact answer: not available — the coordinator holds no data"


class Answer(Protocol):
    """A query's answer after a run: report sections (``to_dict``) and files (``write``)."""

    def to_dict(self) -> dict[str, Any]:
        """The report's ``result``, ``exact``, ``utility`` (and query-specific) sections."""

    def write(self, out: Path) -> dict[str, str]:
        """Write the answer's files into ``out``; ``{name: path}`` in report order."""


class Query(Protocol):
    """A built-in query bound to its data, as the runner uses it."""

    @property
    def plan(self) -> ExecutionPlan:
        """The unprotected plan."""

    @property
    def data_routes(self) -> tuple[str, ...]:
        """The data routes (one per grouping set or per K-means iteration)."""

    @property
    def data_source(self) -> str:
        """Where the data came from (file or generator), for the report."""

    @property
    def rows(self) -> int:
        """Tuples (one per user device)."""

    def describe(self) -> dict[str, Any]:
        """The report's ``query`` record."""

    def relayed(self, per_scrambler: int) -> Query:
        """The same query on a plan adapted to scramblers of ``per_scrambler`` sources."""

    @property
    def route_names(self) -> Mapping[str, str]:
        """Plain names of the data routes that have one (others read ``A → B``)."""

    def answer(self, run: Execution, protected: ExecutionPlan, *, seed: int) -> Answer:
        """Read the answer of ``run`` (of ``protected``) and compare it with the exact one."""


# -- aggregate ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AggregateUtility:
    """How the estimates compare with DuckDB's exact answer."""

    tuples: int
    tuples_used_per_grouping_set: tuple[int, ...]
    vs_exact: Mapping[str, Any]
    vs_duckdb_on_used_tuples: Mapping[str, Any]
    duckdb_rows_of_original_sql: int | None

    def to_dict(self) -> dict[str, Any]:
        """Plain record (report.json's ``utility``)."""
        return {
            "tuples": self.tuples,
            "tuples_used_per_grouping_set": list(self.tuples_used_per_grouping_set),
            "vs_exact": dict(self.vs_exact),
            "vs_duckdb_on_used_tuples": dict(self.vs_duckdb_on_used_tuples),
            "duckdb_rows_of_original_sql": self.duckdb_rows_of_original_sql,
        }


@dataclass(frozen=True, kw_only=True)
class AggregateAnswer:
    """Result rows, estimates with 95 % intervals, DuckDB's exact answer, the traffic.

    ``exact`` is ``None`` when this process holds no rows (``[data] held_by = "nodes"``):
    the report says :data:`NO_EXACT` and compares nothing.
    """

    query: AggregateQuery = field(repr=False)
    result: list[dict[str, Any]]
    exact: list[dict[str, Any]] | None
    estimates: list[dict[str, Any]]
    inclusion_probability: Mapping[str, float]
    traffic: list[dict[str, Any]]
    route_names: Mapping[str, str]
    utility: AggregateUtility

    @property
    def aggregates(self) -> list[str]:
        """Labels of the aggregates, in the result's column order."""
        return [a for a in self.result[0] if "(" in a] if self.result else []

    def to_dict(self) -> dict[str, Any]:
        """The report's sections, in report.json's order."""
        return {
            "result": self.result,
            "exact": NO_EXACT if self.exact is None else self.exact,
            "estimates": self.estimates,
            "inclusion_probability": dict(self.inclusion_probability),
            "traffic": self.traffic,
            "route_names": dict(self.route_names),
            "utility": self.utility.to_dict(),
        }

    def write(self, out: Path) -> dict[str, str]:
        """``result.csv`` (estimates in the SQL's layout), ``exact.csv`` (when there is an
        exact answer), ``estimates.csv``."""
        files = {"result": str(write_answer(out / "result.csv", self.estimates, self.query))}
        if self.exact is not None:
            files["exact"] = str(write_answer(out / "exact.csv", self.exact, self.query))
        files["estimates"] = str(write_csv(out / "estimates.csv", self.estimates))
        return files


@dataclass(frozen=True)
class AggregateOverTable:
    """An Aggregate query (SQL with GROUPING SETS) over a table, one tuple per source.

    ``table`` is ``None`` when the rows are held by the node daemons (``[data] held_by =
    "nodes"``): the plan was built from the schema, the public domains and the row count.
    """

    setup: AggregateSetup
    table: Mapping[str, npt.NDArray[Any]] | None = field(repr=False)
    data_source: str = ""
    compute_nodes: int = 1

    @classmethod
    def from_spec(cls, spec: RunSpec, *, backend: str = "local") -> AggregateOverTable:
        """Load ``[data]`` and build the plan of ``[query]`` (within ``backend``'s work
        limit, :func:`~crowdhide.plans.spec.check_work`)."""
        data = spec.data
        assert spec.query.sql is not None
        query = AggregateQuery.from_sql(spec.query.sql)
        sets = len(query.grouping_sets)
        if data.held_by is not None:
            return cls.schema_only(spec, query, backend=backend)
        if data.path is None and data.table is None:  # before generating: the size is known
            check_work(data.rows, sets, what="grouping sets", backend=backend)
        table: Mapping[str, npt.NDArray[Any]]
        if data.table is not None:
            table, source = data.table, "table from Python"
            check_work(len(next(iter(table.values()))), sets, what="grouping sets", backend=backend)
        elif data.path is not None:
            table, source = load_table(data.path), str(data.path)
            check_work(len(next(iter(table.values()))), sets, what="grouping sets", backend=backend)
        elif data.generator == "diabetes":
            table, source = synth_diabetes(rows=data.rows, rng=data.seed), "synthetic diabetes"
        else:
            table = synth_aggregate(
                rows=data.rows,
                attributes=data.attributes,
                intervals=data.intervals,
                distribution=data.distribution,  # type: ignore[arg-type]
                skew=data.skew,
                rng=data.seed,
            )
            source = f"synthetic aggregate ({data.distribution})"
        setup = aggregate_plan(
            table,
            query,
            compute_nodes=spec.query.compute_nodes,
            domains=spec.query.domains,
            message_size=spec.message_size,
        )
        return cls(setup, table, source, spec.query.compute_nodes)

    @classmethod
    def schema_only(
        cls, spec: RunSpec, query: AggregateQuery, *, backend: str = "local"
    ) -> AggregateOverTable:
        """The plan of ``[data] held_by = "nodes"``: no row is read (none is here)."""
        data = spec.data
        check_work(data.rows, len(query.grouping_sets), what="grouping sets", backend=backend)
        assert spec.query.domains is not None  # required by the plan's parser
        setup = aggregate_schema_plan(
            data.rows,
            query,
            columns=data.columns,
            domains=spec.query.domains,
            compute_nodes=spec.query.compute_nodes,
            message_size=spec.message_size,
        )
        source = f"held by the node daemons ({data.rows} rows; schema and public domains only)"
        return cls(setup, None, source, spec.query.compute_nodes)

    @property
    def plan(self) -> ExecutionPlan:
        return self.setup.plan

    @property
    def data_routes(self) -> tuple[str, ...]:
        return self.setup.routes

    @property
    def rows(self) -> int:
        return self.setup.plan.group("S").size

    def describe(self) -> dict[str, Any]:
        sql = self.setup.query.sql
        return {"kind": "aggregate", "sql": sql, "compute_nodes": self.compute_nodes}

    def relayed(self, per_scrambler: int) -> AggregateOverTable:
        """The aggregate plan does not depend on the scramblers (nothing flows back)."""
        return self

    @property
    def route_names(self) -> dict[str, str]:
        """``sources → compute nodes for age_range`` per data route."""
        return {
            route: "sources → compute nodes for " + ", ".join(columns)
            for route, columns in zip(
                self.setup.routes, self.setup.query.grouping_sets, strict=True
            )
        }

    def answer(self, run: Execution, protected: ExecutionPlan, *, seed: int) -> AggregateAnswer:
        setup = self.setup
        rows = setup.result_rows(run.states["R"])
        used = tuple(
            int(run.used[r].sum()) if r in run.used else run.routes[r].real_delivered
            for r in setup.routes
        )
        pis = inclusion_probabilities(protected, setup.routes)
        exact, utility = self._utility(run, rows, used)
        return AggregateAnswer(
            query=setup.query,
            result=rows,
            exact=exact,
            estimates=estimate_rows(setup, run.states["R"], pis),
            inclusion_probability=pis,
            traffic=traffic_per_node(setup.plan, run.transcript, setup.routes),
            route_names=self.route_names,
            utility=utility,
        )

    def _utility(
        self, run: Execution, rows: list[dict[str, Any]], used: tuple[int, ...]
    ) -> tuple[list[dict[str, Any]] | None, AggregateUtility]:
        """The exact answer and the comparisons with it (none when no row is here)."""
        query = self.setup.query
        if self.table is None:
            none = {"not_available": NO_EXACT}
            return None, AggregateUtility(
                tuples=self.rows,
                tuples_used_per_grouping_set=used,
                vs_exact=none,
                vs_duckdb_on_used_tuples=none,
                duckdb_rows_of_original_sql=None,
            )
        exact = exact_answer(self.table, query)
        routes = self.setup.routes
        # A tls run does not tell the driver which tuples were used (that would reveal where
        # each real message went): the check against DuckDB needs the local engine.
        on_used: dict[str, Any] = (
            compare(
                rows, exact_answer(self.table, query, masks=[run.used[r] for r in routes]), query
            )
            if all(r in run.used for r in routes)
            else {"not_available": "the tls backend does not reveal which tuples were used"}
        )
        return exact, AggregateUtility(
            tuples=self.rows,
            tuples_used_per_grouping_set=used,
            vs_exact=compare(rows, exact, query),
            vs_duckdb_on_used_tuples=on_used,
            duckdb_rows_of_original_sql=len(run_sql(self.table, query)),
        )


# -- K-means -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class KmeansAnswer:
    """Final centroids and their Rand index, against K-means without protection."""

    centroids: npt.NDArray[np.float32] = field(repr=False)
    rand_index: float
    rand_index_unprotected: float
    tuples: int
    tuples_used_per_iteration: tuple[int, ...]
    test_points: int

    def to_dict(self) -> dict[str, Any]:
        """The report's sections, in report.json's order."""
        return {
            "result": {"centroids": self.centroids.shape[0], "dimension": self.centroids.shape[1]},
            "exact": {"rand_index_unprotected": self.rand_index_unprotected},
            "utility": {
                "rand_index": self.rand_index,
                "rand_index_unprotected": self.rand_index_unprotected,
                "tuples": self.tuples,
                "tuples_used_per_iteration": list(self.tuples_used_per_iteration),
                "test_points": self.test_points,
            },
        }

    def write(self, out: Path) -> dict[str, str]:
        """``centroids.npy``."""
        np.save(out / "centroids.npy", self.centroids)
        return {"result": str(out / "centroids.npy")}


@dataclass(frozen=True)
class KmeansOverPoints:
    """Decentralized K-means over training points (one per source), scored on test points."""

    setup: KmeansSetup
    train: npt.NDArray[np.float32] = field(repr=False)
    test: npt.NDArray[np.float32] = field(repr=False)
    test_labels: npt.NDArray[Any] = field(repr=False)
    seed: int = 0
    data_source: str = ""

    @classmethod
    def from_spec(cls, spec: RunSpec, *, backend: str = "local") -> KmeansOverPoints:
        """Load ``[data]`` (MNIST, digits or blobs) and build the plan of ``[query]``."""
        data = spec.data
        check_work(
            data.rows,
            spec.query.iterations,
            what="K-means iterations",
            routes_key="query.iterations",
            backend=backend,
        )
        km = load_kmeans_data(
            source=data.generator or "auto",  # type: ignore[arg-type]
            mnist_dir=data.mnist_dir,
            rows=data.rows,
            rng=data.seed,
        )
        setup = kmeans_plan(
            km.train, k=spec.query.k, iterations=spec.query.iterations, rng=spec.seed
        )
        return cls(setup, km.train, km.test, km.test_labels, spec.seed, km.source)

    @property
    def plan(self) -> ExecutionPlan:
        return self.setup.plan

    @property
    def data_routes(self) -> tuple[str, ...]:
        return self.setup.routes

    @property
    def rows(self) -> int:
        return int(self.train.shape[0])

    def describe(self) -> dict[str, Any]:
        return {"kind": "kmeans", "k": self.setup.k, "iterations": self.setup.iterations}

    def _plan(self, relay_per: int | None) -> KmeansSetup:
        k, iterations = self.setup.k, self.setup.iterations
        return kmeans_plan(
            self.train, k=k, iterations=iterations, rng=self.seed, relay_per=relay_per
        )

    def relayed(self, per_scrambler: int) -> KmeansOverPoints:
        """Centroids go back through the scramblers' devices (Section V-A), not broadcast."""
        return replace(self, setup=self._plan(per_scrambler))

    @property
    def route_names(self) -> dict[str, str]:
        return {}

    def _score(self, centroids: npt.NDArray[np.float32]) -> float:
        """Rand index of the test points' nearest centroids against their labels."""
        return rand_index(self.test_labels, nearest(self.test, centroids))

    def answer(self, run: Execution, protected: ExecutionPlan, *, seed: int) -> KmeansAnswer:
        centroids = self.setup.centroids(run.states["R"])
        baseline = self._plan(None)
        central = execute(baseline.plan, rng=seed)
        return KmeansAnswer(
            centroids=centroids,
            rand_index=self._score(centroids),
            rand_index_unprotected=self._score(baseline.centroids(central.states["R"])),
            tuples=self.rows,
            tuples_used_per_iteration=tuple(
                int(run.used[r].sum()) if r in run.used else run.routes[r].real_delivered
                for r in self.setup.routes
            ),
            test_points=int(self.test.shape[0]),
        )


class _Loader(Protocol):
    def __call__(self, spec: RunSpec, *, backend: str = ...) -> Query: ...


_QUERIES: Mapping[str, _Loader] = {
    "aggregate": AggregateOverTable.from_spec,
    "kmeans": KmeansOverPoints.from_spec,
}


def load_query(spec: RunSpec, *, backend: str = "local") -> Query:
    """Load the data of ``spec`` and bind it to its query (``query.kind``); ``backend``
    (``local``, ``ray`` or ``tls``) is the one the run will use: its work limit applies."""
    return _QUERIES[spec.query.kind](spec, backend=backend)
