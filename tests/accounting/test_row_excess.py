"""``row_log_excess_above`` against the plain sum it stands for.

It gives, per row r and threshold θ, ``log`` of the in-window part of ``E[(X_r − θ)_+]``
through suffix sums gathered at each threshold's column (issue 32 rewrote the gather); here
every cell is compared with ``Σ_{x in window, x > θ} (x − θ) pmf(x)`` summed directly: within
1e-12 relative where the value is not tiny (the log-pmfs' own rounding is bounded elsewhere).
"""

from __future__ import annotations

import numpy as np

from crowdhide.accounting.binomial_tails import gammaln_table, row_log_excess_above, row_windows


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
