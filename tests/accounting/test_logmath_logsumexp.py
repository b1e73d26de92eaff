"""``logmath.logsumexp`` is SciPy's ``logsumexp`` bit for bit (issue 32, start-up).

The accountants call crowdhide's copy because SciPy's spends ~0.5 ms per call on dispatch;
every certificate must stay what it was, so the copy is compared bit for bit with the
installed SciPy, including the edge cases (ties at the maximum, ``-inf``, ``inf``, NaN,
empty input, axes). A SciPy release that changes its arithmetic makes this test fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

from crowdhide.accounting.logmath import logsumexp


def _same(a: object, b: object) -> bool:
    x, y = np.asarray(a), np.asarray(b)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _cases() -> list[np.ndarray]:
    rng = np.random.default_rng(32)
    cases: list[np.ndarray] = []
    for size in (1, 2, 3, 7, 100, 1000, 4097):
        cases.append(rng.normal(scale=50.0, size=size))
        cases.append(rng.uniform(-800.0, -700.0, size=size))  # deep underflow
        ties = rng.normal(size=size)
        ties[: max(1, size // 3)] = ties.max()  # several maxima: m > 1
        cases.append(ties)
    edge = [
        [-np.inf, -np.inf],
        [-np.inf, 0.0],
        [np.inf, 1.0],
        [np.nan, 1.0],
        [-745.2, -745.3, -1e308],
        [709.0, 709.5],
        [0.0],
        [-0.0, 0.0],
    ]
    cases += [np.array(e, dtype=np.float64) for e in edge]
    return cases


def test_one_dimensional_sums_are_scipys_bit_for_bit() -> None:
    for case in _cases():
        with np.errstate(all="ignore"):
            expected = scipy_logsumexp(case)
        assert _same(logsumexp(case), expected), case[:5]


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
def test_axes_and_empty_input_are_scipys(axis: int | tuple[int, ...] | None) -> None:
    rng = np.random.default_rng(7)
    grid = rng.normal(scale=30.0, size=(13, 29))
    grid[3] = -np.inf
    grid[5, :4] = grid[5].max()
    for case in (grid, np.empty((0, 4)), np.empty((3, 0))):
        try:
            with np.errstate(all="ignore"):
                expected = scipy_logsumexp(case, axis=axis)
        except IndexError:  # SciPy 1.17 on empty input over several axes
            with pytest.raises(IndexError):
                logsumexp(case, axis=axis)
            continue
        assert _same(logsumexp(case, axis=axis), expected), (case.shape, axis)


def test_scalars_and_other_dtypes_follow_scipy() -> None:
    for value in (np.float64(-3.5), 2.0, [1, 2, 3], np.array([1.0, 2.0], dtype=np.float32)):
        assert _same(logsumexp(value), scipy_logsumexp(value)), value


def test_a_changed_sum_is_detected() -> None:
    # The comparison can fail: a naive log(sum(exp)) differs in the last bits somewhere.
    rng = np.random.default_rng(1)
    differs = 0
    for _ in range(200):
        x = rng.normal(scale=5.0, size=50)
        naive = np.log(np.sum(np.exp(x - x.max()))) + x.max()
        differs += not _same(np.float64(naive), logsumexp(x))
    assert differs > 0
