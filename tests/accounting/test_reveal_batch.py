"""The piecewise mechanism's revealed-class cells evaluated ahead in batches (issue 32,
s30-piecewise; ``_reveal_batch.RevealBatch``): the members' floats are those of
``mechanisms._reveal_member`` one cell at a time, and so are the curve's answers."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.shuffle import _reveal_batch, _split_clone, mechanisms
from crowdhide.accounting.shuffle._member_curve import MemberCurve
from crowdhide.accounting.shuffle.randomizers import piecewise_reveal_cells


def _former_curve(n: int, eps0: float) -> MemberCurve:
    """The revealed-class curve as it was built before the batch: one member per cell."""
    kappa = kappa_up(eps0)
    mu_floor, cells = piecewise_reveal_cells(eps0)
    members: list[Callable[[float, float], float]] = [
        functools.partial(mechanisms._one_report_member, mu_floor, eps0)
    ]
    screens: list[Callable[[float, float], float] | None] = [None]
    for mu, c_inf, w, gamma in cells:
        members.append(
            functools.partial(mechanisms._reveal_member, n, kappa, mu, c_inf, (w, gamma))
        )
        screens.append(functools.partial(mechanisms._one_report_screen, mu, eps0))
    return MemberCurve(members, eps0, lower=False, screens=screens)


def _counted(sizes: list[int]) -> Any:
    inner = _reveal_batch.split_clone_log_deltas

    def counting(n: int, kappa: float, systems: Sequence[Any], *rest: float) -> list[float]:
        sizes.append(len(systems))
        return inner(n, kappa, systems, *rest)

    return counting


@pytest.mark.parametrize(("eps0", "n", "delta"), [(8.0, 1000, 1e-6), (8.0, 10**4, 1e-10)])
def test_batched_curve_is_the_former_bit_for_bit(
    eps0: float, n: int, delta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The curve answers the former one-cell-at-a-time curve's ε to the bit, with most of
    its cells evaluated in one call (the sweep at the answer)."""
    sizes: list[int] = []
    monkeypatch.setattr(_reveal_batch, "split_clone_log_deltas", _counted(sizes))
    curve = mechanisms._reveal_cell_curve(piecewise_reveal_cells, n, eps0)
    assert curve is not None
    batched = curve.epsilon(delta)
    _split_clone._layout.cache_clear()
    assert batched == _former_curve(n, eps0).epsilon(delta)
    assert max(sizes) >= 20
    assert len(sizes) < sum(sizes) / 2


def test_every_cell_value_is_the_member_alone() -> None:
    """Each cell's value, evaluated ahead in a batch or alone, is ``_reveal_member``'s float
    at the same ``(ε, log_tail)``; a batch that read a neighbouring cell's system (or
    dropped the factor ``log(1 − w)``) would differ."""
    n, eps0, eps, tail = 1000, 8.0, 7.1, -53.8
    kappa = kappa_up(eps0)
    curve = mechanisms._reveal_cell_curve(piecewise_reveal_cells, n, eps0)
    assert curve is not None
    batch: _reveal_batch.RevealBatch = curve._members[1].func.__self__  # type: ignore[attr-defined]
    cells = piecewise_reveal_cells(eps0)[1]
    last = len(cells) - 1
    # the sweep: the last cell passes, the next one asked at the same point batches the rest
    batch.last = (last, eps, tail)
    batch.values[(last, eps, tail)] = -math.inf
    first = batch.value(last - 1, eps, tail)
    ahead = sum(1 for key in batch.values if key[1:] == (eps, tail))
    assert ahead > 10
    for i, (mu, c_inf, w, gamma) in enumerate(cells[:last]):
        alone = mechanisms._reveal_member(n, kappa, mu, c_inf, (w, gamma), eps, tail)
        if (i, eps, tail) in batch.values:
            assert batch.values[(i, eps, tail)] == alone
    assert first == mechanisms._reveal_member(
        n, kappa, *cells[last - 1][:2], cells[last - 1][2:], eps, tail
    )
