"""The planner: countermeasures (σ, n, d) for every data route of a plan.

The planner targets (ε, δ) for the whole plan: with ``k`` data-dependent clusters on the
longest data path, each cluster gets (ε/k, δ/k) (composition along the path then gives at
most (ε, δ), Theorem 1 of Ladjel, Anciaux, Bellet, Scerri). Each route is calibrated by
the one countermeasure calibrator,
:func:`crowdhide.plans.countermeasure_calibration.search_countermeasures`, with the
one cost model of :mod:`crowdhide.plans.countermeasure_costs` (overhead = messages of
the protected route / messages of the unprotected route) and the plan's accountant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError
from crowdhide.plans.certify import CountermeasureAccountant, default_accountant
from crowdhide.plans.countermeasure_calibration import search_countermeasures
from crowdhide.plans.countermeasure_costs import Constraints, RouteCosts
from crowdhide.plans.model import ExecutionPlan
from crowdhide.plans.semantics import data_clusters_per_path, protect

__all__ = [
    "DEFAULT_DS",
    "DEFAULT_NS",
    "DEFAULT_SIGMAS",
    "CountermeasureChoice",
    "choose_countermeasures",
    "plan_protection",
]

DEFAULT_SIGMAS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
DEFAULT_NS: tuple[int, ...] = (10, 20, 50, 100, 200, 500, 1000)
DEFAULT_DS: tuple[int, ...] = (0, 10, 20, 50, 100, 200, 500, 1000, 2000)


@dataclass(frozen=True, slots=True, kw_only=True)
class CountermeasureChoice:
    """The countermeasures chosen for routes with S sources and T targets.

    Attributes
    ----------
    sigma, local_dummies, n, d
        Sampling rate, flooding dummies per source, sources per scrambler (``None``: no
        scramblers) and dummies per scrambler.
    privacy
        The cluster's statement (ε_i, δ_i) for this choice.
    costs
        Costs of the route.
    candidates
        Configurations evaluated by the search.
    """

    sigma: float
    local_dummies: int
    n: int | None
    d: int
    privacy: PrivacyStatement
    costs: RouteCosts
    candidates: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain record (the cluster's ε, δ and source as ``epsilon_cluster``,
        ``delta_cluster`` and ``method``)."""
        return {
            "sigma": self.sigma,
            "local_dummies": self.local_dummies,
            "n": self.n,
            "d": self.d,
            "epsilon_cluster": self.privacy.epsilon,
            "delta_cluster": self.privacy.delta,
            "method": self.privacy.source,
            "costs": self.costs.to_dict(),
            "candidates": self.candidates,
        }


def choose_countermeasures(
    *,
    sources: int,
    targets: int,
    epsilon: float,
    delta: float,
    constraints: Constraints | None = None,
    accountant: CountermeasureAccountant | None = None,
    sigmas: Sequence[float] = DEFAULT_SIGMAS,
    ns: Sequence[int] = DEFAULT_NS,
    ds: Sequence[int] = DEFAULT_DS,
) -> CountermeasureChoice:
    """Cheapest countermeasures making one cluster (ε, δ)-DP within the constraints.

    Parameters
    ----------
    sources, targets
        S senders and T targets of the route.
    epsilon, delta
        Per-cluster target (ε_i, δ_i).
    constraints
        Cost limits.
    accountant
        Countermeasure accountant (default :func:`~crowdhide.plans.certify.default_accountant`).
    sigmas, ns, ds
        Search grids for σ, n and d.

    Raises
    ------
    InvalidParameterError
        When nothing on the grids reaches the target within the constraints.

    Examples
    --------
    >>> from crowdhide.plans.certify import LocalBoundAccountant
    >>> c = choose_countermeasures(sources=1000, targets=20, epsilon=2.0, delta=1e-4,
    ...                            accountant=LocalBoundAccountant())
    >>> (c.sigma, c.local_dummies, c.n, round(c.privacy.epsilon, 3))
    (0.7, 1, None, 1.665)
    """
    S = check_int("sources", sources, low=1)
    T = check_int("targets", targets, low=1)
    eps = check_real("privacy.epsilon", epsilon, low=0.0, low_open=True)
    dlt = check_probability("privacy.delta", delta)
    limits = constraints or Constraints()
    acct = accountant if accountant is not None else default_accountant()

    def delta_at(sigma: float, n: int, d: int) -> float:
        return acct.scrambled_delta(targets=T, sigma=sigma, n=n, dummies=d, epsilon=eps)

    def certify(sigma: float, n: int, d: int) -> PrivacyStatement:
        return acct.scrambled(targets=T, sigma=sigma, n=n, dummies=d, delta=dlt, capped=False)

    found = search_countermeasures(
        sources=S,
        targets=T,
        epsilon=eps,
        delta=dlt,
        delta_at=delta_at,
        certify=certify,
        constraints=limits,
        sigmas=sigmas,
        ns=ns,
        dummies=sorted(ds),
    )
    if found.costs is None or found.sigma is None:
        raise _unreachable(eps, dlt, S, T, limits)
    return CountermeasureChoice(
        sigma=found.sigma,
        local_dummies=found.local_dummies,
        n=found.n,
        d=found.dummies,
        privacy=found.privacy,
        costs=found.costs,
        candidates=found.candidates_checked,
    )


def _unreachable(eps: float, dlt: float, S: int, T: int, limits: Constraints) -> ValueError:
    return InvalidParameterError(
        f"no countermeasure reaches (epsilon={eps:g}, delta={dlt:g}) per cluster for "
        f"S={S}, T={T} within the constraints {limits.to_dict()} and the search grids; "
        "relax privacy.epsilon or the constraints"
    )


def plan_protection(
    plan: ExecutionPlan,
    *,
    epsilon: float,
    delta: float,
    constraints: Constraints | None = None,
    accountant: CountermeasureAccountant | None = None,
    sigmas: Sequence[float] = DEFAULT_SIGMAS,
    ns: Sequence[int] = DEFAULT_NS,
    ds: Sequence[int] = DEFAULT_DS,
) -> tuple[ExecutionPlan, dict[str, CountermeasureChoice]]:
    """Protect every data route of ``plan`` so the whole plan is (ε, δ)-DP (Theorem 1).

    Returns the transformed plan and the choice per route.
    """
    eps = check_real("privacy.epsilon", epsilon, low=0.0, low_open=True)
    dlt = check_probability("privacy.delta", delta)
    k = max(1, data_clusters_per_path(plan))
    acct = accountant if accountant is not None else default_accountant()
    cache: dict[tuple[int, int], CountermeasureChoice] = {}
    choices: dict[str, CountermeasureChoice] = {}
    result = plan
    for route in plan.routes:
        if route.kind != "data":
            continue
        S = plan.group(route.sender).size
        T = plan.group(route.receiver).size
        if (S, T) not in cache:
            cache[(S, T)] = choose_countermeasures(
                sources=S,
                targets=T,
                epsilon=eps / k,
                delta=dlt / k,
                constraints=constraints,
                accountant=acct,
                sigmas=sigmas,
                ns=ns,
                ds=ds,
            )
        choice = cache[(S, T)]
        choices[route.name] = choice
        if T == 1:
            continue
        result = protect(
            result,
            route=route.name,
            sigma=choice.sigma,
            local_dummies=choice.local_dummies,
            per_scrambler=choice.n,
            dummies=choice.d,
        )
    return result, choices
