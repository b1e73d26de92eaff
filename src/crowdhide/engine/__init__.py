"""Sharded execution of plans: node programs on blocks, backends, the observer's transcript."""

from crowdhide.engine.backend import (
    DEFAULT_BLOCK_SIZE,
    Backend,
    BlockReport,
    Job,
    LocalBackend,
)
from crowdhide.engine.executor import Execution, RouteStats, execute, make_backend, seed_of
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
    "LocalBackend",
    "MessageBatch",
    "OutOfBlockError",
    "RouteStats",
    "Transcript",
    "block_rng",
    "execute",
    "make_backend",
    "seed_of",
    "split",
    "step",
]
