"""Execution plans (Ladjel, Anciaux, Bellet, Scerri): nodes, clusters, path composition,
countermeasures, queries, planner."""

from crowdhide.plans.model import (
    Cluster,
    DataPath,
    ExecutionPlan,
    NodeGroup,
    PlanBuilder,
    Protection,
    Route,
    ScramblerLayer,
)
from crowdhide.plans.semantics import compose_along_paths, data_clusters_per_path, protect

__all__ = [
    "Cluster",
    "DataPath",
    "ExecutionPlan",
    "NodeGroup",
    "PlanBuilder",
    "Protection",
    "Route",
    "ScramblerLayer",
    "compose_along_paths",
    "data_clusters_per_path",
    "protect",
]
