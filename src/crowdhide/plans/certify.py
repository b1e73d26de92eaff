"""Per-cluster certificates and the end-to-end (ε, δ) of a plan (Theorem 1).

The per-cluster guarantees come from a *countermeasure accountant*, injected so that plans
and the engine work (and are tested) without a particular implementation:

* :class:`ScramblerModuleAccountant` calls ``crowdhide.accounting.scrambler``
  (``local_randomizer_epsilon``, ``scrambler_epsilon``, ``scrambler_delta``);
* :class:`LocalBoundAccountant` needs nothing: it certifies a source's sampling with
  Theorem 2 (closed form, exact — tested against brute-force enumeration) and a scrambler
  cluster with the same local bound, which is valid because a scrambler only
  post-processes the locally randomized messages (its dummies and shuffle do not look at
  the data). It is sound but ignores the amplification the scramblers give.

:func:`default_accountant` picks the first when it is importable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.plans.model import Cluster, ExecutionPlan, theorem1

__all__ = [
    "ClusterCertificate",
    "CountermeasureAccountant",
    "LocalBoundAccountant",
    "PathCertificate",
    "PlanCertificate",
    "ScramblerModuleAccountant",
    "certify",
    "default_accountant",
    "local_sampling_epsilon",
]


def local_sampling_epsilon(*, targets: int, sigma: float, dummies: int = 0) -> float:
    """Theorem 2 of seed 000: pure ε of target sampling σ plus ``dummies`` flooding.

    ``ε = ln((1−σ)T / (σ(d+1)) + 1)`` for ``0 <= d <= T−2`` (the note checked by brute
    force that the formula is exact for d = 0 too); ``d = T−1`` is a broadcast (ε = 0);
    ``σ = 0`` with ``d < T−1`` gives ε = inf; ``T = 1`` gives 0. σ uses convention U.

    Examples
    --------
    >>> round(local_sampling_epsilon(targets=20, sigma=0.5, dummies=3), 6)  # ln 6
    1.791759
    >>> local_sampling_epsilon(targets=20, sigma=0.0)
    inf
    """
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    d = check_int("dummies", dummies, low=0, high=max(T - 1, 0))
    if T == 1 or d == T - 1:
        return 0.0
    if s == 0.0:
        return math.inf
    return math.log1p((1.0 - s) * T / (s * (d + 1)))


@dataclass(frozen=True)
class CountermeasureCertificate:
    """What an accountant certifies for one cluster configuration."""

    epsilon: float
    delta: float
    method: str
    valid: bool
    note: str = ""


class CountermeasureAccountant(Protocol):
    """Certifies the clusters of a plan (injected into :func:`certify` and the planner)."""

    name: str

    def local(self, *, targets: int, sigma: float, dummies: int) -> CountermeasureCertificate:
        """Sampling + local flooding at the sources (no scramblers)."""

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> CountermeasureCertificate:
        """Sampling + one scrambler of ``n`` sources adding ``dummies`` (ε at ``delta``)."""

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        """Valid δ at ``epsilon`` for the uncapped scrambler (1.0 when unknown)."""


class LocalBoundAccountant:
    """Theorem 2 for sources; the same local bound (post-processing) for scramblers.

    Examples
    --------
    >>> a = LocalBoundAccountant()
    >>> c = a.scrambled(targets=20, sigma=0.5, n=100, dummies=50, delta=1e-4, capped=False)
    >>> (round(c.epsilon, 4), c.delta, c.method)
    (3.0445, 0.0, 'local-randomizer')
    """

    name = "local-bound"

    def local(self, *, targets: int, sigma: float, dummies: int) -> CountermeasureCertificate:
        eps = local_sampling_epsilon(targets=targets, sigma=sigma, dummies=dummies)
        return CountermeasureCertificate(eps, 0.0, "theorem2", math.isfinite(eps))

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> CountermeasureCertificate:
        check_int("n", n, low=1)
        check_int("dummies", dummies, low=0)
        eps = local_sampling_epsilon(targets=targets, sigma=sigma)
        return CountermeasureCertificate(
            eps,
            0.0,
            "local-randomizer",
            math.isfinite(eps),
            "scrambler amplification not counted (post-processing of the local randomizer)",
        )

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        eps0 = local_sampling_epsilon(targets=targets, sigma=sigma)
        return 0.0 if epsilon >= eps0 else 1.0


class ScramblerModuleAccountant:
    """Adapter over ``crowdhide.accounting.scrambler`` (the countermeasure accountant).

    Each certificate is the better of the module's answer and the local-randomizer bound
    (always valid, by post-processing).
    """

    name = "scrambler"

    def __init__(self, module: Any | None = None, *, method: str = "best") -> None:
        if module is None:
            import importlib

            module = importlib.import_module("crowdhide.accounting.scrambler")
        self._module = module
        self._method = method
        self._local = LocalBoundAccountant()

    def local(self, *, targets: int, sigma: float, dummies: int) -> CountermeasureCertificate:
        fn = getattr(self._module, "local_randomizer_epsilon", None)
        if fn is None:
            return self._local.local(targets=targets, sigma=sigma, dummies=dummies)
        eps = float(_value(fn(targets=targets, sigma=sigma, dummies=dummies), "epsilon"))
        return CountermeasureCertificate(eps, 0.0, "theorem2", math.isfinite(eps))

    def scrambled(
        self, *, targets: int, sigma: float, n: int, dummies: int, delta: float, capped: bool
    ) -> CountermeasureCertificate:
        fallback = self._local.scrambled(
            targets=targets, sigma=sigma, n=n, dummies=dummies, delta=delta, capped=capped
        )
        result = self._module.scrambler_epsilon(
            targets=targets,
            sigma=sigma,
            n=n,
            dummies=dummies,
            delta=delta,
            method=self._method,
            capped=capped,
        )
        eps = float(result.epsilon)
        if not bool(getattr(result, "valid", True)) or not eps < fallback.epsilon:
            return fallback
        return CountermeasureCertificate(
            eps, float(result.delta), str(result.method), True, str(getattr(result, "note", ""))
        )

    def scrambled_delta(
        self, *, targets: int, sigma: float, n: int, dummies: int, epsilon: float
    ) -> float:
        if epsilon >= local_sampling_epsilon(targets=targets, sigma=sigma):
            return 0.0
        result = self._module.scrambler_delta(
            targets=targets, sigma=sigma, n=n, dummies=dummies, epsilon=epsilon, method=self._method
        )
        if not bool(getattr(result, "valid", True)):
            return 1.0
        return float(_value(result, "delta"))


def _value(result: Any, attribute: str) -> Any:
    return getattr(result, attribute) if hasattr(result, attribute) else result


def default_accountant() -> CountermeasureAccountant:
    """The scrambler accountant when installed, else :class:`LocalBoundAccountant`."""
    try:
        return ScramblerModuleAccountant()
    except ImportError:
        return LocalBoundAccountant()


@dataclass(frozen=True)
class ClusterCertificate:
    """(ε_i, δ_i) of one cluster (the max over its parallel copies), with its method."""

    cluster: str
    route: str | None
    targets: int
    count: int
    epsilon: float
    delta: float
    method: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain record for JSON/table output."""
        return {
            "cluster": self.cluster,
            "route": self.route,
            "targets": self.targets,
            "parallel_clusters": self.count,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "note": self.note,
        }


@dataclass(frozen=True)
class PathCertificate:
    """Theorem 1 along one data path."""

    origin: str
    epsilon: float
    delta: float
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class PlanCertificate:
    """End-to-end (ε, δ) of a plan's communication graph (Theorem 1)."""

    epsilon: float
    delta: float
    accountant: str
    clusters: tuple[ClusterCertificate, ...]
    paths: tuple[PathCertificate, ...]
    notes: tuple[str, ...] = field(default=())


def certify(
    plan: ExecutionPlan,
    *,
    delta: float,
    accountant: CountermeasureAccountant | None = None,
) -> PlanCertificate:
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
    >>> bool(abs(cert.epsilon - (np.log(5) + np.log(3))) < 1e-12)  # Example 5: sum
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
    per_delta = total_delta / k
    certificates: list[ClusterCertificate] = []
    notes: list[str] = []
    for cluster in plan.clusters():
        certificate = _certify_cluster(plan, cluster, per_delta, acct)
        certificates.append(certificate)
        if cluster.adaptive:
            notes.append(
                f"{cluster.name}: routing depends on values computed from other users' data "
                "(e.g. centroids); as in Section V-B the certificate covers the communication "
                "pattern given those values, which are not themselves protected"
            )
    per_cluster = {c.cluster: (c.epsilon, c.delta) for c in certificates}
    eps, dlt, rows = theorem1(plan, per_cluster)
    paths = tuple(
        PathCertificate(origin=p.origin, epsilon=e, delta=d, clusters=p.clusters)
        for p, e, d in rows
    )
    return PlanCertificate(
        epsilon=eps,
        delta=dlt,
        accountant=acct.name,
        clusters=tuple(certificates),
        paths=paths,
        notes=tuple(dict.fromkeys(notes)),
    )


def _has_scramblers(plan: ExecutionPlan, route: str) -> bool:
    protection = plan.route(route).protection
    return protection is not None and protection.scrambler is not None


def _certify_cluster(
    plan: ExecutionPlan, cluster: Cluster, per_delta: float, acct: CountermeasureAccountant
) -> ClusterCertificate:
    def make(epsilon: float, delta: float, method: str, note: str = "") -> ClusterCertificate:
        return ClusterCertificate(
            cluster=cluster.name,
            route=cluster.route,
            targets=cluster.targets,
            count=cluster.count,
            epsilon=epsilon,
            delta=delta,
            method=method,
            note=note,
        )

    if not cluster.data_dependent:
        return make(epsilon=0.0, delta=0.0, method="data-independent")
    assert cluster.route is not None
    protection = plan.route(cluster.route).protection
    if protection is None:
        return make(
            epsilon=math.inf,
            delta=0.0,
            method="unprotected",
            note="the target reveals the routed value",
        )
    layer = protection.scrambler
    if layer is None:
        c = acct.local(
            targets=cluster.targets, sigma=protection.sigma, dummies=protection.local_dummies
        )
        return make(epsilon=c.epsilon, delta=c.delta, method=c.method, note=c.note)
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
    note = worst.note
    if len(cluster.partition_sizes) > 1:
        note = (note + "; " if note else "") + f"worst of partition sizes {cluster.partition_sizes}"
    return make(
        epsilon=worst.epsilon,
        delta=max(r.delta for r in results),
        method=worst.method,
        note=note,
    )


def describe_certificate(cert: PlanCertificate) -> list[dict[str, Any]]:
    """Rows for display: one per cluster."""
    return [c.to_dict() for c in cert.clusters]
