"""Named node programs: the registry a plan refers to when it travels as data.

A plan that leaves the process (the ``tls`` backend, a node daemon) carries no code: each
``process``, ``combine`` and routing function is named — a registry entry and its JSON
parameters (:class:`ProgramRef`) — and the receiving node rebuilds it from its own copy of
this registry (:func:`resolve`). :func:`named` builds a program and tags it with its
reference; a program built any other way (a lambda, a closure) runs on the in-process
backends but cannot be shipped (:func:`ref_of` is ``None``).

The registry holds the programs of the built-in queries (``aggregate.*``) and small generic
ones (``route.column``, ``compute.count``, ``compute.sum``).

Examples
--------
>>> import numpy as np
>>> by = named("route.column", column="g")
>>> by({"g": np.array([2, 0])}).tolist()
[2, 0]
>>> ref_of(by)
ProgramRef(name='route.column', params={'column': 'g'})
>>> resolve(ref_of(by))({"g": np.array([1])}).tolist()
[1]
>>> resolve(ProgramRef("os.system", {}))
Traceback (most recent call last):
...
crowdhide.engine.library.UnknownProgramError: no node program named 'os.system' in this node's ...
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.engine.messages import NODE, Delivery, Inbox
from crowdhide.errors import InvalidParameterError

__all__ = [
    "ProgramRef",
    "UnknownProgramError",
    "combine_partials",
    "named",
    "nearest",
    "program_names",
    "ref_of",
    "resolve",
]

_TAG = "__crowdhide_program__"
Factory = Callable[..., Callable[..., Any]]
FloatArray = npt.NDArray[np.float32]
_FACTORIES: dict[str, Factory] = {}


class UnknownProgramError(ValueError):
    """A plan names a program this node does not have (or with parameters it refuses)."""


@dataclass(frozen=True)
class ProgramRef:
    """A registry name and JSON parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The reference as a JSON object."""
        return {"name": self.name, "params": dict(self.params)}


def _register(name: str) -> Callable[[Factory], Factory]:
    def add(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory

    return add


def program_names() -> list[str]:
    """Every registered program name."""
    return sorted(_FACTORIES)


def named(name: str, **params: Any) -> Callable[..., Any]:
    """The program ``name`` built with ``params`` (JSON values), tagged with its reference."""
    ref = ProgramRef(name, params)
    text = json.dumps(params, sort_keys=True)
    if json.loads(text) != params:
        raise InvalidParameterError(
            f"parameters of program {name!r} must be JSON values, got {params!r}"
        )
    built = resolve(ref)
    setattr(built, _TAG, ref)
    return built


def ref_of(function: Any) -> ProgramRef | None:
    """The reference of a program built by :func:`named` (``None`` for any other)."""
    ref = getattr(function, _TAG, None)
    return ref if isinstance(ref, ProgramRef) else None


def resolve(ref: ProgramRef) -> Callable[..., Any]:
    """Build the program ``ref`` names from this process's registry."""
    factory = _FACTORIES.get(ref.name)
    if factory is None:
        raise UnknownProgramError(f"no node program named {ref.name!r} in this node's registry")
    try:
        built = factory(**ref.params)
    except TypeError as exc:
        raise UnknownProgramError(f"program {ref.name!r} refuses its parameters: {exc}") from None
    setattr(built, _TAG, ref)
    return built


# -- generic programs -----------------------------------------------------------------------
@_register("route.column")
def _route_column(column: str) -> Callable[..., Any]:
    def by(state: Mapping[str, npt.NDArray[Any]]) -> npt.NDArray[np.int64]:
        return np.asarray(state[column], dtype=np.int64)

    return by


@_register("compute.count")
def _compute_count(route: str, size: int) -> Callable[..., Any]:
    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        return {"count": np.bincount(inbox.only(route).target, minlength=size)}

    return process


@_register("compute.sum")
def _compute_sum(route: str, column: str, size: int, modulo: int = 0) -> Callable[..., Any]:
    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        got = inbox.only(route)
        values = got.gather(column)
        weights = values % modulo if modulo else values
        return {"total": np.bincount(got.target, weights=weights, minlength=size)}

    return process


# -- the aggregate query (crowdhide.plans.aggregate) ------------------------------------------
@_register("aggregate.router")
def _aggregate_router(g: int, nodes: int, universe: int, domains: str = "") -> Callable[..., Any]:
    """Compute node owning a key: the key domain is cut into ``nodes`` contiguous parts.
    ``domains``: the digest of the public domains the keys are codes over (a node daemon
    checks its rows were coded over the same; the routing does not use it)."""

    def by(state: Mapping[str, npt.NDArray[Any]]) -> npt.NDArray[np.int64]:
        return np.asarray(state[f"__key{g}"], dtype=np.int64) * nodes // universe

    return by


@_register("aggregate.compute")
def _aggregate_compute(
    g: int, columns: Sequence[str], route: str, universe: int
) -> Callable[..., Any]:
    """Partial aggregates (count, sums, squares, min, max) per key of one grouping set."""

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        delivery = inbox.only(route)
        keys = delivery.gather(f"__key{g}")
        present: npt.NDArray[np.intp]
        owner: npt.NDArray[np.integer[Any]]
        if universe <= 4 * len(keys) + (1 << 20):
            # Codes are < universe: aggregate by code directly (no sort of the messages).
            slot = keys.astype(np.intp)
            size = universe
            counts = np.bincount(slot, minlength=size)
            present = np.flatnonzero(counts)
            node = np.zeros(size, dtype=np.int64)
            node[slot] = delivery.target  # all messages of one key went to one node
            key, owner = present, node[present]
        else:
            key, index, slot = np.unique(keys, return_index=True, return_inverse=True)
            size = len(key)
            counts = np.bincount(slot, minlength=size)
            present = np.arange(size)
            owner = delivery.target[index]
        out: dict[str, npt.NDArray[Any]] = {
            NODE: owner,  # each key's partial aggregate stays at its node
            "key": np.asarray(key, dtype=np.int64),
            "count": counts[present],
        }
        for column in columns:
            _column_aggregates(out, column, delivery.gather(column), slot, size, present)
        return out

    return process


def _column_aggregates(
    out: dict[str, npt.NDArray[Any]],
    column: str,
    raw: npt.NDArray[Any],
    slot: npt.NDArray[Any],
    size: int,
    present: npt.NDArray[np.intp],
) -> None:
    values = raw.astype(np.float64)
    out[f"sum:{column}"] = np.bincount(slot, weights=values, minlength=size)[present]
    # Squares too: the estimates' variance (crowdhide.plans.estimates) needs them.
    out[f"sumsq:{column}"] = np.bincount(slot, weights=values * values, minlength=size)[present]
    low = np.full(size, np.inf)
    high = np.full(size, -np.inf)
    np.minimum.at(low, slot, values)
    np.maximum.at(high, slot, values)
    out[f"min:{column}"] = low[present]
    out[f"max:{column}"] = high[present]


def combine_partials(partials: Sequence[Mapping[str, npt.NDArray[Any]]]) -> dict[str, Any]:
    """Merge partial aggregates of disjoint message sets (rows sorted by key, as computed)."""
    if len(partials) == 1:
        return dict(partials[0])
    key, slot = np.unique(np.concatenate([p["key"] for p in partials]), return_inverse=True)
    out: dict[str, npt.NDArray[Any]] = {"key": key}
    for name in partials[0]:
        if name == "key":
            continue
        values = np.concatenate([p[name] for p in partials])
        if name == NODE:
            merged = np.zeros(len(key), dtype=values.dtype)
            merged[slot] = values  # a key lives at one node
        elif name.startswith(("min:", "max:")):
            merged = np.full(len(key), np.inf if name.startswith("min:") else -np.inf)
            (np.minimum if name.startswith("min:") else np.maximum).at(merged, slot, values)
        else:
            merged = np.bincount(slot, weights=values, minlength=len(key))
            if name == "count":
                merged = merged.astype(values.dtype)
        out[name] = merged
    return {name: out[name] for name in partials[0]}


@_register("aggregate.combine")
def _aggregate_combine() -> Callable[..., Any]:
    def combine(partials: Sequence[Mapping[str, npt.NDArray[Any]]]) -> dict[str, Any]:
        return combine_partials(partials)

    return combine


@_register("aggregate.result")
def _aggregate_result(sets: int) -> Callable[..., Any]:
    """The result node keeps what each compute set published."""

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for g in range(sets):
            delivery = inbox.only(f"C{g}->R")
            out[f"set{g}"] = {name: delivery.gather(name) for name in delivery.columns}
        return out

    return process


# -- distributed K-means (crowdhide.plans.kmeans) --------------------------------------------
def nearest(points: FloatArray, centroids: FloatArray) -> npt.NDArray[np.int64]:
    """Index of the nearest centroid of each point (squared Euclidean distance)."""
    cross = points @ centroids.T
    distance = (centroids * centroids).sum(axis=1)[None, :] - 2.0 * cross
    return np.asarray(np.argmin(distance, axis=1), dtype=np.int64)


@_register("kmeans.source")
def _kmeans_source(i: int, initial: list[list[float]]) -> Callable[..., Any]:
    """Each source labels its point with its nearest centroid (the ones it received)."""
    first = np.asarray(initial, dtype=np.float32)

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        assert inbox.state is not None
        assert inbox.block is not None
        points = np.asarray(inbox.state["x"], dtype=np.float32)
        if i == 0:
            return {"nearest": nearest(points, first)}
        delivery = next(d for d in inbox if d.route.endswith(f"->src@{i}"))
        out = np.zeros(inbox.block.size, dtype=np.int64)
        # Each source uses the centroids it received; messages carrying the same rows (one
        # broadcast, or one relay's message) are evaluated together.
        for rows, nodes in _received_sets(delivery, "centroid"):
            local = nodes - inbox.block.start
            out[local] = nearest(points[local], rows)
        return {"nearest": out}

    return process


def _received_sets(
    delivery: Delivery, column: str
) -> list[tuple[FloatArray, npt.NDArray[np.int64]]]:
    """``[(rows, receiving nodes)]``: the centroid set each node received, deduplicated."""
    table = np.asarray(delivery.columns[column], dtype=np.float32)
    if delivery.count is None:  # one row per message: every centroid node broadcast its row
        sources, first = np.unique(delivery.source, return_index=True)
        del sources
        return [(table[delivery.first[first]], np.unique(delivery.target))]
    sets = []
    for start in np.unique(delivery.first).tolist():
        mine = delivery.first == start
        count = int(delivery.count[mine][0])
        sets.append((table[start : start + count], delivery.target[mine]))
    return sets


@_register("kmeans.relay")
def _kmeans_relay(i: int) -> Callable[..., Any]:
    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        assert inbox.block is not None
        delivery = inbox.only(f"centroids@{i}->relay@{i}")
        # Every relay received every centroid; it forwards all K in one message per source.
        ((rows, _),) = _received_sets(delivery, "centroid")
        nodes = np.arange(inbox.block.start, inbox.block.stop, dtype=np.int64)
        return {NODE: np.repeat(nodes, rows.shape[0]), "centroid": np.tile(rows, (len(nodes), 1))}

    return process


@_register("kmeans.centroids")
def _kmeans_centroids(i: int, initial: list[list[float]]) -> Callable[..., Any]:
    """New centroids: the mean of the points received, else the previous centroid."""
    first = np.asarray(initial, dtype=np.float32)

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        assert inbox.block is not None
        start, size = inbox.block.start, inbox.block.size
        if i == 0:
            previous = first[start : start + size]
        else:
            back = inbox.only(f"centroids@{i - 1}->centroids@{i}")
            previous = np.empty((size, first.shape[1]), dtype=np.float32)
            previous[back.target - start] = back.gather("centroid")
        delivery = inbox.only(f"src@{i}->centroids@{i}")
        x = delivery.gather("x")
        sums, counts = _sums_by_node(delivery.target - start, x, size)
        centroid = np.where(
            counts[:, None] > 0, sums / np.maximum(counts, 1.0)[:, None], previous
        ).astype(np.float32)
        return {"centroid": centroid, "count": counts.astype(np.int64)}

    return process


def _sums_by_node(
    node: npt.NDArray[np.integer[Any]], x: FloatArray, size: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per-node sums and counts of the points, in float64 and a fixed summation order.

    (A BLAS product sums in an order that depends on its thread count, so hosts with
    different cores could disagree in the last bits.)
    """
    counts = np.bincount(node, minlength=size).astype(np.float64)
    sums = np.zeros((size, x.shape[1]), dtype=np.float64)
    if len(node):
        order = np.argsort(node, kind="stable")
        present = np.flatnonzero(counts)
        starts = np.searchsorted(node[order], present)
        sums[present] = np.add.reduceat(x[order].astype(np.float64), starts, axis=0)
    return sums, counts


@_register("kmeans.result")
def _kmeans_result(last: int) -> Callable[..., Any]:
    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        delivery = inbox.only(f"centroids@{last}->R")
        order = np.argsort(delivery.source, kind="stable")
        return {name: delivery.gather(name)[order] for name in ("centroid", "count")}

    return process
