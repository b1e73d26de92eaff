"""The DP semantics of an execution plan: countermeasures and Theorem 1 (Ladjel et al.).

The engine's plan model (:mod:`crowdhide.engine.plan`) says what runs and what a tuple can
influence (clusters, data paths); what that means for privacy lives here, above the engine:

* :func:`protect` applies countermeasures (target sampling σ, flooding, a scrambler layer
  with dummies) to data routes — a plan transformation;
* :func:`compose_along_paths` is Theorem 1: for a plan whose clusters are (ε_i, δ_i)-DP,
  the plan is (ε, δ)-DP with ε (resp. δ) the largest sum of ε_i (resp. δ_i) over the
  clusters touched by one data path. The paper prints ``n ∈ p`` under the sum; it must be
  ``ν ∈ p`` (a condition the paper leaves implicit);
* :func:`data_clusters_per_path` counts the data-dependent clusters on the worst path (how
  many ways a δ budget is split).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from crowdhide.engine.plan import (
    DataPath,
    ExecutionPlan,
    NodeGroup,
    Protection,
    ScramblerLayer,
)
from crowdhide.errors import InvalidParameterError

__all__ = ["compose_along_paths", "data_clusters_per_path", "protect"]


def protect(
    plan: ExecutionPlan,
    *,
    route: str | None = None,
    sigma: float = 0.0,
    local_dummies: int = 0,
    per_scrambler: int | None = None,
    dummies: int = 0,
    cap: bool = False,
) -> ExecutionPlan:
    """Apply countermeasures to one data route (or all of them): a plan transformation.

    Target sampling σ and flooding happen at the sources; with ``per_scrambler`` (n) a
    layer of ``⌈S/n⌉`` scramblers, assigned by source index (independently of the data),
    is inserted; each adds ``dummies`` (d) and shuffles (Algorithm 1). The engine sends
    every node's messages in a random order so edge labels do not reveal the real one.

    Parameters
    ----------
    plan
        The plan to transform.
    route
        The data route to protect (``None``: every data route).
    sigma
        Target sampling rate σ.
    local_dummies
        Flooding: dummies per source to distinct other targets.
    per_scrambler
        Sources per scrambler n (``None``: no scramblers).
    dummies
        Dummies d per scrambler.
    cap
        Algorithm 1's capped variant.

    Returns
    -------
    ExecutionPlan
        The transformed plan (the input is unchanged).

    See Also
    --------
    Protection : The countermeasures of one route.
    crowdhide.calibrate : The cheapest countermeasures for a target (``targets=``).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.plan import PlanBuilder
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.arange(10) % 4})
    >>> _ = b.compute("C", size=4, process=lambda inbox, rng: {})
    >>> _ = b.route("S", "C", by=lambda s: s["g"])
    >>> safe = protect(b.build(), sigma=0.2, per_scrambler=4, dummies=3)
    >>> c = safe.clusters()[0]
    >>> (c.name, c.count, c.partition_sizes, c.members)
    ('S/S->C', 3, (2, 4), ('S/S->C', 'S->C#scramblers'))
    """
    names = [r.name for r in plan.routes if r.kind == "data"] if route is None else [route]
    if route is not None:
        found = plan.route(route)
        if found.kind != "data":
            raise InvalidParameterError(
                f"route must name a data route, got {route!r} (kind={found.kind!r})"
            )
    if not names:
        raise InvalidParameterError("plan has no data route to protect")
    result = plan
    for name in names:
        current = result.route(name)
        if current.protection is not None:
            raise InvalidParameterError(f"routes[{name}] is already protected")
        extra: list[NodeGroup] = []
        layer = None
        if per_scrambler is not None:
            layer = ScramblerLayer(
                per_scrambler=per_scrambler, dummies=dummies, cap=cap, group=f"{name}#scramblers"
            )
            senders = result.group(current.sender)
            extra.append(
                NodeGroup(
                    name=layer.group,
                    size=layer.scrambler_count(senders.size),
                    role="scrambler",
                )
            )
        elif dummies:
            raise InvalidParameterError("dummies (d) need a scrambler layer: set per_scrambler (n)")
        protection = Protection(sigma=sigma, local_dummies=local_dummies, scrambler=layer)
        result = result.with_route(replace(current, protection=protection), extra_groups=extra)
    return result


def compose_along_paths(
    plan: ExecutionPlan, per_cluster: Mapping[str, tuple[float, float]]
) -> tuple[float, float, list[tuple[DataPath, float, float]]]:
    """Compose the clusters' (ε_i, δ_i) along every data path: ε, δ are the largest sums.

    A user's tuple influences every cluster on its data path, so the path's guarantee is the
    basic composition of those clusters' guarantees (Ladjel, Anciaux, Bellet, Scerri,
    Theorem 1); the plan's guarantee is the worst path.

    Parameters
    ----------
    plan
        The plan.
    per_cluster
        ``{cluster name: (ε_i, δ_i)}``; parallel clusters of a scrambler layer are given
        once, as their maximum (parallel composition). Missing clusters count as (0, 0)
        only if they are not data-dependent; a missing data-dependent cluster is an error.

    Returns
    -------
    (ε, δ, [(path, ε_path, δ_path), ...])

    See Also
    --------
    data_clusters_per_path : How many clusters share a path's δ.
    crowdhide.accounting.basic_composition : The composition rule.

    Examples
    --------
    Two source clusters on one data path add up (Example 5 of Ladjel et al.):

    >>> import numpy as np
    >>> from crowdhide.engine.plan import PlanBuilder
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"a": np.array([0, 1]), "b": np.array([1, 0])})
    >>> _ = b.compute("C1", size=2, process=lambda i, r: {})
    >>> _ = b.compute("C2", size=2, process=lambda i, r: {})
    >>> _ = b.route("S", "C1", by=lambda s: s["a"], name="s1")
    >>> _ = b.route("S", "C2", by=lambda s: s["b"], name="s2")
    >>> eps, delta, _ = compose_along_paths(b.build(), {"S/s1": (0.5, 1e-6), "S/s2": (0.25, 1e-6)})
    >>> (eps, delta)
    (0.75, 2e-06)
    """
    known = {c.name: c for c in plan.clusters()}
    for name in per_cluster:
        if name not in known:
            raise InvalidParameterError(f"per_cluster names an unknown cluster {name!r}")
    from crowdhide.accounting.logmath import sum_up  # numpy and scipy: not at start-up

    rows: list[tuple[DataPath, float, float]] = []
    for path in plan.data_paths():
        eps_parts: list[float] = []
        delta_parts: list[float] = []
        for name in path.clusters:
            if name in per_cluster:
                eps_i, delta_i = per_cluster[name]
            elif known[name].data_dependent:
                raise InvalidParameterError(
                    f"per_cluster is missing data-dependent cluster {name!r}"
                )
            else:
                eps_i, delta_i = 0.0, 0.0
            eps_parts.append(eps_i)
            delta_parts.append(delta_i)
        # rounded up: a float sum can land an ulp below the exact sum of the guarantees
        rows.append((path, sum_up(eps_parts), min(1.0, sum_up(delta_parts))))
    eps = max((r[1] for r in rows), default=0.0)
    delta = max((r[2] for r in rows), default=0.0)
    if math.isnan(eps):
        raise InvalidParameterError("per-cluster epsilons must not be NaN")
    return eps, delta, rows


def data_clusters_per_path(plan: ExecutionPlan) -> int:
    """Largest number of data-dependent clusters on one data path (δ budget split).

    Parameters
    ----------
    plan
        The plan.

    Returns
    -------
    int
        The largest count (at least 1).

    See Also
    --------
    compose_along_paths : The guarantee of every path.
    """
    known = {c.name: c for c in plan.clusters()}
    return max(
        (sum(1 for c in p.clusters if known[c].data_dependent) for p in plan.data_paths()),
        default=0,
    )
