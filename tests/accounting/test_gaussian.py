"""``gaussian_log_delta`` at the edges of its vectorized path."""

from __future__ import annotations

import warnings

import numpy as np

from crowdhide.accounting.gaussian import gaussian_log_delta


def test_tiny_shift_mixed_with_large_ones_raises_no_warning() -> None:
    """A μ of 1e-300 sends the threshold to -inf. The differenced form used for μ > 1 was
    evaluated there too (-inf - (-inf)): a RuntimeWarning, an error under ``-W error``
    (found by the CLI fuzz through ``netdp audit --eps0 1e-300``)."""
    eps = np.array([[0.5], [2.0]])
    mu = np.array([[1e-300, 0.3, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = gaussian_log_delta(eps, mu=mu)
    assert out.shape == (2, 3)
    assert np.all(out[:, 0] == -np.inf)  # no signal to speak of: δ = 0
    assert np.all(np.isfinite(out[:, 1:]))
    for i, e in enumerate((0.5, 2.0)):  # the vectorized path agrees with the scalar one
        for j, m in enumerate((0.3, 3.0)):
            assert np.isclose(out[i, j + 1], float(gaussian_log_delta(e, mu=m)), rtol=1e-12)
