"""The shared accounting vocabulary: privacy statements, the bound registry, the safe-side root
finder and the calibrator."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdhide.accounting import (
    DiscretePairCurve,
    PrivacyStatement,
    Registry,
    calibrate,
    safe_root,
)
from crowdhide.accounting.gaussian import gaussian_epsilon, gaussian_log_delta
from crowdhide.accounting.roots import LOG_ZERO
from crowdhide.accounting.statement import Kind
from crowdhide.errors import InvalidParameterError, UnmetTargetError


def test_statement_validates_and_keeps_target_apart() -> None:
    s = PrivacyStatement(epsilon=1.0, delta=1e-6, kind="upper", source="x")
    assert s.is_certificate
    assert s.meets_target is None
    missed = s.with_target(epsilon=0.5, delta=1e-6)
    assert missed.is_certificate
    assert missed.meets_target is False
    assert s.with_target(epsilon=1.0, delta=1e-6).meets_target is True
    assert (
        PrivacyStatement(epsilon=0.1, delta=0.0, kind="lower")
        .with_target(epsilon=1.0, delta=0.0)
        .meets_target
        is False
    )
    with pytest.raises(InvalidParameterError, match="nan"):
        PrivacyStatement(epsilon=math.nan, delta=0.0)
    with pytest.raises(InvalidParameterError, match="kind"):
        PrivacyStatement(epsilon=1.0, delta=0.0, kind="guess")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="delta"):
        PrivacyStatement(epsilon=1.0, delta=1.5)
    hash(s)  # frozen and hashable although ``inputs`` is a mapping


@dataclass(frozen=True)
class _Rr:
    eps0: float


class _Exact:
    name: str = "exact"
    kind: Kind = "exact"
    citation: str = "randomized response"

    def applies(self, params: _Rr) -> str | None:
        return None

    def curve(self, params: _Rr) -> DiscretePairCurve:
        p = 1.0 / (1.0 + math.exp(-params.eps0))
        return DiscretePairCurve.from_probabilities([p, 1 - p], [1 - p, p])


class _Loose(_Exact):
    name: str = "loose"
    kind: Kind = "upper"

    def curve(self, params: _Rr) -> DiscretePairCurve:
        return super().curve(_Rr(eps0=2.0 * params.eps0))


class _Lower(_Exact):
    name: str = "lower"
    kind: Kind = "lower"

    def applies(self, params: _Rr) -> str | None:
        return "only for eps0 < 1" if params.eps0 >= 1.0 else None

    def curve(self, params: _Rr) -> DiscretePairCurve:
        return super().curve(_Rr(eps0=0.5 * params.eps0))


def test_registry_best_brackets_the_truth_and_reports_reasons() -> None:
    reg: Registry[_Rr] = Registry([_Loose(), _Exact(), _Lower()], what="rr bound")
    best = reg.best(_Rr(eps0=0.7), delta=1e-9)
    assert best.source == "exact"
    assert best.lower is not None
    assert best.lower.source == "lower"
    assert best.lower.epsilon <= best.epsilon
    assert best.inputs == {"eps0": 0.7}
    by_delta = reg.best(_Rr(eps0=0.7), epsilon=0.1)
    assert by_delta.source == "exact"
    assert by_delta.delta > 0.0
    skipped = reg.statement("lower", _Rr(eps0=2.0), delta=1e-9)
    assert not skipped.conditions_met
    assert skipped.notes == ("only for eps0 < 1",)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        reg.all(_Rr(eps0=1.0))


@pytest.mark.parametrize("mu", [1e-3, 0.3, 1.0, 4.0, 30.0])
@pytest.mark.parametrize("delta", [0.3, 1e-6, 1e-300])
def test_safe_root_and_gaussian_epsilon_are_on_the_safe_side(mu: float, delta: float) -> None:
    eps = gaussian_epsilon(mu=mu, delta=delta)
    assert float(gaussian_log_delta(eps, mu=mu)) <= math.log(delta)
    if eps > 1e-12:  # and tight: slightly smaller ε fails
        assert float(gaussian_log_delta(eps * (1 - 1e-9) - 1e-12, mu=mu)) > math.log(delta)


def test_gaussian_profile_matches_a_direct_sum() -> None:
    # δ(ε) = Σ max(0, p − e^ε q) for a fine discretisation of N(0,1) vs N(μ,1).
    mu, eps = 1.3, 0.4
    x = np.linspace(-20, 20, 400_001)
    dx = x[1] - x[0]
    p = np.exp(-0.5 * (x - mu) ** 2) / math.sqrt(2 * math.pi) * dx
    q = np.exp(-0.5 * x**2) / math.sqrt(2 * math.pi) * dx
    direct = float(np.maximum(p - math.exp(eps) * q, 0.0).sum())
    assert math.exp(float(gaussian_log_delta(eps, mu=mu))) == pytest.approx(direct, rel=1e-6)


@pytest.mark.parametrize("threshold", [1, 2, 17, 1000, 999_999])
def test_integer_calibration_is_exact(threshold: int) -> None:
    assert (
        calibrate(lambda n: n >= threshold, low=1, high=10**6, increasing=True, integer=True)
        == threshold
    )
    assert (
        calibrate(lambda n: n <= threshold, low=0, high=10**6, increasing=False, integer=True)
        == threshold
    )


@pytest.mark.parametrize("threshold", [1e-8, 0.37, 5.0, 4e3])
def test_real_calibration_returns_a_passing_value(threshold: float) -> None:
    up = calibrate(lambda v: v >= threshold, low=1e-9, high=1e4, increasing=True)
    down = calibrate(lambda v: v <= threshold, low=0.0, high=1e4, increasing=False)
    assert threshold <= up <= threshold * (1 + 1e-8)
    assert threshold * (1 - 1e-8) <= down <= threshold
    with pytest.raises(UnmetTargetError):
        calibrate(lambda v: v >= 2e4, low=1.0, high=1e4, increasing=True, what="sigma")


def _counting(f: Callable[[float], float]) -> tuple[Callable[[float], float], list[int]]:
    calls = [0]

    def g(x: float) -> float:
        calls[0] += 1
        return f(x)

    return g, calls


_MONOTONE_SHAPES: list[tuple[str, Callable[[float], float]]] = [
    ("linear", lambda x: -x),
    ("cubic", lambda x: -(x**3)),
    ("steep exponential", lambda x: 1.0 - math.exp(30.0 * x)),
    ("logarithmic", lambda x: -math.log1p(1e6 * x)),
    ("flat then cliff", lambda x: -1e-12 * x if x < 0.9 else -1e3 * (x - 0.9)),
    ("step to zero", lambda x: LOG_ZERO if x > 0.6180339 else -x),
    ("fifteenth root", lambda x: -math.copysign(abs(x - 0.3) ** (1 / 15), x - 0.3)),
]


@pytest.mark.parametrize(("name", "shape"), _MONOTONE_SHAPES)
@pytest.mark.parametrize("target", [-0.5, -1e-3])
def test_safe_root_brackets_the_crossing_from_both_sides(
    name: str, shape: Callable[[float], float], target: float
) -> None:
    lo, hi = 0.0, 1.0
    assert max(shape(hi), LOG_ZERO) <= target < shape(lo), name
    passing = safe_root(shape, target, lo, hi)
    failing = safe_root(shape, target, lo, hi, lower_side=True)
    assert max(shape(passing), LOG_ZERO) <= target < max(shape(failing), LOG_ZERO)
    assert 0.0 < passing - failing <= 1e-13 + 1e-15


@pytest.mark.parametrize(("name", "shape"), _MONOTONE_SHAPES)
def test_safe_root_costs_at_most_a_few_bisections(
    name: str, shape: Callable[[float], float]
) -> None:
    # Bisection from width 1 to 1e-13 takes 44 steps; the stall guard keeps any curve within
    # a small multiple of that, and smooth curves take far fewer.
    counted, calls = _counting(shape)
    safe_root(counted, -0.5, 0.0, 1.0)
    assert calls[0] <= 2 * 44 + 2, name


@pytest.mark.parametrize("mu", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-100])
def test_safe_root_is_superlinear_on_privacy_curves(mu: float, delta: float) -> None:
    counted, calls = _counting(lambda e: float(gaussian_log_delta(e, mu=mu)))
    safe_root(counted, math.log(delta), 0.0, 300.0)
    assert calls[0] <= 22  # bisection would need ~52 from width 300 to 1e-13


@given(
    scale=st.floats(1e-3, 1e3),
    power=st.floats(0.05, 20.0),
    root=st.floats(0.01, 0.99),
)
@settings(max_examples=200, deadline=None)
def test_safe_root_on_random_power_curves(scale: float, power: float, root: float) -> None:
    def shape(x: float) -> float:
        return -scale * math.copysign(abs(x - root) ** power, x - root)

    passing = safe_root(shape, 0.0, 0.0, 1.0)
    failing = safe_root(shape, 0.0, 0.0, 1.0, lower_side=True)
    assert shape(passing) <= 0.0 < shape(failing)
    assert passing - failing <= 1e-13 + 1e-15


def test_safe_root_refuses_a_bracket_without_root() -> None:
    with pytest.raises(ValueError, match="no root"):
        safe_root(lambda x: 5.0 - x, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("mu", [1e-12, 1e-8, 1e-5, 1e-3, 0.1, 0.99, 1.0, 1.01, 3.0, 100.0])
def test_gaussian_profile_is_never_below_80_digit_arithmetic(mu: float) -> None:
    """Tiny μ used to lose up to 1e-4 relative (two large logs differenced): the quadrature
    path and the rounding margin keep every δ within [1, 1 + 2e-10] of the truth."""
    import mpmath as mp

    mp.mp.dps = 60
    grid = [0.0, 1e-9, 1e-6, 1e-3, 0.1, 1.0, 5.0, 20.0]
    vector = gaussian_log_delta(np.array(grid), mu=mu)
    for eps, from_vector in zip(grid, vector, strict=True):
        a = mp.mpf(mu) / 2 - mp.mpf(eps) / mu
        truth = mp.log(mp.ncdf(a) - mp.exp(eps) * mp.ncdf(a - mu))
        if truth < -690:
            continue
        for got in (float(gaussian_log_delta(eps, mu=mu)), float(from_vector)):
            ratio = float(mp.exp(mp.mpf(got) - truth))
            assert 1.0 <= ratio <= 1.0 + 2e-10, (mu, eps, ratio)
