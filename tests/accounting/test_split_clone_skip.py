"""Deep heavy blocks of the split clone system keep their Chernoff cap (issue 32):
``_split_clone.deep_skipped_h`` evaluates the incomplete betas only of the heavy blocks whose
mass times cap can matter (above ``e^{log_tail − DEEP_MARGIN}``).

References: the former per-block value ``_deep_h(clone_block_h(...))`` (every heavy block
evaluated) and the exact ``H`` summed in log space
(:func:`tests.accounting.test_split_clone_deep._exact_log_h`), and end to end the unblocked
log-space sum of the system (``reference_log_delta`` there)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _far_half, _krr_fast, _split_clone
from crowdhide.accounting.shuffle._deep_excess import deep_log_h
from crowdhide.accounting.shuffle._krr_fast import LIGHT_MARGIN, clone_block_h
from crowdhide.accounting.shuffle._split_clone import (
    DEEP_MARGIN,
    deep_skipped_h,
    split_clone_log_delta,
)
from tests.accounting.test_split_clone_deep import (
    SYSTEMS,
    _deep_cases,
    _exact_log_h,
    reference_log_delta,
)

FloatArray = np.ndarray


def _weights(s: FloatArray, g: FloatArray, kappa: float, eps: float, log_tail: float) -> FloatArray:
    """Joint log masses of heavy blocks placed about the skip level of each block's cap:
    alternately just below it (skipped) and just above (evaluated), within the heavy range."""
    log_cap = _split_clone._deep_log_h(s, g, kappa=kappa, eps=eps)
    log_cap = np.maximum(np.minimum(log_cap, 0.0), math.log(1e-306))
    side = np.where(np.arange(s.size) % 2 == 0, -0.5, 0.5)
    level = log_tail - DEEP_MARGIN - log_cap + side
    return np.clip(level, log_tail - LIGHT_MARGIN + 1e-6, 0.0)


def _near_floor_cases(kappa: float, eps: float) -> tuple[FloatArray, FloatArray]:
    """Blocks (s = 3000) whose cap is near the incomplete betas' floor (1e-300): there the
    former value is often the cap itself, so a lowered cap shows."""
    s = np.full(4000, 3000.0)
    g_max = 0.95 * (1.0 + math.exp(eps)) / math.expm1(eps) * kappa * 2.0
    g = np.maximum(s * np.linspace(1.0, g_max, 4000), s)
    log_cap = _split_clone._deep_log_h(s, g, kappa=kappa, eps=eps)
    keep = (log_cap > -704.0) & (log_cap < -600.0)
    return s[keep], g[keep]


def _cases(kappa: float, eps: float) -> tuple[FloatArray, FloatArray]:
    (s1, g1), (s2, g2) = _deep_cases(kappa, eps), _near_floor_cases(kappa, eps)
    return np.concatenate([s1, s2]), np.concatenate([g1, g2])


def _former(
    s: FloatArray, g: FloatArray, kappa: float, eps: float, log_tail: float = 0.0
) -> FloatArray:
    """Every heavy block evaluated, capped; below ``DEEP_EXCESS_TAIL`` also by the excess's own
    geometric bound (s36-deep), as ``_capped_h`` caps it (floored at 1e-306)."""
    h = clone_block_h(s, g, kappa=kappa, eps=eps)
    value = np.asarray(_split_clone._deep_h(h, s, g, kappa=kappa, eps=eps))
    if log_tail < _split_clone.DEEP_EXCESS_TAIL:
        deep = np.exp(np.minimum(deep_log_h(s, g, kappa=kappa, eps=eps), 0.0))
        value = np.minimum(value, np.maximum(deep, 1e-306))
    return value


CASES = [(1.0, 0.5, -731.0), (4.0, 0.3, -731.0), (4.0, 0.8, -100.0), (2.0, 0.5, -54.0)]


@pytest.mark.parametrize(("eps0", "frac", "log_tail"), CASES)
def test_skipped_blocks_keep_a_bound_above_the_former_and_the_exact(
    eps0: float, frac: float, log_tail: float
) -> None:
    kappa, eps = math.tanh(eps0 / 2.0), frac * eps0
    s, g = _cases(kappa, eps)
    weight = _weights(s, g, kappa, eps, log_tail)
    got = deep_skipped_h(s, g, weight, kappa=kappa, eps=eps, log_tail=log_tail)
    former = _former(s, g, kappa, eps, log_tail)
    moved = got != former
    # evaluated blocks: the former floats; skipped ones: never below them, and each raised
    # by at most e^{log_tail − DEEP_MARGIN} in mass times bound
    assert np.all(got >= former)
    with np.errstate(divide="ignore"):
        assert np.all(weight[moved] + np.log(got[moved]) <= log_tail - DEEP_MARGIN)
        assert np.all(np.log(got) >= _exact_log_h(s, g, kappa, eps) - 1e-9)
    if log_tail < -700.0:
        assert moved.sum() >= 10  # the skip happens in these deep cases


def test_a_cap_lowered_by_one_percent_in_the_skipped_blocks_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the former value was the cap itself (its incomplete betas floor near 1e-300), a
    skipped block taking 0.99 of its cap falls below it, while with the cap as it is no block
    does. Both sides use the plain incomplete betas (``BETAINC_TRUSTED`` = 0): since
    s23b-underflow untrusted betas take Chernoff bounds that can undercut the floored value,
    so comparing the current rule with the plain former value would show blocks below it
    whatever the cap (the test then passed without its patch)."""
    kappa, eps, log_tail = math.tanh(2.0), 0.3 * 4.0, -731.0
    s, g = _near_floor_cases(kappa, eps)
    weight = _weights(s, g, kappa, eps, log_tail)
    original = _split_clone._deep_log_h_parts

    def lowered(
        s: FloatArray, g: FloatArray, *, kappa: float, eps: float
    ) -> tuple[FloatArray, FloatArray]:
        log_cap, exponent = original(s, g, kappa=kappa, eps=eps)
        return np.asarray(log_cap + math.log(0.99)), exponent

    with monkeypatch.context() as plain:
        plain.setattr(_krr_fast, "BETAINC_TRUSTED", 0.0)
        # the Chernoff cap's rule alone (below DEEP_EXCESS_TAIL a tighter cap hides it)
        plain.setattr(_split_clone, "DEEP_EXCESS_TAIL", -math.inf)
        former = _former(s, g, kappa, eps)
        kept = deep_skipped_h(s, g, weight, kappa=kappa, eps=eps, log_tail=log_tail)
        plain.setattr(_split_clone, "_deep_log_h_parts", lowered)
        got = deep_skipped_h(s, g, weight, kappa=kappa, eps=eps, log_tail=log_tail)
    assert np.all(kept >= former)
    assert bool(np.any(got < former))


@pytest.mark.parametrize(("eps0", "mu", "c_inf", "c_zero"), SYSTEMS)
def test_the_system_with_skipped_blocks_against_the_log_space_sum(
    eps0: float, mu: float, c_inf: float, c_zero: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end at n = 200 with a deep tail level: above the unblocked log-space sum, and
    at least the value with every heavy block evaluated (the skip only adds)."""
    n, kappa = 200, math.tanh(eps0 / 2.0)
    for frac in (0.2, 0.9):
        eps = frac * eps0
        ref = reference_log_delta(n, kappa, mu, c_inf, c_zero, eps)
        tail = min(-60.0, ref - 40.0)
        _split_clone._layout.cache_clear()
        got = split_clone_log_delta(n, kappa, mu, c_inf, c_zero, eps, tail)
        with monkeypatch.context() as m:
            m.setattr(_split_clone, "DEEP_MARGIN", math.inf)  # nothing skipped
            full = split_clone_log_delta(n, kappa, mu, c_inf, c_zero, eps, tail)
        assert ref - 1e-9 <= full <= got
        assert got - full <= 1e-9


@pytest.mark.parametrize(("eps0", "frac", "log_tail"), [*CASES, (8.0, 0.9, -60.0)])
def test_blocks_without_excess_keep_the_former_floats(
    eps0: float, frac: float, log_tail: float
) -> None:
    """s27-gen: blocks with ``⌊θ⌋ > s`` and a log mass below ``log_tail − DEEP_MARGIN +
    EMPTY_ROOM`` take 1e-306 without their cap's steps: every block keeps the former float,
    also where the room is crossed (log masses up to 2000 above it)."""
    kappa, eps = math.tanh(eps0 / 2.0), frac * eps0
    s, g = _cases(kappa, eps)
    s = np.concatenate([s, np.full(6, 5.0), [7.0, 1.0]])
    g = np.concatenate([g, np.full(6, 1e6), [1e7, 1e3]])  # no excess (⌊θ⌋ > s)
    weight = _weights(s, g, kappa, eps, log_tail)
    room = log_tail - DEEP_MARGIN + _split_clone.EMPTY_ROOM
    weight[-8:] = [room - 1.0, room, room + 1e-9, room + 5.0, room + 700.0, room + 2000.0, 0.0, 0.0]
    got = deep_skipped_h(s, g, weight, kappa=kappa, eps=eps, log_tail=log_tail)
    # the former function is the cap steps on every block, which the new one keeps for the rest
    former = _split_clone._capped_h(s, g, weight, kappa, (eps, log_tail))
    assert np.array_equal(got, former, equal_nan=True)
    assert np.count_nonzero(got[-8:-2] == 1e-306) >= 2  # the skipped ones


@pytest.mark.parametrize(("eps0", "frac"), [(1.0, 0.5), (4.0, 0.3), (8.0, 0.8), (16.0, 0.5)])
def test_block_h_with_the_shared_exponent_keeps_the_former_floats(eps0: float, frac: float) -> None:
    """``_block_h`` (the far rule's Chernoff exponent taken from ``_deep_log_h_parts``, issue
    32) gives ``clone_block_h``'s floats on far and near blocks alike."""
    kappa, eps = math.tanh(eps0 / 2.0), frac * eps0
    s_deep, g_deep = _cases(kappa, eps)
    s_grid = np.repeat(np.unique(np.geomspace(1.0, 1e6, 60).round()), 40)
    g_grid = s_grid * np.tile(np.geomspace(1.0, 1e4, 40), s_grid.size // 40)
    s, g = np.concatenate([s_deep, s_grid]), np.concatenate([g_deep, g_grid])
    _, exponent = _split_clone._deep_log_h_parts(s, g, kappa=kappa, eps=eps)
    former = clone_block_h(s, g, kappa=kappa, eps=eps)
    got = _split_clone._block_h(s, g, exponent, kappa=kappa, eps=eps)
    assert np.array_equal(got, former, equal_nan=True)
    far = _far_half.far_exponent(exponent)
    assert far.any()
    assert (~far).any()
    # the exponent is used: one that calls every block far moves the near ones (upwards)
    off = _split_clone._block_h(s, g, exponent - 1e3, kappa=kappa, eps=eps)
    assert not np.array_equal(off, former, equal_nan=True)
    assert np.all(off[s >= 1.0] >= former[s >= 1.0])


def test_block_h_steps_aside_with_the_far_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``_krr_fast.BETAINC_TRUSTED`` at 0 (plain incomplete betas) ``clone_block_h``'s far
    rule does not apply, and ``_block_h`` follows it."""
    kappa, eps = math.tanh(2.0), 1.2
    s, g = _cases(kappa, eps)
    _, exponent = _split_clone._deep_log_h_parts(s, g, kappa=kappa, eps=eps)
    monkeypatch.setattr(_krr_fast, "BETAINC_TRUSTED", 0.0)
    former = clone_block_h(s, g, kappa=kappa, eps=eps)
    assert np.array_equal(_split_clone._block_h(s, g, exponent, kappa=kappa, eps=eps), former)
