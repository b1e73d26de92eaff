"""The one calibrator of the countermeasures: the cheapest (σ, n, d) meeting (ε, δ).

Used by ``crowdhide scrambler calibrate`` and by the planner of execution plans
(:func:`crowdhide.plans.planner.choose_countermeasures`), with the one cost model of
:mod:`crowdhide.plans.countermeasure_costs`.

For every σ on a grid the search tries the local randomizer R_σ^d with the fewest flooding
dummies (closed form, Theorem 2 of Ladjel, Anciaux, Bellet, Scerri) and, for every
scrambler size n, the scrambler layer with the fewest dummies d whose certified δ at ε is at
most δ (δ is non-increasing in d: extra uniform dummies are post-processing). It keeps the
cheapest configuration within the constraints
(:func:`~crowdhide.plans.countermeasure_costs.cost_rank`).
(σ, n) pairs are visited by their cheapest cost, and only the d that would beat the best
configuration so far are certified (branch and bound); the smallest sufficient d and the
largest affordable d are found by :func:`~crowdhide.accounting.roots.calibrate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.roots import calibrate
from crowdhide.accounting.scrambler import bounds
from crowdhide.accounting.scrambler.accountant import scrambler_epsilon
from crowdhide.accounting.scrambler.curves import log_tail_for
from crowdhide.accounting.scrambler.local import (
    local_randomizer_delta,
    local_randomizer_epsilon,
    local_randomizer_statement,
)
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import UnmetTargetError
from crowdhide.plans.countermeasure_costs import (
    Constraints,
    RouteCosts,
    cost_rank,
    route_costs,
)

__all__ = [
    "N_GRID",
    "SIGMA_GRID",
    "CountermeasureCalibration",
    "ScramblerCertifier",
    "calibrate_countermeasures",
    "search_countermeasures",
]

SIGMA_GRID: tuple[float, ...] = (
    0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95,
)  # fmt: skip
N_GRID: tuple[int, ...] = (10, 20, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000)

#: δ at the target ε of the scrambler layer (σ, n, d): ``delta_at(sigma, n, d) -> δ``.
DeltaAt = Callable[[float, int, int], float]
#: The final statement of a chosen scrambler layer: ``certify(sigma, n, d) -> statement``.
Certify = Callable[[float, int, int], PrivacyStatement]


@dataclass(frozen=True, slots=True, kw_only=True)
class CountermeasureCalibration:
    """The cheapest configuration meeting a target (ε, δ) under cost constraints.

    Attributes
    ----------
    privacy
        The statement of the chosen configuration, with the target recorded
        (``privacy.meets_target``); "not applicable" with the reason when nothing fits.
    feasible
        Whether a configuration on the search grid meets the target and the constraints.
    scheme
        ``"local"``, ``"scrambler"``, ``"none"`` (one target: nothing to hide) or ``None``.
    sigma, n, dummies, local_dummies
        The chosen parameters (``n`` is ``None`` without scramblers).
    costs
        Costs of the chosen configuration (``None`` when infeasible).
    reason
        Why nothing fits (empty when feasible).
    candidates_checked
        Number of configurations evaluated.
    """

    privacy: PrivacyStatement
    feasible: bool
    scheme: str | None = None
    sigma: float | None = None
    n: int | None = None
    dummies: int = 0
    local_dummies: int = 0
    costs: RouteCosts | None = None
    reason: str = ""
    candidates_checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Flat record: parameters, the statement's (ε, δ, source) and the main costs."""
        p = self.privacy
        out: dict[str, Any] = {
            "feasible": self.feasible,
            "scheme": self.scheme,
            "sigma": self.sigma,
            "n": self.n,
            "dummies": self.dummies,
            "local_dummies": self.local_dummies,
            "epsilon": p.epsilon if p.conditions_met else None,
            "delta": p.delta if p.conditions_met else None,
            "source": p.source,
            "kind": p.kind,
            "conditions_met": p.conditions_met,
            "target_epsilon": p.target.epsilon if p.target else None,
            "target_delta": p.target.delta if p.target else None,
            "meets_target": p.meets_target,
            "notes": list(p.notes),
            "reason": self.reason,
            "candidates_checked": self.candidates_checked,
        }
        if self.costs is not None:
            c = self.costs
            out.update(
                overhead=c.overhead,
                load_at_fixed_utility=c.load_at_fixed_utility,
                device_channels=c.device_channels,
                channels_per_scrambler=c.channels_per_scrambler,
                channels_per_target=c.channels_per_target,
                extra_consents_relative=c.extra_consents_relative,
                real_fraction=c.real_fraction,
            )
        return out


@dataclass
class _Search:
    """State of one search: the route, the target, the limits, the best option so far."""

    sources: int
    targets: int
    epsilon: float
    delta: float
    limits: Constraints
    delta_at: DeltaAt
    best: tuple[RouteCosts, float, int, int, int | None] | None = None  # costs, σ, dl, d, n
    checked: int = 0
    _rank: tuple[float, float, float] = field(default=(math.inf, math.inf, math.inf))

    def offer(self, costs: RouteCosts, sigma: float, local: int, d: int, n: int | None) -> None:
        if self.limits.fits(costs) and cost_rank(costs) < self._rank:
            self.best, self._rank = (costs, sigma, local, d, n), cost_rank(costs)

    def costs(self, sigma: float, n: int, d: int) -> RouteCosts:
        return route_costs(sources=self.sources, targets=self.targets, sigma=sigma, n=n, dummies=d)

    def local(self, sigma: float) -> None:
        """Sampling + the fewest flooding dummies reaching ε (Theorem 2, closed form)."""
        T = self.targets

        def passes(d: float) -> bool:
            self.checked += 1
            return local_randomizer_epsilon(targets=T, sigma=sigma, dummies=int(d)) <= self.epsilon

        # d = T − 1 is a broadcast (ε = 0), so a passing d always exists.
        d = int(calibrate(passes, low=0, high=T - 1, increasing=True, integer=True))
        self.offer(
            route_costs(sources=self.sources, targets=T, sigma=sigma, local_dummies=d),
            sigma, d, 0, None,
        )  # fmt: skip

    def scrambler(self, sigma: float, n: int, ds: Sequence[int]) -> None:
        """The fewest dummies d in ``ds`` (sorted) certifying the target at (σ, n), among
        those that fit the limits and beat the best option so far."""

        def affordable(i: float) -> bool:
            c = self.costs(sigma, n, ds[int(i)])
            return self.limits.fits(c) and cost_rank(c) < self._rank

        def certified(i: float) -> bool:
            self.checked += 1
            return self.delta_at(sigma, n, ds[int(i)]) <= self.delta

        try:
            # The cost grows with d: the largest affordable d, then the smallest certified.
            top = _search_index(affordable, len(ds) - 1, increasing=False)
            if sigma == 0.0 and ds[top] == 0:
                return  # without sampling nor dummies the target reveals everything
            i = _search_index(certified, top, increasing=True)
        except UnmetTargetError:
            return
        d = ds[i]
        self.offer(self.costs(sigma, n, d), sigma, 0, d, n)


def _search_index(passes: Callable[[float], bool], top: int, *, increasing: bool) -> int:
    """The first (``increasing``) or last passing index in ``0..top`` of a monotone
    predicate; :class:`UnmetTargetError` when none passes."""
    if top == 0:
        if not passes(0):
            raise UnmetTargetError("no index in [0, 0] meets the target")
        return 0
    return int(calibrate(passes, low=0, high=top, increasing=increasing, integer=True))


def search_countermeasures(
    *,
    sources: int,
    targets: int,
    epsilon: float,
    delta: float,
    delta_at: DeltaAt,
    certify: Certify,
    constraints: Constraints | None = None,
    sigmas: Sequence[float] = SIGMA_GRID,
    ns: Sequence[int] = N_GRID,
    dummies: Sequence[int] = range(20_001),
) -> CountermeasureCalibration:
    """Cheapest countermeasures making one route (ε, δ)-DP within the constraints.

    Parameters
    ----------
    sources, targets
        S senders and T targets of the route.
    epsilon, delta
        Target (ε, δ) of the route's cluster.
    delta_at
        Certified δ at ``epsilon`` of a scrambler layer ``(σ, n, d)`` (non-increasing in d).
    certify
        The statement reported for the chosen scrambler layer (ε at ``delta``).
    constraints
        Cost limits.
    sigmas, ns, dummies
        Search grids for σ, n and d (``dummies`` sorted; a ``range`` is searched without
        being materialised).
    """
    S = check_int("sources", sources, low=1)
    T = check_int("targets", targets, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    dlt = check_probability("delta", delta)
    limits = constraints or Constraints()
    if T == 1:
        statement = PrivacyStatement(
            epsilon=0.0, delta=0.0, kind="exact", source="data-independent",
            notes=("a single target: nothing to hide",),
        )  # fmt: skip
        return CountermeasureCalibration(
            privacy=statement.with_target(epsilon=eps, delta=dlt), feasible=True, scheme="none",
            sigma=0.0, costs=route_costs(sources=S, targets=T),
        )  # fmt: skip
    search = _Search(S, T, eps, dlt, limits, delta_at)
    grid: list[tuple[float, int]] = []
    for sigma in sigmas:
        s = check_probability("sigma", sigma, allow_one=False)
        search.local(s)
        for n in ns:
            if n <= S and (limits.max_channels is None or n + T <= limits.max_channels):
                grid.append((s, n))
    # Branch and bound: visit (σ, n) by their cheapest cost; the cost grows with d.
    grid.sort(key=lambda sn: cost_rank(search.costs(sn[0], sn[1], dummies[0])))
    for s, n in grid:
        search.scrambler(s, n, dummies)
    return _result(search, certify)


def _result(search: _Search, certify: Certify) -> CountermeasureCalibration:
    eps, dlt, T = search.epsilon, search.delta, search.targets
    if search.best is None:
        floor_d = math.ceil(math.log(dlt) / math.log1p(-1.0 / T)) if dlt > 0 else math.inf
        reason = (
            "no configuration on the grid meets the target under the constraints"
            f" (σ=0 alone needs d >= ln δ/ln(1−1/T) = {floor_d}; smaller ε needs larger σ·n + d,"
            " i.e. more channels, overhead or consents)"
        )
        statement = PrivacyStatement.not_applicable(source="calibration", reason=reason)
        return CountermeasureCalibration(
            privacy=statement.with_target(epsilon=eps, delta=dlt), feasible=False,
            reason=reason, candidates_checked=search.checked,
        )  # fmt: skip
    costs, sigma, local, d, n = search.best
    if n is None:
        statement = local_randomizer_statement(targets=T, sigma=sigma, dummies=local)
    else:
        statement = certify(sigma, n, d)
    statement = statement.with_target(epsilon=eps, delta=dlt)
    return CountermeasureCalibration(
        privacy=statement, feasible=bool(statement.meets_target),
        scheme="local" if n is None else "scrambler", sigma=sigma, n=n, dummies=d,
        local_dummies=local, costs=costs, candidates_checked=search.checked,
        reason="" if statement.meets_target else "the chosen configuration misses the target",
    )  # fmt: skip


class ScramblerCertifier:
    """δ(ε) and ε(δ) of scrambler layers for :func:`search_countermeasures`: Lemma 2 with
    exact expectation (``lemma2-exact``) and the local bound, whichever is smaller."""

    def __init__(self, *, targets: int, epsilon: float, delta: float) -> None:
        self.targets, self.epsilon, self.delta = targets, epsilon, delta
        self._tail = log_tail_for(delta)

    def delta_at(self, sigma: float, n: int, d: int) -> float:
        T, eps = self.targets, self.epsilon
        if T == 1 or sigma >= 1.0:
            return 0.0
        local = local_randomizer_delta(targets=T, sigma=sigma, epsilon=eps)
        if local == 0.0:
            return 0.0
        ev = bounds.Lemma2Exact(targets=T, sigma=sigma, n=n, dummies=d, log_tail=self._tail)
        return min(local, ev.delta(eps))

    def certify(self, sigma: float, n: int, d: int) -> PrivacyStatement:
        return scrambler_epsilon(
            targets=self.targets, sigma=sigma, n=n, dummies=d, delta=self.delta,
            method="lemma2-exact",
        )  # fmt: skip


def calibrate_countermeasures(
    *,
    targets: int,
    epsilon: float,
    delta: float,
    max_channels: float | None = None,
    max_overhead: float | None = None,
    max_consents: float | None = None,
    sources: int = 10_000,
    max_dummies: int = 20_000,
) -> CountermeasureCalibration:
    """Cheapest (σ, n, d) whose certified guarantee meets (ε, δ) under the constraints.

    Candidates: the local scheme (R_σ^d, pure ε, Theorem 2) and the scrambler scheme
    (A_σ^{n,d}, certified with ``lemma2-exact``) on :data:`SIGMA_GRID` × :data:`N_GRID`
    (plus the largest n the channel budget allows) and every d up to ``max_dummies``.

    Parameters
    ----------
    targets
        Number of targets T.
    epsilon, delta
        Target guarantee (per cluster).
    max_channels
        Maximum secure channels per device running a countermeasure (scrambler: n + T;
        flooding source: d + 1).
    max_overhead
        Maximum overhead: messages of the protected route / messages of the unprotected
        route (>= 1).
    max_consents
        Maximum extra consents relative to S.
    sources
        Senders of the route (S).
    max_dummies
        Largest d considered.

    Raises
    ------
    InvalidParameterError
        For a limit out of range (e.g. ``max_overhead < 1``).

    Examples
    --------
    >>> cal = calibrate_countermeasures(targets=20, epsilon=1.0, delta=1e-4, max_channels=620)
    >>> cal.feasible, cal.privacy.meets_target, cal.costs.device_channels <= 620
    (True, True, True)
    """
    T = check_int("targets", targets, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    mc = None if max_channels is None else check_real("max_channels", max_channels, low=1.0)
    limits = Constraints(
        max_channels=None if mc is None else math.floor(mc + 1e-9),
        max_overhead=max_overhead,
        max_consents=max_consents,
    )
    ns = set(N_GRID)
    if limits.max_channels is not None and limits.max_channels - T >= 1:
        ns.add(limits.max_channels - T)  # the largest scrambler the channel budget allows
    certifier = ScramblerCertifier(targets=T, epsilon=eps, delta=dl)
    return search_countermeasures(
        sources=check_int("sources", sources, low=1),
        targets=T,
        epsilon=eps,
        delta=dl,
        delta_at=certifier.delta_at,
        certify=certifier.certify,
        constraints=limits,
        ns=sorted(ns),
        dummies=range(check_int("max_dummies", max_dummies, low=0) + 1),
    )
