"""Public API of crowdhide.accounting.shuffle.generic: validation, validity flags, best,
calibration, numerical range (no NaN/inf for 1 <= n <= 1e9, 0.01 <= eps0 <= 20,
1e-300 <= delta < 1)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from crowdhide.accounting import PrivacyStatement
from crowdhide.accounting.shuffle.calibration import calibrate_eps0, calibrate_n, epsilon_vs_n
from crowdhide.accounting.shuffle.generic import (
    SHUFFLE_BOUNDS,
    krr_shuffle_curve,
    shuffle_bound_curve,
    shuffle_delta,
    shuffle_delta_all,
    shuffle_epsilon,
    shuffle_epsilon_all,
)


def test_result_is_frozen_and_serialisable() -> None:
    r = shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.epsilon = 0.0  # type: ignore[misc]
    d = r.to_dict()
    assert {"epsilon", "delta", "source", "conditions_met", "inputs", "notes", "kind"} <= set(d)
    assert d["inputs"] == {"eps0": 1.0, "n": 1000, "k": None}
    assert d["lower"]["source"] == "ldp_lower"


def test_all_lists_every_applicable_bound() -> None:
    generic = shuffle_epsilon_all(eps0=1.0, n=1000, delta=1e-6)
    assert [r.source for r in generic] == [
        b
        for b in SHUFFLE_BOUNDS
        if b not in ("krr_clone", "krr_blanket", "binary_rr_blocks", "exact", "krr_lower")
    ]
    assert {r.source: r.kind for r in generic}["ldp_lower"] == "lower"
    krr = shuffle_epsilon_all(eps0=1.0, n=10, delta=1e-6, k=3)
    assert [r.source for r in krr] == [b for b in SHUFFLE_BOUNDS if b != "ldp_lower"]
    assert {r.source: r.kind for r in krr}["krr_lower"] == "lower"
    assert {r.source: r.kind for r in krr}["exact"] == "exact"


def test_best_is_smallest_valid_certificate() -> None:
    for k in (None, 2, 4):
        rows = shuffle_epsilon_all(eps0=2.0, n=300, delta=1e-6, k=k)
        best = shuffle_epsilon(eps0=2.0, n=300, delta=1e-6, k=k)
        certs = [r.epsilon for r in rows if r.is_certificate]
        assert best.epsilon == min(certs)
        assert best.is_certificate


def test_best_uses_exact_for_small_n() -> None:
    best = shuffle_epsilon(eps0=1.0, n=10, delta=1e-3, k=3)
    assert best.source == "exact"


def test_invalid_bounds_are_flagged_not_raised() -> None:
    r = shuffle_epsilon(eps0=2.0, n=100, delta=1e-6, bound="erlingsson2019")
    assert not r.conditions_met
    assert math.isnan(r.epsilon)
    assert "eps0 <= 0.5" in "; ".join(r.notes)
    r = shuffle_epsilon(eps0=2.0, n=1000, delta=1e-6, bound="feldman2023")
    assert not r.conditions_met
    assert "give k" in "; ".join(r.notes)
    assert shuffle_epsilon(eps0=2.0, n=1000, delta=1e-6, k=2, bound="feldman2023").conditions_met
    r = shuffle_epsilon(eps0=2.0, n=100, delta=1e-6, k=5, bound="exact")
    assert not r.conditions_met
    assert "n <= 14" in "; ".join(r.notes)
    r = shuffle_epsilon(eps0=2.0, n=100, delta=1e-6, k=4, bound="exact")
    assert not r.conditions_met
    assert "n <= 50 (k = 4)" in "; ".join(r.notes)
    r = shuffle_epsilon(eps0=2.0, n=301, delta=1e-6, k=3, bound="exact")
    assert not r.conditions_met
    assert "n <= 300 (k = 3)" in "; ".join(r.notes)
    r = shuffle_epsilon(eps0=2.0, n=3000, delta=1e-6, k=2, bound="exact")
    assert not r.conditions_met
    assert "n <= 2500" in "; ".join(r.notes)
    r = shuffle_delta(eps0=0.4, n=2000, epsilon=0.01, bound="erlingsson2019")
    assert not r.conditions_met
    assert "delta <= 0.01" in "; ".join(r.notes)


def test_delta_and_epsilon_are_consistent() -> None:
    for bound in ("balle2019_bennett", "feldman2021", "feldman2021_closed"):
        r = shuffle_epsilon(eps0=1.0, n=20_000, delta=1e-7, bound=bound)
        d = shuffle_delta(eps0=1.0, n=20_000, epsilon=r.epsilon, bound=bound)
        # Both are upper bounds; at this n the clone counts are evaluated on blocks whose
        # width depends on the summation window, so they may differ slightly.
        assert d.delta <= 1e-7 * (1 + 1e-3)
        d_less = shuffle_delta(eps0=1.0, n=20_000, epsilon=r.epsilon * 0.999, bound=bound)
        assert d_less.delta > 1e-7


def test_epsilon_is_capped_at_eps0_and_delta_zero_beyond() -> None:
    r = shuffle_epsilon(eps0=0.5, n=2, delta=1e-12)
    assert r.epsilon <= 0.5
    assert shuffle_delta(eps0=0.5, n=5, epsilon=0.5).delta == 0.0
    assert all(
        (r.delta == 0.0) or not r.conditions_met
        for r in shuffle_delta_all(eps0=1.0, n=50, epsilon=1.0)
    )


def test_monotone_in_n_and_eps0() -> None:
    eps_n = [shuffle_epsilon(eps0=1.0, n=n, delta=1e-6).epsilon for n in (100, 1000, 10**4)]
    assert eps_n[0] > eps_n[1] > eps_n[2]
    eps_e = [shuffle_epsilon(eps0=e, n=5000, delta=1e-6).epsilon for e in (0.5, 1.0, 2.0)]
    assert eps_e[0] < eps_e[1] < eps_e[2]


def test_calibrate_eps0() -> None:
    r = calibrate_eps0(epsilon=0.2, delta=1e-6, n=50_000, k=2)
    assert r.epsilon <= 0.2
    assert r.is_certificate
    worse = shuffle_epsilon(eps0=r.inputs["eps0"] * 1.001, n=50_000, delta=1e-6, k=2)
    assert worse.epsilon > 0.2
    # eps0 = epsilon is always achievable
    tiny = calibrate_eps0(epsilon=0.3, delta=1e-6, n=2)
    assert tiny.inputs["eps0"] >= 0.3


def test_calibration_delta_queries_are_summed_like_the_epsilon_query() -> None:
    """Inside a calibration the δ queries use the ε query's tail level, so the δ root and the
    reported ε agree (the calibrated ε0 is within the root tolerance of the ε query's own
    edge); the level does not leak out of the calibration."""
    from crowdhide.accounting.shuffle import curves as module

    r = calibrate_eps0(epsilon=0.1, delta=1e-6, n=100_000, k=4)
    assert r.epsilon <= 0.1
    assert r.epsilon > 0.1 * (1.0 - 1e-5)  # not settled several steps below the target
    assert module._DELTA_QUERY_LEVEL.get() is None
    with module._summed_like_epsilon_at(math.log(1e-6)):
        curve = module._AdaptiveCurve(lambda e, t: t, 1.0)
        assert curve.log_delta(0.5) == pytest.approx(math.log(1e-6) - 40.0)
    assert module._DELTA_QUERY_LEVEL.get() is None
    assert module._AdaptiveCurve(lambda e, t: t, 1.0).log_delta(0.5) < -1000.0


def test_calibrate_n() -> None:
    r = calibrate_n(epsilon=0.3, delta=1e-6, eps0=1.5)
    assert r.epsilon <= 0.3
    assert shuffle_epsilon(eps0=1.5, n=r.inputs["n"] - 1, delta=1e-6).epsilon > 0.3
    with pytest.raises(ValueError, match="no n"):
        calibrate_n(epsilon=1e-5, delta=1e-300, eps0=20.0)


def test_krr_curve_kinds() -> None:
    assert krr_shuffle_curve(eps0=1.0, n=8, k=3).is_certificate
    assert not krr_shuffle_curve(eps0=1.0, n=100, k=3).is_certificate
    with pytest.raises(ValueError, match="n must be <="):
        krr_shuffle_curve(eps0=1.0, n=10**8, k=3)


def test_epsilon_vs_n_grid() -> None:
    d = epsilon_vs_n(eps0=1.0, delta=1e-6, k=3, n_min=10, n_max=1000, points=3)
    assert d["n"] == [10, 100, 1000]
    assert set(d["epsilon"]) == set(SHUFFLE_BOUNDS) - {"ldp_lower"}
    assert d["conditions_met"]["exact"] == [True, True, False]  # k = 3: n <= 300


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"eps0": 0.0}, ValueError, "eps0"),
        ({"eps0": -1.0}, ValueError, "eps0"),
        ({"eps0": float("nan")}, ValueError, "eps0"),
        ({"eps0": 100.0}, ValueError, "eps0"),
        ({"eps0": "1"}, TypeError, "eps0"),
        ({"n": 0}, ValueError, "n must"),
        ({"n": 2.5}, TypeError, "n must"),
        ({"n": 10**10}, ValueError, "n must"),
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"delta": -1e-3}, ValueError, "delta"),
        ({"k": 1}, ValueError, "k must"),
        ({"k": 2.5}, TypeError, "k must"),
        ({"bound": "nope"}, ValueError, "bound must be one of"),
        ({"bound": 3}, TypeError, "bound"),
        ({"bound": "exact"}, ValueError, "needs k"),
        ({"bound": "krr_lower"}, ValueError, "needs k"),
        ({"bound": "krr_clone"}, ValueError, "needs k"),
    ],
)
def test_invalid_inputs(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    args: dict[str, Any] = {"eps0": 1.0, "n": 100, "delta": 1e-6, **kwargs}
    with pytest.raises(exc, match=match):
        shuffle_epsilon(**args)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: shuffle_delta(eps0=1.0, n=10, epsilon=-0.1), "epsilon"),
        (lambda: shuffle_delta_all(eps0=1.0, n=10, epsilon=float("inf")), "epsilon"),
        (lambda: calibrate_eps0(epsilon=0.0, delta=1e-6, n=10), "epsilon"),
        (lambda: calibrate_n(epsilon=1.0, delta=2.0, eps0=1.0), "delta"),
        (lambda: shuffle_bound_curve(bound="best", eps0=1.0, n=10), "bound"),
        (lambda: shuffle_bound_curve(bound="exact", eps0=1.0, n=100, k=5), "n <= 14"),
        (lambda: epsilon_vs_n(eps0=1.0, delta=1e-6, n_min=100, n_max=10), "n_max"),
        (lambda: epsilon_vs_n(eps0=1.0, delta=1e-6, points=1), "points"),
    ],
)
def test_invalid_inputs_other_functions(call: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def _finite_results(rows: list[PrivacyStatement]) -> None:
    for r in rows:
        if r.conditions_met:
            assert math.isfinite(r.epsilon), r
            assert r.epsilon >= 0.0, r
            assert 0.0 <= r.delta <= 1.0, r


GENERIC = SHUFFLE_BOUNDS[:6]


def _lower(k: int | None) -> str:
    return "krr_lower" if k is not None else "ldp_lower"


def _eps_rows(eps0: float, n: int, delta: float, k: int | None) -> list[PrivacyStatement]:
    # The lower bound is evaluated once as its own row (not attached to every row).
    return [
        shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound=b, lower=False)
        for b in (*GENERIC, _lower(k))
    ]


def _delta_rows(eps0: float, n: int, eps: float, k: int | None) -> list[PrivacyStatement]:
    return [
        shuffle_delta(eps0=eps0, n=n, epsilon=eps, k=k, bound=b, lower=False)
        for b in (*GENERIC, _lower(k))
    ]


@pytest.mark.parametrize("n", [1, 1000, 10**9])
@pytest.mark.parametrize("eps0", [0.01, 20.0])
def test_range_generic_bounds_fast(n: int, eps0: float) -> None:
    for delta in (1e-300, 0.5):
        _finite_results(_eps_rows(eps0, n, delta, 2))
    for eps in (0.0, eps0 / 2):
        _finite_results(_delta_rows(eps0, n, eps, None))


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 10, 1000, 10**6, 10**9])
@pytest.mark.parametrize("eps0", [0.01, 0.5, 3.0, 20.0])
def test_range_generic_bounds(n: int, eps0: float) -> None:
    for delta in (1e-300, 1e-50, 1e-6, 0.9):
        _finite_results(_eps_rows(eps0, n, delta, 3))
        _finite_results(_eps_rows(eps0, n, delta, None))
    for eps in (0.0, 1e-4, eps0 / 2):
        _finite_results(_delta_rows(eps0, n, eps, 3))


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 5, 60])
@pytest.mark.parametrize("eps0", [0.01, 2.0, 20.0])
def test_range_krr_bounds(n: int, eps0: float) -> None:
    for k in (2, 5):
        for delta in (1e-300, 1e-6, 0.9):
            rows = [
                shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound=b)
                for b in ("krr_clone", "exact", "krr_lower")
            ]
            _finite_results(rows)


def test_all_evaluates_krr_curves_at_large_n() -> None:
    rows = {r.source: r for r in shuffle_epsilon_all(eps0=1.0, n=300_000, delta=1e-6, k=4)}
    assert rows["krr_clone"].conditions_met
    assert rows["krr_lower"].conditions_met
    assert rows["krr_lower"].epsilon <= rows["krr_clone"].epsilon <= rows["feldman2023"].epsilon
    assert all(r.lower and r.lower.epsilon == rows["krr_lower"].epsilon for r in rows.values())


@pytest.mark.parametrize("bound", ["balle2019_bennett", "balle2019_hoeffding"])
def test_blanket_bounds_at_vanishing_eps0(bound: str) -> None:
    """Their terms underflow below eps0 ~ 1e-150 (found by the CLI fuzz through calibration);
    they answer with one report's δ, (e^eps0 − e^eps)/(e^eps0 + 1)."""
    r = shuffle_delta(eps0=1e-300, n=1000, epsilon=5e-301, bound=bound)
    assert r.delta == pytest.approx(2.5e-301, rel=1e-6)


def test_blanket_parameters_of_k_rr_hold_for_small_eps0_and_large_k() -> None:
    # b₊ = k (e^{ε0} − e^ε)/(e^{ε0} + k − 1) and 1 − γ = (e^{ε0} − 1)/(e^{ε0} + k − 1):
    # written as differences (γ(1 − e^ε) + (1 − γ)k) they cancel, b₊ even went negative
    import mpmath

    from crowdhide.accounting.shuffle.closed_forms import _blanket_params

    mpmath.mp.dps = 40
    worst = 0.0
    for k in (2, 50, 10**4, 10**6, 10**9):
        for eps0 in (1e-7, 1e-4, 0.1, 3.0):
            for frac in (1e-3, 0.5, 0.999):
                eps = eps0 * frac
                _, b_plus, _, _ = _blanket_params(eps, eps0, k)
                e0, e = mpmath.exp(mpmath.mpf(eps0)), mpmath.exp(mpmath.mpf(eps))
                exact = k * (e0 - e) / (e0 + k - 1)
                worst = max(worst, float(abs(b_plus - exact) / exact))
    assert worst < 1e-13


@pytest.mark.parametrize("bound", ["balle2019_hoeffding", "balle2019_bennett"])
def test_blanket_bounds_at_tiny_eps0_and_huge_k(bound: str) -> None:
    r = shuffle_epsilon(eps0=1e-6, n=2, delta=1e-300, k=10**6, bound=bound)
    assert 0.0 <= r.epsilon <= 1e-6
