"""Tests of crowdhide.netdp.noise: calibrations against exact privacy, noise moments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.gaussian import gaussian_epsilon
from crowdhide.netdp.noise import classic_gaussian_sigma, gaussian_noise, laplace_noise, rr_gamma


@pytest.mark.parametrize("eps", [0.05, 0.3, 0.9])
@pytest.mark.parametrize("delta", [1e-3, 1e-7, 1e-12])
def test_classic_gaussian_sigma_is_private_at_its_epsilon(eps: float, delta: float) -> None:
    sigma = classic_gaussian_sigma(epsilon=eps, delta=delta, sensitivity=2.0)
    assert sigma == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25 / delta)) / eps)
    # the classic calibration is valid (not tight): exact ε at δ is below the target
    assert gaussian_epsilon(mu=2.0 / sigma, delta=delta) <= eps


def test_classic_gaussian_sigma_needs_eps_below_one() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        classic_gaussian_sigma(epsilon=1.0, delta=1e-6)


@pytest.mark.parametrize(("eps0", "size"), [(0.5, 2), (1.0, 5), (3.0, 10)])
def test_rr_gamma_gives_exactly_eps0(eps0: float, size: int) -> None:
    gamma = rr_gamma(eps0=eps0, domain_size=size)
    keep = 1 - gamma + gamma / size
    other = gamma / size
    assert math.log(keep / other) == pytest.approx(eps0, rel=1e-12)


def test_noise_has_the_requested_std() -> None:
    rng = np.random.default_rng(0)
    g = gaussian_noise(rng, 3.0, 200_000)
    lap = laplace_noise(rng, 3.0, 200_000)
    assert abs(g.mean()) < 0.05
    assert g.std() == pytest.approx(3.0, rel=0.02)
    assert abs(lap.mean()) < 0.05
    assert lap.std() == pytest.approx(3.0, rel=0.02)
    # Laplace: mean absolute deviation = scale = std/√2 (Gaussian: std √(2/π))
    assert np.mean(np.abs(lap)) == pytest.approx(3.0 / math.sqrt(2), rel=0.02)
