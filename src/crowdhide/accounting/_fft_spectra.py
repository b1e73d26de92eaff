"""One array's forward transform kept across a chain of FFT convolutions (s31-rounds).

The far mixture (:mod:`crowdhide.accounting.shuffle._far_mixture`) convolves a long composed
vector with the same short base ``J`` times in a row (``ν^{*(m+1)} = ν^{*m} * ν``); the
composed vector's length hardly changes, so the FFT length (``next_fast_len`` of the full
length) repeats, and ``scipy.signal.fftconvolve`` transformed the base afresh each time.
Within :func:`spectrum_kept` the base's ``rfftn`` at each length is computed once: the
transform is deterministic, so a kept spectrum is the float array a new transform gives, and
:func:`~crowdhide.accounting.composition._fft_convolve` returns fftconvolve's floats
(docs/proofs/profile-pair.md §15; tests: ``tests/accounting/test_fft_square.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

__all__ = ["held", "spectrum", "spectrum_kept"]

FloatArray = npt.NDArray[np.float64]


class _Held(threading.local):
    """The array whose spectra are kept (per thread: concurrent queries do not share it)."""

    def __init__(self) -> None:
        self.array: FloatArray | None = None
        self.spectra: dict[int, npt.NDArray[np.complex128]] = {}


_HELD = _Held()


@contextmanager
def spectrum_kept(array: FloatArray) -> Iterator[None]:
    """Within the block, :func:`spectrum` of ``array`` at each length is computed once.
    ``array`` is made read-only meanwhile, so no kept spectrum can outlive its values."""
    previous = (_HELD.array, _HELD.spectra)
    writeable = array.flags.writeable
    array.flags.writeable = False
    _HELD.array, _HELD.spectra = array, {}
    try:
        yield
    finally:
        _HELD.array, _HELD.spectra = previous
        array.flags.writeable = writeable


def held(array: FloatArray) -> bool:
    """Whether ``array`` (the object itself) is the one whose spectra are kept."""
    return _HELD.array is not None and array is _HELD.array


def spectrum(array: FloatArray, size: int) -> npt.NDArray[np.complex128]:
    """``scipy.fft.rfftn(array, [size], axes=[0])``, kept where ``array`` is :func:`held`."""
    from scipy import fft

    if not held(array):
        return np.asarray(fft.rfftn(array, [size], axes=[0]))
    got = _HELD.spectra.get(size)
    if got is None:
        got = _HELD.spectra[size] = np.asarray(fft.rfftn(array, [size], axes=[0]))
    return got
