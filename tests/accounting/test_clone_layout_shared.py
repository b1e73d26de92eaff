"""The one-rate clone system's layout takes its block masses from tails at shared block
edges (:func:`binomial_tails.contiguous_block_masses`, issue 32: Laplace's cells). It must
give the very floats of :func:`block_masses` on every live block: checked over a grid of
Laplace layouts (both resolutions, shallow and deep tails), and the check is shown to catch
an edge taken one count off."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.binomial_tails import (
    binom_cdf,
    binom_sf,
    block_masses,
    contiguous_block_masses,
    edge_tails,
    window_blocks,
    window_edges,
)
from crowdhide.accounting.logmath import rate_up
from crowdhide.accounting.shuffle import _krr_fast as kf
from crowdhide.accounting.shuffle.randomizers import _laplace_cells

FloatArray = npt.NDArray[np.float64]
Masses = Callable[[FloatArray, float, FloatArray, FloatArray], FloatArray]


def _cases() -> Iterator[tuple[int, float, float, float, int, int]]:
    for eps0 in (0.5, 2.0, 8.0):
        for n in (1_000, 10**4, 10**6, 10**9):
            for log_tail in (-53.8, -730.8):
                for mu2, rho in _laplace_cells(eps0)[::4]:
                    for c_points, s_points in ((128, 48), (32, 16)):
                        yield n, rate_up(mu2), rho, log_tail, c_points, s_points


def _live_masses(masses: Masses) -> list[FloatArray]:
    """Every case's block masses on its live blocks (0 elsewhere) by ``masses``."""
    out = []
    for n, mu2, rho, log_tail, c_points, s_points in _cases():
        m, _, s_start, s_end, *_ = kf._clone_layout(n, rho, mu2, log_tail, c_points, s_points)
        mm = np.broadcast_to(m[:, None], s_start.shape)
        out.append(np.where(s_start <= s_end, masses(mm, mu2, s_start, s_end), 0.0))
    return out


def _reference(n: FloatArray, p: float, lo: FloatArray, hi: FloatArray) -> FloatArray:
    return block_masses(n, p, lo, hi, upper=True)


def _off_by_one(n: FloatArray, p: float, lo: FloatArray, hi: FloatArray) -> FloatArray:
    # every block's upper edge read one count too high: must be caught
    return block_masses(n, p, lo, hi + 1.0, upper=True)


def test_shared_edge_masses_are_the_block_masses() -> None:
    mine = _live_masses(contiguous_block_masses)
    reference = _live_masses(_reference)
    assert all(np.array_equal(a, b) for a, b in zip(mine, reference, strict=True))
    wrong = _live_masses(_off_by_one)
    assert not all(np.array_equal(a, b) for a, b in zip(mine, wrong, strict=True))


def _window_end(n: int, p: float, log_tail: float) -> float:
    return float(window_edges(n, p, log_tail)[1])


def test_window_block_masses_are_the_block_masses() -> None:
    """:func:`window_blocks` takes its masses from :func:`contiguous_block_masses` (one row):
    its log masses are those of :func:`block_masses` on the same blocks (and the check
    catches block ends one count off)."""
    mine, reference, wrong = [], [], []
    for n, _, rho, log_tail, c_points, _ in _cases():
        width = n // c_points + 1
        starts, log_w, _ = window_blocks(n - 1, rho, log_tail, lambda lo, size, w=width: w)
        ends = np.minimum(starts + float(width - 1), _window_end(n - 1, rho, log_tail))
        rows = np.full(starts.shape, float(n - 1))
        mine.append(log_w)
        with np.errstate(divide="ignore"):
            reference.append(np.log(block_masses(rows, rho, starts, ends, upper=True)))
            wrong.append(np.log(block_masses(rows, rho, starts, ends + 1.0, upper=True)))
    assert all(np.array_equal(a, b) for a, b in zip(mine, reference, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(mine, wrong, strict=True))


def test_blocks_that_are_not_contiguous_get_their_own_masses() -> None:
    """A row whose live blocks leave a gap (or overlap) cannot share edges: the function
    checks and answers :func:`block_masses`. Without the check, the gap's block would take
    its left edge from the previous block's end and get the wrong mass (shown below)."""
    n = np.full((2, 3), 200.0)
    lo = np.array([[80.0, 95.0, 120.0], [10.0, 15.0, 60.0]])  # row 0: a gap; row 1: overlap
    hi = np.array([[89.0, 119.0, 150.0], [20.0, 59.0, 90.0]])
    reference = block_masses(n, 0.4, lo, hi, upper=True)
    assert np.array_equal(contiguous_block_masses(n, 0.4, lo, hi), reference)
    contiguous_lo = np.concatenate([lo[:, :1], hi[:, :-1] + 1.0], axis=1)  # what edges assume
    assert not np.array_equal(block_masses(n, 0.4, contiguous_lo, hi, upper=True), reference)


def test_edge_tails_with_a_probability_per_row_and_a_shift() -> None:
    """:func:`edge_tails` as the split-clone layouts call it (``p`` a column, blocks shifted
    by one): contiguous rows and rows with a gap both give each live block's own two
    tails, the floats :func:`binom_sf` / :func:`binom_cdf` give that block alone."""
    n = np.full((2, 3), 300.0)
    p = np.array([[0.3], [0.55]])
    for start, end in (
        (np.array([[81.0, 91.0, 121.0], [151.0, 171.0, 181.0]]),
         np.array([[90.0, 120.0, 150.0], [170.0, 180.0, 230.0]])),  # contiguous
        (np.array([[81.0, 96.0, 121.0], [151.0, 171.0, 185.0]]),
         np.array([[90.0, 120.0, 150.0], [170.0, 180.0, 230.0]])),  # gaps
    ):  # fmt: skip
        live = np.array([[True, True, False], [True, True, True]])
        first, second, use_sf = edge_tails(n, p, start, end, live, 1.0)
        lo, hi = start - 1.0, end - 1.0
        pp = np.broadcast_to(p, lo.shape)
        own_first = np.where(use_sf, binom_sf(lo, n, pp), binom_cdf(hi, n, pp))
        own_second = np.where(use_sf, binom_sf(hi + 1.0, n, pp), binom_cdf(lo - 1.0, n, pp))
        assert np.array_equal(first[live], own_first[live])
        assert np.array_equal(second[live], own_second[live])
        assert not first[~live].any()
