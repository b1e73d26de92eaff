"""Shared by the tiny-δ search tests of the clone pairs (test_fmt21_tiny_search,
test_fmt23_tiny_search): the pair's evaluations counted, and the passing check of an answer
by the pair's own evaluation at the search's tail level."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from crowdhide.accounting.shuffle import _pairs
from crowdhide.accounting.shuffle._bound_curves import ShuffleParams


def count_pair_evaluations(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ε at which ``clone_pair_log_delta`` is evaluated from now on (in order)."""
    calls: list[float] = []
    evaluate = _pairs.clone_pair_log_delta

    def counted(n: int, eps0: float, beta: float, eps: float, log_tail: float) -> float:
        calls.append(eps)
        return evaluate(n, eps0, beta, eps, log_tail)

    monkeypatch.setattr(_pairs, "clone_pair_log_delta", counted)
    return calls


def passes(
    curve_of: Callable[[ShuffleParams], Any], eps0: float, n: int, delta: float, eps: float
) -> bool:
    """``log δ(eps) <= log delta`` by the pair's own evaluation at the search's tail level
    (``curve_of``: ``_fmt21_curve`` or ``_fmt23_curve``)."""
    curve = curve_of(ShuffleParams(eps0=eps0, n=n))
    curve.solving_for(math.log(delta))
    return bool(curve.log_delta(eps) <= math.log(delta))
