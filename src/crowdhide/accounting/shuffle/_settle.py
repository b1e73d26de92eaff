"""δ queries that agree with ε queries (issue 32, s33-cons; docs/proofs/profile-pair.md §17).

The blocked evaluators sum their windows to a tail ``e^{-L}`` and place their blocks by it,
so their floats depend on ``L`` (up to 0.4 % of δ at δ = 1e-10, 9x at 1e-300). An ε search at
``log δ = T`` sums to the tails of :func:`tail_level` (``L = 40 − T``); a δ query, which does
not know the δ a user may check it against, used to stop at the first tail deep enough for
its own value, so δ at an ε answer could come out above the δ asked. Within
:func:`settled_delta_query` (the δ entry points) a δ query also sums to the tails an ε search
at its own value uses, again at the value that gives, until they stop moving
(:func:`settled_value`), and answers the least of its values, the former answer among them:
each is an upper bound, and at an ε answer one of them is the search's own value (to within
the blocked sums' steps).
Everywhere else (ε searches, their starts and slopes, lower bounds, the calibrations'
level-summed δ queries) every float is as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "SETTLE_ROUNDS",
    "SETTLE_TOL",
    "settled_delta_query",
    "settled_value",
    "settling",
    "tail_level",
    "unsettled",
]

#: A δ query stops following its own value's tails once they move by less than this (in
#: log δ), or after :data:`SETTLE_ROUNDS` rounds: the blocked sums' layouts change in steps
#: of about 1e-3-0.05 of it (measured: k-RR clone pair, k = 100, ε0 = 4, n = 1e9, δ = 1e-10:
#: tails 4.8e-4 apart gave log δ 2.3e-7 apart, across the target).
SETTLE_TOL = 1e-5
SETTLE_ROUNDS = 3

#: Whether a δ query is being answered (:func:`settled_delta_query`).
_SETTLING: ContextVar[bool] = ContextVar("_SETTLING", default=False)


def tail_level(log_target: float) -> float:
    """``L`` of the tails ``e^{-L}`` an ε search at ``log δ = log_target`` sums to: 40 below
    the target, within [40, 2000].

    Examples
    --------
    >>> tail_level(0.0), round(tail_level(math.log(1e-6)), 3), tail_level(-2500.0)
    (40.0, 53.816, 2000.0)
    """
    return max(min(2000.0, -log_target + 40.0), 40.0)


@contextmanager
def settled_delta_query() -> Iterator[None]:
    """Within the block, δ queries also evaluate what an ε search at their own value
    certifies with, so that δ at an ε query's answer is at most the δ it was asked at."""
    token = _SETTLING.set(True)
    try:
        yield
    finally:
        _SETTLING.reset(token)


@contextmanager
def unsettled() -> Iterator[None]:
    """Within the block, δ queries as before (a lower bound's: its own tails only)."""
    token = _SETTLING.set(False)
    try:
        yield
    finally:
        _SETTLING.reset(token)


def settling() -> bool:
    """Whether a δ query is being answered (:func:`settled_delta_query`)."""
    return _SETTLING.get()


def settled_value(fn: Callable[[float], float], tried: dict[float, float]) -> float:
    """The least of the values ``tried`` (tail level ↦ ``log δ``, each an upper bound) and
    those ``fn(−L)`` gives at the tails an ε search at the least one found sums to
    (:func:`tail_level`), followed until they move by less than :data:`SETTLE_TOL`.

    Examples
    --------
    >>> settled_value(lambda tail: -13.8 - 1e-4 * (tail + 60.0), {60.0: -13.8})
    -13.8
    """
    value = min(tried.values())
    for _ in range(SETTLE_ROUNDS):
        if value == -math.inf:
            break
        level = tail_level(value)
        if min(abs(level - done) for done in tried) < SETTLE_TOL:
            break
        tried[level] = fn(-level)
        value = min(tried.values())
    return value
