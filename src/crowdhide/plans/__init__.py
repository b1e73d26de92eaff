"""Execution plans (seed 000): nodes, clusters, Theorem 1, countermeasures, queries, planner."""

from crowdhide.plans.model import (
    Cluster,
    DataPath,
    ExecutionPlan,
    NodeGroup,
    PlanBuilder,
    Protection,
    Route,
    ScramblerLayer,
    data_clusters_per_path,
    protect,
    theorem1,
)

__all__ = [
    "Cluster",
    "DataPath",
    "ExecutionPlan",
    "NodeGroup",
    "PlanBuilder",
    "Protection",
    "Route",
    "ScramblerLayer",
    "data_clusters_per_path",
    "protect",
    "theorem1",
]
