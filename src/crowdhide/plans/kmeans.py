"""Decentralized K-means of Ladjel, Anciaux, Bellet and Scerri (Section V-A), iterations unrolled
(Remark 1).

Each iteration ``i`` has a logical source group ``src@i`` (the same devices, device
``"S"``) that computes the nearest of the current centroids and sends its tuple to the
compute node of that centroid in ``centroids@i`` (one compute node per centroid per
iteration, a data route). Each compute node averages the real tuples it receives (keeping
its previous centroid when it receives none), forwards it to its successor in iteration
``i+1`` and sends it back to the sources — directly (broadcast), or, with ``relay_per=n``,
through ``⌈S/n⌉`` relay nodes (the scramblers, Section V-A: "sent back to all scrambler
nodes which propagate them back to the source nodes they interact with"), each relaying
the K centroids in one message to its n sources. The last iteration reports to ``R``.
Utility is the Rand index of the final centroids on held-out labelled points.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int
from crowdhide.engine.library import named, nearest
from crowdhide.errors import InvalidParameterError
from crowdhide.plans.model import ExecutionPlan, PlanBuilder

__all__ = ["KmeansSetup", "kmeans_plan", "nearest", "rand_index"]

FloatArray = npt.NDArray[np.float32]


def rand_index(labels_true: npt.ArrayLike, labels_pred: npt.ArrayLike) -> float:
    """Rand index: fraction of point pairs on which two labelings agree.

    Examples
    --------
    >>> rand_index([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> rand_index([0, 0, 1, 1], [0, 1, 0, 1])
    0.3333333333333333
    """
    a = np.asarray(labels_true)
    b = np.asarray(labels_pred)
    if a.shape != b.shape or a.ndim != 1:
        raise InvalidParameterError(
            f"labels must be two 1-D arrays of equal length, got {a.shape} and {b.shape}"
        )
    n = a.shape[0]
    if n < 2:
        return 1.0
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.float64)
    np.add.at(table, (ia, ib), 1.0)

    def pairs(x: npt.NDArray[np.float64]) -> float:
        return float((x * (x - 1.0) / 2.0).sum())

    same_both = pairs(table)
    same_a = pairs(table.sum(axis=1))
    same_b = pairs(table.sum(axis=0))
    total = n * (n - 1) / 2.0
    return float((total + 2.0 * same_both - same_a - same_b) / total)


@dataclass(frozen=True)
class KmeansSetup:
    """The K-means plan and how to read it."""

    plan: ExecutionPlan
    k: int
    iterations: int
    initial: FloatArray
    routes: tuple[str, ...]

    def centroids(self, result_state: Mapping[str, Any]) -> FloatArray:
        """Final centroids from the result node's state."""
        return np.asarray(result_state["centroid"], dtype=np.float32)


def kmeans_plan(
    points: FloatArray,
    *,
    k: int,
    iterations: int,
    rng: np.random.Generator | int | None = None,
    relay_per: int | None = None,
) -> KmeansSetup:
    """Build the unrolled K-means plan over ``points`` (one point per source).

    Initial centroids are ``k`` distinct training points drawn with ``rng`` (the paper's
    "K random points"). ``relay_per`` (n) sends the centroids back through ``⌈S/n⌉`` relay
    nodes (the scramblers' devices) instead of a direct broadcast.

    Examples
    --------
    >>> from crowdhide.plans.data import synth_kmeans
    >>> from crowdhide.backends import execute
    >>> X, y = synth_kmeans(rows=300, dim=2, clusters=3, rng=0)
    >>> setup = kmeans_plan(X, k=3, iterations=5, rng=0)
    >>> run = execute(setup.plan, rng=0)
    >>> rand_index(y, nearest(X, setup.centroids(run.states["R"]))) > 0.8
    True
    """
    K = check_int("query.k", k, low=1)
    I = check_int("query.iterations", iterations, low=1)
    X = np.ascontiguousarray(points, dtype=np.float32)
    if X.ndim != 2 or X.shape[0] < K:
        raise InvalidParameterError(
            f"data must be a 2-D array with at least k={K} rows, got shape {X.shape}"
        )
    g = as_rng(rng)
    initial = X[g.choice(X.shape[0], size=K, replace=False)].copy()
    size = 4 * X.shape[1] + 16
    b = PlanBuilder()
    routes: list[str] = []
    for i in range(I):
        # Named programs (the plan travels as data); the initial centroids are parameters.
        start = initial.tolist()
        source = named("kmeans.source", i=i, initial=start)
        b.sources(f"src@{i}", {"x": X}, device="S", process=source)
        b.compute(f"centroids@{i}", size=K, process=named("kmeans.centroids", i=i, initial=start))
    b.result("R", process=named("kmeans.result", last=I - 1))
    relays = (
        None if relay_per is None else -(-X.shape[0] // check_int("relay_per", relay_per, low=1))
    )
    for i in range(I - 1):
        if relays is not None:
            b.compute(f"relay@{i}", size=relays, process=named("kmeans.relay", i=i))
    for i in range(I):
        name = f"src@{i}->centroids@{i}"
        b.route(
            f"src@{i}",
            f"centroids@{i}",
            by=named("route.column", column="nearest"),
            name=name,
            message_size=size,
            columns=("x",),
        )
        routes.append(name)
        if i + 1 < I:
            if relays is None:
                b.route(f"centroids@{i}", f"src@{i + 1}", kind="broadcast", message_size=size)
            else:
                b.route(f"centroids@{i}", f"relay@{i}", kind="broadcast", message_size=size)
                b.route(
                    f"relay@{i}", f"src@{i + 1}", kind="fanout", message_size=K * (size - 16) + 16
                )
            b.route(f"centroids@{i}", f"centroids@{i + 1}", kind="fixed", message_size=size)
    b.route(f"centroids@{I - 1}", "R", kind="fixed", message_size=size)
    return KmeansSetup(plan=b.build(), k=K, iterations=I, initial=initial, routes=tuple(routes))
