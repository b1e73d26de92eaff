"""Traffic analysis of the captured wire: exact against the transcript, and audited."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.audit import link_attack, transcript_link_counts, wire_link_counts
from crowdhide.backends import execute
from crowdhide.engine.library import named
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.certify import certify
from crowdhide.plans.model import ExecutionPlan

pytestmark = pytest.mark.net

HOSTS = 3
USERS = 30


def neighbour_plan(*, target: int, protected: bool) -> ExecutionPlan:
    """Users 1.. go to compute node ``i mod 4``; user 0 goes to ``target`` (1 or 2)."""
    g = np.arange(USERS) % 4
    g[0] = target
    b = PlanBuilder()
    b.sources("S", {"g": g})
    b.compute(
        "C",
        size=4,
        process=named("compute.count", route="S->C", size=4),  # plans travel as data
    )
    b.route("S", "C", by=named("route.column", column="g"))
    plan = b.build()
    return protect(plan, sigma=0.5, per_scrambler=10, dummies=4) if protected else plan


def _counts(plan: ExecutionPlan, seed: int) -> np.ndarray:
    run = execute(plan, rng=seed, block_size=1 << 16)
    t = run.transcript
    # Same distribution as with block size 1 (only the seed -> output mapping differs), so
    # the node map "node n on host n mod H" of block size 1 applies to the projection.
    return transcript_link_counts(t.source, t.target, groups=t.groups, block_size=1, hosts=HOSTS)


@pytest.mark.parametrize("protected", [False, True])
def test_the_captured_wire_shows_exactly_the_transcript_per_link(backends, protected) -> None:
    plan = neighbour_plan(target=1, protected=protected)
    backend = backends(hosts=HOSTS, observe=True, placement="modulo")
    run = execute(plan, rng=4, backend=backend, block_size=1)
    t = run.transcript
    wire = wire_link_counts(backend.wire().records, frame_record=backend.frame + 17, hosts=HOSTS)
    expected = transcript_link_counts(
        t.source, t.target, groups=t.groups, block_size=1, hosts=HOSTS
    )
    np.testing.assert_array_equal(wire, expected)
    assert wire.sum() == len(t)


def test_without_countermeasures_the_wire_reveals_the_target() -> None:
    x = [_counts(neighbour_plan(target=1, protected=False), s) for s in range(60)]
    y = [_counts(neighbour_plan(target=2, protected=False), s) for s in range(60, 120)]
    # User 0 lives on host 0; compute node 1 on host 1, node 2 on host 2.
    result, accuracy = link_attack(x, y, link_x=(0, 1), link_x_prime=(0, 2), delta=1e-4)
    assert accuracy == 1.0
    assert result.privacy.epsilon > 2.0


def test_with_countermeasures_the_attack_stays_within_the_certificate() -> None:
    certificate = certify(neighbour_plan(target=1, protected=True), delta=1e-4).privacy
    x = [_counts(neighbour_plan(target=1, protected=True), s) for s in range(600)]
    y = [_counts(neighbour_plan(target=2, protected=True), s) for s in range(600, 1200)]
    # User 0 -> scrambler 0 on host 0, which forwards to compute nodes 1 (host 1) / 2 (host 2).
    result, accuracy = link_attack(x, y, link_x=(0, 1), link_x_prime=(0, 2), delta=1e-4)
    assert result.privacy.epsilon <= certificate.epsilon
    bound = np.exp(certificate.epsilon) / (1.0 + np.exp(certificate.epsilon)) + 1e-4
    assert accuracy <= bound + 0.05  # Bayes accuracy under (ε, δ)-DP, plus sampling slack
