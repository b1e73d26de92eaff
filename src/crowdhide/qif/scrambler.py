"""Leakage of crowdhide's scrambler countermeasure, viewed as a QIF channel.

Beyond Jurado et al.: the communication pattern of one scrambler cluster of Ladjel,
Anciaux, Bellet, Scerri (data-dependent communications, scramblers) is a channel from the sources'
targets to what the network observer sees.

Model. ``n`` sources each hold one of ``T`` targets. Each applies the sampling randomizer
``R_σ``: with probability ``σ`` it sends a dummy to a target drawn uniformly among **all**
``T`` targets (convention "U" of Theorems 2/4 — so the true target is hit with probability
``1 − σ + σ/T``), otherwise it sends the real message to its target. The scrambler adds ``d``
dummies, uniform over the ``T`` targets and i.i.d., and shuffles: the observer sees only
the number of messages each target receives (a histogram of ``n + d`` messages).

So ``R_σ`` is T-ary randomized response with keep probability ``p = 1 − σ + σ/T`` and
``q = σ/T`` (``ε0 = ln((1−σ)T/σ + 1)``, Theorem 2 with no local flooding), followed by a
shuffle whose output also holds ``d`` blanket dummies. The secret is one source's target.

* **Uninformed adversary** (uniform prior on all ``T^n`` target assignments). The dummies
  are distributed like uniformly-random reports, so the ``n + d`` messages are exchangeable
  and ``P(report of the source = v | histogram H) = H_v/(n+d)``; hence

      V = q + (p − q)·V[S](n + d, T) = σ/T + (1 − σ)·E[max load of n+d balls in T bins]/(n+d).

* **Informed adversary** (knows the other ``n−1`` sources' targets; uniform on the target's):
  ``V = q + (p − q)/T · Σ_h max_v P(Z = h − e_v)``, ``Z`` = histogram of the others' reports
  plus the ``d`` dummies (same computation as :func:`crowdhide.qif.shuffle.informed_sum`).
  With ``σ = 0`` only the dummies protect the target.

Both are checked against the explicit channel (:func:`scrambler_channel`) with exact
Fractions on tiny instances.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from crowdhide._validation import check_int, check_probability
from crowdhide.errors import InvalidParameterError
from crowdhide.qif.channels import output_histogram_distribution
from crowdhide.qif.combinatorics import check_size, dataset_histograms, datasets, histograms
from crowdhide.qif.core import Channel
from crowdhide.qif.shuffle import (
    ADVERSARIES,
    informed_sum,
    others_histogram,
    shuffle_vulnerability,
)

__all__ = [
    "ScramblerVulnerability",
    "scrambler_channel",
    "scrambler_keep_probability",
    "scrambler_local_epsilon",
    "scrambler_vulnerability",
]


@dataclass(frozen=True)
class ScramblerVulnerability:
    """Vulnerability of one source's target behind a scrambler cluster.

    ``local_epsilon`` is the local DP level ``ε0 = ln((1−σ)T/σ + 1)`` of the sampling
    randomizer (``inf`` when ``σ = 0``): the DP certificate to read next to the concrete
    guessing probability ``vulnerability``.

    Parameters
    ----------
    vulnerability, prior_vulnerability
        Posterior and prior single-target vulnerability.
    multiplicative_leakage, additive_leakage
        Their ratio and difference.
    targets, sigma, n, dummies, adversary, others
        The inputs of :func:`scrambler_vulnerability` (``others``: ``None`` if uninformed).
    keep_probability
        The probability that the sampling randomizer reports the true target.
    local_epsilon
        ε0 of the sampling randomizer (see above).
    method
        How it was computed.

    See Also
    --------
    scrambler_vulnerability : Produces it.
    """

    vulnerability: float | Fraction
    prior_vulnerability: float | Fraction
    multiplicative_leakage: float | Fraction
    additive_leakage: float | Fraction
    targets: int
    sigma: float | Fraction
    n: int
    dummies: int
    adversary: str
    others: tuple[int, ...] | None
    keep_probability: float | Fraction
    local_epsilon: float
    method: str

    @property
    def leakage(self) -> dict[str, float]:
        """``{"multiplicative": …, "additive": …}`` as floats."""
        return {
            "multiplicative": float(self.multiplicative_leakage),
            "additive": float(self.additive_leakage),
        }

    def as_record(self) -> dict[str, Any]:
        """JSON-ready record (inputs echoed)."""
        return {
            "vulnerability": float(self.vulnerability),
            "prior_vulnerability": float(self.prior_vulnerability),
            "leakage": self.leakage,
            "targets": self.targets,
            "sigma": float(self.sigma),
            "n": self.n,
            "dummies": self.dummies,
            "adversary": self.adversary,
            "others": list(self.others) if self.others is not None else None,
            "keep_probability": float(self.keep_probability),
            "local_epsilon": self.local_epsilon,
            "method": self.method,
        }


def _check(targets: Any, sigma: Any, n: Any, dummies: Any) -> tuple[int, Any, int, int]:
    targets = check_int("targets", targets, low=2)
    if isinstance(sigma, Fraction):
        if not 0 <= sigma <= 1:
            raise InvalidParameterError(f"sigma must be in [0, 1], got {sigma!r}")
    else:
        sigma = check_probability("sigma", sigma)
    return targets, sigma, check_int("n", n, low=1), check_int("dummies", dummies, low=0)


def scrambler_keep_probability(*, targets: int, sigma: Any) -> float | Fraction:
    """``p = 1 − σ + σ/T``: probability that the source's message goes to its true target.

    Examples
    --------
    >>> scrambler_keep_probability(targets=4, sigma=0.2)
    0.8500000000000001
    """
    targets, sigma, _, _ = _check(targets, sigma, 1, 0)
    return 1 - sigma + sigma / targets  # type: ignore[no-any-return]


def scrambler_local_epsilon(*, targets: int, sigma: Any) -> float:
    """``ε0 = ln((1−σ)T/σ + 1)`` of the sampling randomizer (Theorem 2 of Ladjel et al., d = 0).

    Examples
    --------
    >>> round(scrambler_local_epsilon(targets=20, sigma=0.9), 6)
    1.170071
    """
    targets, sigma, _, _ = _check(targets, sigma, 1, 0)
    if sigma == 0:
        return math.inf
    return math.log1p(float((1 - sigma) * targets / sigma))


def scrambler_vulnerability(
    *,
    targets: int,
    sigma: Any,
    n: int,
    dummies: int = 0,
    adversary: str = "uninformed",
    others: Sequence[int] | None = None,
    others_value: int = 0,
) -> ScramblerVulnerability:
    """Posterior vulnerability of one source's target behind a scrambler (module docstring).

    Parameters
    ----------
    targets
        ``T >= 2`` possible targets.
    sigma
        Sampling probability in ``[0, 1]`` (a Fraction gives exact results).
    n
        Sources sharing the scrambler (including the target source).
    dummies
        ``d >= 0`` uniform dummies added by the scrambler.
    adversary
        ``"uninformed"`` or ``"informed"`` (knows the others' targets).
    others, others_value
        Informed adversary: the others' target histogram (``T`` counts summing to ``n−1``),
        by default all ``n−1`` others on target ``others_value``.

    Returns
    -------
    ScramblerVulnerability
        The vulnerability and leakages, with the local ε0 beside them.

    See Also
    --------
    crowdhide.scrambler_epsilon : The DP certificate of the same scrambler.

    Examples
    --------
    >>> r = scrambler_vulnerability(targets=2, sigma=0.0, n=1, dummies=0)
    >>> r.vulnerability, r.local_epsilon
    (1.0, inf)
    >>> r = scrambler_vulnerability(targets=4, sigma=0.2, n=20, dummies=20, adversary="informed")
    >>> 0.25 < r.vulnerability < 0.85
    True
    """
    targets, sigma, n, dummies = _check(targets, sigma, n, dummies)
    if adversary not in ADVERSARIES:
        raise InvalidParameterError(f"adversary must be one of {ADVERSARIES}, got {adversary!r}")
    exact = isinstance(sigma, Fraction)
    p = 1 - sigma + sigma / targets
    q = sigma / targets
    hist: tuple[int, ...] | None = None
    if adversary == "uninformed":
        v_s = shuffle_vulnerability(n=n + dummies, k=targets, exact=exact)
        value = q + (p - q) * v_s
        method = "q + (p-q) V[S](n+d, T)"
    else:
        hist = others_histogram(others, others_value, n, targets)
        total, method = informed_sum(k=targets, keep_probability=p, others=hist, dummies=dummies)
        value = q + (p - q) * total / targets
    prior: float | Fraction = Fraction(1, targets) if exact else 1.0 / targets
    return ScramblerVulnerability(
        vulnerability=value,
        prior_vulnerability=prior,
        multiplicative_leakage=value * targets,
        additive_leakage=value - prior,
        targets=targets,
        sigma=sigma,
        n=n,
        dummies=dummies,
        adversary=adversary,
        others=hist,
        keep_probability=p,
        local_epsilon=scrambler_local_epsilon(targets=targets, sigma=sigma),
        method=method,
    )


def scrambler_channel(*, targets: int, sigma: Any, n: int, dummies: int = 0) -> Channel:
    """The explicit channel: target assignments ``[T]^n`` → observed histogram of ``n + d``.

    Small instances only (``T^n`` rows); exact with a Fraction ``sigma``.
    """
    targets, sigma, n, dummies = _check(targets, sigma, n, dummies)
    exact = isinstance(sigma, Fraction)
    data = datasets(n=n, k=targets)
    outs = histograms(n=n + dummies, k=targets)
    check_size("the scrambler channel", data.shape[0] * outs.shape[0])
    p = 1 - sigma + sigma / targets
    q = sigma / targets
    rows: list[list[Any]] = [[p if u == v else q for u in range(targets)] for v in range(targets)]
    rows.append([Fraction(1, targets) if exact else 1.0 / targets] * targets)
    local = np.array(rows, dtype=object if exact else np.float64)
    out_labels = [tuple(int(v) for v in h) for h in outs]
    index = {h: j for j, h in enumerate(out_labels)}
    mat: Any = np.empty((data.shape[0], len(out_labels)), dtype=object if exact else float)
    mat[...] = Fraction(0) if exact else 0.0
    cache: dict[tuple[int, ...], dict[tuple[int, ...], Any]] = {}
    for i, h in enumerate(dataset_histograms(data, k=targets)):
        key = tuple(int(v) for v in h)
        if key not in cache:
            cache[key] = output_histogram_distribution(local, [*key, dummies])
        for out, w in cache[key].items():
            mat[i, index[out]] = w
    return Channel(
        mat, inputs=[tuple(int(v) for v in row) for row in data], outputs=out_labels, atol=1e-7
    )
