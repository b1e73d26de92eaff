"""Result records of protocol runs (frozen; ``as_record()`` gives the CLI/JSON form).

A run's privacy is a :class:`~crowdhide.accounting.PrivacyStatement` in its ``privacy`` field:
the certified (ε, δ) (kind ``"upper"``), the bound that gave it (``source``), the local level
``eps0`` and the population it was computed for (``inputs``), and the target ε the run was
calibrated for (``target``, with ``meets_target``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crowdhide._validation import as_rng, check_probability, check_real
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = [
    "TRAFFIC_KEYS",
    "CentralBaseline",
    "SumRun",
    "central_sum_baseline",
    "privacy_record",
    "traffic_record",
]


@dataclass(frozen=True)
class CentralBaseline:
    """The central-model mechanism at the same (ε, δ), run on the exact answer."""

    mechanism: str
    estimate: float
    error: float
    std_error: float


def central_sum_baseline(
    *, exact: float, sensitivity: float, epsilon: float, delta: float, rng: Any
) -> CentralBaseline:
    """Best of Laplace (ε-DP, so also (ε, δ)) and analytic Gaussian (ε, δ) on a sum.

    The mechanism with the smaller standard deviation is used and run once.
    """
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    lap = LaplaceMechanism(eps0=eps, sensitivity=sensitivity)
    gauss = GaussianMechanism(epsilon=eps, delta=d, sensitivity=sensitivity)
    lap_sd = math.sqrt(2.0) * lap.scale
    gen = as_rng(rng)
    if lap_sd <= gauss.sigma:
        value = float(lap.randomize(np.array([exact]), rng=gen)[0])
        return CentralBaseline("Laplace", value, value - exact, lap_sd)
    value = float(gauss.randomize(np.array([exact]), rng=gen)[0])
    return CentralBaseline("Gaussian (analytic)", value, value - exact, gauss.sigma)


@dataclass(frozen=True)
class SumRun:
    """One run of a shuffle-model sum protocol.

    Parameters
    ----------
    protocol
        Which protocol ran.
    n
        The number of users.
    estimate, exact
        The estimated and the true sum (the true sum for evaluation only).
    std_error
        Standard error of the estimate.
    privacy
        The certificate, with the target recorded.
    messages
        The number of messages shuffled.
    central
        The central-model baseline at the same (ε, δ).
    parameters
        The protocol's parameters (λ, r, ε0 ...).
    notes
        Remarks on the run.
    traffic
        Per-hop traffic when run on the engine, else ``None``.

    See Also
    --------
    run_bit_sum, run_real_sum, run_single_message_sum : Produce it.
    """

    protocol: str
    n: int
    estimate: float
    exact: float
    std_error: float
    privacy: PrivacyStatement
    messages: int
    central: CentralBaseline
    parameters: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    traffic: dict[str, Any] | None = None

    @property
    def error(self) -> float:
        """``estimate − exact``."""
        return self.estimate - self.exact

    @property
    def ci95(self) -> tuple[float, float]:
        """Normal-approximation 95 % interval ``estimate ± 1.96 · std_error``."""
        half = 1.959963984540054 * self.std_error
        return self.estimate - half, self.estimate + half

    def as_record(self) -> dict[str, Any]:
        """Flat JSON-able record (stable keys)."""
        low, high = self.ci95
        return {
            "protocol": self.protocol,
            "n": self.n,
            "estimate": self.estimate,
            "exact": self.exact,
            "error": self.error,
            "std_error": self.std_error,
            "ci95_low": low,
            "ci95_high": high,
            **privacy_record(self.privacy),
            "messages": self.messages,
            "messages_per_user": self.messages / self.n,
            "central_mechanism": self.central.mechanism,
            "central_estimate": self.central.estimate,
            "central_error": self.central.error,
            "central_std_error": self.central.std_error,
            **traffic_record(self.traffic),
            **{f"param_{k}": v for k, v in self.parameters.items()},
        }


#: Keys of :func:`traffic_record` (stable: ``None`` when the run did not use the engine).
TRAFFIC_KEYS = ("users_to_shuffler", "shuffler_to_analyzer", "bytes_on_wire", "secure_shuffle")


def traffic_record(traffic: dict[str, Any] | None) -> dict[str, Any]:
    """``engine`` flag and per-hop message counts of a run (see
    :meth:`crowdhide.protocols.engine_plan.EngineRun.traffic`)."""
    record: dict[str, Any] = {"engine": traffic is not None}
    record.update({key: None if traffic is None else traffic[key] for key in TRAFFIC_KEYS})
    return record


def privacy_record(privacy: PrivacyStatement) -> dict[str, Any]:
    """Flat keys of a run's privacy statement: ``epsilon, delta, target_epsilon, bound,
    target_met, eps0`` (the form of the CLI tables and JSON records).

    Examples
    --------
    >>> s = PrivacyStatement(epsilon=0.9, delta=1e-6, source="b", inputs={"eps0": 2.0})
    >>> privacy_record(s.with_target(epsilon=1.0, delta=1e-6))["target_met"]
    True
    """
    target = privacy.target
    return {
        "epsilon": privacy.epsilon,
        "delta": privacy.delta,
        "target_epsilon": None if target is None else target.epsilon,
        "bound": privacy.source,
        "target_met": bool(privacy.meets_target),
        "eps0": privacy.inputs.get("eps0"),
    }
