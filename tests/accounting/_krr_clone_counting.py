"""krr_clone's raw curve with its evaluator's calls recorded, and a pass check at one ε:
shared by the krr_clone search tests (tiny δ and bracketed)."""

from __future__ import annotations

import math

from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle._bound_curves import (
    ShuffleParams,
    TinyTargetBracketedCurve,
    _krr_clone_curve,
)


def _counted(
    k: int, eps0: float, n: int, *, bracketed: bool = True
) -> tuple[TinyTargetBracketedCurve, list[float]]:
    """krr_clone's raw curve whose evaluator records the ε of every call."""
    calls: list[float] = []

    def fn(eps: float, tail: float) -> float:
        calls.append(eps)
        return _krr_fast.krr_clone_fast_log_delta(n, k, eps0, eps, tail)

    built = _krr_clone_curve(ShuffleParams(eps0=eps0, n=n, k=k))
    assert isinstance(built, TinyTargetBracketedCurve)
    return TinyTargetBracketedCurve(fn, eps0, built._floor, bracketed=bracketed), calls


def _passes(curve: TinyTargetBracketedCurve, eps: float, delta: float) -> bool:
    """Whether the clone evaluator meets ``delta`` at ``eps`` (windows set as when solving)."""
    target = math.log(delta)
    curve.solving_for(target)
    try:
        return curve.log_delta(eps) <= target
    finally:
        curve.solving_for(None)
