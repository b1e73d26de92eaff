"""Adapter to the shared tight shuffle accountant (``crowdhide.accounting.shuffle``).

The protocols certify their privacy with the exact worst-case curve of shuffled k-RR
(``krr_shuffle_curve``) and calibrate ε0 with ``calibrate_eps0``; this module is the only
place that imports them, so that a build without the accountant fails with one clear message.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from crowdhide.accounting import PrivacyCurve

__all__ = ["calibrate_krr_eps0", "krr_curve", "shuffle_accountant_available"]

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


def krr_curve(*, eps0: float, n: int, k: int) -> PrivacyCurve:
    """Exact worst-case privacy curve of n users' k-RR reports after shuffling."""
    curve: PrivacyCurve = _module().krr_shuffle_curve(eps0=eps0, n=n, k=k)
    return curve


def calibrate_krr_eps0(*, epsilon: float, delta: float, n: int, k: int) -> float:
    """Largest ε0 such that shuffled k-RR over n users is (ε, δ)-DP (shared accountant)."""
    return float(_module().calibrate_eps0(epsilon=epsilon, delta=delta, n=n, k=k))
