"""Run a ``PLAN.toml`` end to end: data → plan → countermeasures → execution → report.

:func:`prepare` builds and certifies the protected plan without running it (``crowdhide
plan``); :func:`run_spec` also executes it on the local backend, compares the result with
the exact answer (DuckDB's, or K-means without protection), and writes the result, the
report, the observer's transcript and the privacy/cost plots (``crowdhide run``). What a
query contributes goes through the :class:`~crowdhide.plans.query.Query` protocol.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._output import write_csv
from crowdhide._validation import check_int
from crowdhide.accounting import PrivacyStatement
from crowdhide.backends import execute, make_backend
from crowdhide.engine import Execution, Job, Transcript
from crowdhide.engine.backend import check_shards
from crowdhide.errors import InvalidParameterError, MissingExtraError, UnmetTargetError
from crowdhide.plans.certify import (
    CountermeasureAccountant,
    PlanPrivacy,
    certify,
    default_accountant,
)
from crowdhide.plans.countermeasure_costs import route_costs
from crowdhide.plans.model import ExecutionPlan
from crowdhide.plans.planner import CountermeasureChoice, plan_protection
from crowdhide.plans.query import Query, load_query
from crowdhide.plans.run_report import (
    ExecutionRecord,
    HopReport,
    PlanReport,
    Provenance,
    RunCosts,
    RunReport,
    Timings,
    plan_hops,
    plan_privacy,
)
from crowdhide.plans.semantics import data_clusters_per_path, protect
from crowdhide.plans.spec import FixedCountermeasures, RunSpec, check_backend
from crowdhide.plans.tradeoff import plot_tradeoff, run_tradeoff, tradeoff_curve

__all__ = ["PageWriter", "Prepared", "prepare", "run_spec", "tradeoff_curve"]

Progress = Callable[[str, int, int], None]
#: Writes one more page of a finished run into a directory (e.g. ``report.html``).
PageWriter = Callable[[RunReport, Path], Path]


def _no_progress(stage: str, done: int, total: int) -> None:
    del stage, done, total


@dataclass(frozen=True)
class Prepared:
    """A certified, protected plan ready to run."""

    spec: RunSpec
    query: Query
    plan: ExecutionPlan
    choices: dict[str, CountermeasureChoice]
    certificate: PlanPrivacy

    @property
    def privacy(self) -> PrivacyStatement:
        """The plan's certified (ε, δ), checked against ``[privacy]`` when ε is given."""
        statement = plan_privacy(self.certificate)
        if self.spec.epsilon is None:
            return statement
        # δ is compared exactly: the certifier's even split (plans.certify.even_share) keeps
        # the summed shares within the budget.
        return statement.with_target(epsilon=self.spec.epsilon, delta=self.spec.delta)

    def report(self) -> PlanReport:
        """The typed description of plan, clusters, parameters and certificate."""
        return PlanReport.from_certificate(
            self.certificate,
            name=self.spec.name,
            query=self.query.describe(),
            data_source=self.query.data_source,
            rows=self.query.rows,
            mode="fixed" if self.spec.fixed else "planner",
            target_epsilon=self.spec.epsilon,
            target_delta=self.spec.delta,
            routes=tuple(self.plan.describe()),
            countermeasures=dict(self.choices),
            clusters_per_path=data_clusters_per_path(self.plan),
            privacy=self.privacy,
            route_names=self.query.route_names,
        )


def prepare(
    spec: RunSpec,
    *,
    accountant: CountermeasureAccountant | None = None,
    progress: Progress | None = None,
    backend: str = "local",
) -> Prepared:
    """Load data, build the plan, choose (or apply fixed) countermeasures, certify.
    ``backend`` is the one the plan will run on (``local``, ``ray``, ``tls``): its work
    limit (:data:`~crowdhide.plans.spec.WORK_LIMITS`) bounds the data loaded."""
    acct = accountant if accountant is not None else default_accountant()
    tick = progress or _no_progress
    tick("load data", 0, 1)
    query = load_query(spec, backend=backend)
    tick("load data", 1, 1)
    tick("plan countermeasures", 0, 1)
    query, choices = _choose(spec, query, acct)
    plan, choices = _protect(spec, query.plan, choices)
    tick("plan countermeasures", 1, 1)
    tick("certify", 0, 1)
    certificate = certify(plan, delta=spec.delta, accountant=acct)
    hops = {h.route: h for h in plan_hops(certificate) if h.route is not None}
    for name, choice in list(choices.items()):
        if name in hops:
            choices[name] = _certified(choice, hops[name])
    tick("certify", 1, 1)
    return Prepared(spec, query, plan, choices, certificate)


def _choose(
    spec: RunSpec, query: Query, accountant: CountermeasureAccountant
) -> tuple[Query, dict[str, CountermeasureChoice]]:
    """The fixed ``[countermeasures]`` on every data route, else the planner's choice.

    With scramblers the query's plan may change (K-means relays the centroids through the
    scramblers' devices), so the query comes back too.
    """
    if spec.fixed is None:
        assert spec.epsilon is not None
        _, choices = plan_protection(
            query.plan,
            epsilon=spec.epsilon,
            delta=spec.delta,
            constraints=spec.constraints,
            accountant=accountant,
        )
        first = next(iter(choices.values()), None)
        if first is not None and first.n is not None:
            query = query.relayed(first.n)
        return query, choices
    f = spec.fixed
    if f.n is not None:
        query = query.relayed(f.n)
    choice = _fixed_choice(f)
    plan = query.plan
    data = [r.name for r in plan.routes if r.kind == "data" and plan.group(r.receiver).size > 1]
    return query, dict.fromkeys(data, choice)


def _fixed_choice(fixed: FixedCountermeasures) -> CountermeasureChoice:
    """``[countermeasures]`` as a choice (certified, and costed per route, later)."""
    return CountermeasureChoice(
        sigma=fixed.sigma,
        local_dummies=fixed.local_dummies,
        n=fixed.n,
        d=fixed.d,
        privacy=PrivacyStatement.not_applicable(source="fixed", reason="not certified yet"),
        costs=route_costs(sources=1, targets=1),
    )


def _certified(choice: CountermeasureChoice, hop: HopReport) -> CountermeasureChoice:
    """``choice`` with its route's certified (ε_i, δ_i) and method."""
    return replace(choice, privacy=hop.privacy)


def _protect(
    spec: RunSpec, plan: ExecutionPlan, choices: Mapping[str, CountermeasureChoice]
) -> tuple[ExecutionPlan, dict[str, CountermeasureChoice]]:
    """Apply each route's countermeasures to ``plan``; the choices with their costs."""
    out: dict[str, CountermeasureChoice] = {}
    for name, choice in choices.items():
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
        out[name] = replace(choice, costs=costs)
    return plan, out


def _unprotected_messages(plan: ExecutionPlan) -> int:
    """Messages of ``plan`` without countermeasures (one per sender, or per receiver)."""
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
    pairs = transcript.source.astype(np.int64) * total + transcript.target
    # Distinct pairs by sorting in place: plain np.unique takes a hash path that is about
    # fifty times slower on this many distinct values (numpy 2.4).
    pairs.sort()
    if pairs.size:
        pairs = pairs[np.flatnonzero(np.diff(pairs, prepend=pairs[0] - 1))]
    src, dst = pairs // total, pairs % total
    degree = np.bincount(src, minlength=total) + np.bincount(dst, minlength=total)
    return {
        g: int(degree[first : first + size].max()) for g, (first, size) in transcript.groups.items()
    }


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
    settings = dict(network)
    # The tls backend sizes its frames from the plan (one size for the whole run).
    backend: Any = make_backend("tls", **settings)
    try:
        run = execute(
            plan, rng=seed, progress=step, backend=backend, block_size=options["block_size"]
        )
    finally:
        backend.close()
    placed = Job(plan=plan, seed=seed, block_size=options["block_size"])
    record = {
        "backend": "tls",
        "hosts": backend.hosts,
        # where each group ran (part of the signed plan): data-dependent hops cross hosts
        "placement": backend.placement.rule,
        "hosts_of_groups": {
            g: " ".join(map(str, h)) for g, h in backend.placement.groups(placed).items()
        },
        "frame_bytes": backend.frame,
        "tls_record_bytes": backend.frame + 22,
        "round_seconds": backend.round_seconds,  # the longest round
        # each round's own length, in order: from the plan's worst-case work, never the data
        "round_schedule": list(backend.round_schedule),
        "round_seconds_from": backend.round_basis,  # a default depends on the machine's load
        # whose key drove the blocks' draws (the report's notes say what it implies)
        "randomness": (
            "shared seed" if getattr(backend, "shared_seed", False) else "secret per host"
        ),
        "round_lateness_max_seconds": max(backend.lateness, default=0.0),
        "rounds": backend.ledger.epoch,
        "data_frames_delivered": backend.frames_sent,
        "delivered_per_link": {
            f"{a}->{b}": n for (a, b), n in sorted(backend.ledger.delivered.items()) if n
        },
        **backend.missing.to_dict(),
        # Nothing lost, refused, withheld or dead: what the report says about the answer.
        "complete": not (backend.missing or backend.missing.dead_hosts),
    }
    if hasattr(backend, "describe"):  # node daemons: the coordinator observed counts only
        record.update(
            coordinator_observes=backend.describe()["observed"],
            transcript="not observed by the coordinator (per-link frame counts only)",
            rows_of_nodes={str(h): f"{a}..{b - 1}" for h, (a, b) in enumerate(backend.ranges)},
        )
    return run, record


def _execution_choice(
    spec: RunSpec, backend: str | None, shards: int | None, address: str | None
) -> tuple[str, int, str | None]:
    """Backend, shards and Ray address: the arguments, else ``[run]`` of the plan file."""
    backend_name = spec.backend if backend is None else check_backend(backend)
    shard_count = spec.shards if shards is None else check_int("shards", shards, low=1)
    ray_address = spec.address if address is None else address
    if ray_address is not None and backend_name != "ray":
        raise InvalidParameterError(f"address applies to backend 'ray' only, got {ray_address!r}")
    check_shards(shard_count, backend=backend_name, address=ray_address)
    return backend_name, shard_count, ray_address


def _costs(prepared: Prepared, run: Execution) -> RunCosts:
    transcript = run.transcript
    data_routes = [
        r.name for r in prepared.plan.routes if r.kind == "data" and r.name in run.routes
    ]
    return RunCosts(
        messages=len(transcript),
        # The plan that ran without its countermeasures: K-means with scramblers relays the
        # centroids (one message of K per source), and the baseline must count that too.
        unprotected_messages=_unprotected_messages(prepared.query.plan),
        data_route_overhead=sum(run.routes[r].messages for r in data_routes)
        / max(1, sum(run.routes[r].senders for r in data_routes)),
        bytes=transcript.bytes_on_wire,
        max_channels_per_node=_channels(transcript),
        dummies={k: v.dummies for k, v in run.routes.items() if v.dummies},
        extra_consents_for_same_utility={
            k: c.costs.extra_consents for k, c in prepared.choices.items()
        },
        scramblers={k: c.costs.scramblers for k, c in prepared.choices.items()},
    )


def _other_clusters_epsilon(prepared: Prepared, route: str) -> float:
    """Certified ε of the plan minus that of ``route``'s cluster (0 when it is alone)."""
    mine = [h.privacy.epsilon for h in plan_hops(prepared.certificate) if h.route == route]
    epsilon = prepared.privacy.epsilon
    if not mine or not math.isfinite(epsilon):
        return 0.0
    return max(0.0, epsilon - max(mine))


def _plots(
    prepared: Prepared, out: Path, accountant: CountermeasureAccountant
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The trade-off plots of the first data route: (notes, files written)."""
    plan = prepared.query.plan
    route = next(r for r in plan.routes if r.kind == "data")
    S = plan.group(route.sender).size
    T = plan.group(route.receiver).size
    choice = prepared.choices[route.name]
    label = prepared.query.route_names.get(route.name, route.name.replace("->", " → "))
    tradeoff = run_tradeoff(
        sources=S,
        targets=T,
        clusters_per_path=data_clusters_per_path(plan),
        choice=choice,
        others=_other_clusters_epsilon(prepared, route.name),
        epsilon=prepared.privacy.epsilon,
        delta=prepared.spec.delta,
        accountant=accountant,
        title=(
            f"{prepared.spec.name}: {label}\n"
            f"{S:,} sources, {T} compute nodes, sampling σ={choice.sigma:g}"
        ),
    )
    try:
        pngs = plot_tradeoff(tradeoff, out)
    except MissingExtraError as exc:  # plots are the optional `plot` extra
        return (f"plots skipped: {exc}",), {}
    return (), {
        "plots": ", ".join(str(p) for p in pngs),
        "tradeoff_csv": str(write_csv(out / "tradeoff.csv", tradeoff.rows)),
    }


def _save_transcript(transcript: Transcript, out: Path, spec: RunSpec) -> dict[str, str]:
    files = {"transcript": str(transcript.save(out / "transcript.npz"))}
    if len(transcript) <= spec.transcript_csv_max_rows:
        files["transcript_csv"] = str(transcript.save(out / "transcript.csv"))
    return files


def _finish(report: RunReport, out: Path, pages: Mapping[str, PageWriter]) -> RunReport:
    """Write the extra pages, then ``report.json`` (listing every file)."""
    report = replace(report, files={**report.files, "report": str(out / "report.json")})
    for name, page in pages.items():
        report = replace(report, files={**report.files, name: str(page(report, out))})
    report.write_json(out / "report.json")
    return report


def _network_with_spec(
    network: Mapping[str, Any] | None, spec: RunSpec
) -> Mapping[str, Any] | None:
    """The tls options, with ``[run] round_seconds`` and ``shared_seed`` where the caller
    gave none (``None``: an in-process run; the notes say those keys went unused)."""
    if network is None:
        return None
    merged = dict(network)
    if merged.get("round_seconds") is None and spec.round_seconds:
        merged["round_seconds"] = spec.round_seconds
    if merged.get("shared_seed") is None and spec.shared_seed:
        merged["shared_seed"] = True
    return merged


def _check_network_options(network: Mapping[str, Any] | None, shard_count: int) -> None:
    """Refuse what the tls backend would drop: it places blocks on its hosts, not shards;
    node daemons never share a seed (each keys its blocks with its own secret)."""
    if network is not None and network.get("shared_seed") and "directory" in network:
        raise InvalidParameterError(
            "shared_seed does not apply to a tls run on node daemons (directory): each "
            "daemon keys its blocks with its own secret randomness, got shared_seed=True",
            parameter="shared_seed",
            value=True,
        )
    if network is not None and shard_count > 1:
        raise InvalidParameterError(
            f"shards applies to backends local and ray, not tls (got shards={shard_count}); "
            "tls places blocks on its hosts",
            parameter="shards",
            value=shard_count,
        )


def _check_rows_here(spec: RunSpec, backend_name: str, network: Mapping[str, Any] | None) -> None:
    """Refuse, before any work, to run a plan whose rows are held by the node daemons on a
    backend that would need them in this process (local, ray, tls hosts it spawns)."""
    if spec.data.held_by is None or (network is not None and "directory" in network):
        return
    where = (
        "the tls hosts spawned by this run"
        if network is not None
        else f"the {backend_name} backend"
    )
    raise InvalidParameterError(
        f"data.held_by = {spec.data.held_by!r}: the rows stay on the node daemons, so this "
        f"plan runs only on them (--backend tls --directory ...); {where} would need "
        "the rows in this process, which has none",
        parameter="data.held_by",
        value=spec.data.held_by,
    )


def _backend_notes(
    spec: RunSpec,
    backend_name: str,
    network: Mapping[str, Any] | None,
    net_record: Mapping[str, Any] | None,
) -> tuple[str, ...]:
    """What the report must say about options the backend did not use or could not see."""
    notes: tuple[str, ...] = ()
    if network is None and spec.round_seconds:
        notes += (
            f"[run] round_seconds = {spec.round_seconds:g} applies to the tls backend only; "
            f"the {backend_name} backend has no rounds on a wire and did not use it",
        )
    notes += _randomness_notes(spec, network)
    if net_record is not None and net_record.get("complete") is False:
        notes = (incomplete_note(net_record), *notes)
    if net_record is not None and "coordinator_observes" in net_record:
        if spec.data.held_by is None:
            notes += (
                "SIMULATION: this coordinator generated or loaded every tuple ([data]) to "
                "build the plan and the exact answer; a deployment's coordinator holds no "
                "data: use [data] held_by = 'nodes' (crowdhide net split --coordinator-plan)",
            )
        notes += (
            "node daemons: the coordinator does not observe the transcript, so costs "
            "(messages, channels, dummies) and tuples used read 0; frames per link are "
            "under network.delivered_per_link",
        )
    return notes


def incomplete_note(net: Mapping[str, Any]) -> str:
    """The first note of a run that lost frames, blocks or nodes (``--on-missing report``):
    the answer and its intervals hold what arrived only."""
    what = [f"{net['messages_lost']} frames lost"] if net.get("messages_lost") else []
    if net.get("dead_hosts"):
        what.append(f"dead nodes {net['dead_hosts']}")
    if net.get("lost_blocks"):
        what.append(f"{len(net['lost_blocks'])} blocks not run")
    if net.get("suspect_hosts"):
        what.append(f"suspect nodes {net['suspect_hosts']}")
    return (
        f"INCOMPLETE RUN ({'; '.join(what) or 'frames refused'}; see network): the answer and "
        "its intervals count only what arrived, and the privacy target verdict is the "
        "certificate's, not a sign the run went well"
    )


def _randomness_notes(spec: RunSpec, network: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What the report must say about whose randomness the blocks drew."""
    if network is None:
        if spec.shared_seed:
            return (
                "[run] shared_seed = true applies to the tls backend only; the in-process "
                "backends always key the blocks' randomness by the seed",
            )
        return ()
    if network.get("shared_seed"):
        return (
            "WARNING: shared seed: every tls host keyed its blocks' randomness by the run's "
            "seed, so any host (and whoever picked the seed) can replay every other host's "
            "sampling, dummies and shuffles, and so tell dummies from real messages and "
            "trace them; use it to compare with the local backend, never in a deployment",
        )
    return (
        "each tls host keyed its blocks' randomness (sampling, dummies, shuffles) with its "
        "own secret: the seed does not reproduce this run's traffic or noisy answer "
        "([run] shared_seed = true / --shared-seed reproduces the local backend's)",
    )


def _block_size(
    spec: RunSpec, given: int | None, prepared: Prepared, network: Mapping[str, Any] | None
) -> int:
    """The run's block size: ``given`` (the caller's override), else ``[run] block_size``
    if the plan sets it, else for spawned tls hosts one small enough to spread every
    scrambler group over them (other backends keep the spec's default)."""
    if given is not None:
        return given
    if not spec.block_size_given and network and "hosts" in network:
        from crowdhide.backends.tls.placement import default_block_size

        return default_block_size(prepared.plan, int(network["hosts"]))
    return spec.block_size


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
    allow_unmet: bool = False,
    pages: Mapping[str, PageWriter] | None = None,
    command: Sequence[str] | None = None,
) -> RunReport:
    """Prepare, execute, compare with the exact answer, write files; return the report.

    A plan whose certificate misses ``[privacy]`` raises
    :class:`~crowdhide.errors.UnmetTargetError` before anything is executed, as ``crowdhide
    run`` exits 3; ``allow_unmet=True`` runs it anyway (the report says the target is unmet).
    ``backend`` (``"local"`` or ``"ray"``), ``shards`` and ``address`` override ``[run]``
    of the plan file; the result does not depend on them (same seed, same output).
    ``before_send(prepared)`` runs once the plan is certified and before any message is
    sent (a privacy-budget check raises there to refuse the run).
    ``network`` (e.g. ``{"hosts": 3, "on_missing": "report"}``) runs the plan on the ``tls``
    backend instead (:class:`crowdhide.backends.tls.backend.TlsBackend`, node programs in host
    processes); ``block_size`` overrides ``[run] block_size`` (blocks are spread over hosts).
    ``pages`` (``{"html": writer}``) writes more pages before ``report.json``, which lists
    them under ``files`` (:func:`crowdhide.report.html.run_with_html` adds ``report.html``).
    ``command`` (the command line that started the run, if any) is recorded with
    crowdhide's version, the seed and the backend in the report's ``provenance``.
    """
    backend_name, shard_count, ray_address = _execution_choice(spec, backend, shards, address)
    network = _network_with_spec(network, spec)
    _check_network_options(network, shard_count)
    _check_rows_here(spec, backend_name, network)
    given = None if block_size is None else check_int("block_size", block_size, low=1)
    acct = accountant if accountant is not None else default_accountant()
    tick = progress or _no_progress
    started = time.perf_counter()
    # The work limit (tuple-routes) is the backend's: the tls runtime's is measured apart.
    work = "tls" if network is not None else backend_name
    prepared = prepare(spec, accountant=acct, progress=progress, backend=work)
    if not allow_unmet and prepared.privacy.meets_target is False:
        raise UnmetTargetError(
            f"{prepared.report().target_text()}; nothing was run "
            "(--allow-unmet / allow_unmet=True runs it anyway)"
        )
    if before_send is not None:  # after the target check: a refused run is not charged
        before_send(prepared)
    prepared_at = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options = {"backend": backend_name, "shards": shard_count, "address": ray_address}
    size = _block_size(spec, given, prepared, network)
    run, net_record = _execute(
        prepared.plan, spec.seed, tick, network=network, options={**options, "block_size": size}
    )
    executed_at = time.perf_counter()
    tick("exact answer and utility", 0, 1)
    answer = prepared.query.answer(run, prepared.plan, seed=spec.seed)
    files = answer.write(out)
    tick("exact answer and utility", 1, 1)
    costs = _costs(prepared, run)
    files.update(_save_transcript(run.transcript, out, spec))
    notes: tuple[str, ...] = ()
    if spec.plots:
        tick("plots", 0, 1)
        notes, plots = _plots(prepared, out, acct)
        files.update(plots)
        tick("plots", 1, 1)
    notes += _backend_notes(spec, backend_name, network, net_record)
    report = RunReport(
        plan=prepared.report(),
        execution=ExecutionRecord.of(run, address=ray_address),
        answer=answer,
        costs=costs,
        timings=Timings(
            prepare_s=prepared_at - started,
            execute_s=executed_at - prepared_at,
            total_s=time.perf_counter() - started,
        ),
        files=files,
        network=net_record,
        notes=notes,
        provenance=Provenance.now(
            seed=run.seed,
            backend=run.backend,
            command=command,
        ),
    )
    return _finish(report, out, pages or {})
