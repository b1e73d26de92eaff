"""The scrambler's closed forms: the local-randomizer view of sampling, dummies and scramblers
(Theorem 2 of Ladjel, Anciaux, Bellet, Scerri) and Theorem 3 as published.

The accountant (:mod:`crowdhide.accounting.scrambler.accountant`) lists them as its ``local``
and ``theorem3-published`` evaluators; the planner and ``scrambler calibrate`` use them too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import gammaln

from crowdhide._validation import (
    check_int,
    check_probability,
    check_real,
)
from crowdhide.accounting.logmath import (
    logsumexp,
)
from crowdhide.accounting.statement import PrivacyStatement

__all__ = [
    "local_randomizer_delta",
    "local_randomizer_epsilon",
    "local_randomizer_statement",
    "sampling_epsilon",
    "sigma_lie_from_uniform",
    "theorem3_published_epsilon",
]


def _check_common(targets: Any, sigma: Any, n: Any, dummies: Any) -> tuple[int, float, int, int]:
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    nn = check_int("n", n, low=1)
    d = check_int("dummies", dummies, low=0)
    return T, s, nn, d


# --------------------------------------------------------------------------- local (Thm 2)


def local_randomizer_epsilon(*, targets: int, sigma: float, dummies: int = 0) -> float:
    """Pure ε of the local randomizer R_σ^d (sampling + ``d`` local dummies), Theorem 2.

    ``ε = ln(1 + (1 − σ) T / (σ (d + 1)))`` for ``0 <= d <= T − 2`` (exact: it is the
    largest log-ratio, checked by brute force, d = 0 included); ``d = T − 1`` is a broadcast
    (ε = 0); ``σ = 0`` with ``d < T − 1`` gives ε = inf. The source must send its d + 1
    messages in random order (the observable is the *set* of targets).

    Parameters
    ----------
    targets
        Number of targets T >= 1.
    sigma
        Sampling rate in [0, 1] (convention U).
    dummies
        Local dummies d, ``0 <= d <= T − 1``.

    Examples
    --------
    >>> round(local_randomizer_epsilon(targets=20, sigma=0.5, dummies=3), 6)
    1.791759
    >>> local_randomizer_epsilon(targets=20, sigma=0.0)
    inf
    """
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    d = check_int("dummies", dummies, low=0, high=max(T - 1, 0))
    if T == 1 or d == T - 1 or s == 1.0:
        return 0.0
    if s == 0.0:
        return math.inf
    return math.log1p((1.0 - s) * T / (s * (d + 1)))


def local_randomizer_statement(*, targets: int, sigma: float, dummies: int = 0) -> PrivacyStatement:
    """The local randomizer R_σ^d's pure ε (Theorem 2) as a statement (exact, δ = 0).

    Examples
    --------
    >>> s = local_randomizer_statement(targets=20, sigma=0.5, dummies=3)
    >>> round(s.epsilon, 6), s.delta, s.kind, s.source
    (1.791759, 0.0, 'exact', 'theorem2')
    """
    eps = local_randomizer_epsilon(targets=targets, sigma=sigma, dummies=dummies)
    notes = ["exact pure ε (largest log-ratio); messages must be sent in random order"]
    if math.isinf(eps):
        notes.append(
            "no finite epsilon: with sigma = 0 and fewer than targets - 1 dummies, a target "
            "that receives no message is never the true one (use sigma > 0 or more dummies)"
        )
    return PrivacyStatement(
        epsilon=eps,
        delta=0.0,
        kind="exact",
        source="theorem2",
        notes=tuple(notes),
        inputs={"targets": targets, "sigma": sigma, "dummies": dummies},
    )


def sampling_epsilon(*, targets: int, sigma: float) -> float:
    """ε0 of sampling alone (R_σ = R_σ^0, T-ary randomized response): ln(1 + (1−σ)T/σ)."""
    return local_randomizer_epsilon(targets=targets, sigma=sigma, dummies=0)


def local_randomizer_delta(*, targets: int, sigma: float, epsilon: float) -> float:
    """Exact δ(ε) of sampling alone: ``max(0, 1 − σ − σ (e^ε − 1)/T)``.

    The scrambler post-processes the sampled messages, so this is also a valid δ(ε) for
    A_σ^{n,d} and Ã_σ^{n,d} (the ``local`` evaluator).
    """
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    eps = check_real("epsilon", epsilon, low=0.0, allow_inf=True)
    if T == 1 or math.isinf(eps):
        return 0.0
    return max(0.0, 1.0 - s - s * math.expm1(eps) / T)


def sigma_lie_from_uniform(*, targets: int, sigma: float) -> float:
    """Convert σ from convention U (Sections III–IV) to Theorem 3's convention L."""
    T = check_int("targets", targets, low=1)
    return check_probability("sigma", sigma) * (T - 1) / T


# --------------------------------------------------------------------------- Theorem 3


def theorem3_published_epsilon(*, targets: int, sigma_lie: float, n: int, dummies: int) -> float:
    """Theorem 3 **as printed** (capped scrambler Ã_σ^{n,d}); NOT a certified bound.

    The derivation assumes a worst case it does not prove and drops the cap-dependent dummy
    probabilities; exhaustive enumeration shows the true pure ε of the capped scrambler is
    larger (see :func:`~crowdhide.accounting.scrambler.enumeration.capped_exact_pure_epsilon`).
    Kept to reproduce Figs. 5 and 7.
    Evaluated in log space (``R = σ_L/(T − 1)``, weights ``C(d,k)C(n−1,k)((1−σ_L)/R)^k``).

    Parameters
    ----------
    sigma_lie
        σ in Theorem 3's convention L (``1 − σ_L`` on the true target, ``σ_L/(T−1)`` on
        each other); use :func:`sigma_lie_from_uniform` to convert.
    dummies
        ``0 <= d <= n − 1`` (the theorem states 1..n−1; d = 0 gives the local ε0).

    Examples
    --------
    >>> round(theorem3_published_epsilon(targets=20, sigma_lie=0.2, n=100, dummies=50), 4)
    3.8387
    """
    T = check_int("targets", targets, low=2)
    s = check_probability("sigma_lie", sigma_lie)
    nn = check_int("n", n, low=1)
    d = check_int("dummies", dummies, low=0, high=nn - 1)
    if s == 0.0 or s >= 1.0:
        return math.inf
    R = s / (T - 1)
    keep = 1.0 - s
    k = np.arange(0, min(d, nn - 1) + 1, dtype=float)
    log_w = (
        gammaln(d + 1)
        - gammaln(k + 1)
        - gammaln(d - k + 1)
        + gammaln(nn)
        - gammaln(k + 1)
        - gammaln(nn - k)
        + k * (math.log(keep) - math.log(R))
    )
    num = logsumexp(log_w + np.log(keep + k * R * R / keep))
    den = logsumexp(log_w + np.log(R + k * R * R / keep))
    return float(num - den)
