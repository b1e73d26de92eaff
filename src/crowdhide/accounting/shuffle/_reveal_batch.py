"""The revealed-class cells of a certificate evaluated ahead, in batches (internal, issue 32).

The piecewise mechanism's revealed-class certificate (``mechanisms._reveal_cell_curve``) is a
:class:`~crowdhide.accounting.shuffle._member_curve.MemberCurve` of one split system per
cell, solved member by member from the running answer. Once the binding cells are solved,
every later cell is asked once, at that same answer, and passes there: at (ε0, n, δ) =
(4, 1e3, 1e-10) forty cells, 6-26 ms each (each a layout and a blocked sum of its own),
were 0.5 s of a 0.8 s query. :class:`RevealBatch` answers the members' values; when a cell
is asked at the ε and tail level at which the cell asked before it passed (the sweep), it
evaluates the next cells that the sweep will ask for (those whose cheap screen does not
already meet the target) along with it, in one
:func:`~crowdhide.accounting.shuffle._split_clone.split_clone_log_deltas` call.

Nothing here changes a value: each cell's value is ``log(1 − w)`` plus its split system's
``log δ`` at the asked ``(ε, log_tail)``, and the batched call gives each system the floats
it gets alone (tests/accounting/test_split_clone_batch.py); which cells are evaluated ahead
depends on what was asked before, never a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crowdhide.accounting.shuffle._krr_fast import _ETA
from crowdhide.accounting.shuffle._split_clone import (
    SPLIT_C_POINTS,
    SPLIT_S_POINTS,
    split_clone_log_deltas,
)

__all__ = ["RevealBatch", "RevealSystem"]

#: A cell's revealed-class system: ``(log(1 − w), (μ/(1 − w), c_inf, gamma))``, or None where
#: nothing is left to hide (its value is then 0).
RevealSystem = tuple[float, tuple[float, float, float]] | None

#: Most cells evaluated ahead in one call (the sweep's whole rest at the piecewise
#: mechanism's 56 cells).
MAX_AHEAD = 64


class RevealBatch:
    """The values of cells ``0 .. len(systems) − 1`` (asked by the curve in the order
    ``last first``), remembered per ``(cell, ε, log_tail)``. ``screens[i](ε, log_tail)`` is
    the cell's screen (a cheaper bound the curve asks first; ``None``: none): a cell whose
    screen meets the sweep's target is not evaluated ahead (the curve will not ask it)."""

    def __init__(
        self,
        n: int,
        kappa: float,
        systems: Sequence[RevealSystem],
        screens: Sequence[Callable[[float, float], float] | None],
    ) -> None:
        self.n, self.kappa = n, kappa
        self.systems, self.screens = list(systems), list(screens)
        self.values: dict[tuple[int, float, float], float] = {}
        self.last: tuple[int, float, float] | None = None

    def value(self, cell: int, eps: float, log_tail: float) -> float:
        """Cell ``cell``'s ``log δ`` at ``(ε, log_tail)`` (the member's value)."""
        key = (cell, eps, log_tail)
        if key not in self.values:
            group = [cell, *self._ahead(cell, eps, log_tail)]
            self._evaluate(group, eps, log_tail)
        self.last = key
        return self.values[key]

    def _ahead(self, cell: int, eps: float, log_tail: float) -> list[int]:
        """The cells the sweep asks next (below ``cell``, not screened out), where the cell
        asked before this one was ``cell + 1`` at the same point and passed there: the
        running answer stayed, so the next cells are asked there too. The target is read as
        ``log_tail + 40`` (the members' solving tail, ``_member_curve._solve_tail``): only a
        guess of what will be asked, which costs time when wrong, never a value."""
        before = (cell + 1, eps, log_tail)
        target = log_tail + 40.0
        if self.last != before or self.values.get(before, 0.0) > target:
            return []
        ahead: list[int] = []
        for other in range(cell - 1, -1, -1):
            if len(ahead) >= MAX_AHEAD:
                break
            screen = self.screens[other]
            if (other, eps, log_tail) in self.values:
                continue
            if screen is not None and screen(eps, log_tail) <= target:
                continue
            ahead.append(other)
        return ahead

    def _evaluate(self, cells: Sequence[int], eps: float, log_tail: float) -> None:
        """The cells' values at one point: their split systems in one batched call."""
        systems = []
        for cell in cells:
            system = self.systems[cell]
            if system is None:
                self.values[(cell, eps, log_tail)] = 0.0
                continue
            mu_cond, c_inf, c_zero = system[1]
            systems.append((mu_cond, c_inf, c_zero, SPLIT_C_POINTS, SPLIT_S_POINTS, _ETA))
        split = iter(split_clone_log_deltas(self.n, self.kappa, systems, eps, log_tail))
        for cell in cells:
            system = self.systems[cell]
            if system is not None:
                self.values[(cell, eps, log_tail)] = system[0] + next(split)
