"""Adapter to the shared shuffle accountant (``crowdhide.accounting.shuffle``).

The protocols calibrate ε0 with ``calibrate_eps0`` and certify every run with
``shuffle_epsilon(..., bound="best")`` — the smallest *valid upper bound* for shuffled k-RR
(the exhaustive exact worst case for small n, the FMT23 clone bound and others beyond). The
exact curves of the canonical datasets (``krr_shuffle_curve`` for large n) are a *lower*
bound on the worst case; they are used only for side-by-side comparisons (e.g. to show that a
published value is below the truth), never as certificates.

This module is the only place that imports the accountant, so that a build without it fails
with one clear message.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from crowdhide.accounting import PrivacyCurve

__all__ = [
    "calibrate_krr_eps0",
    "certify_krr",
    "krr_delta_certificate",
    "krr_lower_curve",
    "shuffle_accountant_available",
]

_MISSING = (
    "exact calibration needs the tight shuffle accountant crowdhide.accounting.shuffle, which "
    "is not part of this build; use calibration='paper' (bit and real sums) instead"
)


def _module() -> ModuleType:
    try:
        return importlib.import_module("crowdhide.accounting.shuffle")
    except ModuleNotFoundError as exc:
        raise ValueError(_MISSING) from exc


def shuffle_accountant_available() -> bool:
    """Whether ``crowdhide.accounting.shuffle`` can be imported."""
    try:
        _module()
    except ValueError:
        return False
    return True


def calibrate_krr_eps0(*, epsilon: float, delta: float, n: int, k: int) -> float:
    """Largest ε0 whose shuffled k-RR reports over n users are certified (ε, δ)-DP."""
    result = _module().calibrate_eps0(epsilon=epsilon, delta=delta, n=n, k=k)
    return float(getattr(result, "eps0", result))


def certify_krr(*, eps0: float, n: int, k: int, delta: float) -> tuple[float, str]:
    """Certified ε at ``delta`` of n shuffled k-RR reports: ``(epsilon, bound name)``."""
    result = _module().shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound="best")
    if not result.is_certificate:
        raise ValueError(f"no valid bound certifies eps0={eps0!r}, n={n!r}, k={k!r}")
    return float(result.epsilon), f"shuffle accountant: {result.bound}"


def krr_delta_certificate(*, eps0: float, n: int, k: int, epsilon: float) -> tuple[float, str]:
    """Certified δ at ``epsilon`` (smallest valid upper bound): ``(delta, bound name)``."""
    result = _module().shuffle_delta(eps0=eps0, n=n, epsilon=epsilon, k=k, bound="best")
    return float(result.delta), str(result.bound)


def krr_lower_curve(*, eps0: float, n: int, k: int) -> PrivacyCurve:
    """``krr_shuffle_curve``: exact worst case for tiny n, else exact curves of the canonical
    datasets (a lower bound on the worst case — not a certificate)."""
    curve: PrivacyCurve = _module().krr_shuffle_curve(eps0=eps0, n=n, k=k)
    return curve
