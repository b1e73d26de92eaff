"""The excess floor computed only where it is read (s35-lower, issue 32): ``excess_floor``
with ``where`` gives the same floats as without it on the masked elements, and the
excesses rounded down (``excess_half``, ``binomial_excess``, ``alpha_pair_h``) are bit for
bit those with the floor computed everywhere, over thresholds from the centre to beyond
SciPy's underflow (where the floor is the answer)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crowdhide.accounting import _pmf_lower
from crowdhide.accounting.shuffle import _krr_fast

RNG = np.random.default_rng(20261202)


def _everywhere(*args: Any, **kwargs: Any) -> Any:
    """The floor of every element, whatever ``where`` says (the rule before s35-lower)."""
    kwargs.pop("where", None)
    return _pmf_lower.excess_floor(*args, **kwargs)


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """Units s and thresholds θ from the centre of Bin(s, 1/2) to its far tail: trusted
    tails, tails below 1e-200 (untrusted) and tails SciPy underflows to 0 (floor wins)."""
    s = np.repeat([3.0, 40.0, 2000.0, 2001.0, 10.0**6], 40)
    frac = np.tile(np.linspace(0.5, 0.999, 40), 5)
    theta = s * frac + RNG.uniform(0.0, 1.0, s.size)
    return s, theta


@pytest.mark.parametrize("above", [True, False])
def test_masked_floor_is_the_floor_on_its_elements(above: bool) -> None:
    n = RNG.integers(5, 5000, 300).astype(float)
    theta = n * RNG.uniform(0.0, 1.0, n.size)
    shift = 4e-15 * np.abs(theta)
    mask = RNG.uniform(size=n.size) < 0.3
    full = _pmf_lower.excess_floor(n, 0.3, theta, shift, above=above)
    part = _pmf_lower.excess_floor(n, 0.3, theta, shift, above=above, where=mask)
    assert np.array_equal(part[mask], full[mask])
    assert not part[~mask].any()


def test_masked_floor_broadcasts_a_scalar_shift() -> None:
    n, theta = np.full((3, 4), 2000.0), np.linspace(1500.0, 1990.0, 12).reshape(3, 4)
    mask = np.zeros((3, 4), dtype=bool)
    mask[1, 2] = mask[2, 3] = True
    part = _pmf_lower.excess_floor(n, 0.5, theta, np.array(1e-9), above=True, where=mask)
    full = _pmf_lower.excess_floor(n, 0.5, theta, np.array(1e-9), above=True)
    assert part.shape == (3, 4)
    assert np.array_equal(part[mask], full[mask])
    assert full[mask].any()


def test_half_excess_rounded_down_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    s, theta = _grid()
    got = _krr_fast.excess_half(s, theta, upper=False)
    lam = np.full(s.size, 0.3)
    h = _krr_fast.alpha_pair_h(s, lam, 0.7, upper=False)
    monkeypatch.setattr(_krr_fast, "excess_floor", _everywhere)
    want = _krr_fast.excess_half(s, theta, upper=False)
    assert np.array_equal(got, want)
    assert np.array_equal(h, _krr_fast.alpha_pair_h(s, lam, 0.7, upper=False))
    # the grid reaches where the floor decides: positive though SciPy's tails are 0
    assert np.any((want > 0.0) & (want < 1e-300))


@pytest.mark.parametrize("above", [True, False])
def test_binomial_excess_rounded_down_is_unchanged(
    monkeypatch: pytest.MonkeyPatch, above: bool
) -> None:
    s, frac = _grid()
    theta = frac if above else s - frac  # the far tail on the side asked
    got = _krr_fast.binomial_excess(theta, s, 0.5, above=above, upper=False)
    monkeypatch.setattr(_krr_fast, "excess_floor", _everywhere)
    want = _krr_fast.binomial_excess(theta, s, 0.5, above=above, upper=False)
    assert np.array_equal(got, want)
    assert np.any((want > 0.0) & (want < 1e-300))
