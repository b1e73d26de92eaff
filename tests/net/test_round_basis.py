"""The run report says how the tls round length was chosen, not only its value.

A default round length is derived from the plan, the placement and frame costs measured as
the run begins (by the spawned hosts' driver, or by every node daemon: the slowest counts),
so it changes with the plan and with the machines' load; ``network.round_seconds_from``
echoes the derivation with the measured figures, or that the length was given.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.backends.tls.placement import Placement
from crowdhide.backends.tls.schedule import MIN_GAP, MIN_TAIL
from crowdhide.backends.tls.workload import round_schedule, round_seconds, round_work
from crowdhide.plans.examples import example_path
from tests.cli_helpers import run_cli
from tests.net.conftest import BLOCK, small_plan

pytestmark = pytest.mark.net


def _plan(tmp_path: Path, rows: int) -> Path:
    text = example_path("diabetes").read_text(encoding="utf-8")
    text = text.replace("rows = 20000", f"rows = {rows}")
    assert f"rows = {rows}" in text
    plan = tmp_path / "diabetes.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    return plan


def test_the_derivation_reproduces_the_length() -> None:
    import numpy as np

    from crowdhide.engine.backend import Job
    from crowdhide.engine.library import named
    from crowdhide.engine.plan import PlanBuilder

    b = PlanBuilder()
    b.sources("S", {"g": np.zeros(300, dtype=np.int64)})
    b.result("R", process=named("compute.count", route="S->R", size=1))
    b.route("S", "R", by=named("route.column", column="g"))
    job = Job(plan=b.build(), seed=0, block_size=100)
    place = Placement(hosts=2, rule="spread")
    for scale in (1.0, 7.0, 30.0):
        costs = {"link": (1e-5 * scale, 1e-5 * scale), "inner": (1e-4 * scale, 1e-4 * scale)}
        rounds, basis = round_schedule(job, place, costs=costs)
        assert max(r.length for r in rounds) == round_seconds(job, place, costs=costs)
        found = re.match(r"default, per round: sends (\S+) s \+ (\S+) x work, programs", basis)
        assert found is not None, basis
        floor, margin = float(found[1]), float(found[2])
        pairs = re.findall(r"\((\S+) s, ([^)]+) s\)", basis)
        assert len(pairs) == len(rounds) == len(round_work(job, place, costs))
        for r, (send, program) in zip(rounds, pairs, strict=True):
            assert r.ack == pytest.approx(floor + margin * float(send), rel=5e-3)
            assert r.reply - r.run == pytest.approx(floor + margin * float(program), rel=5e-3)


def test_the_run_report_echoes_how_the_round_length_was_chosen(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plan = _plan(tmp_path, 600)
    common = ("run", str(plan), "--block-size", "300", "--json", "--allow-unmet")
    tls = ("--backend", "tls", "--hosts", "2")
    default = run_cli(capsys, *common, "--out", str(tmp_path / "d"), *tls)
    assert default.code == 0, default.err
    net = default.json()["network"]
    basis = net["round_seconds_from"]
    assert basis.startswith("default, per round: sends 0.25 s + 3.0 x work"), basis
    # One round per send phase; a round running several groups shows each one's program
    # work ("(send s, a + b s)"): a window each, MIN_GAP apart.
    pairs = re.findall(r"\((\S+) s, ([^)]+) s\)", basis)
    assert len(net["round_schedule"]) == len(pairs) == net["rounds"]
    for length, (send, programs) in zip(net["round_schedule"], pairs, strict=True):
        windows = [0.25 + 3.0 * float(p) for p in programs.split(" + ")]
        ack, phase = 0.25 + 3.0 * float(send), sum(windows) + MIN_GAP * (len(windows) - 1)
        gap, tail = max(MIN_GAP, ack / 8), max(MIN_TAIL, sum(windows) / 2)
        assert length == pytest.approx(ack + gap + phase + tail, abs=0.01)
    assert net["round_seconds"] == max(net["round_schedule"])
    # A given length fits every round when the default's longest did (0.5 s more: unlike any
    # default length); a fixed 4.5 s made the run wait 3 s more per round here.
    length = round(net["round_seconds"] + 0.5, 2)
    given = run_cli(
        capsys, *common, "--out", str(tmp_path / "g"), *tls, "--round-seconds", str(length)
    )
    assert given.code == 0, given.err
    net = given.json()["network"]
    assert net["round_seconds"] == length
    assert net["round_schedule"] == [length] * net["rounds"]
    assert net["round_seconds_from"] == "given (round_seconds): every round lasts it"


#: A given round length: long enough for the rounds of ``small_plan`` under load.
GIVEN = 4.0


def test_a_given_round_length_measures_nothing_and_waits_generously(
    backends: Callable[..., TlsBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the round length given, no frame cost is measured (0.3 s of sealing); the first
    Run's wait still covers the plan's worst-case round at this machine's measured costs,
    and more than the given length (4 s: 0.5 s and 2 s rounds overran on a loaded machine)."""
    from crowdhide.backends import execute
    from crowdhide.backends.tls import workload
    from crowdhide.engine.backend import Job

    plan = small_plan(protected=True)
    measured = round_seconds(Job(plan=plan, seed=0, block_size=BLOCK), Placement(hosts=2))

    def measuring(*args: object, **kwargs: object) -> None:
        raise AssertionError("frame costs measured with the round length given")

    monkeypatch.setattr(workload, "frame_costs", measuring)
    backend = backends(hosts=2, round_seconds=GIVEN)
    run = execute(plan, rng=0, backend=backend, block_size=BLOCK)
    assert run.states
    assert backend.round_seconds == GIVEN
    assert backend.round_basis == "given (round_seconds): every round lasts it"
    assert backend._run_timeout >= backend.deadline + 30.0 + measured
    # Not sized by the given length (which may be shorter than the measured worst case).
    assert backend._run_timeout > backend.deadline + 30.0 + GIVEN
