"""Sharded execution of plans: node programs on blocks, the backend contract, the observer's
transcript (the backends themselves live in :mod:`crowdhide.backends`)."""

from crowdhide.engine.backend import DEFAULT_BLOCK_SIZE, Backend, BlockReport, Job
from crowdhide.engine.executor import Execution, RouteStats, execute, seed_of
from crowdhide.engine.messages import (
    Block,
    BlockState,
    Delivery,
    Inbox,
    MessageBatch,
    OutOfBlockError,
    Transcript,
)
from crowdhide.engine.program import BlockResult, block_rng, split, step

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "Backend",
    "Block",
    "BlockReport",
    "BlockResult",
    "BlockState",
    "Delivery",
    "Execution",
    "Inbox",
    "Job",
    "MessageBatch",
    "OutOfBlockError",
    "RouteStats",
    "Transcript",
    "block_rng",
    "execute",
    "seed_of",
    "split",
    "step",
]
