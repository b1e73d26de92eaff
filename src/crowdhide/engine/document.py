"""A plan as data: the versioned, declarative document a coordinator ships to its nodes.

:func:`plan_document` turns an :class:`~crowdhide.engine.plan.ExecutionPlan` whose programs
are all named (:mod:`crowdhide.engine.library`) into a JSON document — groups (size, role,
device, program references), routes (kind, routing reference, message size, columns,
countermeasures) and the run's parameters and placement — and :func:`canonical` into the
bytes that are hashed and signed. :func:`plan_from_document` rebuilds the plan on a node from
its own registry, with the source rows the node holds itself; a document of another version
is refused (:class:`PlanDocumentError`). Nothing in a document is code and no user data is
in it.

Examples
--------
>>> import numpy as np
>>> from crowdhide.engine.library import named
>>> from crowdhide.engine.plan import PlanBuilder
>>> b = PlanBuilder()
>>> _ = b.sources("S", {"g": np.arange(6) % 2})
>>> _ = b.compute("C", size=2, process=named("compute.count", route="S->C", size=2))
>>> _ = b.route("S", "C", by=named("route.column", column="g"))
>>> doc = plan_document(b.build(), run={"seed": 1})
>>> doc["version"], [g["name"] for g in doc["groups"]]
('crowdhide-plan/1', ['S', 'C'])
>>> plan_from_document(doc, data={"S": {"g": np.arange(6) % 2}}) == b.build()
True
>>> plan_from_document({**doc, "version": "crowdhide-plan/9"}, data={})
Traceback (most recent call last):
...
crowdhide.engine.document.PlanDocumentError: plan version 'crowdhide-plan/9' is not supported ...
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from crowdhide.engine.library import ProgramRef, ref_of, resolve
from crowdhide.engine.plan import (
    ExecutionPlan,
    NodeGroup,
    Protection,
    Route,
    ScramblerLayer,
    State,
)

__all__ = [
    "PLAN_VERSION",
    "PlanDocumentError",
    "canonical",
    "digest",
    "plan_document",
    "plan_from_document",
]

#: The only document version this code writes and reads.
PLAN_VERSION = "crowdhide-plan/1"


class PlanDocumentError(ValueError):
    """A plan that cannot travel as data, or a document a node refuses."""


def canonical(document: Mapping[str, Any]) -> bytes:
    """The bytes that are hashed and signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def digest(document: Mapping[str, Any]) -> str:
    """SHA-256 of :func:`canonical`, hex."""
    return hashlib.sha256(canonical(document)).hexdigest()


def _ref(function: Any, where: str) -> dict[str, Any] | None:
    if function is None:
        return None
    ref = ref_of(function)
    if ref is None:
        raise PlanDocumentError(
            f"{where} is not a named program (crowdhide.engine.library.named); a plan that "
            "leaves this process carries program names, never code"
        )
    return ref.to_json()


def _protection(p: Protection | None) -> dict[str, Any] | None:
    if p is None:
        return None
    layer = p.scrambler
    scrambler = (
        None
        if layer is None
        else {
            "per_scrambler": layer.per_scrambler,
            "dummies": layer.dummies,
            "cap": layer.cap,
            "group": layer.group,
        }
    )
    return {"sigma": p.sigma, "local_dummies": p.local_dummies, "scrambler": scrambler}


def plan_document(
    plan: ExecutionPlan,
    *,
    run: Mapping[str, Any] | None = None,
    placement: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``plan`` as a JSON document (programs by name), with run parameters and placement."""
    groups = [
        {
            "name": g.name,
            "size": g.size,
            "role": g.role,
            "device": g.device,
            "columns": None if g.data is None else list(g.data),
            "process": _ref(g.process, f"groups[{g.name}].process"),
            "combine": _ref(g.combine, f"groups[{g.name}].combine"),
        }
        for g in plan.groups
    ]
    routes = [
        {
            "name": r.name,
            "sender": r.sender,
            "receiver": r.receiver,
            "kind": r.kind,
            "by": _ref(r.by, f"routes[{r.name}].by"),
            "message_size": r.message_size,
            "columns": None if r.columns is None else list(r.columns),
            "protection": _protection(r.protection),
        }
        for r in plan.routes
    ]
    document = {
        "version": PLAN_VERSION,
        "groups": groups,
        "routes": routes,
        "run": dict(run or {}),
        "placement": dict(placement or {}),
    }
    canonical(document)  # refuses values that are not JSON now, not on the node
    return document


def _program(value: Any, where: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        raise PlanDocumentError(f"{where} must be a program reference, got {value!r}")
    params = value.get("params", {})
    if not isinstance(params, Mapping):
        raise PlanDocumentError(f"{where}.params must be an object, got {params!r}")
    try:
        return resolve(ProgramRef(value["name"], dict(params)))
    except ValueError as exc:
        raise PlanDocumentError(f"{where}: {exc}") from None


def _layer(value: Any) -> ScramblerLayer | None:
    return None if value is None else ScramblerLayer(**value)


def plan_from_document(document: Mapping[str, Any], *, data: Mapping[str, State]) -> ExecutionPlan:
    """Rebuild the plan of ``document`` from this node's registry; ``data[group]`` holds the
    source rows this node has (a :class:`~crowdhide.engine.blocks.BlockRows` or whole columns)."""
    version = document.get("version")
    if version != PLAN_VERSION:
        raise PlanDocumentError(
            f"plan version {version!r} is not supported by this node (it reads {PLAN_VERSION!r})"
        )
    try:
        groups = tuple(
            NodeGroup(
                name=g["name"],
                size=g["size"],
                role=g["role"],
                device=g["device"],
                data=data.get(g["name"]) if g["role"] == "source" else None,
                process=_program(g["process"], f"groups[{g['name']}].process"),
                combine=_program(g["combine"], f"groups[{g['name']}].combine"),
            )
            for g in document["groups"]
        )
        routes = tuple(
            Route(
                name=r["name"],
                sender=r["sender"],
                receiver=r["receiver"],
                kind=r["kind"],
                by=_program(r["by"], f"routes[{r['name']}].by"),
                message_size=r["message_size"],
                protection=None
                if r["protection"] is None
                else Protection(
                    sigma=r["protection"]["sigma"],
                    local_dummies=r["protection"]["local_dummies"],
                    scrambler=_layer(r["protection"]["scrambler"]),
                ),
                columns=None if r["columns"] is None else tuple(r["columns"]),
            )
            for r in document["routes"]
        )
        return ExecutionPlan(groups=groups, routes=routes)
    except PlanDocumentError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanDocumentError(f"malformed plan document: {type(exc).__name__}: {exc}") from None
