"""The phases of one fixed-length round of a tls run, and the run's schedule of rounds.

A round of length ``L`` starting at ``t`` has four phases, each at a time fixed before the
round begins (never by the work done in it, which could depend on the data):

1. **send** ``[t, t + ack)``: every host seals its queued frames and writes them, in a
   random order per link; receivers open them; every ``END`` is acknowledged at ``t + ack``;
2. **gap** ``[t + ack, t + run)``: the hosts' ``Flushed`` answers reach the coordinator,
   which sends the next ``Run`` at ``t + run`` (not when the answers arrived);
3. **program** ``[t + run, t + reply)``: the node programs of the groups run in this round,
   one window per ``Run`` (the groups of one level of the plan, :attr:`Round.windows`),
   one after the other: a ``Run`` leaves at its window's start and every host answers at
   its end (a program still running then is an overrun); their frames wait for the next
   round's send phase;
4. **tail** ``[t + reply, t + L)``: the next ``Flush`` reaches every host.

Each round has its own length (:func:`~crowdhide.backends.tls.workload.round_schedule`):
its send phase is sized by the frames of the hop sent in it, its program phase by the
programs run in it, both at their worst case whatever the data. A length given by the user
(``--round-seconds``) applies to every round, split as :meth:`Round.given` says.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from crowdhide.errors import InvalidParameterError

__all__ = ["GIVEN_GAP", "GIVEN_TAIL", "MIN_GAP", "MIN_TAIL", "Round", "longest"]

#: A given round length: the acknowledgements at half the round (the send phase is what it
#: was: a 3/8 send phase made a 0.5 s round overrun by 0.144 s on a loaded machine); the gap
#: and the tail, which carry control messages only, a sixteenth and a quarter of the round
#: up to these seconds; the programs get the rest (3/16 of the round before, whatever its
#: length; unchanged up to 2 s rounds, 47 % of a 20 s round).
GIVEN_GAP, GIVEN_TAIL = 0.125, 0.5
#: Least seconds between the acknowledgements and the ``Run`` of a derived round (the hosts'
#: answers to the flush reach the coordinator).
MIN_GAP = 0.0625
#: Least seconds from the answers to the next round's start (the next ``Flush`` reaches
#: every host; on spawned hosts the driver first folds the reports): a round of the
#: smallest phases measured 54 ms late on a loaded machine with an eighth of a second.
MIN_TAIL = 0.25


@dataclass(frozen=True)
class Round:
    """One round's length and phase offsets, seconds from its start (module docstring).

    ``windows``: ``(run, reply)`` offsets of each ``Run``'s programs (one level of the
    plan), in order (default: one window, ``(run, reply)``); they lie in ``[run, reply]``, in order,
    the first starting at ``run`` and the last ending at ``reply``."""

    length: float
    ack: float
    run: float
    reply: float
    windows: tuple[tuple[float, float], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if not self.windows:
            object.__setattr__(self, "windows", ((self.run, self.reply),))
        ends = [x for w in self.windows for x in w]
        ordered = all(a <= b for a, b in itertools.pairwise(ends))
        if not (
            0.0 < self.ack <= self.run <= self.reply <= self.length
            and ordered
            and ends[0] == self.run
            and ends[-1] == self.reply
        ):
            raise InvalidParameterError(
                f"round phases must satisfy 0 < ack <= run <= reply <= length, with the "
                f"program windows in order from run to reply, got {self} {self.windows}",
                parameter="round_seconds",
            )

    @classmethod
    def given(cls, length: float, groups: int = 1) -> Round:
        """A round of a user-given ``length`` (:data:`GIVEN_GAP`, :data:`GIVEN_TAIL`); its
        program phase is cut into ``groups`` equal windows, each but the last ending an
        eighth of its share early (the answers reach the coordinator before the next
        ``Run``).

        >>> Round.given(1.6)
        Round(length=1.6, ack=0.8, run=0.9, reply=1.2)
        >>> Round.given(20.0)
        Round(length=20.0, ack=10.0, run=10.125, reply=19.5)
        >>> Round.given(20.0, groups=2).windows
        ((10.125, 14.226562), (14.8125, 19.5))
        """
        ack = length / 2
        run = ack + min(length / 16, GIVEN_GAP)
        reply = length - min(length / 4, GIVEN_TAIL)
        n = max(1, groups)
        share = (reply - run) / n
        windows = tuple(
            (
                round(run + i * share, 6),
                round(reply if i == n - 1 else run + (i + 7 / 8) * share, 6),
            )
            for i in range(n)
        )
        return cls(
            length=length,
            ack=round(ack, 6),
            run=round(run, 6),
            reply=round(reply, 6),
            windows=windows,
        )

    @classmethod
    def sized(cls, send: float, program: float | Sequence[float]) -> Round:
        """A round whose send phase lasts ``send`` seconds and whose program phase holds
        one window of each of ``program``'s seconds (one ``Run`` each, in order,
        :data:`MIN_GAP` apart for the answers to reach the coordinator): the gap is an
        eighth of the send phase (the answers to a send phase that carried many frames take
        longer to close), at least :data:`MIN_GAP`; the tail half the program phase's work
        (the spawned hosts' driver folds the programs' reports, as many as their frames,
        before the next ``Flush``), at least :data:`MIN_TAIL`.

        >>> Round.sized(1.0, 2.0)
        Round(length=4.125, ack=1.0, run=1.125, reply=3.125)
        >>> Round.sized(0.25, 0.25)
        Round(length=0.812, ack=0.25, run=0.312, reply=0.562)
        >>> Round.sized(1.0, [2.0, 1.0]).windows
        ((1.125, 3.125), (3.188, 4.188))
        """
        programs = [float(program)] if isinstance(program, (int, float)) else list(program)
        ack = round(send, 3)
        start = round(ack + max(MIN_GAP, send / 8), 3)
        windows: list[tuple[float, float]] = []
        for seconds in programs:
            if windows:
                start = round(windows[-1][1] + MIN_GAP, 3)
            windows.append((start, round(start + seconds, 3)))
        reply = windows[-1][1]
        length = round(reply + max(MIN_TAIL, sum(programs) / 2), 3)
        return cls(length, ack, windows[0][0], reply, tuple(windows))

    @property
    def program_share(self) -> float:
        """Fraction of the round a node program has (from the ``Run`` to the answers)."""
        return (self.reply - self.run) / self.length


def longest(rounds: Sequence[Round]) -> float:
    """The longest round's length (0.0 for none): bounds any one round's wait."""
    return max((r.length for r in rounds), default=0.0)
