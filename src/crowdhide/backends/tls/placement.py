"""Placement: which node host serves which block of which group.

Two rules, part of the signed plan document (``placement``) and of the run report:

* ``"spread"`` (default) — a group with at least as many blocks as hosts is cut into
  contiguous ranges of about equal node counts (the engine's shard map,
  :meth:`Job.shard_of <crowdhide.engine.backend.Job.shard_of>`); a smaller group (compute,
  result, scramblers) puts block ``b`` on host ``(b + o) mod H``, where the offsets ``o``
  go round-robin over the non-scrambler groups in plan order and a scrambler group sits on
  the host *after* its route's receiver — so the data-dependent hop (scrambler → target, or
  sources → target) crosses machines whenever there are two hosts or more;
* ``"modulo"`` — block ``b`` of every group on host ``b mod H`` (small groups all on host 0).

With ``ranges`` (node daemons that each hold their own users' rows, one ``(first, stop)``
row range per host), the blocks of every source group go to the host holding their rows
instead; a block that straddles two hosts' rows is refused (:meth:`Placement.check`).

Examples
--------
>>> import numpy as np
>>> from crowdhide.engine.backend import Job
>>> from crowdhide.engine.library import named
>>> from crowdhide.engine.plan import PlanBuilder
>>> b = PlanBuilder()
>>> _ = b.sources("S", {"g": np.arange(6) % 2})
>>> _ = b.compute("C", size=2, process=named("compute.count", route="S->C", size=2))
>>> _ = b.route("S", "C", by=named("route.column", column="g"))
>>> job = Job(b.build(), seed=0, block_size=2)
>>> spread = Placement(hosts=3)
>>> [spread.host(job, "S", i) for i in range(3)], spread.host(job, "C", 0)
([0, 1, 2], 0)
>>> Placement(hosts=3, rule="modulo").host(job, "C", 0)
0
>>> spread.groups(job)
{'S': [0, 1, 2], 'C': [0]}
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int
from crowdhide.engine.backend import Job
from crowdhide.errors import InvalidParameterError

__all__ = ["RULES", "Placement", "default_block_size"]

RULES = ("spread", "modulo")
#: Bounds of :func:`default_block_size`: the engine's default, and a floor that keeps the
#: number of blocks (one program step and one report each) moderate on small runs.
LARGEST_BLOCK, SMALLEST_BLOCK = 1 << 14, 64


def default_block_size(plan: Any, hosts: int) -> int:
    """The block size of a tls run on ``hosts`` spawned hosts when none is given: the
    smallest scrambler group cut into at least ``hosts`` blocks, so that with the
    ``"spread"`` rule every scrambler group is spread over every host (a block is the unit
    of placement: one block holding a whole scrambler group puts all its onions, dummies and
    forwards on one host — 1.6 GB there at 10^6 users); within
    ``[SMALLEST_BLOCK, LARGEST_BLOCK]``. A plan without scramblers keeps the engine's
    default. It depends on the plan and the host count only (public), and the report
    echoes the block size used.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.library import named
    >>> from crowdhide.plans import PlanBuilder, protect
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.zeros(1_000_000, dtype=np.int8)})
    >>> _ = b.compute("C", size=4, process=named("compute.count", route="S->C", size=4))
    >>> _ = b.route("S", "C", by=named("route.column", column="g"))
    >>> default_block_size(b.build(), 8)
    16384
    >>> protected = protect(b.build(), sigma=0.1, per_scrambler=200, dummies=100)
    >>> default_block_size(protected, 8), default_block_size(protected, 3)
    (625, 1667)
    """
    sizes = [int(g.size) for g in plan.groups if g.role == "scrambler"]
    if not sizes:
        return LARGEST_BLOCK
    hosts = check_int("hosts", hosts, low=1)
    return max(SMALLEST_BLOCK, min(LARGEST_BLOCK, -(-min(sizes) // hosts)))


@dataclass(frozen=True)
class Placement:
    """A placement rule over ``hosts`` node hosts."""

    hosts: int
    rule: str = "spread"
    #: Per host, the source rows ``[first, stop)`` it holds (node daemons); empty: none.
    ranges: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "hosts", check_int("hosts", self.hosts, low=1))
        if self.rule not in RULES:
            raise InvalidParameterError(
                f"placement must be one of {RULES}, got {self.rule!r}",
                parameter="placement",
                value=self.rule,
            )
        ranges = tuple((int(a), int(b)) for a, b in self.ranges)
        if ranges and len(ranges) != self.hosts:
            raise InvalidParameterError(
                f"placement ranges must give one row range per host, got {ranges}",
                parameter="ranges",
                value=ranges,
            )
        object.__setattr__(self, "ranges", ranges)

    def check(self, job: Job) -> None:
        """Raise unless every source block lies within one host's rows (with ``ranges``).

        Examples
        --------
        >>> import numpy as np
        >>> from crowdhide.engine.plan import PlanBuilder
        >>> b = PlanBuilder()
        >>> _ = b.sources("S", {"g": np.arange(6) % 2})
        >>> _ = b.result("R", process=lambda inbox, rng: {})
        >>> _ = b.route("S", "R", kind="fixed")
        >>> job = Job(b.build(), seed=0, block_size=3)
        >>> Placement(hosts=2, ranges=((0, 3), (3, 6))).host(job, "S", 1)
        1
        >>> Placement(hosts=2, ranges=((0, 2), (2, 6))).check(job)
        Traceback (most recent call last):
        ...
        crowdhide.errors.InvalidParameterError: block 0 of group 'S' (rows 0..2) is not within ...
        """
        if not self.ranges:
            return
        for g in job.plan.groups:
            if g.role != "source":
                continue
            for b in job.blocks(g.name):
                if not any(a <= b.start and b.stop <= z for a, z in self.ranges):
                    raise InvalidParameterError(
                        f"block {b.index} of group {g.name!r} (rows {b.start}..{b.stop - 1}) "
                        f"is not within one node's rows {list(self.ranges)}; choose a block "
                        f"size that divides every node's row count (--block-size)",
                        parameter="block_size",
                        value=job.block_size,
                    )

    def host(self, job: Job, group: str, block: int) -> int:
        """The host serving block ``block`` of ``group``."""
        if self.ranges and job.plan.group(group).role == "source":
            start = block * job.block_size
            for h, (first, stop) in enumerate(self.ranges):
                if first <= start < stop:
                    return h
            raise InvalidParameterError(
                f"no node holds rows from {start} of group {group!r}",
                parameter="ranges",
                value=self.ranges,
            )
        if self.rule == "modulo":
            return block % self.hosts
        count = -(-job.plan.group(group).size // job.block_size)
        if count >= self.hosts:
            return replace(job, shards=self.hosts).shard_of(block, group)
        return (block + self._offsets(job)[group]) % self.hosts

    def _offsets(self, job: Job) -> dict[str, int]:
        """Offsets of the groups with fewer blocks than hosts (see the module docstring)."""
        plan = job.plan
        small = [g for g in plan.groups if -(-g.size // job.block_size) < self.hosts]
        offsets: dict[str, int] = {}
        turn = 0
        for g in small:
            if g.role != "scrambler":
                offsets[g.name] = turn % self.hosts
                turn += 1
        for g in small:
            if g.role == "scrambler":
                route = next(
                    r
                    for r in plan.routes
                    if r.protection is not None
                    and r.protection.scrambler is not None
                    and r.protection.scrambler.group == g.name
                )
                target = offsets.get(route.receiver, 0)
                offsets[g.name] = (target + 1) % self.hosts
        return offsets

    def groups(self, job: Job) -> dict[str, list[int]]:
        """Hosts serving each group (for the report)."""
        return {
            g.name: sorted({self.host(job, g.name, b.index) for b in job.blocks(g.name)})
            for g in job.plan.groups
        }

    def node_hosts(self, job: Job) -> npt.NDArray[np.int64]:
        """Host of every global node id (for traffic analysis of a transcript)."""
        offsets = job.plan.node_offsets()
        total = sum(g.size for g in job.plan.groups)
        out = np.zeros(total, dtype=np.int64)
        for g in job.plan.groups:
            for b in job.blocks(g.name):
                first = offsets[g.name]
                out[first + b.start : first + b.stop] = self.host(job, g.name, b.index)
        return out

    def to_json(self) -> dict[str, Any]:
        """The placement as it appears in the signed plan document."""
        out: dict[str, Any] = {"rule": self.rule, "hosts": self.hosts}
        if self.ranges:
            out["ranges"] = [list(r) for r in self.ranges]
        return out
