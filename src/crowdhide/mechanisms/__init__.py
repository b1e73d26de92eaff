"""Local randomizers and their estimators.

Randomizers (all frozen dataclasses with keyword-only validated parameters, an ``eps0``
property and ``randomize(values, rng=)``):

* :class:`KaryRandomizedResponse`, :class:`BinaryRandomizedResponse` — discrete, with exact
  output log-probabilities and unbiased frequency/sum estimators;
* :class:`LaplaceMechanism`, :class:`GaussianMechanism` (analytic calibration of Balle & Wang
  2018, :func:`analytic_gaussian_sigma`) — additive noise with sum estimators.

Estimators: :func:`inversion_histogram_estimate`, :func:`project_to_simplex`,
:func:`total_variation_distance`.
"""

from crowdhide.mechanisms.additive import (
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_sigma,
    gaussian_mechanism_delta,
)
from crowdhide.mechanisms.estimators import (
    inversion_histogram_estimate,
    project_to_simplex,
    total_variation_distance,
)
from crowdhide.mechanisms.randomized_response import (
    BinaryRandomizedResponse,
    KaryRandomizedResponse,
)

__all__ = [
    "BinaryRandomizedResponse",
    "GaussianMechanism",
    "KaryRandomizedResponse",
    "LaplaceMechanism",
    "analytic_gaussian_sigma",
    "gaussian_mechanism_delta",
    "inversion_histogram_estimate",
    "project_to_simplex",
    "total_variation_distance",
]
