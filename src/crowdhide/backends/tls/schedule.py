"""The phases of one fixed-length round of a tls run, and the run's schedule of rounds.

A round of length ``L`` starting at ``t`` has four phases, each at a time fixed before the
round begins (never by the work done in it, which could depend on the data):

1. **send** ``[t, t + ack)``: every host seals its queued frames and writes them, in a
   random order per link; receivers open them; every ``END`` is acknowledged at ``t + ack``;
2. **gap** ``[t + ack, t + run)``: the hosts' ``Flushed`` answers reach the coordinator,
   which sends the next ``Run`` at ``t + run`` (not when the answers arrived);
3. **program** ``[t + run, t + reply)``: the node programs of the groups run in this round;
   every host answers at ``t + reply`` (a program still running then is an overrun), and
   their frames wait for the next round's send phase;
4. **tail** ``[t + reply, t + L)``: the next ``Flush`` reaches every host.

Each round has its own length (:func:`~crowdhide.backends.tls.workload.round_schedule`):
its send phase is sized by the frames of the hop sent in it, its program phase by the
programs run in it, both at their worst case whatever the data. A length given by the user
(``--round-seconds``) applies to every round, split at fixed fractions (:meth:`Round.given`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crowdhide.errors import InvalidParameterError

__all__ = ["GIVEN_SPLIT", "Round", "longest"]

#: Fractions of a given round length at which the acknowledgements, the ``Run`` and the
#: answers happen: sends 3/8, gap 1/16, programs 5/16 (3/16 before), tail 1/4 (the tail is
#: kept: 1/8 was measured too short on a loaded machine, a Flush 58 ms late).
GIVEN_SPLIT = (0.375, 0.4375, 0.75)


@dataclass(frozen=True)
class Round:
    """One round's length and phase offsets, seconds from its start (module docstring)."""

    length: float
    ack: float
    run: float
    reply: float

    def __post_init__(self) -> None:
        if not 0.0 < self.ack <= self.run <= self.reply <= self.length:
            raise InvalidParameterError(
                f"round phases must satisfy 0 < ack <= run <= reply <= length, got {self}",
                parameter="round_seconds",
            )

    @classmethod
    def given(cls, length: float) -> Round:
        """A round of a user-given ``length``: phases at :data:`GIVEN_SPLIT`.

        >>> Round.given(16.0)
        Round(length=16.0, ack=6.0, run=7.0, reply=12.0)
        """
        ack, run, reply = (round(f * length, 6) for f in GIVEN_SPLIT)
        return cls(length=length, ack=ack, run=run, reply=reply)

    @classmethod
    def sized(cls, send: float, program: float) -> Round:
        """A round whose send phase lasts ``send`` seconds and program phase ``program``:
        the gap is an eighth of the send phase (the answers to a send phase that carried
        many frames take longer to close), the tail half the program phase (the spawned
        hosts' driver folds the programs' reports, as many as their frames, before the next
        ``Flush``).

        >>> Round.sized(1.0, 2.0)
        Round(length=4.125, ack=1.0, run=1.125, reply=3.125)
        """
        ack = round(send, 3)
        run = round(ack + send / 8, 3)
        reply = round(run + program, 3)
        return cls(length=round(reply + program / 2, 3), ack=ack, run=run, reply=reply)

    @property
    def program_share(self) -> float:
        """Fraction of the round a node program has (from the ``Run`` to the answers)."""
        return (self.reply - self.run) / self.length


def longest(rounds: Sequence[Round]) -> float:
    """The longest round's length (0.0 for none): bounds any one round's wait."""
    return max((r.length for r in rounds), default=0.0)
