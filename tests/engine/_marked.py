"""A plan whose source rows are recognisable in any serialized form, to check who holds them."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crowdhide.engine.library import named
from crowdhide.engine.plan import ExecutionPlan, PlanBuilder
from crowdhide.plans.semantics import protect

SOURCES = 300
BLOCK = 50  # 6 blocks: every shard / host serves several


def markers() -> npt.NDArray[np.int64]:
    """One 8-byte value per source row, vanishingly unlikely to occur in any other bytes."""
    return np.int64(0x3E5A_71C9_0000_0000) + np.arange(SOURCES, dtype=np.int64) * 0x1_0001 + 7


def marked_plan(*, protected: bool) -> ExecutionPlan:
    """Sources with a marker column ``x`` sum it per compute node (optionally protected)."""
    b = PlanBuilder()
    b.sources("S", {"g": np.arange(SOURCES) % 4, "x": markers()})
    # named programs (not closures): the plan can travel as data to node hosts
    b.compute(
        "C", size=4, process=named("compute.sum", route="S->C", column="x", size=4, modulo=1000)
    )
    b.route("S", "C", by=named("route.column", column="g"))
    plan = b.build()
    return protect(plan, sigma=0.5, per_scrambler=10, dummies=5) if protected else plan


def rows_in(blob: bytes) -> set[int]:
    """Source rows whose marker bytes occur in ``blob``."""
    return {r for r, v in enumerate(markers().tolist()) if np.int64(v).tobytes() in blob}


def rows_of(blocks: set[int]) -> set[int]:
    """Source rows of the given blocks of ``S``."""
    return {r for r in range(SOURCES) if r // BLOCK in blocks}
