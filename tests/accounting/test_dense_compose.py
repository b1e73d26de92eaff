"""``own_pmf._dense_compose`` (s35-pmf: moved from ``composition``) is dp_accounting's
``DensePLDPmf.compose`` with a vectorized tail search (profile pair speed, issue 32): the
same PMF, float for float — truncated masses, offset and mass at +inf — including sums that
dip below the threshold again (FFT noise is signed) and PMFs so light that the two tails
meet."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf

from crowdhide.accounting import pld_pmf as own_pmf
from crowdhide.accounting.pld_pmf import DensePmf


def _dense(
    probs: np.ndarray, lower: int, infinity: float, pessimistic: bool
) -> pld_pmf.DensePLDPmf:
    return pld_pmf.DensePLDPmf(1e-4, lower, probs, infinity, pessimistic)


def _own(pmf: pld_pmf.DensePLDPmf) -> DensePmf:
    probs = pmf._probs.copy()
    return DensePmf(1e-4, pmf._lower_loss, probs, pmf._infinity_mass, pmf._pessimistic_estimate)


def _same(mine: DensePmf, theirs: pld_pmf.DensePLDPmf) -> None:
    assert mine.lower == theirs._lower_loss
    assert mine.infinity_mass == theirs._infinity_mass
    assert np.array_equal(mine.probs, theirs._probs)


@pytest.mark.parametrize("pessimistic", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_dense_compose_equals_dp_accounting(seed: int, pessimistic: bool) -> None:
    rng = np.random.default_rng(seed)
    size_a, size_b = rng.integers(1, 3000, size=2)
    a = np.exp(-0.5 * ((np.arange(size_a) - size_a / 2) / (size_a / 12 + 1)) ** 2)
    b = np.exp(-0.5 * ((np.arange(size_b) - size_b / 3) / (size_b / 15 + 1)) ** 2)
    a, b = a / a.sum() * (1 - 1e-9), b / b.sum()
    if seed % 2:  # signed noise in the tails, as composed PMFs carry
        a[:50] += rng.normal(0.0, 4e-16, size=min(50, a.size))
    if seed == 5:  # so light that the two tails meet (total mass about 1e-15)
        a, b = a * 1e-12, b * 1e-3
    for x, y in ((a, b), (b, a)):
        first = _dense(x.copy(), -7, 1e-12, pessimistic)
        second = _dense(y.copy(), 3, 2e-13, pessimistic)
        theirs = first.compose(second, own_pmf.TAIL_MASS_TRUNCATION)
        _same(own_pmf._dense_compose(_own(first), _own(second)), theirs)


def test_prefix_search_matches_the_loop() -> None:
    """The first running sum above the threshold, or the length: a sum that rises above
    and falls back, one that never rises, an empty array."""

    def loop(arr: np.ndarray, threshold: float) -> int:
        s = 0.0
        for i, val in enumerate(arr):
            s += val
            if s > threshold:
                return i
        return len(arr)

    cases = [
        np.array([1e-16, 3e-16, 2e-16, -4e-16, 1e-17]),
        np.array([1e-17] * 10),
        np.array([5e-16, 1e-16]),  # a sum at the threshold is not above it
        np.array([]),
        np.array([1.0]),
    ]
    for probs in cases:
        assert own_pmf._prefix_to_truncate(probs, 5e-16) == loop(probs, 5e-16)
    # the running sum over chunks (s27-rounds): crossings before, at and after chunk
    # boundaries, sums that dip below 0 (FFT noise), small and default first chunks
    rng = np.random.default_rng(3)
    for _ in range(300):
        size = int(rng.integers(1, 3000))
        probs = rng.random(size) * 10.0 ** rng.uniform(-20.0, -15.0)
        probs[rng.random(size) < 0.2] *= -1.0
        threshold = float(10.0 ** rng.uniform(-19.0, -13.0))
        want, flipped = loop(probs, threshold), loop(np.flip(probs), threshold)
        for chunk in (1, 2, 7, int(rng.integers(1, 500)), own_pmf._PREFIX_CHUNK):
            assert own_pmf._prefix_to_truncate(probs, threshold, chunk) == want
            assert own_pmf._prefix_to_truncate(np.flip(probs), threshold, chunk) == flipped
