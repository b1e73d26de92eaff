"""``row_log_excess_above(..., falling=True)`` (s35-lower, issue 32): where each row of
thresholds is non-increasing, the first needed column taken from the last column gives the
same floats as the pass over the whole matrix, and the k-RR third-value dataset (the only
caller, whose θ falls with the count c) is unchanged bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crowdhide.accounting import binomial_rows
from crowdhide.accounting.binomial_rows import gammaln_table, row_log_excess_above, row_windows
from crowdhide.accounting.shuffle import _pairs

RNG = np.random.default_rng(35)


def _falling_thresholds(s: np.ndarray, columns: int) -> np.ndarray:
    """Per row, thresholds from above the row's top down to below its bottom, non-increasing
    (with ties), so rows need different first columns."""
    steps = RNG.uniform(0.0, 1.0, (s.size, columns))
    steps[:, ::7] = 0.0  # ties
    start = s[:, None] * RNG.uniform(0.6, 1.1, (s.size, 1))
    return np.asarray(start - np.cumsum(steps, axis=1) * s[:, None] / columns)


@pytest.mark.parametrize("log_tail", [-30.0, -700.0])
def test_falling_rows_give_the_same_floats(log_tail: float) -> None:
    s = np.arange(200.0, 260.0)
    rows = row_windows(s, 0.5, log_tail, gammaln_table(400))
    theta = _falling_thresholds(s, 90)
    want = row_log_excess_above(rows, theta, s)
    got = row_log_excess_above(rows, theta, s, falling=True)
    assert np.array_equal(got, want)
    # kept suffix sums: a second threshold matrix through the same memo, both ways
    sums = binomial_rows.RowSuffixSums(rows)
    for shift in (0.0, 3.5):
        moved = theta - shift
        got = row_log_excess_above(rows, moved, s, sums=sums, falling=True)
        assert np.array_equal(got, row_log_excess_above(rows, moved, s))


def test_third_value_dataset_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    _pairs._cached_third_value_layout.cache_clear()
    cases = [(300, 4, 1.0, 0.6), (300, 10, 2.0, 1.2), (500, 16, 2.0, 0.9)]
    got = [_pairs.krr_third_log_delta(n, k, e0, eps, -400.0) for n, k, e0, eps in cases]

    def whole_pass(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("falling", None)
        return row_log_excess_above(*args, **kwargs)

    monkeypatch.setattr(_pairs, "row_log_excess_above", whole_pass)
    _pairs._cached_third_value_layout.cache_clear()  # fresh suffix sums for the reference
    want = [_pairs.krr_third_log_delta(n, k, e0, eps, -400.0) for n, k, e0, eps in cases]
    _pairs._cached_third_value_layout.cache_clear()
    assert got == want
