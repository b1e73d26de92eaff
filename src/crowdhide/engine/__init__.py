"""Backends executing plans in vectorized supersteps, and the observer's transcript."""

from crowdhide.engine.backend import Backend, LocalBackend
from crowdhide.engine.executor import Execution, RouteStats, execute
from crowdhide.engine.messages import Delivery, Inbox, MessageBatch, Transcript

__all__ = [
    "Backend",
    "Delivery",
    "Execution",
    "Inbox",
    "LocalBackend",
    "MessageBatch",
    "RouteStats",
    "Transcript",
    "execute",
]
