"""Calibration and certification of shuffled k-RR for the protocols and their experiments.

An adapter to the shared shuffle accountant (``crowdhide.accounting.shuffle.generic``).

The protocols calibrate ε0 with ``calibrate_eps0`` and certify every run with
``shuffle_epsilon(..., bound="best")`` — the smallest *valid upper bound* for shuffled k-RR
(the exhaustive exact worst case for small n, the FMT23 clone bound and others beyond). The
exact curves of the canonical datasets (``krr_shuffle_curve`` for large n) are a *lower*
bound on the worst case; they are used only for side-by-side comparisons (e.g. to show that a
published value is below the truth), never as certificates.

This module is the only place where the protocols call the accountant, so that their
calibration and certification policy (which bounds, when the cheap ones suffice) lives in one
adapter.
"""

from __future__ import annotations

from crowdhide.accounting import PrivacyCurve, PrivacyStatement
from crowdhide.accounting.shuffle import generic as accountant
from crowdhide.accounting.shuffle.calibration import calibrate_eps0
from crowdhide.errors import InvalidParameterError

__all__ = [
    "calibrate_krr_eps0",
    "certify_krr",
    "krr_delta_certificate",
    "krr_lower_curve",
    "krr_privacy",
]


#: Certificates for k-RR that are cheap to evaluate at every n. The accountant's k-RR clone
#: bound can be tighter for k >= 3 but costs seconds per evaluation at n ~ 1e3-1e4; for
#: binary RR it coincided with FMT23 in every case we measured.
FAST_BOUNDS = ("feldman2023", "balle2019_bennett")


def _use_fast(n: int, k: int, fast: bool) -> bool:
    return fast or (k == 2 and n > accountant.EXHAUSTIVE_MAX_N)


def calibrate_krr_eps0(
    *, epsilon: float, delta: float, n: int, k: int, fast: bool = False
) -> float:
    """Largest ε0 whose shuffled k-RR reports over n users are certified (ε, δ)-DP.

    Uses the accountant's ``best`` bound, except for binary RR beyond the exhaustive range
    and when ``fast`` is set: then the largest ε0 certified by any of :data:`FAST_BOUNDS`
    (valid certificates for k-RR, slightly looser than ``best`` for k >= 3).
    """
    if _use_fast(n, k, fast):
        found: list[float] = []
        for bound in FAST_BOUNDS:
            try:
                result = calibrate_eps0(epsilon=epsilon, delta=delta, n=n, k=k, bound=bound)
            except ValueError:
                continue
            if result.is_certificate:
                found.append(float(result.inputs["eps0"]))
        if found:
            return max(found)
    result = calibrate_eps0(epsilon=epsilon, delta=delta, n=n, k=k)
    return float(result.inputs["eps0"])


def certify_krr(
    *, eps0: float, n: int, k: int, delta: float, fast: bool = False
) -> tuple[float, str]:
    """Certified ε at ``delta`` of n shuffled k-RR reports: ``(epsilon, bound name)``.

    The smallest ε among valid certificates: the accountant's ``best``, or — for binary RR
    beyond the exhaustive range and with ``fast`` — among :data:`FAST_BOUNDS`.
    """
    if _use_fast(n, k, fast):
        results = [
            accountant.shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound=bound, lower=False)
            for bound in FAST_BOUNDS
        ]
        certs = [r for r in results if r.is_certificate and r.epsilon == r.epsilon]
        if not certs:
            raise InvalidParameterError(f"no valid bound certifies eps0={eps0!r}, n={n!r}, k={k!r}")
        result = min(certs, key=lambda r: r.epsilon)
    else:
        result = accountant.shuffle_epsilon(
            eps0=eps0, n=n, delta=delta, k=k, bound="best", lower=False
        )
        if not result.is_certificate:
            raise InvalidParameterError(f"no valid bound certifies eps0={eps0!r}, n={n!r}, k={k!r}")
    return float(result.epsilon), f"shuffle accountant: {result.source}"


def krr_delta_certificate(*, eps0: float, n: int, k: int, epsilon: float) -> tuple[float, str]:
    """Certified δ at ``epsilon`` (smallest valid upper bound): ``(delta, bound name)``."""
    result = accountant.shuffle_delta(
        eps0=eps0, n=n, epsilon=epsilon, k=k, bound="best", lower=False
    )
    return float(result.delta), str(result.source)


def krr_lower_curve(*, eps0: float, n: int, k: int) -> PrivacyCurve:
    """``krr_shuffle_curve``: exact worst case for tiny n, else exact curves of the canonical
    datasets (a lower bound on the worst case — not a certificate)."""
    curve: PrivacyCurve = accountant.krr_shuffle_curve(eps0=eps0, n=n, k=k)
    return curve


def krr_privacy(
    *, eps0: float, n: int, k: int, delta: float, target_epsilon: float, fast: bool = False
) -> PrivacyStatement:
    """The privacy statement of n shuffled k-RR reports at ``delta``, checked against a target.

    ε is the smaller of :func:`certify_krr`'s certificate and ε0 itself (the reports are
    ε0-LDP, hence (ε0, 0)-DP after shuffling too); ``inputs`` records ``eps0, n, k``.
    """
    certified, bound = certify_krr(eps0=eps0, n=n, k=k, delta=delta, fast=fast)
    statement = PrivacyStatement(
        epsilon=min(certified, eps0),
        delta=delta,
        kind="upper",
        source=bound,
        inputs={"eps0": eps0, "n": n, "k": k},
    )
    return statement.with_target(epsilon=target_epsilon, delta=delta)
