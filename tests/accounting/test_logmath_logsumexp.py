"""``logmath.logsumexp`` against SciPy's ``logsumexp`` and against exact sums (issue 32).

The accountants call crowdhide's copy because SciPy's spends ~0.5 ms per call on dispatch.
The copy repeats SciPy 1.17's arithmetic, so with that SciPy the two agree bit for bit; the
comparison here allows a few ulp so that a later SciPy with different rounding does not fail
a correct copy. What the certificates rely on -- the sum is accurate -- is checked against
an exact (mpmath, 60 digits) sum with an allowance a perturbation of 1e-13 exceeds, including
the edge cases (ties at the maximum, ``-inf``, ``inf``, NaN, empty input, axes).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

from crowdhide.accounting.logmath import logsumexp

ULPS = 4  # SciPy's own log1p/exp/sum rounding may move between releases by a few ulp


def _same(a: object, b: object) -> bool:
    """Same shape and dtype, same non-finite entries, finite ones within ``ULPS`` ulp."""
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.tobytes() == y.tobytes():
        return True
    finite = np.isfinite(x) & np.isfinite(y)
    if not np.array_equal(np.isfinite(x), np.isfinite(y)):
        return False
    if not np.array_equal(x[~finite], y[~finite], equal_nan=True):
        return False
    scale = np.spacing(np.maximum(np.abs(x[finite]), np.abs(y[finite])))
    return bool(np.all(np.abs(x[finite] - y[finite]) <= ULPS * scale))


def _exact(values: np.ndarray) -> float:
    """``log Σ exp`` of finite float64 values at 60 digits, rounded to float."""
    with mpmath.workdps(60):
        return float(mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(float(v))) for v in values)))


def _accurate(got: float, exact: float, terms: int) -> bool:
    """Within ``terms + 4`` ulp of the exact value (and of 1 ulp of 1 near zero): the
    error model of a shifted sum of ``terms`` exponentials and one log1p."""
    allowance = (terms + 4) * np.spacing(max(abs(exact), 1.0))
    return abs(got - exact) <= allowance


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


def test_finite_sums_are_accurate_against_an_exact_sum() -> None:
    for case in _cases():
        if case.size == 0 or not np.all(np.isfinite(case)) or case.size > 1000:
            continue
        assert _accurate(float(logsumexp(case)), _exact(case), case.size), case[:5]


def test_the_accuracy_check_can_fail() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(scale=5.0, size=50)
    exact = _exact(x)
    assert _accurate(float(logsumexp(x)), exact, x.size)
    assert not _accurate(float(logsumexp(x)) * (1 + 1e-13) + 1e-13, exact, x.size)


def test_one_dimensional_sums_are_scipys() -> None:
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
    # The SciPy comparison can fail: a sum moved by more than ULPS ulp is told apart.
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = rng.normal(scale=5.0, size=50)
        ours = logsumexp(x)
        moved = np.float64(ours) + 2 * ULPS * np.spacing(abs(float(ours)))
        assert _same(ours, scipy_logsumexp(x))
        assert not _same(moved, scipy_logsumexp(x))
