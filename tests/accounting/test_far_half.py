"""Far tails of the half excesses (issue 32, s28-tiny; docs/proofs/betainc-underflow.md,
"Far tails"): the elements whose slope tail's Chernoff bound is at most ``FAR_LEVEL`` take
their deep bound without incomplete betas. The floats are those of the former computation
(which evaluates every incomplete beta) on grids across the boundary, the values stay above
50-digit excesses, and a level too close to ``BETAINC_TRUSTED`` is caught by the equality."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from crowdhide.accounting.shuffle import _far_half, _krr_fast, _pairs

mpmath.mp.dps = 50


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """``(s, θ)`` from the mean to beyond ``s`` (80 standard deviations and the whole
    support), non-integral θ, s from 2 to 1e8."""
    s_all, t_all = [], []
    for s in (2, 5, 50, 300, 1100, 3000, 10**4, 10**5, 10**6, 10**8):
        sd = math.sqrt(s) / 2.0
        theta = np.concatenate([s / 2.0 + np.linspace(0.0, 80.0, 400) * sd,
                                np.linspace(s / 2.0, s + 1.5, 200)])  # fmt: skip
        theta = theta + np.linspace(0.0, 1.0, theta.size) * 0.37
        s_all.append(np.full(theta.shape, float(s)))
        t_all.append(theta)
    return np.concatenate(s_all), np.concatenate(t_all)


def test_far_elements_keep_the_former_floats() -> None:
    s, theta = _grid()
    far = _far_half.far_mask(s, theta)
    assert 0.3 * s.size < int(far.sum()) < 0.9 * s.size  # both kinds are on the grid
    former = _krr_fast._half_excess_core(s, theta, upper=True)
    assert np.array_equal(_krr_fast._half_excess_terms(s, theta, upper=True), former)
    # 2-D and broadcast arguments take the same path element by element
    grid = _krr_fast._half_excess_terms(s[None, :1000], np.stack([theta[:1000]] * 2), upper=True)
    assert np.array_equal(grid, np.stack([former[:1000]] * 2))


def test_a_level_near_the_trusted_tails_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The equality above has teeth: with the level at 1e-230 (between the allowance
    ``UNTRUSTED_ATOL`` = 1e-240 and ``BETAINC_TRUSTED`` = 1e-200) some far element's deep
    bound is above the former minimum, and the test above would fail (always upwards)."""
    s, theta = _grid()
    former = _krr_fast._half_excess_core(s, theta, upper=True)
    monkeypatch.setattr(_far_half, "FAR_LEVEL", 1e-230)
    moved = _krr_fast._half_excess_terms(s, theta, upper=True)
    assert not np.array_equal(moved, former)
    assert np.all(moved >= former)


@pytest.mark.parametrize("s", [1100, 2000, 3000])
def test_far_values_are_above_the_exact_excess(s: int) -> None:
    theta = s / 2.0 + np.linspace(0.0, 40.0, 41) * math.sqrt(s) / 2.0 + 0.29
    theta = theta[theta < s + 1]
    far = _far_half.far_mask(np.full(theta.shape, float(s)), theta)
    assert far.any()
    value = _krr_fast.excess_half(np.full(theta.shape, float(s)), theta, upper=True)
    for i in np.flatnonzero(far):
        t = float(theta[i])
        exact = mpmath.fsum(
            (j - mpmath.mpf(t)) * mpmath.binomial(s, j) / mpmath.mpf(2) ** s
            for j in range(math.floor(t) + 1, s + 1)
        )
        assert exact <= mpmath.mpf(value[i]), (s, t)


@pytest.mark.parametrize("tau", [0.3, 0.45, 0.5, 0.62, 0.93, 0.975])
def test_clone_excess_keeps_the_former_floats(tau: float, monkeypatch: pytest.MonkeyPatch) -> None:
    m = np.unique(np.geomspace(2, 10**7, 400).astype(np.int64))
    if tau > 0.5:  # (at τ <= ½ the threshold is below the mean: nothing is far)
        b_star = np.ceil(m * (1.0 - tau)).astype(np.int64) - 1
        far = _far_half.far_tail(m.astype(np.float64), (m - b_star - 1).astype(np.float64))
        assert 0 < int(far.sum()) < m.size
    value, err = _pairs._clone_excess(m, tau, 1.0 - tau, 1e-12)
    monkeypatch.setattr(_pairs, "far_tail", lambda mf, edge: np.zeros(mf.shape, dtype=bool))
    former_value, former_err = _pairs._clone_excess(m, tau, 1.0 - tau, 1e-12)
    assert np.array_equal(value, former_value)
    assert np.array_equal(err, former_err)


def test_the_rule_steps_aside_when_every_tail_is_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``BETAINC_TRUSTED`` at 0 (a test's plain incomplete betas) the former path gives
    far elements the difference, not the deep bound: the rule must not apply then."""
    s, theta = _grid()
    monkeypatch.setattr(_krr_fast, "BETAINC_TRUSTED", 0.0)
    plain = _krr_fast._half_excess_core(s, theta, upper=True)
    assert np.array_equal(_krr_fast._half_excess_terms(s, theta, upper=True), plain)
    m = np.unique(np.geomspace(2, 10**7, 400).astype(np.int64))
    value, _ = _pairs._clone_excess(m, 0.9, 0.1, 1e-12)
    monkeypatch.setattr(_pairs, "BETAINC_TRUSTED", 0.0)
    monkeypatch.setattr(_pairs, "far_tail", lambda mf, edge: np.zeros(mf.shape, dtype=bool))
    plain_value, _ = _pairs._clone_excess(m, 0.9, 0.1, 1e-12)
    monkeypatch.undo()
    monkeypatch.setattr(_pairs, "BETAINC_TRUSTED", 0.0)
    assert np.array_equal(_pairs._clone_excess(m, 0.9, 0.1, 1e-12)[0], plain_value)
    assert not np.array_equal(value, plain_value)  # (the plain betas differ there)


def test_memo_of_far_bounds_keeps_the_floats() -> None:
    """The far bounds of a root search come from a memo (issue 32, s31-krr): whatever it
    holds, each element's bound is the one ``trusted_tail`` gives it on its own, bit for bit
    (a cold memo, a memo warmed by another grid, and the direct path past its packing)."""
    s, theta = _grid()
    far = _far_half.far_mask(s, theta)
    s, theta = s[far], theta[far]
    direct = _far_half.far_excess(s, theta, 4e-15)
    memo = _far_half.bound_memo()
    assert np.array_equal(_far_half.far_excess(s, theta, 4e-15, memo=memo), direct)  # cold
    warm = _far_half.bound_memo()
    half = s.size // 2  # warmed by half the grid at other thresholds, asked in another order
    _far_half.far_excess(s[:half], theta[:half] + 0.5, 4e-15, memo=warm)
    order = np.argsort(theta)
    again = _far_half.far_excess(s[order], theta[order], 4e-15, memo=warm)
    assert np.array_equal(again, direct[order])
    assert warm.size > 0
    # beyond the packing (s >= 2^30) the bounds are evaluated directly: the same floats
    s_big = np.full(400, 2.0**31)
    t_big = 2.0**30 + np.linspace(7e5, 9e5, 400) + 0.5
    expected = _far_half.far_excess(s_big, t_big, 4e-15)
    assert np.array_equal(_far_half.far_excess(s_big, t_big, 4e-15, memo=memo), expected)


def test_blanket_with_its_memo_keeps_the_floats() -> None:
    """krr_blanket's curve keeps a memo over its evaluations: the same floats as without."""
    args = [(1000, 4, 1.0, eps, -730.78) for eps in (0.75, 0.98, 0.9827, 0.98271, 0.5)]
    memo = _far_half.bound_memo()
    with_memo = [_krr_fast.krr_blanket_log_delta(*a, memo=memo) for a in args]
    assert with_memo == [_krr_fast.krr_blanket_log_delta(*a) for a in args]
    assert memo.size > 0
