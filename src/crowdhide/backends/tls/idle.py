"""When a node daemon gives up on a silent coordinator: TCP keepalive and the idle timeout.

TCP keepalive (:func:`keep_alive`) drops a coordinator whose machine vanished, but not one
that is frozen (SIGSTOP, a hung process, a debugger): its kernel still answers the probes.
A daemon therefore also times its coordinator's control messages. The coordinator speaks
at times a daemon can bound from what it was told before round 1
(:class:`~.control.Prepare`: the schedule's round lengths and the coordinator's
``deadline``):

* **patience** — after each message, the coordinator waits for *every* daemon's answer
  before it sends the next one, at most as long as it allows the slowest (its own
  timeouts, mirrored here from the same constants: :data:`SETUP_WAIT` for a setup step, a
  ``Link``'s timeout plus :data:`REPLY_SLACK`, :func:`reply_wait` for a round's ``Run`` or
  ``Flush``). Dropping the run sooner would turn another daemon's lateness, which the
  coordinator reports as that daemon's overrun, into this daemon's death;
* **the schedule** — a ``Flush`` fixes its round's start, and the next message of a round
  in progress is due by the round's end (start plus its length);
* **grace** — then the coordinator's own work between two messages (folding a round's
  answers, signing the plan) and a loaded machine's scheduling pauses get ``max(30 s,
  longest round)`` (the daemon's ``--idle-grace``, default 30 s): that work is a small part
  of a round, which the schedule sizes for the heaviest step, and 30 s is far above a
  scheduling pause yet well below the hours a frozen coordinator would otherwise hold its
  daemons; a fixed figure without the round would drop healthy runs of long rounds.

A coordinator silent past all three is stopped or stuck: the daemon drops its run
(:class:`Expect` says when; :mod:`~crowdhide.backends.tls.daemon` does it).
"""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crowdhide.backends.tls import control as ctl

__all__ = [
    "GRACE",
    "KEEPALIVE",
    "REPLY_SLACK",
    "SETUP_WAIT",
    "Expect",
    "check_schedule",
    "keep_alive",
    "reply_wait",
]

#: Seconds a coordinator waits for every daemon's answer to a setup message (``Describe``,
#: ``Prepare``, ``LoadJob``, ``Learn``) before going on without the late ones; also how
#: long a daemon allows before a connected coordinator's first message and after its
#: ``EndRun`` (the coordinator then closes the connection).
SETUP_WAIT = 60.0
#: Seconds a coordinator adds to a wait derived from its options (a ``Link``'s connect
#: timeout, a round's length plus ``deadline``) before it goes on without a late daemon.
REPLY_SLACK = 30.0
#: Least grace (seconds) past the time a coordinator's next message is due; the grace is
#: at least the longest round (module docstring).
GRACE = 30.0


def reply_wait(longest: float, deadline: float) -> float:
    """Seconds a coordinator waits for the answers to a round's ``Run`` or ``Flush``: the
    longest round, its ``deadline`` for the ENDs, and :data:`REPLY_SLACK`.

    >>> reply_wait(2.0, 10.0)
    42.0
    """
    return longest + deadline + REPLY_SLACK


@dataclass
class Expect:
    """What a daemon knows of when its coordinator speaks next (one per control
    connection). ``grace_floor``: the daemon's ``--idle-grace`` (default :data:`GRACE`).

    Examples
    --------
    >>> e = Expect()
    >>> e.heard(ctl.Prepare(frame=256, hosts=2, rounds=(1.0, 2.0), deadline=10.0), at=0.0)
    >>> e.heard(ctl.Run(group="C", schemas={}, epoch=1), at=100.0)
    >>> e.due(now=100.0), e.grace  # the coordinator waits up to 2 + 10 + 30 s for answers
    (42.0, 30.0)
    >>> e.heard(ctl.Flush(epoch=2, alive=(0, 1), deadline=10.0, start=150.0), at=101.0)
    >>> e.due(now=101.0)  # round 2 ends at 152, its coordinator may wait until 143
    51.0
    """

    grace_floor: float = GRACE
    #: The schedule's round lengths (from ``Prepare``; empty before it or unscheduled).
    rounds: tuple[float, ...] = ()
    #: The coordinator's wait for the answers to a round message (:func:`reply_wait`).
    wait: float = SETUP_WAIT
    #: Wall-clock end of the round in progress (the last ``Flush``'s start + its length).
    round_end: float | None = None
    #: Monotonic time the last message arrived and the seconds it lets the coordinator wait.
    at: float = field(default=0.0)
    patience: float = SETUP_WAIT
    #: The last message's type name (for the log).
    last: str = "connection"

    @property
    def grace(self) -> float:
        """Seconds allowed past the due time: ``max(grace_floor, longest round)``."""
        return max(self.grace_floor, max(self.rounds, default=0.0))

    def heard(self, message: Any, *, at: float) -> None:
        """Record a message that arrived at monotonic time ``at`` (a field that is not a
        number of seconds leaves the setup wait: the daemon refuses the message itself)."""
        self.at, self.last = at, type(message).__name__
        if isinstance(message, ctl.Prepare):
            self.round_end = None
            if check_schedule(message.rounds, message.deadline) is None:
                self.rounds = tuple(float(r) for r in message.rounds)
                self.wait = reply_wait(max(self.rounds, default=0.0), float(message.deadline))
        elif isinstance(message, ctl.Flush) and self.rounds:
            start, epoch = _seconds(message.start), message.epoch
            if start is not None and isinstance(epoch, int):
                self.round_end = start + self._length(epoch)
        timeout = _seconds(getattr(message, "timeout", None))
        if isinstance(message, ctl.Link) and timeout is not None:
            self.patience = timeout + REPLY_SLACK
        elif isinstance(message, (ctl.Run, ctl.Flush)):
            self.patience = self.wait
        else:
            self.patience = SETUP_WAIT
            if isinstance(message, ctl.EndRun):
                self.round_end = None

    def _length(self, epoch: int) -> float:
        """Round ``epoch``'s length (from 1); past the schedule, the longest (as the
        coordinator's ledger does)."""
        if 1 <= epoch <= len(self.rounds):
            return self.rounds[epoch - 1]
        return max(self.rounds)

    def due(self, *, now: float, wall: float | None = None) -> float:
        """Seconds from monotonic ``now`` until the coordinator's next message is due (at
        least 0): past its patience and, in a round, the round's end (``wall``: the
        wall-clock time now; the schedule's times are wall-clock)."""
        due = self.at + self.patience - now
        if self.round_end is not None:
            due = max(due, self.round_end - (now if wall is None else wall))
        return max(due, 0.0)

    def limit(self, *, now: float, wall: float | None = None) -> float:
        """Seconds from ``now`` after which a silent coordinator is given up."""
        return self.due(now=now, wall=wall) + self.grace


def _seconds(value: Any) -> float | None:
    """``value`` as finite seconds (``None``: not a finite real number)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


def check_schedule(rounds: Sequence[float], deadline: float) -> str | None:
    """Why a ``Prepare``'s schedule cannot be used (``None``: it can): every round length
    and the deadline finite, positive and at most an hour (the coordinator's own limits).

    >>> check_schedule((1.0, 2.0), 10.0) is None
    True
    >>> check_schedule((1.0, math.inf), 10.0)
    'Prepare.rounds: every round length must be in (0, 3600] s, got (1.0, inf)'
    """
    lengths = [_seconds(r) for r in rounds] if isinstance(rounds, (tuple, list)) else [None]
    if not all(r is not None and 0 < r <= 3600 for r in lengths):
        return f"Prepare.rounds: every round length must be in (0, 3600] s, got {rounds!r}"
    if (seconds := _seconds(deadline)) is None or seconds <= 0:
        return f"Prepare.deadline must be a positive number of seconds, got {deadline!r}"
    if seconds > 3600:
        return f"Prepare.deadline must be at most 3600 s, got {deadline!r}"
    return None


#: TCP keepalive of a control connection (seconds idle, seconds between probes, probes):
#: a daemon whose coordinator's machine vanished (no FIN, no RST) drops the run within
#: about 10 + 3 x 5 = 25 s instead of holding it, and refusing every other coordinator,
#: until the kernel gives up on the connection (hours). A reply left unacknowledged as long
#: (keepalive probes only an idle connection) ends it too (``TCP_USER_TIMEOUT``, not the
#: ~15 min of retransmissions).
KEEPALIVE = (10, 5, 3)


def keep_alive(transport: asyncio.BaseTransport) -> None:
    """TCP keepalive (:data:`KEEPALIVE`) on a daemon's control connection."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    idle, interval, count = KEEPALIVE
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    options = (
        ("TCP_KEEPIDLE", idle),
        ("TCP_KEEPINTVL", interval),
        ("TCP_KEEPCNT", count),
        ("TCP_USER_TIMEOUT", 1000 * (idle + interval * count)),
    )
    for name, value in options:
        if hasattr(socket, name):  # Linux; elsewhere the system's defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
