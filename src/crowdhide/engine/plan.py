"""Executable plan model of Ladjel et al.: nodes, routes, clusters, data paths.

The model lives in the engine (``crowdhide.plans.model`` re-exports it), which depends on
nothing above it; :mod:`crowdhide.plans` builds queries and the DP semantics on top of it.

A plan is described at the level of *node groups*: a group is a set of nodes that run the
same program (the S source nodes, the C compute nodes of one grouping set, the result
node, a layer of scramblers). A :class:`Route` says that every node of its sender group
sends exactly one message per route, of a fixed size, to a node of its receiver group:

* ``"data"`` — the target is chosen by a routing function of the sender's data (the
  data-dependent communication the paper protects);
* ``"fixed"`` — sender ``i`` of ``S`` talks to receiver ``⌊i·R/S⌋`` (data-independent);
* ``"broadcast"`` — every sender talks to every receiver (data-independent);
* ``"fanout"`` — the inverse of ``"fixed"``: receiver ``i`` of ``R`` hears from sender
  ``⌊i·S/R⌋`` (data-independent; e.g. scramblers relaying centroids to their sources);
* ``"stream"`` — a single sender node forwards a *batch*: one message per row of its state
  (all its columns have the same length m), row ``j`` to receiver ``⌊j·R/m⌋``, with send
  order ``j`` (e.g. a shuffler forwarding the permuted multiset to the analyzer). The only
  thing the traffic shows is m, which the sender's inbox size already shows.

Definitions of the paper (Section II) map onto this as follows.

* **Simple node (Def. 3)**: a node whose change of one input tuple changes at most one of
  its output messages. A node with several routes is *not* simple
  (:meth:`ExecutionPlan.is_simple`); it counts as one logical simple node per route (sharing
  the device, told apart by the send-order label, the route's slot).
* **Cluster (Def. 4)**: simple nodes with the same set of potential targets and disjoint
  data. Each (group, route) pair gives the logical nodes ``group/route``; with a scrambler
  layer of ``k`` scramblers the sources of scrambler ``i`` plus scrambler ``i`` form one of
  ``k`` parallel clusters (Section IV-A). A group without routes (the result node) is a
  cluster of its own that sends nothing.
* **Data path**: what one tuple can influence: starting at a data-holding node it follows
  routes downstream and includes every logical node of the same device (the unrolled
  iterations of K-means, Remark 1). Theorem 1 (:mod:`crowdhide.plans.semantics`) composes
  the clusters' guarantees along these paths.

The parts (:class:`NodeGroup`, :class:`Route`, :class:`Protection`, :class:`ScramblerLayer`
and the program types) are defined in :mod:`crowdhide.engine._plan_parts` and imported from
here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crowdhide.engine._plan_parts import (
    CombineFunction,
    GroupRole,
    NodeGroup,
    ProcessFunction,
    Protection,
    Route,
    RouteKind,
    RoutingFunction,
    ScramblerLayer,
    State,
    check_route,
)
from crowdhide.errors import DataError, InvalidParameterError

__all__ = [
    "Cluster",
    "CombineFunction",
    "DataPath",
    "ExecutionPlan",
    "GroupRole",
    "NodeGroup",
    "PlanBuilder",
    "ProcessFunction",
    "Protection",
    "Route",
    "RouteKind",
    "RoutingFunction",
    "ScramblerLayer",
    "State",
]


@dataclass(frozen=True)
class Cluster:
    """A cluster of Definition 4 (or ``count`` identical parallel ones).

    Parameters
    ----------
    name
        ``"<group>/<route>"`` for the logical senders of one route; the group name for a
        group that sends nothing.
    route
        The route whose messages the cluster sends (``None`` for sink groups).
    members
        Logical groups in the cluster (senders, and the scrambler layer when present).
    targets
        T, the size of the common set of potential targets (1 for data-independent routes:
        each logical node has a single potential target).
    count
        Number of parallel clusters (the scramblers of a layer; disjoint data).
    partition_sizes
        Sources per parallel cluster (distinct values) for a scrambler layer.
    data_dependent
        Whether the target depends on data (a data route with T > 1).
    adaptive
        Whether the routing depends on values computed from other users' data (e.g.
        K-means centroids). Theorem 1 then holds for the communication pattern given those
        values, as in Section V-B; they are not themselves protected.
    sender
        The sending group.

    See Also
    --------
    DataPath : The clusters one tuple can influence.
    compose_along_paths : Composes the clusters' guarantees.
    """

    name: str
    sender: str
    route: str | None
    members: tuple[str, ...]
    targets: int
    count: int = 1
    partition_sizes: tuple[int, ...] = ()
    data_dependent: bool = False
    adaptive: bool = False


@dataclass(frozen=True)
class DataPath:
    """The clusters one tuple of ``origin`` can influence (Theorem 1).

    Parameters
    ----------
    origin
        The source group whose tuples start the path.
    clusters
        Names of the clusters on the path.

    See Also
    --------
    Cluster : One of them.
    compose_along_paths : The guarantee of every path.
    """

    origin: str
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class ExecutionPlan:
    """A validated execution plan: node groups and routes forming a DAG.

    Parameters
    ----------
    groups
        The node groups.
    routes
        The routes between them (a DAG).

    See Also
    --------
    PlanBuilder : Builds one.
    protect : Adds countermeasures to one.

    Examples
    --------
    Example 1/2/4 of the paper: sources send to two compute sets, which report to R.

    >>> import numpy as np
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"a": np.array([0, 1, 2]), "b": np.array([1, 1, 0])})
    >>> _ = b.compute("C1", size=3, process=lambda inbox, rng: {})
    >>> _ = b.compute("C2", size=2, process=lambda inbox, rng: {})
    >>> _ = b.result("R", process=lambda inbox, rng: {})
    >>> _ = b.route("S", "C1", by=lambda s: s["a"], name="s1")
    >>> _ = b.route("S", "C2", by=lambda s: s["b"], name="s2")
    >>> _ = b.route("C1", "R", kind="fixed")
    >>> _ = b.route("C2", "R", kind="fixed")
    >>> plan = b.build()
    >>> [c.name for c in plan.clusters()]
    ['S/s1', 'S/s2', 'C1/C1->R', 'C2/C2->R', 'R']
    >>> plan.data_paths()[0].clusters
    ('S/s1', 'S/s2', 'C1/C1->R', 'C2/C2->R', 'R')
    """

    groups: tuple[NodeGroup, ...]
    routes: tuple[Route, ...]

    def __post_init__(self) -> None:
        for kind, names in (
            ("group", [g.name for g in self.groups]),
            ("route", [r.name for r in self.routes]),
        ):
            duplicate = sorted({n for n in names if names.count(n) > 1})
            if duplicate:
                raise InvalidParameterError(
                    f"{kind} names must be unique, got duplicates {duplicate}"
                )
        if not any(g.holds_data for g in self.groups):
            raise InvalidParameterError("a plan needs at least one source group (role='source')")
        by_name = {g.name: g for g in self.groups}
        for route in self.routes:
            check_route(route, by_name)
        for group in self.groups:
            if group.role in ("compute", "result") and group.process is None:
                raise InvalidParameterError(
                    f"groups[{group.name}].process is required for role {group.role!r}"
                )
        self.levels()  # raises on cycles

    # -- structure -------------------------------------------------------------------------

    def group(self, name: str) -> NodeGroup:
        """The group called ``name``."""
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(f"no group named {name!r}")

    def route(self, name: str) -> Route:
        """The route called ``name``."""
        for route in self.routes:
            if route.name == name:
                return route
        raise KeyError(f"no route named {name!r}")

    def routes_from(self, group: str) -> tuple[Route, ...]:
        """Routes sent by ``group``, in slot (send-order) order."""
        return tuple(r for r in self.routes if r.sender == group)

    def wire_edges(self) -> list[tuple[str, str]]:
        """Group-level edges on the wire (a scrambled route is sender→scrambler→receiver)."""
        edges: list[tuple[str, str]] = []
        for route in self.routes:
            layer = route.protection.scrambler if route.protection else None
            if layer is None:
                edges.append((route.sender, route.receiver))
            else:
                edges += [(route.sender, layer.group), (layer.group, route.receiver)]
        return edges

    def levels(self) -> dict[str, int]:
        """Superstep (round) of each group: its longest distance from a root on the wire."""
        names = [g.name for g in self.groups]
        edges = self.wire_edges()
        indegree = dict.fromkeys(names, 0)
        for _, dst in edges:
            indegree[dst] += 1
        level = dict.fromkeys(names, 0)
        ready = [n for n in names if indegree[n] == 0]
        seen = 0
        while ready:
            node = ready.pop(0)
            seen += 1
            for src, dst in edges:
                if src == node:
                    level[dst] = max(level[dst], level[node] + 1)
                    indegree[dst] -= 1
                    if indegree[dst] == 0:
                        ready.append(dst)
        if seen != len(names):
            cyclic = sorted(n for n in names if indegree[n] > 0)
            raise InvalidParameterError(
                "routes must form an acyclic plan (unroll iterations, Remark 1); "
                f"cycle through {cyclic}"
            )
        return level

    def topological_groups(self) -> list[NodeGroup]:
        """Groups sorted by level (stable in declaration order)."""
        level = self.levels()
        return sorted(self.groups, key=lambda g: level[g.name])

    def groups_by_level(self) -> list[tuple[str, ...]]:
        """Group names by level, declaration order within one (as the executor runs them)."""
        level = self.levels()
        keys = sorted(set(level.values()))
        return [tuple(g.name for g in self.groups if level[g.name] == k) for k in keys]

    def node_offsets(self) -> dict[str, int]:
        """Global node id of the first node of each group (ids are contiguous per group)."""
        offsets: dict[str, int] = {}
        total = 0
        for group in self.groups:
            offsets[group.name] = total
            total += group.size
        return offsets

    def is_simple(self, group: str) -> bool:
        """Definition 3: a node with more than one route is not simple (it is split)."""
        return len(self.routes_from(group)) <= 1

    # -- clusters and paths ----------------------------------------------------------------

    def _adaptive_groups(self) -> set[str]:
        """Data groups whose routing may depend on values computed from others' data."""
        adaptive: set[str] = set()
        for route in self.routes:
            if self.group(route.receiver).holds_data and not self.group(route.sender).holds_data:
                adaptive.add(route.receiver)
        return adaptive

    def clusters(self) -> list[Cluster]:
        """Automatic decomposition into clusters (Definition 4), splitting non-simple nodes."""
        adaptive = self._adaptive_groups()
        clusters: list[Cluster] = []
        for group in self.groups:
            if group.role == "scrambler":
                continue  # part of the cluster of the route it serves
            routes = self.routes_from(group.name)
            if not routes:
                clusters.append(
                    Cluster(
                        name=group.name,
                        sender=group.name,
                        route=None,
                        members=(group.name,),
                        targets=1,
                    )
                )
                continue
            for route in routes:
                targets = self.group(route.receiver).size if route.kind == "data" else 1
                layer = route.protection.scrambler if route.protection else None
                members: tuple[str, ...] = (f"{group.name}/{route.name}",)
                count, sizes = 1, tuple[int, ...]()
                if layer is not None:
                    members += (layer.group,)
                    count = layer.scrambler_count(group.size)
                    sizes = layer.partition_sizes(group.size)
                clusters.append(
                    Cluster(
                        name=f"{group.name}/{route.name}",
                        sender=group.name,
                        route=route.name,
                        members=members,
                        targets=targets,
                        count=count,
                        partition_sizes=sizes,
                        data_dependent=route.kind == "data" and targets > 1,
                        adaptive=route.kind == "data" and group.name in adaptive,
                    )
                )
        return clusters

    def data_paths(self) -> list[DataPath]:
        """One data path per data-holding device: every cluster one tuple can influence."""
        cluster_of_group: dict[str, list[str]] = {}
        for cluster in self.clusters():
            cluster_of_group.setdefault(cluster.sender, []).append(cluster.name)
        order = [g.name for g in self.groups]
        paths: list[DataPath] = []
        devices = sorted(
            {g.physical for g in self.groups if g.holds_data},
            key=lambda d: min(order.index(g.name) for g in self.groups if g.physical == d),
        )
        for device in devices:
            reached = {g.name for g in self.groups if g.physical == device and g.holds_data}
            frontier = list(reached)
            while frontier:
                node = frontier.pop()
                for src, dst in self.wire_edges():
                    if src == node and dst not in reached:
                        reached.add(dst)
                        frontier.append(dst)
            names = [c for g in order if g in reached for c in cluster_of_group.get(g, [])]
            paths.append(DataPath(origin=device, clusters=tuple(names)))
        return paths

    def with_route(self, route: Route, *, extra_groups: Sequence[NodeGroup] = ()) -> ExecutionPlan:
        """A copy with ``route`` replaced (same name) and ``extra_groups`` appended."""
        routes = tuple(route if r.name == route.name else r for r in self.routes)
        return ExecutionPlan(groups=self.groups + tuple(extra_groups), routes=routes)

    def describe(self) -> list[dict[str, Any]]:
        """One record per route: sender, receiver, kind, T, messages per sender, protection."""
        records: list[dict[str, Any]] = []
        for route in self.routes:
            p = route.protection
            layer = p.scrambler if p else None
            records.append(
                {
                    "route": route.name,
                    "sender": route.sender,
                    "receiver": route.receiver,
                    "kind": route.kind,
                    "senders": self.group(route.sender).size,
                    "targets": self.group(route.receiver).size,
                    "message_size": route.message_size,
                    "sigma": p.sigma if p else None,
                    "local_dummies": p.local_dummies if p else None,
                    "n": layer.per_scrambler if layer else None,
                    "d": layer.dummies if layer else None,
                    "scramblers": self.group(layer.group).size if layer else None,
                }
            )
        return records


class PlanBuilder:
    """Build a custom plan: sources, compute functions and routing functions.

    Routing functions are vectorized: ``by(state)`` receives the sender group's state (for
    sources, their data columns) and returns one target index per sender node. Compute
    functions receive an :class:`~crowdhide.engine.messages.Inbox` holding only real
    messages (dummies are discarded by the target) and return their state.

    See Also
    --------
    ExecutionPlan : What it builds.
    crowdhide.engine.execute : Runs the plan.

    Examples
    --------
    >>> import numpy as np
    >>> b = PlanBuilder()
    >>> _ = b.sources("users", {"x": np.array([0.5, 1.5, 1.7])})
    >>> _ = b.compute("bins", size=2, process=lambda inbox, rng: {
    ...     "count": np.bincount(inbox.only("users->bins").target, minlength=2)})
    >>> _ = b.route("users", "bins", by=lambda s: (s["x"] >= 1).astype(int))
    >>> plan = b.build()
    >>> [(c.name, c.targets, c.data_dependent) for c in plan.clusters()]
    [('users/users->bins', 2, True), ('bins', 1, False)]
    """

    def __init__(self) -> None:
        self._groups: list[NodeGroup] = []
        self._routes: list[Route] = []

    def sources(
        self,
        name: str,
        data: State,
        *,
        device: str | None = None,
        process: ProcessFunction | None = None,
    ) -> PlanBuilder:
        """Add ``len(data)`` source nodes, one tuple each (columns of equal length)."""
        if not isinstance(data, Mapping) or not data:
            raise InvalidParameterError(
                f"groups[{name}].data must be a non-empty mapping of columns"
            )
        sizes = {len(np.asarray(v)) for v in data.values()}
        if len(sizes) != 1:
            raise DataError(
                f"groups[{name}].data columns must have equal lengths, got {sorted(sizes)}"
            )
        columns = {k: np.asarray(v) for k, v in data.items()}
        self._groups.append(
            NodeGroup(
                name=name,
                size=sizes.pop(),
                role="source",
                device=device,
                data=columns,
                process=process,
            )
        )
        return self

    def compute(
        self,
        name: str,
        *,
        size: int,
        process: ProcessFunction,
        combine: CombineFunction | None = None,
    ) -> PlanBuilder:
        """Add ``size`` compute nodes running ``process(inbox, rng) -> state``; with
        ``combine``, on one inbox part at a time (see :class:`NodeGroup`)."""
        self._groups.append(
            NodeGroup(name=name, size=size, role="compute", process=process, combine=combine)
        )
        return self

    def result(self, name: str, *, process: ProcessFunction) -> PlanBuilder:
        """Add the result node."""
        self._groups.append(NodeGroup(name=name, size=1, role="result", process=process))
        return self

    def route(
        self,
        sender: str,
        receiver: str,
        *,
        by: RoutingFunction | None = None,
        kind: RouteKind | None = None,
        name: str | None = None,
        message_size: int = 64,
        columns: tuple[str, ...] | None = None,
    ) -> PlanBuilder:
        """Add a route; ``by`` makes it a data route, else ``kind`` (fixed, broadcast, fanout,
        stream). ``columns``: the sender's columns a message carries (default: all)."""
        resolved: RouteKind = kind or ("data" if by is not None else "fixed")
        self._routes.append(
            Route(
                name=name or f"{sender}->{receiver}",
                sender=sender,
                receiver=receiver,
                kind=resolved,
                by=by,
                message_size=message_size,
                columns=columns,
            )
        )
        return self

    def build(self) -> ExecutionPlan:
        """Validate and return the plan."""
        return ExecutionPlan(groups=tuple(self._groups), routes=tuple(self._routes))
