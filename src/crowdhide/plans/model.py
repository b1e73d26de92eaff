"""The executable plan model, re-exported from :mod:`crowdhide.engine.plan`.

The model (groups, routes, clusters, Theorem 1, countermeasures as plan transformations)
lives at the engine's level so that the engine imports nothing from :mod:`crowdhide.plans`.
"""

from crowdhide.engine.plan import (
    Cluster,
    DataPath,
    ExecutionPlan,
    NodeGroup,
    PlanBuilder,
    ProcessFunction,
    Protection,
    Route,
    RouteKind,
    RoutingFunction,
    ScramblerLayer,
    State,
    compose_along_paths,
    data_clusters_per_path,
    protect,
)

__all__ = [
    "Cluster",
    "DataPath",
    "ExecutionPlan",
    "NodeGroup",
    "PlanBuilder",
    "ProcessFunction",
    "Protection",
    "Route",
    "RouteKind",
    "RoutingFunction",
    "ScramblerLayer",
    "State",
    "compose_along_paths",
    "data_clusters_per_path",
    "protect",
]
