"""Per-round lengths: each round lasts what its own worst-case work needs, the coordinators
follow that schedule round by round, and a round that does not fit is still an overrun
(exit 4), whatever the schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.rounds import Ledger
from crowdhide.backends.tls.schedule import GIVEN_GAP, GIVEN_TAIL, Round
from crowdhide.errors import InvalidParameterError
from crowdhide.plans.examples import example_path
from tests.cli_helpers import run_cli
from tests.net._programs import use_test_hosts
from tests.net.conftest import BLOCK, small_plan

pytestmark = pytest.mark.net


@pytest.fixture(autouse=True)
def _test_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    use_test_hosts(monkeypatch.setattr)


def _flushes(rounds: tuple[Round, ...], closes: int) -> list[ctl.Flush]:
    """The ``Flush`` messages a ledger scheduled with ``rounds`` sends over ``closes``
    rounds (no host: nothing is lost, nothing late)."""
    ledger = Ledger(on_missing="report")
    ledger.rounds = rounds
    sent: list[ctl.Flush] = []

    def broadcast(flush: ctl.Flush, timeout: float) -> dict[int, Any]:
        sent.append(flush)
        return {}

    for _ in range(closes):
        ledger.close_round(broadcast, alive=[], deadline=1.0)  # computes times, no wait
    return sent


def test_each_round_starts_when_the_previous_ones_own_length_ends() -> None:
    """Fails with one length for all rounds: round 2 starts round 1's length after it,
    round 3 round 2's (three times longer); each round's acknowledgements at its own
    ``ack``."""
    rounds = (Round.sized(0.5, 0.25), Round.sized(2.0, 1.5), Round.sized(0.3, 0.3))
    assert rounds[0].length != rounds[1].length
    sent = _flushes(rounds, 3)
    starts = [f.start for f in sent]
    assert all(s is not None for s in starts)
    for k in (1, 2):
        gap = float(starts[k]) - float(starts[k - 1])  # type: ignore[arg-type]
        assert gap == pytest.approx(rounds[k - 1].length, abs=1e-6)
    for flush, r in zip(sent, rounds, strict=True):
        assert float(flush.ack_at) - float(flush.start) == pytest.approx(r.ack)  # type: ignore[arg-type]


def test_a_round_past_the_schedule_gets_the_longest() -> None:
    rounds = (Round.sized(0.5, 0.25), Round.sized(2.0, 1.5))
    sent = _flushes(rounds, 3)
    third = float(sent[2].ack_at) - float(sent[2].start)  # type: ignore[arg-type]
    assert third == pytest.approx(rounds[1].ack)


def test_programs_get_a_larger_share_of_the_round() -> None:
    """A given length: the send phase keeps its half; up to 2 s the phases are as before
    (programs 3/16), beyond, the gap and the tail (control messages only) stop growing at
    0.125 s and 0.5 s and the programs get the rest. A derived round: the program phase is
    sized by the programs' work, so a program-heavy round gives them most of it."""
    for length in (0.5, 1.0, 2.0):
        r = Round.given(length)
        assert (r.ack, r.run, r.reply) == pytest.approx(
            (length / 2, 9 * length / 16, 0.75 * length)
        )
    big = Round.given(20.0)
    assert big.ack == 10.0
    assert big.run - big.ack == GIVEN_GAP
    assert big.length - big.reply == GIVEN_TAIL
    assert big.program_share == pytest.approx(9.375 / 20)
    assert Round.sized(0.25, 10.0).program_share > 0.6
    assert Round.sized(0.25, 0.25).program_share > 3 / 16
    with pytest.raises(InvalidParameterError, match="round phases"):
        Round(length=1.0, ack=0.6, run=0.5, reply=0.9)


def test_a_run_follows_its_default_per_round_schedule(backends: Any) -> None:
    """End to end on spawned hosts: the default schedule has its own length per round, the
    rounds start at exactly those intervals, and the answers match the local run."""
    backend = backends(hosts=2)
    plan = small_plan(protected=True)
    run = execute(plan, rng=0, backend=backend, block_size=BLOCK)
    local = execute(plan, rng=0, block_size=BLOCK)
    assert run.states["C"]["count"].tolist() == local.states["C"]["count"].tolist()
    schedule = backend.round_schedule
    assert len(schedule) == backend.ledger.epoch == 2
    # each round is sized from its own work: round 2's sends are scramblers' forwards, opened
    # down to their inner bodies on arrival, so its send phase differs from round 1's; the
    # lengths alone may coincide (1.111 s twice in one CI run: round 1 sends less and runs
    # more, round 2 the reverse)
    phases = {(r.ack, r.run, r.reply, r.length) for r in backend.ledger.rounds}
    assert len(phases) == 2, backend.ledger.rounds
    assert backend.round_seconds == max(schedule)
    starts = backend.ledger.starts
    assert np.diff(starts).tolist() == pytest.approx(list(schedule[:-1]), abs=1e-6)
    assert max(backend.lateness) <= 0.05


def test_an_overrun_is_exit_4_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (
        example_path("diabetes").read_text(encoding="utf-8").replace("rows = 20000", "rows = 600")
    )
    plan = tmp_path / "diabetes.toml"
    plan.write_text(text + "plots = false\n", encoding="utf-8")
    args = ("run", str(plan), "--block-size", "300", "--backend", "tls", "--hosts", "2")
    result = run_cli(capsys, *args, "--round-seconds", "0.05", "--out", str(tmp_path / "o"))
    assert result.code == 4, result.err
    line = result.err.strip().splitlines()[-1]
    assert "overran" in line or "after the scheduled answer" in line, result.err
    assert "--round-seconds" in line


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), 1e9])
def test_an_invalid_round_length_is_refused_naming_the_option(tmp_path: Path, bad: float) -> None:
    from crowdhide.backends.tls.coordinator import Coordinator
    from tests.net._deploy import enrol

    dep = enrol(tmp_path, ["127.0.0.1:7001"])
    with pytest.raises(InvalidParameterError, match="round_seconds") as caught:
        Coordinator(directory=dep.directory, ca=dep.ca, state=dep.coordinator, round_seconds=bad)
    assert caught.value.parameter == "round_seconds"
