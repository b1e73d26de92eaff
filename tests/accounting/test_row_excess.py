"""``row_log_excess_above`` against the plain sum it stands for.

It gives, per row r and threshold θ, ``log`` of the in-window part of ``E[(X_r − θ)_+]``
through suffix sums gathered at each threshold's column (issue 32 rewrote the gather); here
every cell is compared with ``Σ_{x in window, x > θ} (x − θ) pmf(x)`` summed directly: within
1e-12 relative where the value is not tiny (the log-pmfs' own rounding is bounded elsewhere).
"""

from __future__ import annotations

import numpy as np

from crowdhide.accounting.binomial_rows import (
    RowSuffixSums,
    RowWindows,
    gammaln_table,
    row_log_excess_above,
    row_windows,
    rowwise_logsumexp,
)


def _direct(values: np.ndarray, log_pmf: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per row and threshold, the in-window ``Σ (x − θ)_+ pmf(x)``, term by term."""
    pmf = np.exp(log_pmf)  # -inf outside 0..n: 0
    gain = np.maximum(values[:, None, :] - theta[:, :, None], 0.0)
    return np.asarray((gain * pmf[:, None, :]).sum(axis=2))


def test_row_excess_is_the_direct_sum() -> None:
    rng = np.random.default_rng(32)
    table = gammaln_table(3000)
    cells = 0
    for _ in range(60):
        n = np.sort(rng.integers(1, 2500, size=int(rng.integers(1, 12)))).astype(np.float64)
        p = float(rng.uniform(0.05, 0.95))
        rows = row_windows(n, p, -float(rng.uniform(5.0, 60.0)), table)
        # thresholds below, inside and above each window, on and off the integers
        theta = n[:, None] * rng.uniform(-0.1, 1.1, size=(n.size, 25))
        theta[:, :5] = np.floor(theta[:, :5])
        got = np.exp(row_log_excess_above(rows, theta, n))
        want = _direct(rows.values, rows.log_pmf, theta)
        big = want > 1e-200
        # the same sum in another order: equal up to rounding (1e-12 relative)
        assert np.all(np.abs(got[big] - want[big]) <= 1e-12 * want[big])
        assert np.all(got[~big] <= 1e-150)
        cells += int(big.sum())
    assert cells > 1000  # the comparison covered real values, not only empty cells


def test_a_changed_excess_is_detected() -> None:
    # The relative tolerance is tight enough to see a 1e-10 change of one cell.
    table = gammaln_table(200)
    n = np.array([100.0])
    rows = row_windows(n, 0.5, -30.0, table)
    theta = np.array([[40.5, 50.0, 55.25]])
    want = _direct(rows.values, rows.log_pmf, theta)
    got = np.exp(row_log_excess_above(rows, theta, n))
    assert np.all(np.abs(got - want) <= 1e-12 * want)
    changed = got * np.array([1.0, 1.0 + 1e-10, 1.0])
    assert not np.all(np.abs(changed - want) <= 1e-12 * want)


def test_kept_suffix_sums_give_the_same_floats() -> None:
    # RowSuffixSums keeps rows between calls; every call must give the floats of a fresh
    # evaluation, whichever way the thresholds (and so each row's first column) moved.
    rng = np.random.default_rng(33)
    table = gammaln_table(3000)
    for _ in range(20):
        n = np.sort(rng.integers(1, 2500, size=int(rng.integers(1, 9)))).astype(np.float64)
        rows = row_windows(n, float(rng.uniform(0.05, 0.95)), -float(rng.uniform(5.0, 60.0)), table)
        kept = RowSuffixSums(rows)
        centre = rng.uniform(0.2, 0.9)
        for _ in range(8):  # nearby thresholds (a root search), then far jumps both ways
            centre = centre + rng.choice([1e-4, -1e-4, 0.2, -0.2]) * rng.uniform()
            theta = n[:, None] * (centre + rng.uniform(-0.05, 0.05, size=(n.size, 7)))
            fresh = row_log_excess_above(rows, theta, n)
            again = row_log_excess_above(rows, theta, n, sums=kept)
            assert np.array_equal(fresh, again)


def test_kept_suffix_sums_recompute_only_moved_rows() -> None:
    table = gammaln_table(1200)
    n = np.array([400.0, 800.0, 1000.0])
    rows = row_windows(n, 0.5, -40.0, table)
    kept = RowSuffixSums(rows)
    theta = n[:, None] * np.array([[0.55, 0.6]])
    row_log_excess_above(rows, theta, n, sums=kept)
    state = kept._state
    row_log_excess_above(rows, theta + 1e-9, n, sums=kept)  # no first column moved
    assert kept._state is state
    moved = theta.copy()
    moved[1] += 5.0  # the middle row's first column moves
    fresh = row_log_excess_above(rows, moved, n)
    assert np.array_equal(row_log_excess_above(rows, moved, n, sums=kept), fresh)
    assert state is not None
    assert kept._state is not state
    assert kept._state is not None
    assert np.array_equal(kept._state[1][0], state[1][0])  # untouched row kept as it was
    assert not np.array_equal(kept._state[1][1], state[1][1])


def _former_excess(rows: RowWindows, theta: np.ndarray) -> np.ndarray:
    """``row_log_excess_above`` as written before session 25 (out of place), restated: the
    in-place version must give the same floats."""
    width = rows.log_pmf.shape[1]
    idx = np.clip(np.floor(theta) + 1.0 - rows.lo[:, None], 0, width).astype(np.int64)
    first = np.minimum(idx.min(axis=1), width - 1)
    shift, sf_rev, ss_rev = RowSuffixSums(rows).sums(first)
    floor = width * 1e-300
    inside = idx < width
    safe = np.minimum(idx, width - 1)
    start = rows.lo[:, None] + safe
    at = np.arange(rows.log_pmf.shape[0])[:, None] * width + (width - 1 - safe)
    sf_at = sf_rev.ravel()[at] + floor
    ss_next = np.where(safe < width - 1, ss_rev.ravel()[np.maximum(at - 1, 0)], 0.0)
    body = (np.maximum(start - theta, 0.0) * sf_at + (ss_next + width * floor)) * inside
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(body) + shift[:, None])


def _former_logsumexp(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(np.exp(x - m[:, None]).sum(axis=1)) + m)


def test_in_place_excess_and_logsumexp_are_bit_identical_to_the_former_code() -> None:
    # deep windows (log tail -700, as at δ = 1e-300) and shallow ones; thresholds on and off
    # the integers, outside the window on both sides and infinite
    rng = np.random.default_rng(2532)
    table = gammaln_table(3000)
    for trial in range(40):
        n = np.sort(rng.integers(1, 2500, size=int(rng.integers(1, 30)))).astype(np.float64)
        p = float(rng.uniform(0.05, 0.95))
        rows = row_windows(n, p, -700.0 if trial % 2 else -30.0, table)
        theta = n[:, None] * rng.uniform(-0.2, 1.2, size=(n.size, 40))
        theta[:, :8] = np.floor(theta[:, :8])
        theta[:, 8] = np.inf
        theta[:, 9] = -np.inf
        got = row_log_excess_above(rows, theta, n)
        want = _former_excess(rows, theta)
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
        x = got + rng.normal(size=got.shape)
        x[0] = -np.inf  # a row of -inf gives -inf
        assert np.array_equal(
            rowwise_logsumexp(x).view(np.int64), _former_logsumexp(x).view(np.int64)
        )
