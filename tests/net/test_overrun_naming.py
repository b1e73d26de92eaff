"""Every round overrun the ledger raises names who made the round late, the same way.

The three overruns of :class:`~crowdhide.backends.tls.rounds.Ledger` — a round reached
after its start (:meth:`schedule`), a program that ended past the scheduled answer
(:meth:`check_replies`), hosts late in the round itself (:meth:`settle`) — end with the
text of the ledger's ``slowest`` callable; the daemons' coordinator passes its answer times
(no re-wrapping of its own).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.coordinator import Coordinator
from crowdhide.backends.tls.rounds import Ledger
from crowdhide.backends.tls.schedule import Round
from crowdhide.errors import RoundOverrunError
from tests.net._deploy import enrol

NAMED = "the daemons answered this round after: node 1 (10.0.0.2:7000) 3.2 s"


def _flushed(late: float) -> ctl.Flushed:
    return ctl.Flushed(received={}, acked={}, claimed={}, rejected={}, late=late)


def test_every_overrun_of_the_ledger_carries_the_slowest_text() -> None:
    ledger = Ledger(on_missing="report", slowest=lambda: NAMED)
    ledger.rounds = (Round.given(2.0),) * 3
    ledger.epoch, ledger.current = 1, Round.given(2.0)
    with pytest.raises(RoundOverrunError, match="after the scheduled answer") as replies:
        ledger.check_replies([0.0, 0.4])
    with pytest.raises(RoundOverrunError, match=r"overran its fixed length by 0\.300") as settled:
        ledger.settle({}, {0: _flushed(0.3)})
    ledger.start_at = time.time() - 5.0  # the previous round started 5 s ago
    ledger.epoch = 2
    with pytest.raises(RoundOverrunError, match="did not fit") as scheduled:
        ledger.schedule()
    for caught in (replies, settled, scheduled):
        text = str(caught.value)
        assert text.endswith(f"; {NAMED}"), text
        assert "\n" not in text


def test_without_a_namer_the_overrun_text_is_unchanged() -> None:
    with pytest.raises(RoundOverrunError) as caught:
        Ledger(on_missing="report").check_replies([0.4])
    assert str(caught.value).endswith("raise --round-seconds (run.round_seconds)")


def test_the_coordinator_names_its_daemons_through_the_ledger(tmp_path: Path) -> None:
    dep = enrol(tmp_path, ["127.0.0.1:7001", "127.0.0.1:7002"])
    coordinator = Coordinator(directory=dep.directory, ca=dep.ca, state=dep.coordinator)
    try:
        coordinator._answered = {0: 0.2, 1: 3.25}
        with pytest.raises(RoundOverrunError) as caught:
            coordinator.ledger.check_replies([0.5])
    finally:
        coordinator.close()
    text = str(caught.value)
    assert text.count("the daemons answered this round after: ") == 1, text
    assert text.endswith(
        "the daemons answered this round after: node 1 (127.0.0.1:7002) 3.2 s, "
        "node 0 (127.0.0.1:7001) 0.2 s"
    ), text
