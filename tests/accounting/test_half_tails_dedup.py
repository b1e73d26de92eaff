"""``binomial_tails.half_tails`` evaluates each distinct ``(a*, s)`` once (issue 32 speed): the
same floats, bit for bit, as the three tails taken element by element — including the
clipped ranges where a tail is exactly 0 or 1 and the arrays too small or not integral to
take the shortcut."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.accounting import binomial_tails


def _direct(a: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
    half_sf = binomial_tails.half_sf
    return half_sf(a - 1.0, s - 1.0), half_sf(a, s), half_sf(a - 1.0, s)


@pytest.mark.parametrize("size", [7, 600, 20_000])
def test_deduplicated_tails_equal_the_direct_ones(size: int) -> None:
    rng = np.random.default_rng(size)
    s = rng.integers(0, 400, size=size).astype(np.float64)
    s[: size // 10] = rng.integers(10**8, 10**9, size=size // 10)  # large counts too
    a = np.floor(s / 2.0 + rng.normal(0.0, 30.0, size=size)) + 1.0
    a[::17] = -3.0  # every tail 1
    a[::23] = s[::23] + 5.0  # every tail 0
    a[::29] = s[::29] + 1.0  # at the edge
    got = binomial_tails.half_tails(a, s)
    for mine, ref in zip(got, _direct(a, s), strict=True):
        assert np.array_equal(mine, ref)


def test_non_integral_arrays_take_the_direct_path() -> None:
    s = np.full(1000, 40.5)
    a = np.linspace(0.0, 45.0, 1000)
    for mine, ref in zip(binomial_tails.half_tails(a, s), _direct(a, s), strict=True):
        assert np.array_equal(mine, ref)
