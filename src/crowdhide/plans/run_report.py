"""The typed report of ``crowdhide plan`` and ``crowdhide run``.

:class:`PlanReport` describes a certified plan (query, data, routes, countermeasures and
the certificate: the end-to-end :class:`~crowdhide.accounting.PrivacyStatement` with the
target check, and per data path and per hop); :class:`RunReport` adds what a run measured
(the query's answer, costs, timings, files). Readers use attributes; ``to_dict()`` gives
the JSON document written to ``report.json`` and printed by ``--json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crowdhide._output import write_json
from crowdhide.accounting import PrivacyStatement
from crowdhide.accounting.statement import format_bound, statement_card

if TYPE_CHECKING:
    from crowdhide.engine import Execution
    from crowdhide.plans.certify import PlanPrivacy
    from crowdhide.plans.planner import CountermeasureChoice
    from crowdhide.plans.query import Answer

__all__ = [
    "PROTECTION",
    "ExecutionRecord",
    "HopReport",
    "PathReport",
    "PlanReport",
    "Provenance",
    "RunCosts",
    "RunReport",
    "Timings",
    "plan_hops",
    "plan_paths",
    "plan_privacy",
]


#: What each kind of number in a run report is protected by. The terminal, HTML and JSON
#: reports all print these lines: ε certifies the communication pattern, not the answer.
PROTECTION: Mapping[str, str] = {
    "traffic": (
        "protected by (ε, δ): which compute node each device sends to, i.e. the messages "
        "per node an observer of the network sees (the certificate per data path)"
    ),
    "result": (
        "NOT noised, not a DP output: the estimates, their intervals, the min/max of the "
        "tuples used and K-means centroids are computed from the devices' real values; "
        "ε does not cover publishing them"
    ),
    "exact": (
        "NOT protected, for checking only: the same query on all tuples without countermeasures"
    ),
    "seed": (
        "not secret: on the local and Ray backends (and tls with a shared seed) whoever "
        "knows it can replay the sampling, dummies and shuffles and undo the traffic's "
        "protection; keep it (and report.json) from the observer. tls hosts key their "
        "draws with their own secrets by default: the seed does not replay them"
    ),
}


def plan_privacy(certificate: PlanPrivacy) -> PrivacyStatement:
    """The end-to-end statement of a plan certificate (Theorem 1: the worst data path)."""
    return certificate.privacy


@dataclass(frozen=True, kw_only=True)
class PathReport:
    """One data path (a user's tuple through the clusters it crosses) and its statement."""

    origin: str
    clusters: tuple[str, ...]
    privacy: PrivacyStatement

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        return {
            "origin": self.origin,
            "epsilon": self.privacy.epsilon,
            "delta": self.privacy.delta,
            "clusters": list(self.clusters),
        }


@dataclass(frozen=True, kw_only=True)
class HopReport:
    """One cluster (a hop of the plan) and its statement; ``privacy.source`` is the method
    that certified it (``data-independent`` when the destinations ignore the data)."""

    cluster: str
    route: str | None
    targets: int
    parallel_clusters: int
    privacy: PrivacyStatement

    @property
    def method(self) -> str:
        """The bound or rule that certified the hop."""
        return self.privacy.source

    @property
    def data_dependent(self) -> bool:
        """Whether the hop's destinations depend on the data."""
        return self.method != "data-independent"

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        return {
            "cluster": self.cluster,
            "route": self.route,
            "targets": self.targets,
            "parallel_clusters": self.parallel_clusters,
            "epsilon": self.privacy.epsilon,
            "delta": self.privacy.delta,
            "method": self.method,
            "note": "; ".join(self.privacy.notes),
        }


def plan_paths(certificate: PlanPrivacy) -> tuple[PathReport, ...]:
    """Theorem 1 per data path of a plan certificate."""
    return tuple(
        PathReport(
            origin=p.origin,
            clusters=tuple(p.clusters),
            privacy=p.privacy,
        )
        for p in certificate.paths
    )


def plan_hops(certificate: PlanPrivacy) -> tuple[HopReport, ...]:
    """(ε, δ) per cluster of a plan certificate."""
    return tuple(
        HopReport(
            cluster=c.cluster,
            route=c.route,
            targets=c.targets,
            parallel_clusters=c.count,
            privacy=c.privacy,
        )
        for c in certificate.clusters
    )


@dataclass(frozen=True, kw_only=True)
class PlanReport:
    """A certified, protected plan: what ``crowdhide plan`` prints."""

    name: str
    query: Mapping[str, Any]
    data_source: str
    rows: int
    mode: str
    target_epsilon: float | None
    target_delta: float
    routes: tuple[Mapping[str, Any], ...]
    countermeasures: Mapping[str, CountermeasureChoice]
    clusters_per_path: int
    privacy: PrivacyStatement
    paths: tuple[PathReport, ...]
    hops: tuple[HopReport, ...]
    route_names: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_certificate(cls, certificate: PlanPrivacy, **fields: Any) -> PlanReport:
        """The report of ``certificate`` (paths and hops read from it) and ``fields``."""
        return cls(paths=plan_paths(certificate), hops=plan_hops(certificate), **fields)

    def __repr__(self) -> str:
        """One line: name, certified (ε, δ) (rounded up), target, route count."""
        return (
            f"PlanReport(name={self.name!r}, ε={format_bound(self.privacy.epsilon)}, "
            f"δ={format_bound(self.privacy.delta)}, target_met={self.target_met}, "
            f"routes={len(self.routes)})"
        )

    def _repr_html_(self) -> str:
        """A card like report.html's header (notebooks)."""
        return statement_card(self.privacy, title=f"Plan {self.name}", rows=self._card_rows())

    def _card_rows(self) -> dict[str, str]:
        return {"query": str(self.query.get("sql", self.query.get("kind", ""))),
                "data": f"{self.data_source}, {self.rows} rows"}  # fmt: skip

    @property
    def target_met(self) -> bool | None:
        """Whether the certificate meets ``[privacy]`` (``None``: no ε target)."""
        return self.privacy.meets_target

    def target_text(self) -> str:
        """One line: the certified (ε, δ) next to the target."""
        return (
            f"certified epsilon={format_bound(self.privacy.epsilon)}, "
            f"delta={format_bound(self.privacy.delta, digits=3)} "
            f"vs target epsilon={self.target_epsilon}, delta={self.target_delta:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description of plan, clusters, parameters and certificate."""
        return {
            "name": self.name,
            "query": dict(self.query),
            "data": {"source": self.data_source, "rows": self.rows},
            "mode": self.mode,
            "target": {"epsilon": self.target_epsilon, "delta": self.target_delta},
            "target_met": self.target_met,
            "routes": [dict(r) for r in self.routes],
            "countermeasures": {k: v.to_dict() for k, v in self.countermeasures.items()},
            "clusters_per_path": self.clusters_per_path,
            "privacy": {
                "epsilon": self.privacy.epsilon,
                "delta": self.privacy.delta,
                "accountant": self.privacy.source,
                "paths": [p.to_dict() for p in self.paths],
                "clusters": [h.to_dict() for h in self.hops],
                "notes": list(self.privacy.notes),
            },
        }


@dataclass(frozen=True, kw_only=True)
class ExecutionRecord:
    """Where and how the plan ran (the result does not depend on backend or shards)."""

    backend: str
    shards: int
    address: str | None
    block_size: int
    seed: int

    @classmethod
    def of(cls, run: Execution, *, address: str | None) -> ExecutionRecord:
        """What ``run`` echoes of its execution (``address``: the Ray cluster, if any)."""
        return cls(
            backend=run.backend,
            shards=run.shards,
            address=address,
            block_size=run.block_size,
            seed=run.seed,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        return {
            "backend": self.backend,
            "shards": self.shards,
            "address": self.address,
            "block_size": self.block_size,
            "seed": self.seed,
        }


#: Distributions whose versions can change a run's numbers (certificates, random streams).
_DEPENDENCIES = ("numpy", "scipy", "dp-accounting", "duckdb")


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where a run's certificate comes from: crowdhide's version, the seed, the backend and
    the command line, so that ``report.json`` can be traced and the run repeated.

    ``command`` is ``None`` when the run was started from Python rather than the CLI.
    """

    crowdhide: str
    python: str
    dependencies: Mapping[str, str]
    command: tuple[str, ...] | None
    seed: int
    backend: str
    created_utc: str

    @classmethod
    def now(cls, *, seed: int, backend: str, command: Sequence[str] | None) -> Provenance:
        """The provenance of a run finishing now in this interpreter."""
        import datetime
        import platform
        from importlib import metadata

        from crowdhide import __version__

        versions: dict[str, str] = {}
        for name in _DEPENDENCIES:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = "not installed"
        created = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        return cls(
            crowdhide=__version__,
            python=platform.python_version(),
            dependencies=versions,
            command=None if command is None else tuple(command),
            seed=seed,
            backend=backend,
            created_utc=created.isoformat().replace("+00:00", "Z"),
        )

    def command_text(self) -> str:
        """The command line as one shell-quoted string (``-`` without one).

        >>> Provenance(crowdhide="0", python="3", dependencies={}, seed=0, backend="local",
        ...     command=("crowdhide", "run", "my plan.toml"), created_utc="").command_text()
        "crowdhide run 'my plan.toml'"
        """
        import shlex

        return "-" if self.command is None else shlex.join(self.command)

    def to_dict(self) -> dict[str, Any]:
        """Plain record (report.json's ``provenance``)."""
        return {
            "crowdhide": self.crowdhide,
            "python": self.python,
            "dependencies": dict(self.dependencies),
            "command": None if self.command is None else list(self.command),
            "seed": self.seed,
            "backend": self.backend,
            "created_utc": self.created_utc,
        }


@dataclass(frozen=True, kw_only=True)
class RunCosts:
    """What the protection cost: messages, bytes, channels, dummies, extra users.

    ``unprotected_messages`` counts the plan that ran without its countermeasures (the same
    routes, no sampling, scramblers or dummies), so ``added_messages`` is what the
    countermeasures added.
    """

    messages: int
    unprotected_messages: int
    data_route_overhead: float
    bytes: int
    max_channels_per_node: Mapping[str, int]
    dummies: Mapping[str, int]
    extra_consents_for_same_utility: Mapping[str, int]
    scramblers: Mapping[str, int]

    @property
    def added_messages(self) -> int:
        """Messages the countermeasures added."""
        return self.messages - self.unprotected_messages

    @property
    def overhead(self) -> float:
        """Network load: messages / unprotected messages."""
        return self.messages / self.unprotected_messages

    def to_dict(self) -> dict[str, Any]:
        """Plain record (report.json's ``costs``)."""
        return {
            "messages": self.messages,
            "unprotected_messages": self.unprotected_messages,
            "added_messages": self.added_messages,
            "overhead": self.overhead,
            "data_route_overhead": self.data_route_overhead,
            "bytes": self.bytes,
            "max_channels_per_node": dict(self.max_channels_per_node),
            "dummies": dict(self.dummies),
            "extra_consents_for_same_utility": dict(self.extra_consents_for_same_utility),
            "scramblers": dict(self.scramblers),
        }


@dataclass(frozen=True, kw_only=True)
class Timings:
    """Wall-clock seconds: certify, execute, whole run."""

    prepare_s: float
    execute_s: float
    total_s: float

    def to_dict(self) -> dict[str, float]:
        """Plain record."""
        return {"prepare_s": self.prepare_s, "execute_s": self.execute_s, "total_s": self.total_s}


@dataclass(frozen=True, kw_only=True)
class RunReport:
    """What ``crowdhide run`` reports: the certified plan, the answer, costs and files.

    ``files`` maps a name (``result``, ``transcript``, ``plots``, ``report``, ``html``...)
    to the path written; ``inputs`` (the plan file and output directory, set by the CLI)
    is printed by ``--json`` only. ``provenance`` (crowdhide's version, seed, backend,
    command line) is written first in ``report.json``.
    """

    plan: PlanReport
    execution: ExecutionRecord
    answer: Answer
    costs: RunCosts
    timings: Timings
    files: Mapping[str, str]
    network: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()
    inputs: Mapping[str, str] = field(default_factory=dict)
    provenance: Provenance | None = None

    @property
    def privacy(self) -> PrivacyStatement:
        """The certified (ε, δ) of the plan, with the target check."""
        return self.plan.privacy

    def __repr__(self) -> str:
        """One line (``to_dict()`` has everything)."""
        return (
            f"RunReport(name={self.plan.name!r}, ε={format_bound(self.privacy.epsilon)}, "
            f"δ={format_bound(self.privacy.delta)}, target_met={self.plan.target_met}, "
            f"backend={self.execution.backend!r}, files={len(self.files)})"
        )

    def _repr_html_(self) -> str:
        """A card like report.html's header: ε, δ, kind, target met or not, notes."""
        rows = self.plan._card_rows()
        rows["tables"] = ", ".join(self.tables()) or "none"
        return statement_card(self.privacy, title=f"Run {self.plan.name}", rows=rows)

    def tables(self) -> tuple[str, ...]:
        """Names of the answer's tabular sections (for :meth:`to_pandas`)."""
        sections = self.answer.to_dict()
        return tuple(k for k, v in sections.items() if isinstance(v, list) and v)

    def to_pandas(self, table: str = "estimates") -> Any:
        """One tabular section of the answer (``result``, ``exact``, ``estimates``,
        ``traffic`` for an aggregate query) as a ``pandas.DataFrame``.

        Raises :class:`~crowdhide.errors.MissingExtraError` when pandas is not installed
        and :class:`~crowdhide.errors.InvalidParameterError` for a table the answer lacks.
        """
        from crowdhide._extras import require
        from crowdhide.errors import InvalidParameterError

        if table not in self.tables():
            raise InvalidParameterError(
                f"table must be one of {self.tables()} for this run, got table={table!r}"
            )
        pandas = require("pandas", purpose="RunReport.to_pandas")
        return pandas.DataFrame(self.answer.to_dict()[table])

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the run (``report.json``; ``--json`` adds ``inputs``)."""
        record: dict[str, Any] = {}
        if self.provenance is not None:
            record["provenance"] = self.provenance.to_dict()
        record.update(self.plan.to_dict())
        record["protection"] = dict(PROTECTION)
        record["execution"] = self.execution.to_dict()
        if self.network is not None:
            record["network"] = dict(self.network)
        record.update(self.answer.to_dict())
        record["costs"] = self.costs.to_dict()
        if self.notes:
            record["notes"] = list(self.notes)
        record["timings"] = self.timings.to_dict()
        record["files"] = dict(self.files)
        if self.inputs:
            record["inputs"] = dict(self.inputs)
        return record

    def write_json(self, path: Path) -> Path:
        """Write :meth:`to_dict` as indented JSON (non-finite numbers as ``null``)."""
        return write_json(path, self.to_dict())
