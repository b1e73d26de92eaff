"""Additive-noise mechanisms: Laplace and the analytically calibrated Gaussian.

* Laplace (Dwork, McSherry, Nissim, Smith 2006): ``y = x + Lap(Δ/ε0)`` is ε0-DP for a query of
  L1-sensitivity Δ.
* Gaussian with the *analytic* calibration of Balle & Wang (ICML 2018, Theorem 8): the
  mechanism ``y = x + N(0, σ²)`` for a query of L2-sensitivity Δ is (ε, δ)-DP **iff**

      δ(ε; σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ,

  which is the exact hockey-stick divergence of ``N(0, σ²)`` and ``N(Δ, σ²)``.
  :func:`analytic_gaussian_sigma` returns the smallest σ satisfying it (to 1e-12 relative,
  from the safe side). Unlike the classical ``σ = Δ√(2 ln(1.25/δ))/ε`` it is valid for every
  ε >= 0 and never larger than necessary.

The samplers (``randomize``) are numpy's floating-point ones, not hardened: the known
floating-point attacks on Laplace (Mironov, CCS 2012) apply to their outputs, and the
certificates hold for the ideal real-valued mechanisms (docs/limitations.md).

δ(ε; σ) is the Gaussian privacy profile of :mod:`crowdhide.accounting.gaussian` with
``μ = Δ/σ`` (log space: δ down to 1e-300 and σ up to 1e12·Δ neither underflow nor cancel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int, check_probability, check_real
from crowdhide.accounting.gaussian import gaussian_delta, gaussian_log_delta
from crowdhide.accounting.logmath import log1mexp
from crowdhide.accounting.roots import safe_root
from crowdhide.mechanisms.arrays import as_real_array

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "analytic_gaussian_sigma",
    "gaussian_mechanism_delta",
]

#: Relative width at which the σ root search stops (the result is on the safe side anyway).
_SIGMA_RTOL = 1e-14
#: Bracket widening steps (each ×e²): σ/Δ from e^{−81} to e^{81} covers every δ >= 1e-300.
_MAX_BRACKET_STEPS = 40


@dataclass(frozen=True, kw_only=True)
class LaplaceMechanism:
    """Laplace mechanism ``y = x + Lap(b)``, ``b = Δ/ε0``: ε0-DP (tight) for sensitivity Δ.

    Parameters
    ----------
    eps0
        Privacy level ε0 > 0.
    sensitivity
        L1-sensitivity Δ > 0 of the value being released (for a local randomizer on
        ``[lower, upper]`` this is ``upper − lower``).

    See Also
    --------
    GaussianMechanism : The (ε, δ) additive mechanism.

    Examples
    --------
    >>> lap = LaplaceMechanism(eps0=0.5, sensitivity=2.0)
    >>> lap.scale
    4.0
    >>> lap.estimate_sum([1.0, -3.0, 7.5])
    5.5
    >>> lap.sum_variance(n=3)
    96.0
    """

    eps0: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True))
        object.__setattr__(
            self,
            "sensitivity",
            check_real("sensitivity", self.sensitivity, low=0.0, low_open=True),
        )

    @property
    def scale(self) -> float:
        """Laplace scale ``b = Δ / ε0``."""
        return self.sensitivity / self.eps0

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.float64]:
        """Add independent Laplace noise to every entry of ``values``.

        Warnings
        --------
        Floating-point sampler (numpy's ``Generator.laplace``), not a hardened one. Mironov's
        attack on floating-point Laplace (CCS 2012) applies: the doubles it can output depend on
        the input, so ε-DP does not hold for the released bits. Fine for simulation and
        accounting; do not release its outputs to an adversary. See docs/limitations.md.
        """
        vals = as_real_array("values", values)
        return vals + as_rng(rng).laplace(0.0, self.scale, size=vals.shape)

    def log_density(self, outputs: npt.ArrayLike, *, value: float) -> npt.NDArray[np.float64]:
        """Log-density of the output at ``outputs`` when the input is ``value``:
        ``−log(2b) − |y − x| / b``."""
        x = check_real("value", value)
        y = as_real_array("outputs", outputs)
        return -math.log(2.0 * self.scale) - np.abs(y - x) / self.scale

    def log_cdf(self, outputs: npt.ArrayLike, *, value: float) -> npt.NDArray[np.float64]:
        """Log of ``P[Y <= y]`` for input ``value`` (accurate in both tails)."""
        x = check_real("value", value)
        z = (as_real_array("outputs", outputs) - x) / self.scale
        # Left tail: ½ e^{z}; right tail: 1 − ½ e^{−z}.
        return np.where(z < 0, z - math.log(2.0), log1mexp(-np.abs(z) - math.log(2.0)))

    def estimate_sum(self, outputs: npt.ArrayLike) -> float:
        """Unbiased estimate of the sum of the inputs: the sum of the outputs."""
        return float(as_real_array("outputs", outputs).sum())

    def sum_variance(self, *, n: int) -> float:
        """Variance of :meth:`estimate_sum` for n users: ``2 n b²``."""
        return 2.0 * check_int("n", n, low=1) * self.scale**2


def gaussian_mechanism_delta(*, sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """δ(ε) of ``x + N(0, σ²)`` for L2-sensitivity Δ (exact; Balle & Wang 2018, Theorem 8).

    The validated (σ, Δ) form of :func:`crowdhide.accounting.gaussian.gaussian_delta`, which
    takes the shift ``μ = Δ/σ``.

    Parameters
    ----------
    sigma
        Standard deviation σ > 0 of the noise.
    epsilon
        ε >= 0.
    sensitivity
        L2-sensitivity Δ > 0.

    Returns
    -------
    float
        δ(ε), exact up to floating point.

    See Also
    --------
    analytic_gaussian_sigma : The inverse, σ for a target (ε, δ).

    Examples
    --------
    >>> round(gaussian_mechanism_delta(sigma=1.0, epsilon=0.0), 9)  # 2Φ(1/2) − 1
    0.382924923
    """
    s = check_real("sigma", sigma, low=0.0, low_open=True)
    eps = check_real("epsilon", epsilon, low=0.0)
    d = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    return gaussian_delta(eps, mu=d / s)


def analytic_gaussian_sigma(*, epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ such that ``x + N(0, σ²)`` is (ε, δ)-DP for L2-sensitivity Δ.

    Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Algorithm 1 / Theorem 8): the root
    in σ of ``log δ(ε; σ) = log δ`` (:mod:`crowdhide.accounting.gaussian`), found by
    :func:`crowdhide.accounting.safe_root` from the safe side, so ``δ(ε; σ) <= δ`` holds in
    floating point for the returned σ (a valid calibration, within 1e-12 relative of the
    optimum).

    Parameters
    ----------
    epsilon
        Target ε >= 0.
    delta
        Target δ, ``0 < δ < 1`` (down to 1e-300).
    sensitivity
        L2-sensitivity Δ > 0.

    Returns
    -------
    float
        σ, with ``δ(ε; σ) <= δ`` in floating point.

    See Also
    --------
    gaussian_mechanism_delta : δ(ε) for a given σ.
    GaussianMechanism : The mechanism with this σ.

    Examples
    --------
    >>> round(analytic_gaussian_sigma(epsilon=1.0, delta=1e-5), 4)
    3.7306
    >>> analytic_gaussian_sigma(epsilon=1.0, delta=0.0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: delta must be > 0.0, got 0.0
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
    d = check_real("sensitivity", sensitivity, low=0.0, low_open=True)

    def log_delta(sigma: float) -> float:
        return float(gaussian_log_delta(eps, mu=d / sigma))

    # δ(σ) decreases from 1 (σ → 0) to 0 (σ → ∞) for every ε >= 0: bracket the root between
    # σ = Δ e^{−1} and Δ e^{+1}, widened by factors e^2 (finite: δ >= 1e-300 is reached
    # before σ = 1e12 Δ), then solve in σ itself so the safe side is the σ returned.
    lo, hi = d * math.exp(-1.0), d * math.exp(1.0)
    for _ in range(_MAX_BRACKET_STEPS):
        if log_delta(lo) > target:
            break
        lo, hi = lo * math.exp(-2.0), lo
    for _ in range(_MAX_BRACKET_STEPS):
        if log_delta(hi) <= target:
            break
        lo, hi = hi, hi * math.exp(2.0)
    return safe_root(log_delta, target, lo, hi, xtol=_SIGMA_RTOL * lo)


@dataclass(frozen=True, kw_only=True)
class GaussianMechanism:
    """Gaussian mechanism ``y = x + N(0, σ²)`` with σ from the analytic calibration.

    Parameters
    ----------
    epsilon, delta
        Target guarantee; ``epsilon >= 0``, ``0 < delta < 1``.
    sensitivity
        L2-sensitivity Δ > 0.

    See Also
    --------
    analytic_gaussian_sigma : The σ it uses.
    LaplaceMechanism : The pure-DP additive mechanism.

    Examples
    --------
    >>> g = GaussianMechanism(epsilon=1.0, delta=1e-5)
    >>> round(g.sigma, 4), g.eps0
    (3.7306, 1.0)
    >>> g.delta_at(1.0) <= 1e-5
    True
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    sigma: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, low=0.0))
        object.__setattr__(
            self,
            "delta",
            check_probability("delta", self.delta, allow_zero=False, allow_one=False),
        )
        object.__setattr__(
            self,
            "sensitivity",
            check_real("sensitivity", self.sensitivity, low=0.0, low_open=True),
        )
        object.__setattr__(
            self,
            "sigma",
            analytic_gaussian_sigma(
                epsilon=self.epsilon, delta=self.delta, sensitivity=self.sensitivity
            ),
        )

    @property
    def eps0(self) -> float:
        """Its privacy level ε (paired with :attr:`delta`): the common randomizer interface."""
        return self.epsilon

    def delta_at(self, epsilon: float) -> float:
        """Exact δ(ε) of this mechanism (its full privacy curve)."""
        return gaussian_mechanism_delta(
            sigma=self.sigma, epsilon=epsilon, sensitivity=self.sensitivity
        )

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.float64]:
        """Add independent ``N(0, σ²)`` noise to every entry of ``values``.

        Warnings
        --------
        Floating-point sampler (numpy's ``Generator.normal``), not a hardened one.
        Floating-point attacks of the kind Mironov showed on Laplace (CCS 2012) apply, so the
        (ε, δ) certificate holds for the ideal real-valued mechanism, not for the released
        doubles. Fine for simulation and accounting; do not release its outputs to an
        adversary. See docs/limitations.md.
        """
        vals = as_real_array("values", values)
        return vals + as_rng(rng).normal(0.0, self.sigma, size=vals.shape)

    def log_density(self, outputs: npt.ArrayLike, *, value: float) -> npt.NDArray[np.float64]:
        """Log-density of the output at ``outputs`` when the input is ``value``."""
        x = check_real("value", value)
        z = (as_real_array("outputs", outputs) - x) / self.sigma
        return -0.5 * z * z - math.log(self.sigma) - 0.5 * math.log(2.0 * math.pi)

    def estimate_sum(self, outputs: npt.ArrayLike) -> float:
        """Unbiased estimate of the sum of the inputs: the sum of the outputs."""
        return float(as_real_array("outputs", outputs).sum())

    def sum_variance(self, *, n: int) -> float:
        """Variance of :meth:`estimate_sum` for n noisy values: ``n σ²``."""
        return check_int("n", n, low=1) * self.sigma**2
