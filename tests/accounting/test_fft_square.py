"""s23-comp: a squaring in a composition transforms its input once
(:func:`crowdhide.accounting.pld_pmf._fft_convolve`, moved from ``composition`` by s35-pmf);
the result must be ``scipy.signal.fftconvolve``'s, float for float, and so must every composed
PLD."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from crowdhide.accounting import pld_pmf
from crowdhide.accounting.pld_pmf import _fft_convolve
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
    monkeypatch.setattr(pld_pmf, "_fft_convolve", signal.fftconvolve)
    slow = pld.self_compose(100)
    a, b = fast.pld._pmf_remove, slow.pld._pmf_remove
    assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
    assert np.array_equal(a._probs, b._probs)
    assert fast.composition_error == slow.composition_error
    assert fast.epsilon(1e-8) == slow.epsilon(1e-8)


def test_a_kept_base_is_fftconvolve_float_for_float() -> None:
    # s31-rounds: a chain's base (the far mixture's ν) transformed once per FFT length;
    # lengths repeat (20 001 and 20 003 share one) and differ (5 000)
    from crowdhide.accounting import _fft_spectra

    rng = np.random.default_rng(31)
    base = rng.random(1511) * rng.choice([1e-300, 1e-20, 1.0], 1511)
    longs = [rng.random(size) for size in (20_001, 20_003, 5_000, 20_001)]
    with _fft_spectra.spectrum_kept(base):
        assert not base.flags.writeable  # no kept spectrum can outlive its values
        got = [_fft_convolve(a, base) for a in longs]
        assert len(_fft_spectra._HELD.spectra) == 2  # two FFT lengths, one transform each
        # another array with the same values is not the kept one: the general path
        assert np.array_equal(_fft_convolve(longs[0], base.copy()), got[0])
    assert base.flags.writeable
    assert not _fft_spectra.held(base)
    for a, out in zip(longs, got, strict=True):
        want = signal.fftconvolve(a, base)
        assert out.shape == want.shape
        assert out.dtype == want.dtype
        assert np.array_equal(out, want)
    # the check can fail: the base perturbed by 1 % in its largest mass
    other = base.copy()
    other[int(np.argmax(base))] *= 1.01
    with _fft_spectra.spectrum_kept(other):
        assert not np.array_equal(_fft_convolve(longs[0], other), got[0])


def test_the_far_mixture_keeps_its_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    # the mixture's chain with the kept spectrum and without: every term the same floats
    import contextlib

    from crowdhide.accounting import _fft_spectra
    from crowdhide.accounting.shuffle import _far_mixture as fm
    from tests.accounting.test_far_mixture import ROUNDS, _far_toy
    from tests.accounting.test_tilted_pld import STEP

    rest, top, a = fm.far_split(_far_toy())
    depth = fm.mixture_depth(rest, a, ROUNDS, 1e-100)
    assert depth is not None
    assert depth >= 4
    hits: list[bool] = []
    transform = _fft_spectra.spectrum

    def counted(array: np.ndarray, size: int) -> np.ndarray:
        hits.append(size in _fft_spectra._HELD.spectra)
        return transform(array, size)

    monkeypatch.setattr(_fft_spectra, "spectrum", counted)
    kept = fm.far_mixture(rest, top, a, STEP, ROUNDS, 1.5, depth)
    assert sum(hits) >= depth - 1  # the kept path was taken: one transform, then reuse
    monkeypatch.setattr(fm, "spectrum_kept", lambda _: contextlib.nullcontext())
    plain = fm.far_mixture(rest, top, a, STEP, ROUNDS, 1.5, depth)
    assert len(kept.terms) == len(plain.terms) == depth + 1
    for x, y in zip(kept.terms, plain.terms, strict=True):
        assert np.array_equal(x.index, y.index)
        assert np.array_equal(x.log_mass, y.log_mass)
        assert (x.error, x.margin, x.log_scale, x.ceiling) == (
            y.error,
            y.margin,
            y.log_scale,
            y.ceiling,
        )
    assert kept.log_delta(60.0) == plain.log_delta(60.0)
