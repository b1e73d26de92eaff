"""The parts of an execution plan: node groups, routes and their protection (internal).

Split off :mod:`crowdhide.engine.plan` (module size), which re-exports every public name
here and documents the model: :class:`NodeGroup`, :class:`Route` with its
:class:`Protection` and :class:`ScramblerLayer`, the type aliases of node programs and
routing functions, and the checks of a route against the plan's groups
(:func:`check_route`, called by :class:`~crowdhide.engine.plan.ExecutionPlan`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_bool, check_int, check_probability
from crowdhide.engine.blocks import BlockRows
from crowdhide.errors import DataError, InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.engine.messages import Inbox

__all__ = [
    "CombineFunction",
    "GroupRole",
    "NodeGroup",
    "ProcessFunction",
    "Protection",
    "Route",
    "RouteKind",
    "RoutingFunction",
    "ScramblerLayer",
    "State",
    "check_route",
]

#: Per-group state: named numpy arrays (for sources: one row per node; for compute nodes:
#: whatever the compute function returns).
State = Mapping[str, npt.NDArray[Any]]
#: ``process(inbox, rng) -> state`` for compute and result groups.
ProcessFunction = Callable[["Inbox", np.random.Generator], State]
#: ``combine(partials) -> state``: merges states that ``process`` computed on disjoint parts
#: of a block's inbox (see :attr:`NodeGroup.combine`).
CombineFunction = Callable[[Sequence[State]], State]
#: ``by(state) -> targets``: one target index per sender node, vectorized over nodes.
RoutingFunction = Callable[[State], npt.NDArray[np.integer[Any]]]

RouteKind = Literal["data", "fixed", "broadcast", "fanout", "stream"]
GroupRole = Literal["source", "compute", "result", "scrambler"]
_ROLES = ("source", "compute", "result", "scrambler")
_KINDS = ("data", "fixed", "broadcast", "fanout", "stream")


@dataclass(frozen=True)
class NodeGroup:
    """A set of ``size`` nodes running the same program.

    Parameters
    ----------
    name
        Unique name in the plan.
    size
        Number of nodes (>= 1).
    role
        ``"source"`` (each node holds one tuple), ``"compute"``, ``"result"`` or
        ``"scrambler"`` (added by :func:`crowdhide.plans.protect`).
    device
        Physical device group. Logical groups with the same device run on the same
        devices and see the same data (default: the group's own name).
    data
        Sources: the tuples, one row per node (named columns of equal length ``size``).
        Sources whose ``process`` is set derive their state from ``data`` and their inbox.
    process
        Compute/result groups (and iterative sources): ``process(inbox, rng) -> state``.
    combine
        Compute groups whose state is a mergeable aggregate (sums, counts, minima...):
        ``combine(partials) -> state`` merges states that ``process`` computed on disjoint
        parts of the inbox. When set, a block runs ``process`` on one received part at a
        time (one sender block's messages of one route, in canonical order) and folds the
        partial states, so its memory follows the block size, not the number of messages
        it receives. ``process`` then sees one route's delivery per call, and ``combine``
        must not depend on how the messages were cut into parts beyond floating-point
        rounding (the cut is canonical, hence the same for every backend and shard count).

    See Also
    --------
    Route : How groups send to each other.
    """

    name: str
    size: int
    role: GroupRole
    device: str | None = None
    data: State | None = field(default=None, repr=False, compare=False)
    process: ProcessFunction | None = field(default=None, repr=False, compare=False)
    combine: CombineFunction | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidParameterError(f"group name must be a non-empty string, got {self.name!r}")
        object.__setattr__(self, "size", check_int(f"groups[{self.name}].size", self.size, low=1))
        if self.role not in _ROLES:
            raise InvalidParameterError(
                f"groups[{self.name}].role must be one of {_ROLES}, got {self.role!r}"
            )
        if self.role == "source" and self.data is None:
            raise InvalidParameterError(f"groups[{self.name}].data is required for a source group")
        if self.combine is not None and (self.role != "compute" or self.process is None):
            raise InvalidParameterError(
                f"groups[{self.name}].combine applies to compute groups with a process only "
                f"(role {self.role!r})"
            )
        if isinstance(self.data, BlockRows):
            self.data.check(f"groups[{self.name}].data", self.size)
        elif self.data is not None:
            for column, values in self.data.items():
                if len(values) != self.size:
                    raise DataError(
                        f"groups[{self.name}].data[{column!r}] must have {self.size} rows "
                        f"(one per node), got {len(values)}"
                    )

    @property
    def physical(self) -> str:
        """The device group this logical group runs on."""
        return self.device or self.name

    @property
    def holds_data(self) -> bool:
        """Whether each node holds (disjoint) user data."""
        return self.role == "source"


@dataclass(frozen=True)
class ScramblerLayer:
    """Scramblers inserted on a data route (Section IV-A, Algorithm 1).

    Parameters
    ----------
    per_scrambler
        ``n``: sources per scrambler, assigned by index (data-independent). When ``n`` does
        not divide S the last scrambler gets the remainder and is certified with its own n.
    dummies
        ``d``: dummies added by each scrambler, uniform over all targets (uncapped) or
        Algorithm 1's capped variant.
    cap
        Capped variant ``S̃_d`` (at most ``n`` messages per target). Its only certificate
        here is the local-randomizer one (Theorem 3 is not a certified bound).
    group
        Name of the scrambler group in the transformed plan.

    See Also
    --------
    Protection : Holds it.
    crowdhide.scrambler_epsilon : The privacy of one scrambler.
    """

    per_scrambler: int
    dummies: int
    cap: bool = False
    group: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "per_scrambler", check_int("per_scrambler (n)", self.per_scrambler, low=1)
        )
        object.__setattr__(self, "dummies", check_int("dummies (d)", self.dummies, low=0))
        object.__setattr__(self, "cap", check_bool("cap", self.cap))

    def scrambler_count(self, sources: int) -> int:
        """Number of scramblers for ``sources`` senders: ``⌈S/n⌉``."""
        return -(-sources // self.per_scrambler)

    def partition_sizes(self, sources: int) -> tuple[int, ...]:
        """Distinct partition sizes (n, and the remainder when n does not divide S)."""
        n = min(self.per_scrambler, sources)
        rest = sources % n
        return (n,) if rest == 0 else tuple(sorted({n, rest}))


@dataclass(frozen=True)
class Protection:
    """Countermeasures applied to one data route.

    Parameters
    ----------
    sigma
        Target sampling rate σ (convention U of the paper: with probability σ the source
        picks a target uniformly among *all* T targets; the real message is sent when the
        draw equals the true target, footnote 5).
    local_dummies
        Flooding at the source (Section III-A): d extra dummies to distinct other targets,
        ``0 <= d <= T-1``. Not combined with scramblers.
    scrambler
        Optional scrambler layer.

    See Also
    --------
    protect : Applies it to a plan.
    ScramblerLayer : The scrambler part.
    """

    sigma: float = 0.0
    local_dummies: int = 0
    scrambler: ScramblerLayer | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_probability("sigma", self.sigma))
        object.__setattr__(
            self, "local_dummies", check_int("local_dummies", self.local_dummies, low=0)
        )
        if self.scrambler is not None and self.local_dummies:
            raise InvalidParameterError(
                "local_dummies must be 0 when scramblers are used (the scramblers add the "
                f"dummies), got {self.local_dummies}"
            )


@dataclass(frozen=True)
class Route:
    """Every node of ``sender`` sends one message per route to a node of ``receiver``.

    Parameters
    ----------
    name
        Unique name in the plan.
    sender, receiver
        Group names.
    kind
        ``"data"``, ``"fixed"``, ``"broadcast"``, ``"fanout"`` or ``"stream"`` (module
        docstring).
    by
        Routing function of a data route: ``by(sender_state) -> target indices`` in
        ``[0, receiver.size)``, one per sender node, vectorized.
    message_size
        Bytes on the wire, the same for every message of the route (real or dummy).
    protection
        Countermeasures (data routes only).
    columns
        Columns of the sender's state a message carries (its encrypted payload); ``None``
        carries every column. A receiver sees these columns and nothing else of the sender.

    See Also
    --------
    NodeGroup : The sender and receiver.
    Protection : Countermeasures of a data route.
    """

    name: str
    sender: str
    receiver: str
    kind: RouteKind
    by: RoutingFunction | None = field(default=None, repr=False, compare=False)
    message_size: int = 64
    protection: Protection | None = None
    columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.columns is not None:
            if isinstance(self.columns, str) or not all(
                isinstance(c, str) and c for c in self.columns
            ):
                raise DataError(
                    f"routes[{self.name}].columns must be a sequence of column names, "
                    f"got {self.columns!r}"
                )
            object.__setattr__(self, "columns", tuple(self.columns))
        if not isinstance(self.name, str) or not self.name:
            raise InvalidParameterError(f"route name must be a non-empty string, got {self.name!r}")
        if self.kind not in _KINDS:
            raise InvalidParameterError(
                f"routes[{self.name}].kind must be one of {_KINDS}, got {self.kind!r}"
            )
        if self.kind == "data" and self.by is None:
            raise InvalidParameterError(
                f"routes[{self.name}].by (routing function) is required for a data route"
            )
        if self.kind != "data" and self.protection is not None:
            raise InvalidParameterError(
                f"routes[{self.name}].protection applies to data routes only (kind={self.kind!r})"
            )
        object.__setattr__(
            self,
            "message_size",
            check_int(f"routes[{self.name}].message_size", self.message_size, low=1),
        )


def check_route(route: Route, by_name: Mapping[str, NodeGroup]) -> None:
    """The route's ends name groups, its kind fits their sizes, and its protection fits."""
    for end in ("sender", "receiver"):
        if getattr(route, end) not in by_name:
            raise InvalidParameterError(
                f"routes[{route.name}].{end} must name a group, got {getattr(route, end)!r}"
            )
    if route.kind == "fanout" and by_name[route.receiver].size < by_name[route.sender].size:
        raise InvalidParameterError(
            f"routes[{route.name}]: a fanout needs at least as many receivers as senders"
        )
    if route.kind == "stream" and by_name[route.sender].size != 1:
        raise InvalidParameterError(
            f"routes[{route.name}]: a stream is sent by a single node, got sender group "
            f"{route.sender!r} of size {by_name[route.sender].size}"
        )
    if route.sender == route.receiver:
        raise InvalidParameterError(f"routes[{route.name}] must not loop on group {route.sender!r}")
    _check_protection(route, by_name)


def _check_protection(route: Route, by_name: Mapping[str, NodeGroup]) -> None:
    """Local dummies fit the receivers; a scrambler layer names ``⌈S/n⌉`` scramblers."""
    protection = route.protection
    if protection is None:
        return
    targets = by_name[route.receiver].size
    if protection.local_dummies > targets - 1:
        raise InvalidParameterError(
            f"routes[{route.name}].protection.local_dummies must be <= T-1 = "
            f"{targets - 1}, got {protection.local_dummies}"
        )
    layer = protection.scrambler
    if layer is None:
        return
    if layer.group not in by_name or by_name[layer.group].role != "scrambler":
        raise InvalidParameterError(
            f"routes[{route.name}].protection.scrambler.group must name a scrambler group, "
            f"got {layer.group!r}"
        )
    expected = layer.scrambler_count(by_name[route.sender].size)
    if by_name[layer.group].size != expected:
        raise InvalidParameterError(
            f"groups[{layer.group}].size must be ceil(S/n) = {expected}, "
            f"got {by_name[layer.group].size}"
        )
