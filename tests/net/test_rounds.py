"""Fixed-length rounds: frames leave at the round's start, acknowledgements at its middle,
and a round whose processing does not fit is reported (never stretched)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls.placement import Placement
from crowdhide.backends.tls.schedule import longest
from crowdhide.backends.tls.workload import round_schedule, round_seconds, slowest
from crowdhide.engine.backend import Job
from crowdhide.engine.library import named
from crowdhide.engine.plan import PlanBuilder
from crowdhide.errors import InvalidParameterError, RoundOverrunError
from tests.cli_helpers import run_cli
from tests.net._programs import use_test_hosts
from tests.net.conftest import BLOCK, small_plan

pytestmark = pytest.mark.net


def _slow_plan(seconds: float) -> Any:
    """Sources -> a compute node that takes ``seconds`` -> a result node."""
    b = PlanBuilder()
    b.sources("S", {"g": np.zeros(20, dtype=np.int64)})
    b.compute("C", size=1, process=named("test.sleep_count", route="S->C", seconds=seconds))
    b.result("R", process=named("test.deliveries"))
    b.route("S", "C", by=named("route.column", column="g"))
    b.route("C", "R", kind="fixed")
    return b.build()


@pytest.fixture(autouse=True)
def _test_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    use_test_hosts(monkeypatch.setattr)  # hosts that know the test programs


def test_a_round_that_does_not_fit_is_an_overrun(backends: Any) -> None:
    backend = backends(hosts=2, round_seconds=0.2)
    with pytest.raises(RoundOverrunError, match=r"overran its fixed length by .*round_seconds"):
        execute(_slow_plan(1.0), rng=0, backend=backend, block_size=BLOCK)


def test_rounds_that_fit_keep_their_schedule(backends: Any) -> None:
    backend = backends(hosts=2, round_seconds=1.0)
    started = time.monotonic()
    run = execute(_slow_plan(0.1), rng=0, backend=backend, block_size=BLOCK)
    elapsed = time.monotonic() - started
    assert run.states["C"]["count"].tolist() == [20]
    # Two rounds with frames (S -> C, C -> R): the second starts one round after the first.
    assert len(backend.lateness) == 2
    assert max(backend.lateness) <= 0.05
    assert elapsed >= 1.0 + 0.5  # round 1 whole, round 2 up to its acknowledgements


FAST = {"link": (1e-6, 1e-6), "inner": (1e-4, 1e-4)}
SLOW = {"link": (2e-6, 5e-7), "inner": (3e-4, 1e-4)}


def test_the_default_round_fits_the_slowest_daemon() -> None:
    """The coordinator's default round: the plan's worst case under the placement, at the
    slowest daemon's measured costs (each kind and side), not the coordinator's machine."""
    assert slowest([FAST, SLOW]) == {"link": (2e-6, 1e-6), "inner": (3e-4, 1e-4)}
    job = Job(plan=small_plan(protected=True), seed=0, block_size=BLOCK)
    place = Placement(hosts=3, rule="spread")
    fast = round_seconds(job, place, costs=FAST)
    assert round_seconds(job, place, costs=slowest([FAST, SLOW])) > fast
    assert round_seconds(job, place, costs=slowest([FAST, FAST])) == fast


@pytest.mark.parametrize(
    "bad",
    [
        {"link": (math.nan, 1e-6), "inner": (1e-4, 1e-4)},
        {"link": (1e-6, 1e-6), "inner": (math.inf, 1e-4)},
        {"link": (-1e-6, 1e-6), "inner": (1e-4, 1e-4)},
        {"link": (1e-6, 1e-6), "inner": (1e-4, 2.0)},
        {"link": (1e-6, 1e-6)},
    ],
)
def test_a_daemon_cannot_set_a_round_without_bound(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError, match="frame costs"):
        slowest([FAST, bad])
    with pytest.raises(InvalidParameterError, match="no frame costs"):
        slowest([])


def test_round_seconds_applies_to_tls_only(capsys: Any) -> None:
    result = run_cli(capsys, "run", "examples/diabetes.toml", "--round-seconds", "2")
    assert result.code == 2
    assert "--round-seconds applies to --backend tls only" in result.err


def _coordinator(tmp_path: Any, nodes: int) -> Any:
    from crowdhide.backends.tls.coordinator import Coordinator
    from tests.net._deploy import enrol

    dep = enrol(tmp_path, [f"127.0.0.1:{7000 + i}" for i in range(nodes)])
    return Coordinator(directory=dep.directory, ca=dep.ca, state=dep.coordinator)


def _described(costs: list[dict[str, Any]]) -> dict[int, Any]:
    from crowdhide.backends.tls import control as ctl

    return {h: ctl.Described(node=h, first=0, rows=0, costs=c) for h, c in enumerate(costs)}


def test_the_round_names_the_daemon_that_set_it(tmp_path: Any) -> None:
    coordinator = _coordinator(tmp_path, 3)
    job = Job(plan=small_plan(protected=True), seed=0, block_size=BLOCK)
    rounds, basis = coordinator._round_length(job, _described([FAST, SLOW, FAST]))
    assert rounds == round_schedule(job, coordinator.placement, costs=slowest([FAST, SLOW]))[0]
    assert "the slowest daemon measured (node 1 (127.0.0.1:7001), 3x the others' median)" in basis


def test_a_daemon_far_slower_than_the_others_is_refused_by_name(tmp_path: Any) -> None:
    """A broken or lying daemon cannot stall every round: 20x the others' median is refused,
    and the check can fail (19x is accepted)."""
    from crowdhide.backends.tls.workload import OUTLIER_FACTOR
    from crowdhide.errors import NodeFailureError

    coordinator = _coordinator(tmp_path, 3)
    job = Job(plan=small_plan(protected=True), seed=0, block_size=BLOCK)
    inner = FAST["inner"]

    def slower(factor: float) -> dict[str, Any]:
        return {"link": FAST["link"], "inner": (inner[0], inner[1] * factor)}

    accepted = _described([FAST, FAST, slower(0.95 * OUTLIER_FACTOR)])
    assert longest(coordinator._round_length(job, accepted)[0]) > 0
    refused = _described([FAST, slower(1.05 * OUTLIER_FACTOR), FAST])
    with pytest.raises(
        NodeFailureError, match=r"node 1 \(127.0.0.1:7001\) measured frame costs 21x"
    ):
        coordinator._round_length(job, refused)


def test_an_outlier_is_asked_once_more_and_kept_if_its_fresh_figure_fits(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A passing load spike does not refuse an honest daemon: every daemon re-measures
    (``Describe(fresh=True)``) and the fresh figures decide; a daemon that stays an
    outlier is refused, and the basis and the refusal say it was re-measured."""
    from crowdhide.backends.tls import control as ctl
    from crowdhide.backends.tls.workload import OUTLIER_FACTOR
    from crowdhide.errors import NodeFailureError

    coordinator = _coordinator(tmp_path, 3)
    job = Job(plan=small_plan(protected=True), seed=0, block_size=BLOCK)
    inner = FAST["inner"]
    spiked = {"link": FAST["link"], "inner": (inner[0], inner[1] * 2 * OUTLIER_FACTOR)}
    asked: list[Any] = []

    def answer(costs: list[dict[str, Any]]) -> Any:
        def _all(make: Any, timeout: float = 60.0) -> dict[int, Any]:
            asked.extend(make(h) for h in range(3))
            return _described(costs)

        return _all

    monkeypatch.setattr(coordinator, "_all", answer([FAST, FAST, FAST]))
    rounds, basis = coordinator._round_length(job, _described([FAST, spiked, FAST]))
    assert rounds == round_schedule(job, coordinator.placement, costs=slowest([FAST]))[0]
    assert "re-measured after 40x" in basis
    assert asked
    assert all(isinstance(m, ctl.Describe) and m.fresh for m in asked)
    monkeypatch.setattr(coordinator, "_all", answer([FAST, spiked, FAST]))
    with pytest.raises(NodeFailureError, match=r"node 1 .* 40x the other daemons' median; re-"):
        coordinator._round_length(job, _described([FAST, spiked, FAST]))
