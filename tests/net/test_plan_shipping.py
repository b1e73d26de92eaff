"""Plans travel as signed documents naming their programs: a node rebuilds the same plan from
its own registry, and refuses a bad signature, another coordinator, an unknown version or
program, or a malformed document; a plan with an unnamed program never leaves the process."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls import shipping
from crowdhide.backends.tls.shipping import PlanRefusedError, Signer, load_job, ship_job
from crowdhide.engine import Job
from crowdhide.engine.document import (
    PlanDocumentError,
    canonical,
    plan_document,
    plan_from_document,
)
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
from tests.net.conftest import BLOCK, assert_all_gone, small_plan

pytestmark = pytest.mark.net


def _aggregate() -> Any:
    rng = np.random.default_rng(0)
    table = {"decade": rng.integers(2, 8, 500), "bmi": rng.normal(27, 4, 500)}
    query = AggregateQuery.from_sql("SELECT decade, COUNT(*), AVG(bmi) FROM t GROUP BY decade")
    return aggregate_plan(table, query, compute_nodes=3)


def test_an_aggregate_plan_survives_the_document_and_computes_the_same() -> None:
    setup = _aggregate()
    plan = protect(setup.plan, sigma=0.3, per_scrambler=20, dummies=5)
    document = plan_document(plan, run={"seed": 4})
    assert b"bmi" in canonical(document)  # column names travel ...
    data = {g.name: g.data for g in plan.groups if g.data is not None}
    assert b"27." not in canonical(document)  # ... values do not
    rebuilt = plan_from_document(json.loads(canonical(document)), data=data)
    assert rebuilt == plan
    a = execute(plan, rng=4, block_size=100)
    b = execute(rebuilt, rng=4, block_size=100)
    for name in ("count", "sum:bmi"):
        np.testing.assert_array_equal(b.states["C0"][name], a.states["C0"][name])


def test_a_closure_cannot_travel() -> None:
    b = PlanBuilder()
    b.sources("S", {"g": np.arange(4) % 2})
    b.compute("C", size=2, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["g"])
    with pytest.raises(PlanDocumentError, match=r"groups\[C\].process is not a named program"):
        plan_document(b.build())


def _shipped(signer: Signer | None = None, **run: Any) -> tuple[ctl.LoadJob, Signer]:
    plan = small_plan(protected=True)
    job = Job(plan=plan, seed=3, block_size=BLOCK, shards=1)
    signer = signer or Signer.generate()
    message = ship_job(
        job,
        signer,
        placement={"rule": "modulo", "hosts": 3},
        owns=lambda g, b: b % 3 == 1,
        receivers=("C",),
        **run,
    )
    return message, signer


def _resigned(message: ctl.LoadJob, signer: Signer, edit: Any) -> ctl.LoadJob:
    document = json.loads(message.plan)
    edit(document)
    blob = json.dumps(document).encode()
    return ctl.LoadJob(blob, signer.sign(blob), message.rows, message.receivers)


def test_a_node_loads_a_signed_plan_with_only_its_rows() -> None:
    message, signer = _shipped()
    job, digest, placement, shared = load_job(message, coordinator=signer.public)
    assert shared is False  # by default each host keys its blocks with its own secret
    assert json.loads(message.plan)["run"]["randomness"] == "secret"
    assert placement.hosts == 3
    assert job.seed == 3
    assert job.block_size == BLOCK
    assert len(digest) == 64
    assert sorted(job.plan.group("S").data.parts) == [50, 200]  # blocks 1 and 4 of 6
    assert job.plan == small_plan(protected=True)


def test_a_shared_seed_travels_in_the_signed_run_parameters() -> None:
    message, signer = _shipped(shared_seed=True)
    assert json.loads(message.plan)["run"]["randomness"] == "shared"
    assert load_job(message, coordinator=signer.public)[3] is True


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("tampered", "signature does not verify"),
        ("other coordinator", "signature does not verify"),
        ("no coordinator key", "no coordinator key"),
        ("version", "plan version 'crowdhide-plan/2' is not supported"),
        ("program", "no node program named 'shell.run'"),
        ("parameters", "refuses its parameters"),
        ("malformed", "malformed plan"),
        ("randomness", "randomness must be 'secret' or 'shared', got 'seed'"),
        ("no randomness", "malformed plan: KeyError"),
    ],
)
def test_a_node_refuses(case: str, words: str) -> None:
    message, signer = _shipped()
    key = signer.public
    if case == "tampered":
        blob = message.plan.replace(b'"sigma":0.5', b'"sigma":0.0')
        assert blob != message.plan
        message = ctl.LoadJob(blob, message.signature, message.rows, message.receivers)
    elif case == "other coordinator":
        key = Signer.generate().public
    elif case == "no coordinator key":
        key = b""
    elif case == "version":
        message = _resigned(message, signer, lambda d: d.update(version="crowdhide-plan/2"))
    elif case == "program":
        message = _resigned(
            message, signer, lambda d: d["groups"][1].update(process={"name": "shell.run"})
        )
    elif case == "parameters":
        message = _resigned(
            message,
            signer,
            lambda d: d["groups"][1]["process"]["params"].update(command="rm"),
        )
    elif case == "randomness":
        message = _resigned(message, signer, lambda d: d["run"].update(randomness="seed"))
    elif case == "no randomness":
        message = _resigned(message, signer, lambda d: d["run"].pop("randomness"))
    else:
        message = _resigned(message, signer, lambda d: d.pop("routes"))
    with pytest.raises(PlanRefusedError, match=words):
        load_job(message, coordinator=key)


def test_node_hosts_refuse_a_plan_that_is_not_signed_by_their_coordinator(
    backends: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    forged = Signer.generate()
    sign = shipping.Signer.sign
    monkeypatch.setattr(shipping.Signer, "sign", lambda self, data: sign(forged, data))
    backend = backends(hosts=2)
    with pytest.raises(ConnectionError, match=r"hosts refused the plan.*signature does not verify"):
        execute(small_plan(protected=False), rng=0, backend=backend, block_size=BLOCK)
    assert_all_gone(backend.pids, list(backend.ports.values()))


def test_a_plan_with_closures_starts_no_host(backends: Any) -> None:
    b = PlanBuilder()
    b.sources("S", {"g": np.arange(4) % 2})
    b.compute("C", size=2, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["g"])
    backend = backends(hosts=2)
    with pytest.raises(PlanDocumentError, match="not a named program"):
        execute(b.build(), rng=0, backend=backend)
    assert backend.pids == []


def test_kmeans_runs_over_tls_as_data(backends: Any) -> None:
    from crowdhide.plans.data import synth_kmeans
    from crowdhide.plans.kmeans import kmeans_plan

    points, _ = synth_kmeans(rows=90, dim=2, clusters=3, rng=1)
    plan = kmeans_plan(points, k=3, iterations=2, rng=1, relay_per=10).plan
    document = json.loads(canonical(plan_document(plan)))
    data = {g.name: g.data for g in plan.groups if g.data is not None}
    assert plan_from_document(document, data=data) == plan
    local = execute(plan, rng=2, block_size=30)
    run = execute(plan, rng=2, backend=backends(hosts=2), block_size=30)
    np.testing.assert_array_equal(run.states["R"]["centroid"], local.states["R"]["centroid"])
    np.testing.assert_array_equal(run.states["R"]["count"], local.states["R"]["count"])
