"""The executable plan model, re-exported from :mod:`crowdhide.engine.plan`.

The model (groups, routes, clusters, data paths) lives at the engine's level so that the
engine imports nothing from :mod:`crowdhide.plans`; its DP semantics (countermeasures,
Theorem 1) lives in :mod:`crowdhide.plans.semantics`.
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
]
