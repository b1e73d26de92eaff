"""Run a ``PLAN.toml`` end to end: data → plan → countermeasures → execution → report.

:func:`prepare` builds and certifies the protected plan without running it (``crowdhide
plan``); :func:`run_spec` also executes it on the local backend, compares the result with
DuckDB's exact answer, and writes the result, the report, the observer's transcript and
the privacy/cost plots (``crowdhide run``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._json import jsonable
from crowdhide._validation import check_int
from crowdhide.accounting.countermeasure_costs import route_costs
from crowdhide.accounting.scrambler import local_randomizer_epsilon
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.engine import Execution, Transcript, execute
from crowdhide.errors import UnmetTargetError
from crowdhide.plans.aggregate import (
    AggregateQuery,
    AggregateSetup,
    aggregate_plan,
    compare,
    exact_answer,
    run_sql,
)
from crowdhide.plans.certify import (
    CountermeasureAccountant,
    PlanPrivacy,
    certify,
    default_accountant,
)
from crowdhide.plans.data import (
    KmeansData,
    load_kmeans_data,
    load_table,
    synth_aggregate,
    synth_diabetes,
)
from crowdhide.plans.estimates import estimate_rows, inclusion_probabilities, write_answer
from crowdhide.plans.kmeans import KmeansSetup, kmeans_plan, nearest, rand_index
from crowdhide.plans.model import ExecutionPlan, data_clusters_per_path, protect
from crowdhide.plans.planner import CountermeasureChoice, plan_protection
from crowdhide.plans.spec import RunSpec, check_backend
from crowdhide.plans.traffic import traffic_per_node

__all__ = ["Prepared", "prepare", "run_spec", "tradeoff_curve"]

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Prepared:
    """A certified, protected plan ready to run."""

    spec: RunSpec
    setup: AggregateSetup | KmeansSetup
    plan: ExecutionPlan
    choices: dict[str, CountermeasureChoice]
    certificate: PlanPrivacy
    table: dict[str, npt.NDArray[Any]] | None = field(default=None, repr=False)
    kmeans: KmeansData | None = field(default=None, repr=False)
    data_source: str = ""
    unprotected: ExecutionPlan | None = field(default=None, repr=False)

    def target_met(self) -> bool | None:
        """Whether the certificate meets ``[privacy]`` (``None``: no ε target was given).

        NaN or infinite certificates count as not met (the comparisons are written so).
        """
        if self.spec.epsilon is None:
            return None
        cert = self.certificate.privacy
        # 1e-9 relative: the planner and the certifier evaluate the same bound twice.
        return bool(
            cert.epsilon <= self.spec.epsilon * (1 + 1e-9)
            and cert.delta <= self.spec.delta * (1 + 1e-9)
        )

    def target_text(self) -> str:
        """One line: the certified (ε, δ) next to the target."""
        cert = self.certificate.privacy
        return (
            f"certified epsilon={cert.epsilon:.4g}, delta={cert.delta:.3g} "
            f"vs target epsilon={self.spec.epsilon}, delta={self.spec.delta:g}"
        )

    def summary(self) -> dict[str, Any]:
        """JSON-ready description of plan, clusters, parameters and certificate."""
        cert = self.certificate
        return {
            "name": self.spec.name,
            "query": _query_record(self.spec),
            "data": {"source": self.data_source, "rows": _rows(self)},
            "mode": "fixed" if self.spec.fixed else "planner",
            "target": {"epsilon": self.spec.epsilon, "delta": self.spec.delta},
            "target_met": self.target_met(),
            "routes": self.plan.describe(),
            "countermeasures": {k: v.to_dict() for k, v in self.choices.items()},
            "clusters_per_path": data_clusters_per_path(self.plan),
            "privacy": {
                "epsilon": cert.privacy.epsilon,
                "delta": cert.privacy.delta,
                "accountant": cert.accountant,
                "paths": [
                    {
                        "origin": p.origin,
                        "epsilon": p.privacy.epsilon,
                        "delta": p.privacy.delta,
                        "clusters": list(p.clusters),
                    }
                    for p in cert.paths
                ],
                "clusters": [c.to_dict() for c in cert.clusters],
                "notes": list(cert.privacy.notes),
            },
        }


def _query_record(spec: RunSpec) -> dict[str, Any]:
    q = spec.query
    if q.kind == "aggregate":
        return {"kind": q.kind, "sql": q.sql, "compute_nodes": q.compute_nodes}
    return {"kind": q.kind, "k": q.k, "iterations": q.iterations}


def _rows(prepared: Prepared) -> int:
    if prepared.table is not None:
        return len(next(iter(prepared.table.values())))
    assert prepared.kmeans is not None
    return int(prepared.kmeans.train.shape[0])


def _load(spec: RunSpec) -> tuple[dict[str, npt.NDArray[Any]] | None, KmeansData | None, str]:
    data = spec.data
    if spec.query.kind == "kmeans":
        km = load_kmeans_data(
            source=data.generator or "auto",  # type: ignore[arg-type]
            mnist_dir=data.mnist_dir,
            rows=data.rows,
            rng=data.seed,
        )
        return None, km, km.source
    if data.path is not None:
        return load_table(data.path), None, str(data.path)
    if data.generator == "diabetes":
        return synth_diabetes(rows=data.rows, rng=data.seed), None, "synthetic diabetes"
    table = synth_aggregate(
        rows=data.rows,
        attributes=data.attributes,
        intervals=data.intervals,
        distribution=data.distribution,  # type: ignore[arg-type]
        skew=data.skew,
        rng=data.seed,
    )
    return table, None, f"synthetic aggregate ({data.distribution})"


def prepare(
    spec: RunSpec,
    *,
    accountant: CountermeasureAccountant | None = None,
    progress: Progress | None = None,
) -> Prepared:
    """Load data, build the plan, choose (or apply fixed) countermeasures, certify."""
    acct = accountant if accountant is not None else default_accountant()
    tick = progress or (lambda stage, done, total: None)
    tick("load data", 0, 1)
    table, km, source = _load(spec)
    tick("load data", 1, 1)
    setup: AggregateSetup | KmeansSetup
    if spec.query.kind == "aggregate":
        assert table is not None
        assert spec.query.sql is not None
        query = AggregateQuery.from_sql(spec.query.sql)
        setup = aggregate_plan(
            table,
            query,
            compute_nodes=spec.query.compute_nodes,
            domains=spec.query.domains,
            message_size=spec.message_size,
        )
    else:
        assert km is not None
        setup = kmeans_plan(
            km.train, k=spec.query.k, iterations=spec.query.iterations, rng=spec.seed
        )
    tick("plan countermeasures", 0, 1)
    unprotected = setup.plan
    if spec.fixed is not None:
        f = spec.fixed
        if isinstance(setup, KmeansSetup) and f.n is not None:
            setup = _relayed(setup, km, spec, f.n)
        choice = CountermeasureChoice(
            sigma=f.sigma,
            local_dummies=f.local_dummies,
            n=f.n,
            d=f.d,
            privacy=PrivacyStatement.not_applicable(source="fixed", reason="not certified yet"),
            costs=route_costs(sources=1, targets=1),
        )
        choices = {
            r.name: choice
            for r in setup.plan.routes
            if r.kind == "data" and setup.plan.group(r.receiver).size > 1
        }
    else:
        assert spec.epsilon is not None
        _, choices = plan_protection(
            setup.plan,
            epsilon=spec.epsilon,
            delta=spec.delta,
            constraints=spec.constraints,
            accountant=acct,
        )
        first = next(iter(choices.values()), None)
        if isinstance(setup, KmeansSetup) and first is not None and first.n is not None:
            setup = _relayed(setup, km, spec, first.n)
    plan = setup.plan
    for name, choice in list(choices.items()):
        route = plan.route(name)
        S = plan.group(route.sender).size
        T = plan.group(route.receiver).size
        if T > 1:
            plan = protect(
                plan,
                route=name,
                sigma=choice.sigma,
                local_dummies=choice.local_dummies,
                per_scrambler=choice.n,
                dummies=choice.d,
                cap=spec.fixed.cap if spec.fixed is not None else False,
            )
        costs = route_costs(
            sources=S,
            targets=T,
            sigma=choice.sigma,
            n=choice.n,
            dummies=choice.d,
            local_dummies=min(choice.local_dummies, T - 1),
        )
        choices[name] = replace(choice, costs=costs)
    tick("plan countermeasures", 1, 1)
    tick("certify", 0, 1)
    certificate = certify(plan, delta=spec.delta, accountant=acct)
    by_route = {c.route: c for c in certificate.clusters if c.route is not None}
    for name, choice in list(choices.items()):
        c = by_route.get(name)
        if c is not None:
            choices[name] = replace(choice, privacy=c.privacy)
    tick("certify", 1, 1)
    return Prepared(spec, setup, plan, choices, certificate, table, km, source, unprotected)


def _relayed(setup: KmeansSetup, km: KmeansData | None, spec: RunSpec, n: int) -> KmeansSetup:
    """Rebuild the K-means plan with centroids relayed through the scramblers' devices."""
    assert km is not None
    return kmeans_plan(km.train, k=setup.k, iterations=setup.iterations, rng=spec.seed, relay_per=n)


def _unprotected_messages(plan: ExecutionPlan) -> int:
    total = 0
    for route in plan.routes:
        senders = plan.group(route.sender).size
        receivers = plan.group(route.receiver).size
        if route.kind == "broadcast":
            total += senders * receivers
        elif route.kind == "fanout":
            total += receivers
        else:
            total += senders
    return total


def _channels(transcript: Transcript) -> dict[str, int]:
    """Largest number of distinct peers (secure channels) of a node, per group."""
    total = sum(size for _, size in transcript.groups.values())
    pairs = np.unique(transcript.source.astype(np.int64) * total + transcript.target)
    src, dst = pairs // total, pairs % total
    degree = np.bincount(src, minlength=total) + np.bincount(dst, minlength=total)
    return {
        g: int(degree[first : first + size].max()) for g, (first, size) in transcript.groups.items()
    }


def tradeoff_curve(
    *,
    sources: int,
    targets: int,
    clusters_per_path: int,
    delta: float,
    sigma: float,
    ns: Sequence[int],
    ds: Sequence[int],
    accountant: CountermeasureAccountant,
) -> list[dict[str, Any]]:
    """Whole-plan ε against costs for scramblers (n, d) at sampling σ (Fig. 8 style).

    Each cluster gets δ/k; the plan's ε is k times the cluster's ε (Theorem 1).
    """
    k = max(1, clusters_per_path)
    rows: list[dict[str, Any]] = []
    for n in ns:
        for d in ds:
            cert = accountant.scrambled(
                targets=targets,
                sigma=sigma,
                n=min(n, sources),
                dummies=d,
                delta=delta / k,
                capped=False,
            )
            costs = route_costs(sources=sources, targets=targets, sigma=sigma, n=n, dummies=d)
            rows.append(
                {
                    "sigma": sigma,
                    "n": n,
                    "d": d,
                    "epsilon_cluster": cert.epsilon,
                    "epsilon": k * cert.epsilon,
                    "delta": k * cert.delta,
                    "method": cert.source,
                    "overhead": costs.overhead,
                    "added_messages": costs.added_messages,
                    "channels_per_scrambler": costs.channels_per_scrambler,
                    "extra_consents": costs.extra_consents,
                }
            )
    return rows


def _plots(
    prepared: Prepared, out: Path, accountant: CountermeasureAccountant
) -> tuple[list[Path], list[dict[str, Any]]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plan = prepared.setup.plan
    route = next(r for r in plan.routes if r.kind == "data")
    S = plan.group(route.sender).size
    T = plan.group(route.receiver).size
    k = max(1, data_clusters_per_path(plan))
    choice = prepared.choices[route.name]
    sigma = choice.sigma
    if choice.n is not None:
        ns = sorted({choice.n, max(10, choice.n // 4), min(S, choice.n * 4)})
        ds = sorted({0, 10, 50, 100, 200, 500, choice.d})
        rows = tradeoff_curve(
            sources=S,
            targets=T,
            clusters_per_path=k,
            delta=prepared.spec.delta,
            sigma=sigma,
            ns=ns,
            ds=ds,
            accountant=accountant,
        )
        series: dict[Any, list[dict[str, Any]]] = {n: [r for r in rows if r["n"] == n] for n in ns}
        label = "sources per scrambler n"
    else:
        rows = []
        for dl in range(T):
            eps = (
                local_randomizer_epsilon(targets=T, sigma=sigma, dummies=dl)
                if sigma > 0
                else math.inf
            )
            costs = route_costs(sources=S, targets=T, sigma=sigma, local_dummies=dl)
            rows.append(
                {
                    "sigma": sigma,
                    "n": None,
                    "d": dl,
                    "epsilon": k * eps,
                    "overhead": costs.overhead,
                    "channels_per_scrambler": dl + 1,
                    "method": "theorem2",
                }
            )
        series = {"local": rows}
        label = "local flooding"
    # The plan's ε is this route's cluster ε plus the other clusters of the path (Theorem
    # 1), so the curve is shifted by the others' certified ε and the chosen point is the
    # certificate itself.
    others = _other_clusters_epsilon(prepared, route.name)
    for r in rows:
        r["epsilon"] = r.get("epsilon_cluster", r["epsilon"] / k) + others
    files: list[Path] = []
    for key, xlabel, name in (
        (
            "overhead",
            "network load (messages / unprotected messages)",
            "privacy_vs_network_load.png",
        ),
        (
            "channels_per_scrambler",
            "individual load (channels per node)",
            "privacy_vs_individual_load.png",
        ),
    ):
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for n, pts in series.items():
            finite = [p for p in pts if math.isfinite(p["epsilon"])]
            ax.plot(
                [p[key] for p in finite],
                [p["epsilon"] for p in finite],
                marker="o",
                label=f"{label}={n}" if label != "local flooding" else label,
            )
        chosen = [
            r
            for r in rows
            if r["d"] == (choice.d if choice.n is not None else choice.local_dummies)
            and (r["n"] == choice.n)
        ]
        if chosen and math.isfinite(chosen[0]["epsilon"]):
            ax.scatter(
                [chosen[0][key]],
                [prepared.certificate.privacy.epsilon],
                s=120,
                facecolors="none",
                edgecolors="red",
                label=f"chosen: certified ε={prepared.certificate.privacy.epsilon:.3g}",
                zorder=5,
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"privacy loss ε of the plan (δ={prepared.spec.delta:g})")
        ax.set_title(
            f"{prepared.spec.name}: {_route_label(prepared, route.name)}\n"
            f"{S:,} sources, {T} compute nodes, sampling σ={sigma:g}",
            fontsize=10,
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files, rows


def _route_label(prepared: Prepared, route: str) -> str:
    """Plain name of a data route: ``sources → compute nodes for age_range``."""
    setup = prepared.setup
    if isinstance(setup, AggregateSetup) and route in setup.routes:
        columns = setup.query.grouping_sets[setup.routes.index(route)]
        return "sources → compute nodes for " + ", ".join(columns)
    return route.replace("->", " → ")


def _other_clusters_epsilon(prepared: Prepared, route: str) -> float:
    """Certified ε of the plan minus that of ``route``'s cluster (0 when it is alone)."""
    mine = [c.privacy.epsilon for c in prepared.certificate.clusters if c.route == route]
    plan_epsilon = prepared.certificate.privacy.epsilon
    if not mine or not math.isfinite(plan_epsilon):
        return 0.0
    return max(0.0, plan_epsilon - max(mine))


def _write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    import csv

    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _execute(
    plan: ExecutionPlan,
    seed: int,
    tick: Any,
    *,
    network: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> tuple[Execution, dict[str, Any] | None]:
    """Execute on ``options["backend"]``, or in node-host processes over mutual TLS."""

    def step(done: int, total: int, name: str) -> None:
        tick("execute", done, total)

    if network is None:
        return execute(plan, rng=seed, progress=step, **options), None
    from crowdhide.net.backend import TlsBackend

    settings = dict(network)
    # Room for the largest message plus header and end-to-end sealing (onion: two layers).
    settings.setdefault("frame_size", max(256, max(r.message_size for r in plan.routes) + 128))
    backend = TlsBackend(**settings)
    try:
        run = execute(
            plan, rng=seed, progress=step, backend=backend, block_size=options["block_size"]
        )
    finally:
        backend.close()
    record = {
        "backend": "tls",
        "hosts": backend.hosts,
        "frame_bytes": backend.frame,
        "tls_record_bytes": backend.frame + 22,
        "data_frames_delivered": backend.frames_sent,
        **backend.missing.to_dict(),
    }
    return run, record


def _execution_choice(
    spec: RunSpec, backend: str | None, shards: int | None, address: str | None
) -> tuple[str, int, str | None]:
    """Backend, shards and Ray address: the arguments, else ``[run]`` of the plan file."""
    backend_name = spec.backend if backend is None else check_backend(backend)
    shard_count = spec.shards if shards is None else check_int("shards", shards, low=1)
    ray_address = spec.address if address is None else address
    if ray_address is not None and backend_name != "ray":
        raise ValueError(f"address applies to backend 'ray' only, got {ray_address!r}")
    return backend_name, shard_count, ray_address


def run_spec(
    spec: RunSpec,
    out_dir: Path,
    *,
    accountant: CountermeasureAccountant | None = None,
    progress: Progress | None = None,
    before_send: Callable[[Prepared], None] | None = None,
    backend: str | None = None,
    shards: int | None = None,
    address: str | None = None,
    network: Mapping[str, Any] | None = None,
    block_size: int | None = None,
    allow_unmet: bool = True,
) -> dict[str, Any]:
    """Prepare, execute, compare with the exact answer, write files; return the report.

    With ``allow_unmet=False`` a plan whose certificate misses ``[privacy]`` raises
    :class:`~crowdhide.errors.UnmetTargetError` before anything is executed.
    ``backend`` (``"local"`` or ``"ray"``), ``shards`` and ``address`` override ``[run]``
    of the plan file; the result does not depend on them (same seed, same output).
    ``before_send(prepared)`` runs once the plan is certified and before any message is
    sent (a privacy-budget check raises there to refuse the run).
    ``network`` (e.g. ``{"hosts": 3, "on_missing": "report"}``) runs the plan on the ``tls``
    backend instead (:class:`crowdhide.net.backend.TlsBackend`, node programs in host
    processes); ``block_size`` overrides ``[run] block_size`` (blocks are spread over hosts).
    """
    backend_name, shard_count, ray_address = _execution_choice(spec, backend, shards, address)
    size = spec.block_size if block_size is None else check_int("block_size", block_size, low=1)
    acct = accountant if accountant is not None else default_accountant()
    tick = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    prepared = prepare(spec, accountant=acct, progress=progress)
    if not allow_unmet and prepared.target_met() is False:
        raise UnmetTargetError(
            f"{prepared.target_text()}; nothing was run (--allow-unmet runs it anyway)"
        )
    if before_send is not None:  # after the target check: a refused run is not charged
        before_send(prepared)
    prepared_at = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = len(prepared.plan.groups)
    run, net_record = _execute(
        prepared.plan,
        spec.seed,
        tick,
        network=network,
        options={
            "backend": backend_name,
            "shards": shard_count,
            "address": ray_address,
            "block_size": size,
        },
    )
    executed_at = time.perf_counter()
    del groups
    report = prepared.summary()
    report["execution"] = {
        "backend": run.backend,
        "shards": run.shards,
        "address": ray_address,
        "block_size": run.block_size,
        "seed": run.seed,
    }
    if net_record is not None:
        report["network"] = net_record
    files: dict[str, str] = {}
    tick("exact answer and utility", 0, 1)
    if isinstance(prepared.setup, AggregateSetup):
        assert prepared.table is not None
        setup = prepared.setup
        rows = setup.result_rows(run.states["R"])
        exact = exact_answer(prepared.table, setup.query)
        masks = [run.used.get(r, np.zeros(_rows(prepared), dtype=bool)) for r in setup.routes]
        on_used = exact_answer(prepared.table, setup.query, masks=masks)
        verbatim = run_sql(prepared.table, setup.query)
        pis = inclusion_probabilities(prepared.plan, setup.routes)
        estimates = estimate_rows(setup, run.states["R"], pis)
        report["result"] = rows
        report["exact"] = exact
        report["estimates"] = estimates
        report["inclusion_probability"] = pis
        report["traffic"] = traffic_per_node(setup.plan, run.transcript, setup.routes)
        report["route_names"] = {r: _route_label(prepared, r) for r in setup.routes}
        report["utility"] = {
            "tuples": _rows(prepared),
            "tuples_used_per_grouping_set": [int(m.sum()) for m in masks],
            "vs_exact": compare(rows, exact, setup.query),
            "vs_duckdb_on_used_tuples": compare(rows, on_used, setup.query),
            "duckdb_rows_of_original_sql": len(verbatim),
        }
        files["result"] = str(write_answer(out / "result.csv", estimates, setup.query))
        files["exact"] = str(write_answer(out / "exact.csv", exact, setup.query))
        files["estimates"] = str(_write_rows(out / "estimates.csv", estimates))
    else:
        assert prepared.kmeans is not None
        km_setup = prepared.setup
        centroids = km_setup.centroids(run.states["R"])
        data = prepared.kmeans
        ri = rand_index(data.test_labels, nearest(data.test, centroids))
        from crowdhide.plans.kmeans import kmeans_plan as _kp

        baseline = _kp(data.train, k=km_setup.k, iterations=km_setup.iterations, rng=spec.seed)
        central = execute(baseline.plan, rng=spec.seed)
        ri_central = rand_index(
            data.test_labels, nearest(data.test, baseline.centroids(central.states["R"]))
        )
        used = [int(run.used[r].sum()) if r in run.used else 0 for r in km_setup.routes]
        report["result"] = {"centroids": centroids.shape[0], "dimension": centroids.shape[1]}
        report["exact"] = {"rand_index_unprotected": ri_central}
        report["utility"] = {
            "rand_index": ri,
            "rand_index_unprotected": ri_central,
            "tuples": _rows(prepared),
            "tuples_used_per_iteration": used,
            "test_points": int(data.test.shape[0]),
        }
        np.save(out / "centroids.npy", centroids)
        files["result"] = str(out / "centroids.npy")
    tick("exact answer and utility", 1, 1)
    transcript = run.transcript
    unprotected = _unprotected_messages(prepared.unprotected or prepared.setup.plan)
    data_routes = [
        r.name for r in prepared.plan.routes if r.kind == "data" and r.name in run.routes
    ]
    report["costs"] = {
        "messages": len(transcript),
        "unprotected_messages": unprotected,
        "added_messages": len(transcript) - unprotected,
        "overhead": len(transcript) / unprotected,
        "data_route_overhead": sum(run.routes[r].messages for r in data_routes)
        / max(1, sum(run.routes[r].senders for r in data_routes)),
        "bytes": transcript.bytes_on_wire,
        "max_channels_per_node": _channels(transcript),
        "dummies": {k: v.dummies for k, v in run.routes.items() if v.dummies},
        "extra_consents_for_same_utility": {
            k: c.costs.extra_consents for k, c in prepared.choices.items()
        },
        "scramblers": {k: c.costs.scramblers for k, c in prepared.choices.items()},
    }
    files["transcript"] = str(transcript.save(out / "transcript.npz"))
    if len(transcript) <= spec.transcript_csv_max_rows:
        files["transcript_csv"] = str(transcript.save(out / "transcript.csv"))
    if spec.plots:
        tick("plots", 0, 1)
        try:
            pngs, curve = _plots(prepared, out, acct)
        except ImportError:
            report.setdefault("notes", []).append("plots skipped: matplotlib not installed")
        else:
            files["plots"] = ", ".join(str(p) for p in pngs)
            files["tradeoff_csv"] = str(_write_rows(out / "tradeoff.csv", curve))
        tick("plots", 1, 1)
    report["timings"] = {
        "prepare_s": prepared_at - started,
        "execute_s": executed_at - prepared_at,
        "total_s": time.perf_counter() - started,
    }
    report["files"] = files
    report_path = out / "report.json"
    files["report"] = str(report_path)
    report_path.write_text(
        json.dumps(jsonable(report), indent=2, allow_nan=False), encoding="utf-8"
    )
    return report
