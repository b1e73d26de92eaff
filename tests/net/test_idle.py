"""When a daemon gives up on a silent coordinator (:mod:`crowdhide.backends.tls.idle`).

Soundness first: a daemon must never drop a run whose coordinator is still waiting, by its
own timeouts, for a late daemon (that daemon's overrun would be reported as this one's
death), so each message's patience is checked against the coordinator's actual wait. The
numbers are written out: a drifting constant fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.daemon import serve
from crowdhide.backends.tls.idle import Expect, check_schedule
from crowdhide.backends.tls.rounds import Ledger
from crowdhide.backends.tls.schedule import Round
from crowdhide.errors import InvalidParameterError

PREPARE = ctl.Prepare(frame=256, hosts=3, rounds=(1.0, 4.0, 2.0), deadline=10.0)


def expect_after(*messages: Any, grace: float = 30.0) -> Expect:
    e = Expect(grace_floor=grace)
    for m in messages:
        e.heard(m, at=100.0)
    return e


@pytest.mark.parametrize(
    ("message", "patience"),
    [
        (ctl.Describe(frame=256), 60.0),  # the coordinator's setup wait
        (PREPARE, 60.0),
        (ctl.Link(peers=(0, 1, 2), timeout=7.0), 37.0),  # its connect timeout + 30 s
        (ctl.Learn(hosts={}, nodes={}), 60.0),
        (ctl.Run(group="C", schemas={}, epoch=1), 4.0 + 10.0 + 30.0),  # longest + deadline
        (ctl.Flush(epoch=1, alive=(0,), deadline=10.0), 44.0),
        (ctl.EndRun(), 60.0),
    ],
)
def test_patience_is_the_coordinators_wait(message: Any, patience: float) -> None:
    e = expect_after(PREPARE, message)
    assert e.patience == patience
    assert e.due(now=100.0) == patience
    assert e.limit(now=100.0) == patience + 30.0


def test_a_round_message_waits_as_long_as_the_coordinators_ledger() -> None:
    """The wait the ledger gives a Flush's answers is the daemon's patience after it."""
    rounds = tuple(Round.given(x) for x in (1.0, 4.0, 2.0))
    ledger = Ledger(on_missing="report")
    ledger.rounds = rounds
    seen: dict[str, Any] = {}

    def broadcast(flush: ctl.Flush, timeout: float) -> dict[int, Any]:
        seen["flush"], seen["timeout"] = flush, timeout
        return {}

    ledger.close_round(broadcast, alive=[0], deadline=10.0)
    prepare = ctl.Prepare(frame=256, hosts=1, rounds=tuple(r.length for r in rounds), deadline=10)
    e = expect_after(prepare, seen["flush"])
    assert e.patience == seen["timeout"] == 44.0


def test_a_round_in_progress_is_due_by_its_end() -> None:
    """A Flush fixes its round's start: the next message is due by the round's end, when
    that is later than the coordinator's wait (long rounds)."""
    prepare = ctl.Prepare(frame=256, hosts=2, rounds=(50.0, 80.0), deadline=1.0)
    flush = ctl.Flush(epoch=2, alive=(0, 1), deadline=1.0, start=1000.0)
    e = expect_after(prepare, flush)
    assert e.patience == 80.0 + 1.0 + 30.0
    assert e.due(now=100.0, wall=990.0) == 111.0  # the round ends in 90 s, the wait later
    assert e.due(now=100.0, wall=900.0) == 180.0  # the round ends at 1080
    assert e.grace == 80.0  # a round's work may pass between two messages
    # Past the schedule, the longest round (as the ledger does).
    late = expect_after(prepare, ctl.Flush(epoch=9, alive=(0,), deadline=1.0, start=1000.0))
    assert late.round_end == 1080.0
    # EndRun ends the schedule's hold; a new Prepare starts unscheduled.
    assert expect_after(prepare, flush, ctl.EndRun()).round_end is None


def test_grace_is_the_floor_or_the_longest_round() -> None:
    assert expect_after(PREPARE).grace == 30.0
    assert expect_after(PREPARE, grace=2.0).grace == 4.0
    assert Expect().grace == 30.0  # before the schedule is known


def test_a_bad_schedule_is_refused_naming_it() -> None:
    assert check_schedule((), 10.0) is None
    assert "Prepare.rounds" in str(check_schedule((1.0, 0.0), 10.0))
    assert "Prepare.rounds" in str(check_schedule((1.0, 3601.0), 10.0))
    assert "Prepare.deadline" in str(check_schedule((1.0,), float("nan")))
    assert "Prepare.deadline" in str(check_schedule((1.0,), 7200.0))


@pytest.mark.parametrize("grace", [0.0, -1.0, float("inf"), 4000.0])
def test_idle_grace_out_of_range_is_a_typed_error(grace: float, tmp_path: Any) -> None:
    with pytest.raises(InvalidParameterError, match="--idle-grace") as info:
        serve(
            listen="127.0.0.1:0",
            state=tmp_path,
            data=tmp_path / "rows.npz",
            directory=tmp_path / "directory.toml",
            ca=tmp_path / "ca.pem",
            idle_grace=grace,
        )
    assert info.value.parameter == "--idle-grace"


@pytest.mark.parametrize(
    "message",
    [
        ctl.Prepare(frame=256, hosts=3, rounds=("1",), deadline=10.0),  # type: ignore[arg-type]
        ctl.Prepare(frame=256, hosts=3, rounds=(1.0,), deadline=float("nan")),
        ctl.Prepare(frame=256, hosts=3, rounds=7, deadline=10.0),  # type: ignore[arg-type]
        ctl.Link(peers=(0,), timeout="soon"),  # type: ignore[arg-type]
        ctl.Flush(epoch=1, alive=(0,), deadline=1.0, start="now"),  # type: ignore[arg-type]
    ],
)
def test_a_malformed_schedule_leaves_the_setup_wait(message: Any) -> None:
    """A coordinator's field that is not seconds never crashes the daemon's connection (its
    message is refused by the daemon itself) nor stretches the wait."""
    e = expect_after(PREPARE, message) if isinstance(message, ctl.Flush) else expect_after(message)
    if isinstance(message, ctl.Flush):
        assert e.round_end is None
        assert e.patience == 44.0
    else:
        assert e.patience == 60.0
        assert e.rounds == ()
    assert e.limit(now=100.0) == e.patience + 30.0
