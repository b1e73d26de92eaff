"""The split layout takes the blocks that are certainly light from a Chernoff bound instead of
their incomplete betas (``_split_clone._chernoff_light``, issue 32). The bound it keeps for a
block must be at least the block's exact mass ``μ P(I ∈ [a−1, b−1]) + (1 − μ) P(I ∈ [a, b])``,
``I ~ Bin(C, μ')``: checked against 30-digit mpmath sums on every live block of a grid of
layouts (deep tails included, where the bound's slack is a small fraction of its exponent),
and the check is shown to catch the bound's exponent raised by 1 %."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import mpmath
import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.logmath import rate_up
from crowdhide.accounting.shuffle import _split_clone as sc
from crowdhide.accounting.shuffle.variation_ratio import SPLIT_TIERS, clone_rates

FloatArray = npt.NDArray[np.float64]
Record = tuple[FloatArray, float, FloatArray, FloatArray, FloatArray, FloatArray]
Bound = Callable[[FloatArray, float, FloatArray, FloatArray], FloatArray]

mpmath.mp.dps = 30


@functools.cache
def _layout_blocks(n: int, eps0: float, cell: tuple[float, float], log_tail: float) -> Record:
    """Run the finest layout of a cell and return what ``_chernoff_light`` saw and said:
    ``(counts per row, μ', s_start, s_end, light, log_bound)`` (cached, read-only arrays:
    a deterministic build that the two slow tests and the spot check read alike)."""
    seen: list[Record] = []
    inner = sc._chernoff_light

    def recording(
        counts: FloatArray,
        p: float | FloatArray,
        s_start: FloatArray,
        s_end: FloatArray,
        log_w: FloatArray,
        tail: float,
    ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
        light, bound = inner(counts, p, s_start, s_end, log_w, tail)
        rate = np.unique(np.asarray(p))  # one layout: its rate (stacked layouts: per row)
        assert rate.size == 1
        record = (np.array(counts[:, 0]), float(rate[0]), s_start, s_end)
        seen.append((*record, light.astype(np.float64), bound))
        return light, bound

    mu = rate_up(cell[1], ulps=sc.PARAMETER_ULPS)
    c_inf, c_zero = clone_rates(cell[0], eps0)[0], clone_rates(cell[1], eps0)[1]
    c_points, s_points, eta = SPLIT_TIERS[-1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sc, "_chernoff_light", recording)
        sc._layout.cache_clear()
        sc._layout(n, mu, c_inf, c_zero, log_tail, c_points, s_points, eta)
    sc._layout.cache_clear()
    for value in seen[0]:
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return seen[0]


@functools.cache
def _exact_log_mass(count: int, p: float, mu: float, a: int, b: int) -> float:
    """log of ``μ P(I ∈ [a−1, b−1]) + (1 − μ) P(I ∈ [a, b])``, I ~ Bin(count, p), in mpmath
    (cached: the 1 %-lowered bound's check picks the same blocks as the true one's)."""
    pp, q = mpmath.mpf(p), 1 - mpmath.mpf(p)

    def window(lo: int, hi: int) -> mpmath.mpf:
        lo, hi = max(lo, 0), min(hi, count)
        return mpmath.fsum(
            mpmath.binomial(count, j) * pp**j * q ** (count - j) for j in range(lo, hi + 1)
        )

    mass = mpmath.mpf(mu) * window(a - 1, b - 1) + (1 - mpmath.mpf(mu)) * window(a, b)
    return -math.inf if mass == 0 else float(mpmath.log(mass))


CASES = [
    (n, eps0, cell, tail)
    for n in (40, 300, 1500)
    for eps0 in (0.5, 2.0, 6.0)
    for cell in ((0.5, 0.7), (0.985, 0.99166), (0.999, 0.9995))
    for tail in (-60.0, -650.0)
]


def _violations(bound: Bound, sample: int = 60) -> int:
    """Blocks (live, up to ``sample`` per layout: the lightest first) whose ``bound`` is below
    the exact log mass, over :data:`CASES`; also checks that some blocks were light."""
    bad = light_seen = 0
    for n, eps0, cell, tail in CASES:
        counts, p, s_start, s_end, light, _ = _layout_blocks(n, eps0, cell, tail)
        light_seen += int(light.sum())
        cc = np.broadcast_to(counts[:, None], s_start.shape)
        log_bound = bound(cc, p, s_start, s_end)
        rows, cols = np.nonzero((s_start <= s_end) & (log_bound < 0.0))
        order = np.argsort(log_bound[rows, cols])[:sample]
        mu = rate_up(cell[1], ulps=sc.PARAMETER_ULPS)
        for r, c in zip(rows[order], cols[order], strict=True):
            exact = _exact_log_mass(int(counts[r]), p, mu, int(s_start[r, c]), int(s_end[r, c]))
            bad += int(log_bound[r, c] < exact)
    assert light_seen > 0
    return bad


def _kept(cc: FloatArray, p: float, s_start: FloatArray, s_end: FloatArray) -> FloatArray:
    log_w = np.zeros(cc.shape[0])
    return sc._chernoff_light(cc, p, s_start, s_end, log_w, 0.0)[1]


@pytest.mark.slow
def test_chernoff_bound_is_above_the_exact_block_mass() -> None:
    assert _violations(_kept) == 0


@pytest.mark.slow
def test_the_check_catches_a_bound_one_percent_too_low() -> None:
    def lowered(cc: FloatArray, p: float, s_start: FloatArray, s_end: FloatArray) -> FloatArray:
        return 1.01 * _kept(cc, p, s_start, s_end)

    assert _violations(lowered) > 0


def test_chernoff_bound_spot_check() -> None:
    """A few deep blocks of one layout (fast): the bound is above the exact mass, and the
    blocks kept by their bound are the light ones."""
    counts, p, s_start, s_end, light, log_bound = _layout_blocks(300, 2.0, (0.985, 0.99166), -60.0)
    assert light.any()
    rows, cols = np.nonzero(light > 0)
    mu = rate_up(0.99166, ulps=sc.PARAMETER_ULPS)
    for r, c in list(zip(rows, cols, strict=True))[:: max(1, rows.size // 8)]:
        exact = _exact_log_mass(int(counts[r]), p, mu, int(s_start[r, c]), int(s_end[r, c]))
        assert log_bound[r, c] >= exact
