"""``scrambler.curves.per_tail``: the public point evaluator the accountant's exact bounds (and
``benchmarks/bench_scrambler_underflow.py``) build their curves from."""

from __future__ import annotations

import math

from crowdhide.accounting.scrambler import bounds
from crowdhide.accounting.scrambler.curves import BoundCurve, per_tail


class _Counted:
    """δ(ε) = e^{log_tail − ε}, so each truncation level gives a different, known value."""

    def __init__(self, log_tail: float, built: list[float]) -> None:
        built.append(log_tail)
        self._log_tail = log_tail

    def delta(self, epsilon: float) -> float:
        return math.exp(self._log_tail - epsilon)


def test_one_evaluator_per_truncation_level() -> None:
    built: list[float] = []
    point = per_tail(lambda tail: _Counted(tail, built))
    assert point(1.0, -10.0) == math.exp(-11.0)
    assert point(2.0, -10.0) == math.exp(-12.0)  # the level's evaluator, reused
    assert point(1.0, -20.0) == math.exp(-21.0)  # a new level builds a new one
    assert built == [-10.0, -20.0]


def test_curve_is_the_evaluator_itself() -> None:
    """Uncapped and unrounded, the per-tail curve answers the evaluator's own δ(ε) at the
    default truncation (e^-60) where δ is far above it."""

    def make(tail: float) -> bounds.Lemma2Exact:
        return bounds.Lemma2Exact(targets=10, sigma=0.0, n=5, dummies=200, log_tail=tail)

    curve = BoundCurve(eps0=math.inf, point=per_tail(make))
    direct = make(-60.0)
    for eps in (0.5, 1.0, 2.0):
        want = float(direct.delta(eps))
        assert want > 1e-15
        assert curve.log_delta(eps) == math.log(want)  # the curve keeps δ in log space
