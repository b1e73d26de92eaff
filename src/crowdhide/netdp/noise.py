"""Noise helpers used by the token protocols (internal).

They are thin wrappers around numpy so that the protocols can switch to
``crowdhide.mechanisms`` without touching their code. The classic Gaussian calibration of
Dwork & Roth (Thm A.1), ``σ = Δ √(2 ln(1.25/δ)) / ε`` (valid for ε < 1), is the one the paper
(Cyffers & Bellet 2022, Sections 3-4) uses everywhere.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_probability, check_real

__all__ = ["classic_gaussian_sigma", "gaussian_noise", "laplace_noise", "rr_gamma"]


def classic_gaussian_sigma(*, epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Classic Gaussian-mechanism σ = Δ √(2 ln(1.25/δ)) / ε; requires 0 < ε < 1.

    Examples
    --------
    >>> round(classic_gaussian_sigma(epsilon=0.5, delta=1e-5), 4)
    9.6896
    """
    eps = check_real("epsilon", epsilon, low=0.0, high=1.0, low_open=True, high_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    sens = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    return sens * math.sqrt(2.0 * math.log(1.25 / d)) / eps


def rr_gamma(*, eps0: float, domain_size: int) -> float:
    """Blanket probability γ = L/(e^ε0 + L − 1) of L-ary randomized response (ε0-LDP).

    Examples
    --------
    >>> round(rr_gamma(eps0=math.log(3), domain_size=2), 6)
    0.5
    """
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    return domain_size / (math.exp(min(e0, 700.0)) + domain_size - 1)


def gaussian_noise(
    rng: np.random.Generator, scale: float | npt.NDArray[np.float64], size: tuple[int, ...] | int
) -> npt.NDArray[np.float64]:
    """Centered Gaussian noise with standard deviation ``scale``.

    Floating-point sampler (numpy's ``Generator.normal`` times ``scale``), not a hardened
    one: floating-point attacks (Mironov, CCS 2012) apply to its released doubles. For
    simulation and accounting only; see docs/limitations.md.
    """
    return np.asarray(rng.normal(0.0, 1.0, size), dtype=np.float64) * scale


def laplace_noise(
    rng: np.random.Generator, std: float | npt.NDArray[np.float64], size: tuple[int, ...] | int
) -> npt.NDArray[np.float64]:
    """Centered Laplace noise with standard deviation ``std`` (scale ``std/√2``).

    Floating-point sampler (numpy's ``Generator.laplace`` times a scale), not a hardened
    one: Mironov's attack on floating-point Laplace (CCS 2012) applies to its released
    doubles. For simulation and accounting only; see docs/limitations.md.
    """
    return np.asarray(rng.laplace(0.0, 1.0, size), dtype=np.float64) * (
        np.asarray(std) / math.sqrt(2.0)
    )
