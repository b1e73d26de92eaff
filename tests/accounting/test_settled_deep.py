"""The half excess's settled deep elements (``_half_deep.settled_deep``, s27-mech): where the
deep tail bound is certain to be ``_deep_excess``'s minimum, it is taken without the
incomplete betas. The answers must be the same floats as through the incomplete betas
(``_half_excess_betainc``), element by element, on a grid of counts and thresholds that
reaches from the mean past the top of the range (tails from 1/2 down to 2^-s)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _half_deep, _krr_fast

COUNTS = (2, 3, 10, 57, 300, 1000, 4097, 10**4, 10**5, 10**6, 10**7, 10**9)


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """Per count, 120 thresholds between s/2 and s + 1: 60 evenly spaced, 60 at random."""
    rng = np.random.default_rng(3)
    s_parts, theta_parts = [], []
    for s in COUNTS:
        z = np.concatenate([np.linspace(0.0, 1.0, 60), rng.uniform(0.0, 1.0, 60)])
        s_parts.append(np.full(z.size, float(s)))
        theta_parts.append(s / 2.0 + z * (s / 2.0 + 2.0))
    return np.concatenate(s_parts), np.concatenate(theta_parts)


def test_settled_deep_gives_the_same_floats() -> None:
    s, theta = _grid()
    reference = _krr_fast._half_excess_betainc(s, theta, upper=True)
    settled, _ = _half_deep.settled_deep(s, theta, _krr_fast._THETA_RTOL)
    assert settled.size > s.size // 3  # the fast path is taken (690 of 1440 here)
    assert np.array_equal(_krr_fast._half_excess_terms(s, theta, upper=True), reference)
    # shapes other than 1-D (blanket blocks are 2-D) and the lower rounding are unchanged
    square = (s[:1400].reshape(35, 40), theta[:1400].reshape(35, 40))
    assert np.array_equal(
        _krr_fast._half_excess_terms(*square, upper=True),
        _krr_fast._half_excess_betainc(*square, upper=True),
    )
    assert np.array_equal(
        _krr_fast._half_excess_terms(s, theta, upper=False),
        _krr_fast._half_excess_betainc(s, theta, upper=False),
    )


def test_settled_values_are_the_deep_bound_and_never_below_the_betainc_value() -> None:
    s, theta = _grid()
    settled, values = _half_deep.settled_deep(s, theta, _krr_fast._THETA_RTOL)
    reference = _krr_fast._half_excess_betainc(s, theta, upper=True)
    assert np.all(values >= reference[settled])
    assert np.all(values <= _half_deep.SETTLED_VALUE * s[settled])


def test_a_too_eager_settling_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: settling every element whose tail bound is below BETAINC_TRUSTED,
    whatever its deep value, takes values above the incomplete-beta minimum (13 here), so
    the equality test above can fail."""
    monkeypatch.setattr(_half_deep, "SETTLED_TAIL", 1e-200)
    monkeypatch.setattr(_half_deep, "SETTLED_VALUE", 1e-200)
    s, theta = _grid()
    reference = _krr_fast._half_excess_betainc(s, theta, upper=True)
    fast = _krr_fast._half_excess_terms(s, theta, upper=True)
    assert not np.array_equal(fast, reference)
    assert np.all(fast >= reference)  # still only ever up: the deep value is a bound
