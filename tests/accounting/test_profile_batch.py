"""The variation-ratio certificate at many ε at once (accounting/shuffle/_profile_batch.py).

Each vectorized piece is checked float for float against the one-point function it stands
for (so every cell bound is the certificate's own), the whole against exact shuffled
binary RR (an ε0-LDP randomizer) by enumeration, and at n = 1 — where the certificate is
one binary RR report's profile, tight — a value lowered by 1 % is caught.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _profile_batch as pb
from crowdhide.accounting.shuffle import _profile_grid as pg
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle import variation_ratio as vr

EPS = np.array([0.0, 0.03, 0.1, 0.25, 0.5, 0.9, 1.7, 3.2, 3.99])
TAIL = -40.0
CELLS = [
    ((math.log(0.9995), 0.0), 2),  # the top cell: the mixture bound and one report's variation
    ((math.log(0.999), math.log(0.9995)), 2),
    ((math.log(0.9), math.log(0.92952)), 1),
    ((math.log(0.3), math.log(0.5)), 0),
]


@pytest.mark.parametrize(("n", "eps0"), [(10_000, 4.0), (1000, 1.0), (10**6, 0.5), (3, 2.0)])
def test_every_piece_equals_its_one_point_function(n: int, eps0: float) -> None:
    # each piece alone (the premise of the point memo: a value depends on its ε only), then
    # through the memo with half of the points held from an earlier call
    pb._POINT_MEMO.cache_clear()
    eps = EPS[eps0 > EPS]
    for cell, tier in CELLS:
        one = [vr._cell_log_delta(n, eps0, *cell, float(e), TAIL, tier=tier) for e in eps]
        assert pb._cell_log_deltas_each(n, eps0, cell, tier, eps, TAIL).tolist() == one
        pb._cell_log_deltas(n, eps0, cell, tier, eps[::2], TAIL)
        assert pb._cell_log_deltas(n, eps0, cell, tier, eps, TAIL).tolist() == one
    top = [vr._top_log_delta(n, eps0, -0.002, float(e), TAIL) for e in eps]
    assert pb._top_log_deltas_each(n, eps0, -0.002, eps, TAIL).tolist() == top
    pb._top_log_deltas(n, eps0, -0.002, eps[1::2], TAIL)
    assert pb._top_log_deltas(n, eps0, -0.002, eps, TAIL).tolist() == top
    bottom = [vr._bottom_log_delta(n, eps0, 0.05, float(e), TAIL) for e in eps]
    assert pb._bottom_log_deltas_each(n, eps0, 0.05, eps, TAIL).tolist() == bottom
    pb._bottom_log_deltas(n, eps0, 0.05, eps[::3], TAIL)
    assert pb._bottom_log_deltas(n, eps0, 0.05, eps, TAIL).tolist() == bottom


def test_the_point_memo_keys_the_resolution() -> None:
    # one cell at two resolutions through the memo: each its own one-point values, and they
    # differ (a memo keyed without the tier would hand the first to the second)
    pb._POINT_MEMO.cache_clear()
    n, eps0, cell = 10_000, 4.0, (math.log(0.9), math.log(0.92952))
    eps = EPS[eps0 > EPS]
    values = []
    for tier in (0, 2):
        one = [vr._cell_log_delta(n, eps0, *cell, float(e), TAIL, tier=tier) for e in eps]
        assert pb._cell_log_deltas(n, eps0, cell, tier, eps, TAIL).tolist() == one
        values.append(one)
    assert values[0] != values[1]


def test_a_profile_after_another_is_its_cold_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # the coarse profile after the fine one (the memo holds most of its cell values, fewer
    # are evaluated) is the coarse profile computed from empty caches, float for float
    eps0, n = 4.0, 1000
    coarse, every, _ = pg._placement(eps0, n)
    at = {
        name: np.array(points) * pp.PROFILE_STEP for name, points in (("c", coarse), ("f", every))
    }
    pb._POINT_MEMO.cache_clear()
    cold = pb.variation_ratio_log_deltas(n, eps0, at["c"], TAIL)
    pb._POINT_MEMO.cache_clear()
    pb.variation_ratio_log_deltas(n, eps0, at["f"], TAIL)
    asked: list[int] = []
    each = pb._cell_log_deltas_each

    def counted(*args: object) -> np.ndarray:
        asked.append(len(args[4]))  # type: ignore[arg-type]
        return each(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pb, "_cell_log_deltas_each", counted)
    assert pb.variation_ratio_log_deltas(n, eps0, at["c"], TAIL).tolist() == cold.tolist()
    assert sum(asked) <= len(coarse)  # cold: 285 (cell, ε) values; here 0


def _exact_binary_rr_delta(n: int, eps0: float, eps: np.ndarray) -> np.ndarray:
    """The exact largest δ(ε) of n shuffled binary RR reports over substitute neighbours:
    the target's value 0 against 1, every count j of ones among the others (the output is
    the count of ones), both directions."""
    keep = math.exp(eps0) / (1.0 + math.exp(eps0))
    best = np.zeros(eps.size)
    for j in range(n):
        others = np.array([1.0])
        for v in [1] * j + [0] * (n - 1 - j):
            one = keep if v == 1 else 1.0 - keep
            others = np.convolve(others, [1.0 - one, one])
        p = np.convolve(others, [keep, 1.0 - keep])  # target 0: a 1 with probability 1 − keep
        q = np.convolve(others, [1.0 - keep, keep])
        for a, b in ((p, q), (q, p)):
            hockey = np.maximum(a[None, :] - np.exp(eps)[:, None] * b[None, :], 0.0).sum(axis=1)
            best = np.maximum(best, hockey)
    return best


@pytest.mark.parametrize("n", [1, 2, 5, 16, 60])
@pytest.mark.parametrize("eps0", [0.5, 1.0, 4.0])
def test_the_batch_is_above_exact_shuffled_binary_rr(n: int, eps0: float) -> None:
    eps = EPS[eps0 > EPS]
    batch = np.exp(pb.variation_ratio_log_deltas(n, eps0, eps, TAIL))
    exact = _exact_binary_rr_delta(n, eps0, eps)
    assert np.all(batch >= exact - 1e-13), (batch - exact).min()


@pytest.mark.parametrize("eps0", [0.5, 1.0, 4.0])
def test_at_one_report_a_value_lowered_by_one_percent_is_caught(eps0: float) -> None:
    eps = EPS[eps0 > EPS]
    batch = np.exp(pb.variation_ratio_log_deltas(1, eps0, eps, TAIL))
    exact = _exact_binary_rr_delta(1, eps0, eps)
    assert np.all(batch >= exact * (1.0 - 1e-12))
    assert np.all(0.99 * batch < exact)  # tight: the certificate is this report's profile


def test_no_delta_from_eps0_on_and_one_report_beyond_the_clone_range() -> None:
    eps = np.array([0.5, 2.0, 2.5])
    assert pb.variation_ratio_log_deltas(100, 2.0, eps, TAIL)[1:].tolist() == [-math.inf] * 2
    far = pb.variation_ratio_log_deltas(100, 45.0, np.array([1.0]), TAIL)
    assert far[0] == vr.one_report_log_delta(1.0, 45.0)


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 10_000), (4.0, 1000)])
def test_the_profile_values_are_the_certificate_up_to_the_refinement(eps0: float, n: int) -> None:
    # the same certificate refined per (ε0, n): near the one-point value where δ matters
    # (measured over the benchmark grid: -2.2 to +0.17 in log δ, mostly below), up to 1.2
    # above it at deep-tail points (ε0 = 4, n = 1e3, δ ~ 1e-10), where the refinement's
    # budget (REFINE_EVALUATIONS) runs out first
    chosen = pg._placement(eps0, n)[0]
    eps = np.array(chosen) * pp.PROFILE_STEP
    batch = pb.variation_ratio_log_deltas(n, eps0, eps, TAIL)
    one = np.array([vr.variation_ratio_log_delta(n, eps0, float(e), TAIL) for e in eps])
    finite = np.isfinite(one)
    assert np.array_equal(finite, np.isfinite(batch))
    shallow = finite & (one > -20.0)
    assert np.all(batch[shallow] <= one[shallow] + 0.2)
    assert np.all(batch[finite] <= one[finite] + 1.5)


def _second_placement(eps0: float, n: int) -> np.ndarray:
    return np.array(pg._placement(eps0, n)[1]) * pp.PROFILE_STEP


@functools.cache
def _active(eps0: float, n: int) -> np.ndarray:
    """The unpatched batch at the second placement (cached: the two tests below compare
    patched batches with it at ε0 = 1, n = 1e4; computed before either patches anything).
    Read-only, so no test can change what the other compares with."""
    values = pb.variation_ratio_log_deltas(n, eps0, _second_placement(eps0, n), TAIL)
    values.flags.writeable = False
    return values


def _every_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch as it was before active points: every cell evaluated at every ε (no bound
    is kept under the reference)."""
    levels = pb._levels

    def everywhere(n: int, eps0: float, eps: np.ndarray, log_tail: float) -> pb._Levels:
        above, kept = levels(n, eps0, eps, log_tail)
        return pb._Levels(above, np.full_like(kept, -np.inf))

    monkeypatch.setattr(pb, "_levels", everywhere)


@pytest.mark.parametrize(("eps0", "n"), [(0.5, 1000), (1.0, 10_000), (4.0, 10**6), (8.0, 10_000)])
def test_active_points_give_the_values_of_every_point(
    monkeypatch: pytest.MonkeyPatch, eps0: float, n: int
) -> None:
    # cells bounded where it counts only (module docstring, *Active points*): the same
    # profile, float for float, as evaluating every cell at every ε, where the refinement
    # refines (δ above e^{log_tail + REFINE_FLOOR}); below, a coarser resolution's bound
    # (as valid) may be kept where the finer one was larger (ε0 = 1, n = 1e4: one point,
    # δ 9.93e-17 -> 9.86e-17)
    eps = _second_placement(eps0, n)
    active = _active(eps0, n)
    with monkeypatch.context() as m:
        _every_point(m)
        every = pb.variation_ratio_log_deltas(n, eps0, eps, TAIL)
    refined = every >= TAIL + vr.REFINE_FLOOR
    assert active[refined].tolist() == every[refined].tolist()
    assert np.all(np.abs(active[~refined] - every[~refined]) <= 0.02)


def test_keeping_bounds_above_the_reference_changes_the_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the equality above is not vacuous: kept a little above the reference (1 % in δ), the
    # coarse bounds of cells that decide the supremum stay and the profile changes
    eps0, n = 1.0, 10_000
    eps = _second_placement(eps0, n)
    active = _active(eps0, n)
    levels = pb._levels

    def raised(n: int, eps0: float, eps: np.ndarray, log_tail: float) -> pb._Levels:
        above, kept = levels(n, eps0, eps, log_tail)
        return pb._Levels(above, kept + math.log(1.01))

    monkeypatch.setattr(pb, "_levels", raised)
    assert pb.variation_ratio_log_deltas(n, eps0, eps, TAIL).tolist() != active.tolist()


def test_certified_values_after_the_fine_profile_are_the_cold_ones() -> None:
    # the whole point set's values (the other members per point, _member_at; the
    # variation-ratio member through the point memo) cold and after the fine profile
    eps0, n = 0.5, 1000
    coarse, every, _ = pg._placement(eps0, n)

    def cold(points: tuple[int, ...]) -> tuple[float, ...]:
        pg._certified_values.cache_clear()
        pg._member_at.cache_clear()
        pg._fmt21_atoms.cache_clear()
        pb._POINT_MEMO.cache_clear()
        return pg._certified_values(eps0, n, points)

    first = cold(coarse)
    cold(every)
    pg._certified_values.cache_clear()  # not the set's own cache: the per-point ones
    assert pg._certified_values(eps0, n, coarse) == first
    assert pg._member_at.cache_info().hits >= len(coarse)
