"""Rounds of a tls run: fixed-length schedule, per-link accounting of frames, fault reports.

Shared by the two coordinators of the ``tls`` backend —
:class:`~crowdhide.backends.tls.backend.TlsBackend` (spawns its hosts) and
:class:`~crowdhide.backends.tls.coordinator.Coordinator` (connects to running node
daemons). :class:`Ledger` reconciles, per round and link, the frames the sender's
blocks emitted, the count it queued and claimed in its ``END``, and what the receiver got;
losses are counts per link, dead hosts and blocks not run (:class:`MissingReport`) — never
which source's message was lost.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crowdhide._validation import check_real
from crowdhide.backends.tls import control as ctl
from crowdhide.backends.tls.idle import reply_wait
from crowdhide.backends.tls.schedule import Round, longest
from crowdhide.errors import InvalidParameterError, NodeFailureError, RoundOverrunError

__all__ = [
    "Ledger",
    "LedgerViews",
    "LinkFailureError",
    "MissingContributionsError",
    "MissingReport",
    "NodeProgramError",
    "program_failed",
    "receiving_groups",
    "refuse_oversized",
]


@dataclass(frozen=True)
class MissingReport:
    """Frames that did not reach their host, counted per link; blocks that could not run.

    Only what an observer of the wire already sees is reported: counts per link, dead
    hosts, blocks not run. Which source's *real* message was lost is never reported (nor
    known to the driver): naming it would reveal where it was going, i.e. its value.

    Attributes
    ----------
    messages
        Frames lost (real and dummy alike).
    dead_hosts
        Hosts found dead.
    lost_blocks
        ``(group, block)`` that could not run because their host was dead.
    links
        ``{(sender host, receiver host): frames lost}`` (links that lost frames only).
    """

    messages: int
    dead_hosts: tuple[int, ...]
    lost_blocks: tuple[tuple[str, int], ...] = ()
    links: Mapping[tuple[int, int], int] = field(default_factory=dict)
    withheld: Mapping[tuple[int, int], int] = field(default_factory=dict)
    rejected: Mapping[tuple[int, int], Mapping[str, int]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.messages > 0 or bool(self.lost_blocks or self.withheld or self.rejected)

    @property
    def suspects(self) -> tuple[int, ...]:
        """Hosts that withheld frames or sent frames their receiver refused."""
        return tuple(sorted({a for a, _ in self.withheld} | {a for a, _ in self.rejected}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "messages_lost": self.messages,
            "dead_hosts": list(self.dead_hosts),
            "lost_blocks": [list(b) for b in self.lost_blocks],
            "lost_per_link": {f"{a}->{b}": n for (a, b), n in sorted(self.links.items())},
            "withheld_per_link": {f"{a}->{b}": n for (a, b), n in sorted(self.withheld.items())},
            "rejected_per_link": {
                f"{a}->{b}": dict(c) for (a, b), c in sorted(self.rejected.items())
            },
            "suspect_hosts": list(self.suspects),
        }


class MissingContributionsError(NodeFailureError, ConnectionError):
    """Raised with ``on_missing="fail"`` when a round lost messages or blocks."""

    def __init__(self, report: MissingReport) -> None:
        links = {f"{a}->{b}": n for (a, b), n in sorted(report.links.items())}
        suspects = f"; suspect hosts {list(report.suspects)}" if report.suspects else ""
        super().__init__(
            f"{report.messages} messages lost (per link {links}), blocks not run "
            f"{list(report.lost_blocks)} (dead hosts {list(report.dead_hosts)}){suspects}; "
            f"rerun with --on-missing report to keep the rest"
        )
        self.report = report


class NodeProgramError(NodeFailureError, RuntimeError):
    """A node's program failed in a round (CLI exit code 5, as any node failure); one line
    naming the failed nodes (id and address) and their errors. Also a :class:`RuntimeError`,
    what the coordinators raised before."""


class LinkFailureError(NodeFailureError, ConnectionError):
    """Node hosts of a tls run did not start, did not link up or refused the plan (CLI exit
    code 5); one line naming them. Also a :class:`ConnectionError`, what was raised before."""


#: Longest error text of one node quoted in a :class:`NodeProgramError`.
_QUOTE = 300


def program_failed(
    group: str, errors: Mapping[int, str], name: Callable[[int], str]
) -> NodeProgramError:
    """The error for nodes whose program of ``group`` failed (``errors``: their error text
    by node; ``name(node)``: e.g. ``node 1 (10.0.0.2:7000)``), one line, each node's text
    cut to :data:`_QUOTE` characters. A message too large for its frame is a parameter
    error instead (:func:`refuse_oversized`, raised here).

    Examples
    --------
    >>> str(program_failed("C", {1: "KeyError: 'x'\\nmore"}, lambda n: f"node {n}"))
    "the program of group 'C' failed on node 1: KeyError: 'x' more"
    """
    refuse_oversized(errors)
    parts = []
    for node, error in sorted(errors.items()):
        text = " ".join(str(error).split())
        if len(text) > _QUOTE:
            text = text[: _QUOTE - 3] + "..."
        parts.append(f"{name(node)}: {text}")
    return NodeProgramError(f"the program of group {group!r} failed on {'; '.join(parts)}")


#: Seconds from the first flush to the first round's start (hosts receive the schedule).
_LEAD = 0.2
#: Lateness tolerated before a round counts as overrun (scheduler and clock jitter).
_SLACK = 0.05


def receiving_groups(plan: Any) -> list[str]:
    """The groups of ``plan`` that receive frames: every route's receiver and every
    scrambler layer (the hosts of their blocks need the sealing keys)."""
    layers = {
        r.protection.scrambler.group
        for r in plan.routes
        if r.protection is not None and r.protection.scrambler is not None
    }
    return sorted({r.receiver for r in plan.routes} | layers)


class Ledger:
    """Per-link accounting and the fixed-length schedule of one run (see the module
    docstring); ``on_missing="fail"`` raises :class:`MissingContributionsError` at the first
    loss.

    ``rounds`` is the schedule, one :class:`~crowdhide.backends.tls.schedule.Round` per
    round in order (``None``: unscheduled); its coordinator sets it once the plan is known.
    A round past its end (a plan whose rounds the model did not foresee) gets the longest.

    ``slowest``, if given, names the hosts that made a round late (e.g. each daemon's
    answer time, slowest first); every :class:`~crowdhide.errors.RoundOverrunError` the
    ledger raises ends with its text, so all overruns of a run are named the same way.
    """

    def __init__(self, *, on_missing: str, slowest: Callable[[], str] | None = None) -> None:
        self.on_missing = on_missing
        self.slowest = slowest
        self.queued: dict[tuple[int, int], int] = {}
        self.lost: dict[tuple[int, int], int] = defaultdict(int)
        self.expected: dict[tuple[int, int], int] = defaultdict(int)
        self.withheld: dict[tuple[int, int], int] = defaultdict(int)
        self.rejected: dict[tuple[int, int], dict[str, int]] = {}
        self.lost_blocks: list[tuple[str, int]] = []
        self.dead: set[int] = set()
        self.epoch = 0
        self.frames_sent = 0
        #: Data frames delivered per link ``(sender, receiver)``: what the wire shows.
        self.delivered: dict[tuple[int, int], int] = defaultdict(int)
        self.lateness: list[float] = []
        self.start_at: float | None = None
        self.rounds: tuple[Round, ...] | None = None
        #: The round last closed (its phases time the ``Run`` and the answers).
        self.current: Round | None = None
        #: Wall-clock start of every scheduled round, in order (tests check the schedule).
        self.starts: list[float] = []
        #: Groups run since the round last closed: the next one's program window.
        self.window = 0
        #: Groups before which the open round closes (``workload.closes_before`` of the
        #: plan; ``None``: before every group that follows queued frames).
        self.closes: frozenset[str] | None = None

    @property
    def longest(self) -> float:
        """Seconds of the longest scheduled round (0.0 unscheduled): bounds any wait."""
        return longest(self.rounds or ())

    def _round(self, epoch: int) -> Round | None:
        """The scheduled round ``epoch`` (from 1), ``None`` unscheduled."""
        if not self.rounds:
            return None
        if epoch <= len(self.rounds):
            return self.rounds[epoch - 1]
        return max(self.rounds, key=lambda r: r.length)

    def closes_before(self, groups: Sequence[str]) -> bool:
        """Whether the open round closes before ``groups`` (one level of the plan) run:
        frames are queued and the plan's schedule closes a round there (one of them
        receives a hop from a group whose frames are queued). Otherwise they run in the
        round last closed, in its next program window, and their frames join the queued
        ones in the next send phase."""
        closes = self.closes
        return bool(self.queued) and (closes is None or any(g in closes for g in groups))

    def ran(self, host: int, emitted: Mapping[int, int], queued: Mapping[int, int]) -> None:
        """Host ``host`` ran a group: frames its blocks emitted and frames it queued, per peer."""
        for peer, count in emitted.items():
            self.expected[(host, int(peer))] += int(count)
        for peer, count in queued.items():
            self.queued[(host, int(peer))] = int(count)

    @property
    def missing(self) -> MissingReport:
        """Everything lost or refused so far (counts per link, dead hosts, blocks not run)."""
        links = {k: n for k, n in self.lost.items() if n}
        return MissingReport(
            messages=sum(links.values()),
            dead_hosts=tuple(sorted(self.dead)),
            lost_blocks=tuple(self.lost_blocks),
            links=links,
            withheld={k: n for k, n in self.withheld.items() if n},
            rejected={k: dict(v) for k, v in self.rejected.items()},
        )

    def check(self) -> None:
        """Raise :class:`MissingContributionsError` (``fail``) if anything was lost."""
        if self.on_missing == "fail" and self.missing:
            raise MissingContributionsError(self.missing)

    def schedule(self) -> tuple[float | None, float | None]:
        """Wall-clock start and acknowledgement time of round :attr:`epoch` (``None``: no
        schedule). Each round starts when the previous one's scheduled length ends, whatever
        the processing took: reaching a round after its start is an overrun."""
        previous, self.current = self.current, self._round(self.epoch)
        self.window = 0
        if self.current is None:
            return None, None
        now = time.time()
        if self.start_at is None or previous is None:
            self.start_at = now + _LEAD
        else:
            self.start_at += previous.length
            if now > self.start_at + _SLACK:
                raise self._overrun(
                    f"round {self.epoch} overran its fixed length by "
                    f"{now - self.start_at:.3f} s (round {self.epoch - 1} lasts "
                    f"{previous.length} s): the processing of the previous round did not fit; "
                    f"raise --round-seconds (run.round_seconds)"
                )
        self.starts.append(self.start_at)
        return self.start_at, self.start_at + self.current.ack

    def _overrun(self, text: str) -> RoundOverrunError:
        """The overrun ``text``, followed by who made the round late (``slowest``)."""
        return RoundOverrunError(text if self.slowest is None else f"{text}; {self.slowest()}")

    def run_at(self) -> float | None:
        """When the coordinator sends the ``Run`` of the round just closed (``None``: no
        schedule): at the start of the next group's program window (the first at the
        round's ``run`` phase, after the acknowledgements and a gap for the hosts' answers;
        a later one a gap after the previous group's answers). Sent as soon as the flush
        closed, its time would show how long closing took (the frames' crypto, which differs
        with the plan and the load: 3 ms in 0.4 s, p < 10⁻⁴ between two plans on a loaded
        machine); at a fixed time the wire shows the schedule only. The program then has
        until :meth:`reply_at`."""
        if self.current is None or self.start_at is None:
            return None
        return self.start_at + self._window()[0]

    def _window(self) -> tuple[float, float]:
        """``(run, reply)`` offsets of the next group's program window in the round just
        closed (the last window for a group the schedule did not foresee: its answers are
        then late, an overrun)."""
        assert self.current is not None
        windows = self.current.windows
        return windows[min(self.window, len(windows) - 1)]

    def reply_at(self) -> float | None:
        """When the hosts answer the ``Run`` of the round just closed (``None``: no
        schedule): at the end of the group's program window (the last ends at the round's
        ``reply`` phase), so the answers leave at a time fixed by
        the schedule, not by the work (their frames wait for the next round's send phase),
        and the next ``Flush`` has the tail to reach every host before the next start."""
        if self.current is None or self.start_at is None:
            return None
        return self.start_at + self._window()[1]

    def check_replies(self, late: Sequence[float]) -> None:
        """Raise :class:`RoundOverrunError` if a host's program ended past the scheduled
        answer (:meth:`reply_at`): its answer's time would show how long the work took."""
        worst = max(late, default=0.0)
        if worst > _SLACK:
            now, window = self.current, ""
            if now is not None:  # the window of the group just run (ran_group counted it)
                run, reply = now.windows[min(max(self.window, 1), len(now.windows)) - 1]
                window = f" (the program has {reply - run:.3g} s of the round's {now.length} s)"
            raise self._overrun(
                f"round {self.epoch}: a node's program ended {worst:.3f} s after the scheduled "
                f"answer{window}; raise --round-seconds (run.round_seconds)"
            )

    def close_round(
        self,
        broadcast: Callable[[ctl.Flush, float], Mapping[int, Any]],
        *,
        alive: Sequence[int],
        deadline: float,
    ) -> None:
        """Close the open round: number it, schedule it (:meth:`schedule`), send every live
        host its :class:`~crowdhide.backends.tls.control.Flush` through ``broadcast(message,
        timeout)`` (which returns the replies of the hosts that answered, by host) and
        reconcile the per-link counts of the replies (:meth:`settle`).

        The one round closing of both coordinators; a host that did not answer a
        ``Flushed`` counts as receiving nothing, so its links' frames are lost."""
        self.epoch += 1
        queued, self.queued = self.queued, {}
        start, ack_at = self.schedule()
        flush = ctl.Flush(
            epoch=self.epoch, alive=tuple(alive), deadline=deadline, start=start, ack_at=ack_at
        )
        replies = broadcast(flush, reply_wait(self.longest, deadline))
        flushed = {h: r for h, r in replies.items() if isinstance(r, ctl.Flushed)}
        self.settle(queued, flushed)

    def ran_group(
        self,
        job: Any,
        groups: Sequence[str],
        placement: Any,
        counts: Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]],
    ) -> None:
        """Hosts ran ``groups`` (one ``Run``): ``counts[host] = (emitted, queued)`` per peer
        (:meth:`ran`); every block of theirs whose host (by ``placement``) is not in
        ``counts`` is lost."""
        self.window += 1  # the next Run of this round gets the next program window
        for host, (emitted, queued) in counts.items():
            self.ran(host, emitted, queued)
        for group in groups:
            for block in job.blocks(group):
                if placement.host(job, group, block.index) not in counts:
                    self.lost_blocks.append((group, block.index))

    def settle(
        self,
        queued: Mapping[tuple[int, int], int],
        replies: Mapping[int, ctl.Flushed],
    ) -> None:
        """Reconcile one round from the receivers' replies
        (:class:`~crowdhide.backends.tls.control.Flushed`)."""
        expected, self.expected = self.expected, defaultdict(int)
        for a, b in set(queued) | set(expected):
            # The blocks' transcript says `want` frames; the sender queued `count` and told
            # the receiver `claim` in its END; the receiver got `got` (TLS: in order, intact).
            want, count = expected.get((a, b), 0), queued.get((a, b), 0)
            got, claim = 0, None
            if a in replies and b in replies:
                got = int(replies[b].received.get(a) or 0)
                claim = replies[b].claimed.get(a)
            sent = count if claim is None else min(count, int(claim))
            self.withheld[(a, b)] += max(0, want - sent)
            self.frames_sent += got
            self.delivered[(a, b)] += got
            self.lost[(a, b)] += max(0, min(want, sent) - got)
        for b, reply in replies.items():
            for a, counts in reply.rejected.items():
                total = self.rejected.setdefault((int(a), b), {})
                for reason, n in counts.items():
                    total[reason] = total.get(reason, 0) + int(n)
        # Accounted first (frames of a late round are reported lost, and refused as stale if
        # they arrive later), then the overrun is reported: a round is never stretched.
        late = max((float(r.late) for r in replies.values()), default=0.0)
        self.lateness.append(late)
        if late > _SLACK:
            raise self._overrun(
                f"round {self.epoch} overran its fixed length by {late:.3f} s "
                f"(round of {self.current.length if self.current else None} s); raise "
                f"--round-seconds (run.round_seconds)"
            )


def refuse_oversized(errors: Mapping[int, str]) -> None:
    """Raise one line naming ``run.message_size`` if a host's program failed because a
    message did not fit its frame (the other failures are the caller's to report)."""
    sizes = [e for e in errors.values() if "run.message_size" in e]
    if sizes:
        raise InvalidParameterError(sizes[0], parameter="run.message_size")


class LedgerViews:
    """What both coordinators report from their :class:`Ledger`, and the round options
    they share."""

    ledger: Ledger
    _round_arg: float | None
    #: The longest round's length (the given one, else the default schedule's longest).
    round_seconds: float | None
    #: How the round lengths were chosen (the run report echoes it).
    round_basis: str
    #: Each round's length, in order (set when the run opens; the run report echoes it).
    round_schedule: tuple[float, ...]

    def _given_rounds(self, round_seconds: float | None) -> None:
        """Check ``round_seconds`` (every round lasts it; ``None``: each round's length from
        the plan's work, set when the run opens) and set the echoed round attributes."""
        self._round_arg = (
            None
            if round_seconds is None
            else check_real("round_seconds", round_seconds, low=0.05, high=3600.0)
        )
        self.round_seconds = self._round_arg
        self.round_basis = "given (round_seconds): every round lasts it"
        self.round_schedule = ()

    @property
    def missing(self) -> MissingReport:
        """Everything lost or refused so far (counts per link, dead hosts, blocks not run)."""
        return self.ledger.missing

    @property
    def lateness(self) -> list[float]:
        """Seconds the hosts were late for each round's schedule (largest per round)."""
        return self.ledger.lateness

    @property
    def frames_sent(self) -> int:
        """Data frames delivered so far."""
        return self.ledger.frames_sent
