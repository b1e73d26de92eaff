"""Per-cluster privacy statements and the end-to-end (ε, δ) of a plan (Theorem 1).

The per-cluster guarantees come from a *countermeasure accountant*, injected so that plans
and the engine can be certified (and tested) with a chosen accountant:

* :class:`ScramblerAccountant` (the default) uses the scrambler accountant
  :mod:`crowdhide.accounting.scrambler.accountant` (``scrambler_epsilon``,
  ``scrambler_delta``), each answer being the better of its statement and the
  local-randomizer bound;
* :class:`LocalBoundAccountant` certifies a source's sampling with Theorem 2 of Ladjel,
  Anciaux, Bellet, Scerri (closed form, exact — tested against brute-force enumeration) and
  a scrambler cluster with the same local bound, which is valid because a scrambler only
  post-processes the locally randomized messages (its dummies and shuffle do not look at
  the data). It is sound but ignores the amplification the scramblers give.

Every answer is a :class:`~crowdhide.accounting.statement.PrivacyStatement`; the plan-level
result :class:`PlanPrivacy` holds the plan's statement and one row per cluster and per data
path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Protocol

from crowdhide._validation import check_int, check_real
from crowdhide.accounting.scrambler.accountant import scrambler_delta, scrambler_epsilon
from crowdhide.accounting.scrambler.local import local_randomizer_statement, sampling_epsilon
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.plans.model import Cluster, ExecutionPlan
from crowdhide.plans.semantics import compose_along_paths

__all__ = [
    "ClusterPrivacy",
    "CountermeasureAccountant",
    "LocalBoundAccountant",
    "PathPrivacy",
    "PlanPrivacy",
    "ScramblerAccountant",
    "certify",
    "default_accountant",
    "even_share",
]


class CountermeasureAccountant(Protocol):
    """Certifies the clusters of a plan (injected into :func:`certify` and the planner)."""

    name: str

    def local(self, *, targets: int, sigma: float, dummies: int) -> PrivacyStatement:
        """Sampling + local flooding at the sources (no scramblers)."""

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> PrivacyStatement:
        """Sampling + one scrambler of ``n`` sources adding ``dummies`` (ε at ``delta``)."""

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        """Certified δ at ``epsilon`` for the uncapped scrambler (1.0 when unknown)."""


class LocalBoundAccountant:
    """Theorem 2 for sources; the same local bound (post-processing) for scramblers.

    Examples
    --------
    >>> a = LocalBoundAccountant()
    >>> c = a.scrambled(targets=20, sigma=0.5, n=100, dummies=50, delta=1e-4, capped=False)
    >>> (round(c.epsilon, 4), c.delta, c.source)
    (3.0445, 0.0, 'local-randomizer')
    """

    name = "local-bound"

    def local(self, *, targets: int, sigma: float, dummies: int) -> PrivacyStatement:
        return local_randomizer_statement(targets=targets, sigma=sigma, dummies=dummies)

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> PrivacyStatement:
        check_int("n", n, low=1)
        check_int("dummies", dummies, low=0)
        return PrivacyStatement(
            epsilon=sampling_epsilon(targets=targets, sigma=sigma),
            delta=0.0,
            source="local-randomizer",
            notes=(
                "scrambler amplification not counted (post-processing of the local randomizer)",
            ),
            inputs={"targets": targets, "sigma": sigma, "n": n, "dummies": dummies},
        )

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        eps0 = sampling_epsilon(targets=targets, sigma=sigma)
        return 0.0 if epsilon >= eps0 else 1.0


class ScramblerAccountant:
    """The scrambler accountant (:mod:`crowdhide.accounting.scrambler.accountant`) for plans.

    Each statement is the better of the accountant's answer (``method``, default ``best``)
    and the local-randomizer bound (always valid, by post-processing).

    Examples
    --------
    >>> c = ScramblerAccountant().scrambled(targets=20, sigma=0.2, n=100, dummies=50,
    ...                                     delta=1e-4, capped=False)
    >>> c.source, round(c.epsilon, 4)
    ('lemma2-exact', 2.3268)
    """

    name = "scrambler"

    def __init__(self, *, method: str = "best") -> None:
        self._method = method
        self._local = LocalBoundAccountant()

    def local(self, *, targets: int, sigma: float, dummies: int) -> PrivacyStatement:
        return local_randomizer_statement(targets=targets, sigma=sigma, dummies=dummies)

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> PrivacyStatement:
        fallback = self._local.scrambled(
            targets=targets, sigma=sigma, n=n, dummies=dummies, delta=delta, capped=capped
        )
        result = scrambler_epsilon(
            targets=targets,
            sigma=sigma,
            n=n,
            dummies=dummies,
            delta=delta,
            method=self._method,
            capped=capped,
        )
        if not result.is_certificate or not result.epsilon < fallback.epsilon:
            return fallback
        return result

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        if epsilon >= sampling_epsilon(targets=targets, sigma=sigma):
            return 0.0
        result = scrambler_delta(
            targets=targets, sigma=sigma, n=n, dummies=dummies, epsilon=epsilon, method=self._method
        )
        return result.delta if result.is_certificate else 1.0


def default_accountant() -> CountermeasureAccountant:
    """The scrambler accountant (:class:`ScramblerAccountant`)."""
    return ScramblerAccountant()


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterPrivacy:
    """(ε_i, δ_i) of one cluster (the worst over its parallel copies), with its statement."""

    cluster: str
    route: str | None
    targets: int
    count: int
    privacy: PrivacyStatement

    def to_dict(self) -> dict[str, Any]:
        """Plain record for JSON/table output."""
        p = self.privacy
        return {
            "cluster": self.cluster,
            "route": self.route,
            "targets": self.targets,
            "parallel_clusters": self.count,
            "epsilon": p.epsilon,
            "delta": p.delta,
            "method": p.source,
            "note": "; ".join(p.notes),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PathPrivacy:
    """Theorem 1 along one data path: the sum over the clusters it crosses."""

    origin: str
    clusters: tuple[str, ...]
    privacy: PrivacyStatement


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanPrivacy:
    """End-to-end privacy of a plan's communication graph (Theorem 1): the plan's statement
    (the worst data path) with one row per cluster and per data path."""

    privacy: PrivacyStatement
    accountant: str
    clusters: tuple[ClusterPrivacy, ...]
    paths: tuple[PathPrivacy, ...]


def even_share(total: float, parts: int) -> float:
    """``total / parts`` rounded down until ``parts`` shares, added one by one, stay <= total.

    In floating point, six copies of 1e-4 / 6 add up to 1.0000000000000002e-4: a path's δ
    would exceed the budget by an ulp and a met target would read as missed.

    Examples
    --------
    >>> share = even_share(1e-4, 6)
    >>> sum([share] * 6) <= 1e-4
    True
    """
    share = total / parts
    while share > 0.0:
        running = 0.0
        for _ in range(parts):
            running += share
        if running <= total:
            break
        share = math.nextafter(share, 0.0)
    return share


def certify(
    plan: ExecutionPlan,
    *,
    delta: float,
    accountant: CountermeasureAccountant | None = None,
) -> PlanPrivacy:
    """Certify ``plan``: per-cluster (ε_i, δ_i), then Theorem 1 per data path.

    ``delta`` is the budget of the whole plan; it is split evenly over the largest number
    of data-dependent clusters on one path, so every path's δ sum stays ``<= delta``.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.plans import PlanBuilder, protect
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"a": np.arange(8) % 4, "b": np.arange(8) % 2})
    >>> _ = b.compute("A", size=4, process=lambda i, r: {})
    >>> _ = b.compute("B", size=2, process=lambda i, r: {})
    >>> _ = b.route("S", "A", by=lambda s: s["a"])
    >>> _ = b.route("S", "B", by=lambda s: s["b"])
    >>> cert = certify(protect(b.build(), sigma=0.5), delta=1e-6,
    ...                accountant=LocalBoundAccountant())
    >>> bool(abs(cert.privacy.epsilon - (np.log(5) + np.log(3))) < 1e-12)  # Example 5: sum
    True
    """
    total_delta = check_real("delta", delta, low=0.0, high=1.0)
    acct: CountermeasureAccountant = accountant if accountant is not None else default_accountant()
    # Only scrambler clusters spend δ (the local randomizer is pure ε-DP): split δ evenly
    # over the largest number of them on one data path.
    scrambled = {
        c.name
        for c in plan.clusters()
        if c.data_dependent and c.route is not None and _has_scramblers(plan, c.route)
    }
    k = max(1, max((sum(n in scrambled for n in p.clusters) for p in plan.data_paths()), default=0))
    per_delta = even_share(total_delta, k)
    rows: list[ClusterPrivacy] = []
    notes: list[str] = []
    for cluster in plan.clusters():
        rows.append(_certify_cluster(plan, cluster, per_delta, acct))
        if cluster.adaptive:
            notes.append(
                f"{cluster.name}: routing depends on values computed from other users' data "
                "(e.g. centroids); as in Section V-B the certificate covers the communication "
                "pattern given those values, which are not themselves protected"
            )
    per_cluster = {c.cluster: (c.privacy.epsilon, c.privacy.delta) for c in rows}
    eps, dlt, path_rows = compose_along_paths(plan, per_cluster)
    statement = PrivacyStatement(
        epsilon=eps,
        delta=dlt,
        source=f"{acct.name} accountant, composed along data paths",
        notes=tuple(dict.fromkeys(notes)),
        inputs={"delta_budget": total_delta, "delta_per_scrambler_cluster": per_delta},
    )
    paths = tuple(
        PathPrivacy(
            origin=p.origin,
            clusters=p.clusters,
            privacy=PrivacyStatement(epsilon=e, delta=d, source="composition along the path"),
        )
        for p, e, d in path_rows
    )
    return PlanPrivacy(privacy=statement, accountant=acct.name, clusters=tuple(rows), paths=paths)


def _has_scramblers(plan: ExecutionPlan, route: str) -> bool:
    protection = plan.route(route).protection
    return protection is not None and protection.scrambler is not None


def _certify_cluster(
    plan: ExecutionPlan, cluster: Cluster, per_delta: float, acct: CountermeasureAccountant
) -> ClusterPrivacy:
    def make(privacy: PrivacyStatement) -> ClusterPrivacy:
        return ClusterPrivacy(
            cluster=cluster.name,
            route=cluster.route,
            targets=cluster.targets,
            count=cluster.count,
            privacy=privacy,
        )

    if not cluster.data_dependent:
        return make(
            PrivacyStatement(epsilon=0.0, delta=0.0, kind="exact", source="data-independent")
        )
    assert cluster.route is not None
    protection = plan.route(cluster.route).protection
    if protection is None:
        return make(
            PrivacyStatement(
                epsilon=math.inf,
                delta=0.0,
                source="unprotected",
                notes=("the target reveals the routed value",),
            )
        )
    layer = protection.scrambler
    if layer is None:
        return make(
            acct.local(
                targets=cluster.targets, sigma=protection.sigma, dummies=protection.local_dummies
            )
        )
    results = [
        acct.scrambled(
            targets=cluster.targets,
            sigma=protection.sigma,
            n=n,
            dummies=layer.dummies,
            delta=per_delta,
            capped=layer.cap,
        )
        for n in cluster.partition_sizes
    ]
    worst = max(results, key=lambda r: (r.epsilon, r.delta))
    worst = replace(worst, delta=max(r.delta for r in results))
    if len(cluster.partition_sizes) > 1:
        worst = worst.with_notes(f"worst of partition sizes {cluster.partition_sizes}")
    return make(worst)
