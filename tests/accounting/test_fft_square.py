"""s23-comp: a squaring in a composition transforms its input once
(:func:`crowdhide.accounting.composition._fft_convolve`); the result must be
``scipy.signal.fftconvolve``'s, float for float, and so must every composed PLD."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from crowdhide.accounting import composition
from crowdhide.accounting.composition import _fft_convolve
from crowdhide.accounting.shuffle import profile_pair


@pytest.mark.parametrize("size", [1, 2, 3, 7, 100, 1001, 4097, 30_011])
def test_square_is_fftconvolve_float_for_float(size: int) -> None:
    rng = np.random.default_rng(size)
    a = rng.random(size) * rng.choice([1e-300, 1e-20, 1.0], size)
    want = signal.fftconvolve(a, a)
    got = _fft_convolve(a, a)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)
    # the check can fail: a copy perturbed by 1 % in one mass is another convolution
    b = a.copy()
    b[int(np.argmax(a))] *= 1.01  # the largest mass (a tiny one is lost in rounding)
    assert not np.array_equal(_fft_convolve(b, b), want)


def test_two_arrays_are_fftconvolve() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(513), rng.random(77)
    assert np.array_equal(_fft_convolve(a, b), signal.fftconvolve(a, b))
    # equal content, another object: the general path, the same floats
    assert np.array_equal(_fft_convolve(a, a.copy()), signal.fftconvolve(a, a))


def test_composed_pld_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    pld = profile_pair.profile_pair_pld(1.0, 10_000, coarse=20, fine=False)
    assert pld is not None
    fast = pld.self_compose(100)
    monkeypatch.setattr(composition, "_fft_convolve", signal.fftconvolve)
    slow = pld.self_compose(100)
    a, b = fast.pld._pmf_remove, slow.pld._pmf_remove
    assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
    assert np.array_equal(a._probs, b._probs)
    assert fast.composition_error == slow.composition_error
    assert fast.epsilon(1e-8) == slow.epsilon(1e-8)
