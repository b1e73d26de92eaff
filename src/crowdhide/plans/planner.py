"""Costs of the countermeasures and the planner choosing σ, n, d per cluster.

Costs follow Sections III-C, IV-D and II-E of seed 000 (corrected forms, seed note §3.6
and §5.7), per data route with S senders and T targets:

* messages: unprotected ``S``; local flooding ``S(d+1)``; scramblers ``S + S + ⌈S/n⌉·d``
  (source→scrambler, then the n forwarded messages and d dummies of each scrambler);
* overhead: messages / unprotected messages;
* channels: a scrambler opens ``n + T`` channels; a target receives from ``⌈S/n⌉``
  scramblers (``S`` sources when unprotected);
* utility: real tuples used ``S(1−σ+σ/T)`` in expectation (footnote 5, convention U), so
  keeping S real contributions takes ``S/(1−σ+σ/T) − S`` extra consents (the paper's
  ``S/(1−σ)`` ignores the σ/T term);
* load at fixed utility: messages per unprotected message when enough extra users join to
  keep S real contributions, ``messages / (S(1−σ+σ/T))`` — the planner's cost.

The planner targets (ε, δ) for the whole plan: with ``k`` data-dependent clusters on the
longest data path, each cluster gets (ε/k, δ/k) (Theorem 1 then gives at most (ε, δ)). For
every σ on a grid it tries the local randomizer with the fewest flooding dummies (closed
form, Theorem 2) and, for every n, the scrambler layer with the fewest dummies d whose
certified δ at ε/k is at most δ/k; it keeps the cheapest that meets the constraints
(least load at fixed utility, then fewest consents, then fewest channels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.plans.certify import (
    CountermeasureAccountant,
    default_accountant,
    local_sampling_epsilon,
)
from crowdhide.plans.model import ExecutionPlan, data_clusters_per_path, protect

__all__ = [
    "Constraints",
    "CountermeasureChoice",
    "RouteCosts",
    "choose_countermeasures",
    "plan_protection",
    "route_costs",
]

DEFAULT_SIGMAS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
DEFAULT_NS: tuple[int, ...] = (10, 20, 50, 100, 200, 500, 1000)
DEFAULT_DS: tuple[int, ...] = (0, 10, 20, 50, 100, 200, 500, 1000, 2000)


@dataclass(frozen=True)
class Constraints:
    """Limits on a plan's cost (``None`` = no limit).

    Parameters
    ----------
    max_channels
        Secure channels per device and route (a scrambler opens n + T, a flooding source
        d + 1).
    max_overhead
        Messages of a protected route / messages of the unprotected route (>= 1).
    max_consents
        Extra consents needed to keep the utility, as a fraction of S (e.g. 0.25).
    """

    max_channels: int | None = None
    max_overhead: float | None = None
    max_consents: float | None = None

    def __post_init__(self) -> None:
        if self.max_channels is not None:
            object.__setattr__(
                self,
                "max_channels",
                check_int("constraints.max_channels", self.max_channels, low=2),
            )
        if self.max_overhead is not None:
            object.__setattr__(
                self,
                "max_overhead",
                check_real("constraints.max_overhead", self.max_overhead, low=1.0),
            )
        if self.max_consents is not None:
            object.__setattr__(
                self,
                "max_consents",
                check_real("constraints.max_consents", self.max_consents, low=0.0),
            )


@dataclass(frozen=True)
class RouteCosts:
    """Costs of one protected data route (see the module docstring)."""

    messages: int
    unprotected_messages: int
    added_messages: int
    overhead: float
    scramblers: int
    channels_per_scrambler: int
    channels_per_source: int
    channels_per_target: int
    expected_used: float
    extra_consents: int
    load_at_fixed_utility: float

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        return asdict(self)


def route_costs(
    *,
    sources: int,
    targets: int,
    sigma: float = 0.0,
    n: int | None = None,
    dummies: int = 0,
    local_dummies: int = 0,
) -> RouteCosts:
    """Costs of a data route with S sources and T targets under the countermeasures.

    Examples
    --------
    >>> c = route_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=50)
    >>> c.messages, c.scramblers, c.channels_per_scrambler, round(c.overhead, 2)
    (25000, 100, 120, 2.5)
    """
    S = check_int("sources", sources, low=1)
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma, allow_one=False)
    d = check_int("dummies", dummies, low=0)
    dl = check_int("local_dummies", local_dummies, low=0, high=T - 1)
    keep = 1.0 - s + s / T
    if n is None:
        messages = S * (dl + 1)
        scramblers = 0
        per_scrambler = 0
        per_target = S
    else:
        size = check_int("n", n, low=1)
        scramblers = -(-S // size)
        messages = 2 * S + scramblers * d
        per_scrambler = min(size, S) + T
        per_target = scramblers
    return RouteCosts(
        messages=messages,
        unprotected_messages=S,
        added_messages=messages - S,
        overhead=messages / S,
        scramblers=scramblers,
        channels_per_scrambler=per_scrambler,
        channels_per_source=dl + 1 if n is None else 1,
        channels_per_target=per_target,
        expected_used=S * keep,
        extra_consents=math.ceil(S / keep - 1e-9) - S,
        load_at_fixed_utility=messages / keep / S,
    )


@dataclass(frozen=True)
class CountermeasureChoice:
    """The planner's choice for routes with S sources and T targets."""

    sigma: float
    local_dummies: int
    n: int | None
    d: int
    epsilon_cluster: float
    delta_cluster: float
    method: str
    costs: RouteCosts
    candidates: int

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        record = asdict(self)
        record["costs"] = self.costs.to_dict()
        return record


def _fits(costs: RouteCosts, constraints: Constraints, sources: int) -> bool:
    if constraints.max_overhead is not None and costs.overhead > constraints.max_overhead + 1e-12:
        return False
    if (
        constraints.max_consents is not None
        and costs.extra_consents > constraints.max_consents * sources + 1e-9
    ):
        return False
    return not (
        constraints.max_channels is not None
        and max(costs.channels_per_scrambler, costs.channels_per_source) > constraints.max_channels
    )


def _rank(choice: CountermeasureChoice) -> tuple[float, float, float]:
    c = choice.costs
    return (round(c.load_at_fixed_utility, 9), c.extra_consents, c.channels_per_scrambler)


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

    Examples
    --------
    >>> from crowdhide.plans.certify import LocalBoundAccountant
    >>> c = choose_countermeasures(sources=1000, targets=20, epsilon=2.0, delta=1e-4,
    ...                            accountant=LocalBoundAccountant())
    >>> (c.sigma, c.local_dummies, c.n, round(c.epsilon_cluster, 3))
    (0.7, 1, None, 1.665)
    """
    S = check_int("sources", sources, low=1)
    T = check_int("targets", targets, low=1)
    eps = check_real("privacy.epsilon", epsilon, low=0.0, low_open=True)
    dlt = check_probability("privacy.delta", delta)
    limits = constraints or Constraints()
    acct = accountant if accountant is not None else default_accountant()
    options: list[CountermeasureChoice] = []
    checked = 0
    if T == 1:
        return CountermeasureChoice(
            0.0, 0, None, 0, 0.0, 0.0, "data-independent", route_costs(sources=S, targets=T), 0
        )
    grid: list[tuple[float, int, list[int]]] = []
    for sigma in sigmas:
        s = check_probability("sigma", sigma, allow_one=False)
        # Local randomizer: the fewest flooding dummies reaching eps (Theorem 2).
        for dl in range(T):
            checked += 1
            e = local_sampling_epsilon(targets=T, sigma=s, dummies=dl)
            if e <= eps:
                costs = route_costs(sources=S, targets=T, sigma=s, local_dummies=dl)
                if _fits(costs, limits, S):
                    options.append(
                        CountermeasureChoice(s, dl, None, 0, e, 0.0, "theorem2", costs, 0)
                    )
                break
        for n in ns:
            if n > S or (limits.max_channels is not None and n + T > limits.max_channels):
                continue
            feasible = [
                d
                for d in sorted(ds)
                if _fits(route_costs(sources=S, targets=T, sigma=s, n=n, dummies=d), limits, S)
            ]
            if feasible and not (s == 0.0 and feasible[-1] == 0):
                grid.append((s, n, feasible))

    def cost(s: float, n: int, d: int) -> float:
        return route_costs(sources=S, targets=T, sigma=s, n=n, dummies=d).load_at_fixed_utility

    # Branch and bound: visit (σ, n) by their cheapest cost; the cost grows with d, so only
    # the d that would beat the best option so far are worth certifying.
    grid.sort(key=lambda item: cost(item[0], item[1], item[2][0]))
    for s, n, feasible in grid:
        bound = min((_rank(o)[0] for o in options), default=math.inf)
        cheaper = [d for d in feasible if cost(s, n, d) < bound]
        if not cheaper:
            continue
        checked += 1
        if acct.scrambled_delta(targets=T, sigma=s, n=n, dummies=cheaper[-1], epsilon=eps) > dlt:
            continue
        lo, hi = 0, len(cheaper) - 1  # δ is non-increasing in d: bisect the grid
        while lo < hi:
            mid = (lo + hi) // 2
            checked += 1
            if (
                acct.scrambled_delta(targets=T, sigma=s, n=n, dummies=cheaper[mid], epsilon=eps)
                <= dlt
            ):
                hi = mid
            else:
                lo = mid + 1
        d = cheaper[lo]
        costs = route_costs(sources=S, targets=T, sigma=s, n=n, dummies=d)
        options.append(CountermeasureChoice(s, 0, n, d, eps, dlt, "scrambler", costs, 0))
    if not options:
        raise ValueError(
            f"no countermeasure reaches (epsilon={eps:g}, delta={dlt:g}) per cluster for "
            f"S={S}, T={T} within the constraints {asdict(limits)} and the search grids; "
            "relax privacy.epsilon or the constraints"
        )
    best = min(options, key=_rank)
    if best.n is not None:
        cert = acct.scrambled(
            targets=T, sigma=best.sigma, n=best.n, dummies=best.d, delta=dlt, capped=False
        )
        best = CountermeasureChoice(
            best.sigma,
            0,
            best.n,
            best.d,
            min(cert.epsilon, eps),
            cert.delta,
            cert.method,
            best.costs,
            0,
        )
    return CountermeasureChoice(
        best.sigma,
        best.local_dummies,
        best.n,
        best.d,
        best.epsilon_cluster,
        best.delta_cluster,
        best.method,
        best.costs,
        checked,
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
