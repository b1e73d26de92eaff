"""A split's children tried one resolution coarser first (internal, issue 32, s30-piecewise).

The restricted variation-ratio refinement (``variation_ratio._refine`` with ``mu_max < 1``,
the piecewise mechanism's certificate) splits its top cells into children that inherit the
parent's resolution: at n >= 1e6, δ = 1e-300 eight to ten finest-tier layouts of ~32,768
blocks each, half of a query, while the children's bounds one tier coarser were within
0.02-0.16 of them and mostly at or below the reference. :class:`CoarseChildren` evaluates the
children one tier coarser first and keeps there those at most the reference (the rule
``_initial_heap`` applies to the initial cells); the others are evaluated as without the try
(from their own tier, no value carried over), and each child counts the evaluations it counts
without it, so the refinement's budget sees the same counts. Every resolution of every cell
is a valid bound (docs/proofs/variation-ratio.md §6.1).

At the end (:meth:`CoarseChildren.settle`) a kept child whose coarser value lies above every
other leaf and the bottom region is evaluated at its own tier after all, so the refinement's
value is the one without the try (a kept child below the others cannot be the largest): the
same floats, up to a coarser tier that would be below its finer one (not met). Proof note:
docs/proofs/mechanism-certificates.md §1q.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["CoarseChildren", "evaluate_requests"]

_Request = tuple[tuple[float, float], int]
_Entry = tuple[float, tuple[float, float], int]
_Start = tuple[tuple[float, float], int, float, int]
_Refined = Callable[[Sequence[_Start]], list[tuple[float, int, int]]]


class CoarseChildren:
    """The coarser first tries of one refinement: ``evaluate`` (the raw cell evaluator of
    its ``(n, ε0, ε, log_tail)``), ``base`` (the bound at or below which a child is kept)
    and ``worth(cell)`` (whether a cell's coarser tiers are cheaper: ``_coarse_first``).
    :attr:`kept` maps each kept child to the tier it was asked at."""

    def __init__(
        self,
        evaluate: Callable[[Sequence[_Request]], list[float]],
        base: float,
        worth: Callable[[tuple[float, float]], bool],
        lowest: int = 0,
    ) -> None:
        self.evaluate, self.base, self.worth = evaluate, base, worth
        self.lowest = lowest  # no try below this resolution (variation_ratio.lowest_tier)
        self.kept: dict[tuple[float, float], int] = {}

    def tried(self, entry: _Entry, requests: Sequence[_Request]) -> list[int]:
        """The requests for ``entry`` that are children of a split (not the cell itself at
        the next resolution) with a coarser resolution worth trying first."""
        return [
            i
            for i, (cell, tier) in enumerate(requests)
            if tier > self.lowest and cell != entry[1] and self.worth(cell)
        ]

    def first(self, entry: _Entry, requests: Sequence[_Request]) -> list[_Request]:
        """What is evaluated first for ``requests`` (a hint for the cells ahead)."""
        tried = set(self.tried(entry, requests))
        return [(cell, tier - 1 if i in tried else tier) for i, (cell, tier) in enumerate(requests)]

    def settle(self, entries: list[_Entry], floor: float) -> list[_Entry]:
        """``entries`` (the leaves, ``(-bound, cell, tier)``) with every kept child whose
        bound lies above all other leaves and ``floor`` (the bottom region's bound)
        evaluated at its own tier, until none does: the largest is then the one without
        the tries."""
        out = list(entries)
        while True:
            others = [-entry[0] for entry in out if entry[1] not in self.kept]
            top = max([floor, *others])
            over = [k for k, entry in enumerate(out) if entry[1] in self.kept and -entry[0] > top]
            if not over:
                return out
            values = self.evaluate([(out[k][1], self.kept[out[k][1]]) for k in over])
            for k, value in zip(over, values, strict=True):
                cell = out[k][1]
                out[k] = (-value, cell, self.kept.pop(cell))


def evaluate_requests(
    entry: _Entry, requests: Sequence[_Request], at: _Refined, coarse: CoarseChildren | None
) -> list[tuple[float, int, int]]:
    """Per request of ``variation_ratio._next_requests`` for ``entry``: its bound, the
    resolution it ended at and the evaluations counted (``_refined_cells`` through ``at``).
    With ``coarse`` the children worth it are first evaluated one tier coarser in one call
    and kept there where at most its ``base``; the others go on as without the try."""
    kept: dict[int, float] = {}
    if coarse is not None:
        tried = coarse.tried(entry, requests)
        coarser = [(requests[i][0], requests[i][1] - 1) for i in tried]
        values = coarse.evaluate(coarser) if tried else []
        kept = {i: value for i, value in zip(tried, values, strict=True) if value <= coarse.base}
        coarse.kept.update((requests[i][0], requests[i][1]) for i in kept)
    rest = [i for i in range(len(requests)) if i not in kept]
    starts = [
        (cell, tier, -entry[0] if cell == entry[1] else math.inf, 0)
        for cell, tier in (requests[i] for i in rest)
    ]
    done = dict(zip(rest, at(starts), strict=True))
    return [
        (kept[i], requests[i][1] - 1, 1) if i in kept else done[i] for i in range(len(requests))
    ]
