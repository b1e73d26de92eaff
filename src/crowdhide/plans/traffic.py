"""The communication pattern an observer sees: messages received per compute node.

Without countermeasures the number of messages a compute node receives *is* the histogram
of the data it owns; with them, sampling moves real messages and dummies flatten the
counts. :func:`traffic_per_node` puts the two side by side for every data route.
"""

from __future__ import annotations

import numpy as np

from crowdhide._tables import Rows
from crowdhide.engine import Transcript
from crowdhide.plans.model import ExecutionPlan

__all__ = ["traffic_per_node"]


def traffic_per_node(
    unprotected: ExecutionPlan, transcript: Transcript, routes: tuple[str, ...]
) -> Rows:
    """Per data route: messages received by each node of its receiver group.

    ``unprotected`` counts one message per sender at its true target (the routing function
    applied to the senders' data); ``protected`` counts every message of the observer's
    ``transcript`` that arrives at the group (real and dummy alike, as the observer sees
    them).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.plans import PlanBuilder, protect
    >>> from crowdhide.backends import execute
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"x": np.array([0, 0, 0, 1])})
    >>> _ = b.compute("C", size=2, process=lambda inbox, rng: {})
    >>> _ = b.route("S", "C", by=lambda s: s["x"])
    >>> plain = b.build()
    >>> run = execute(protect(plain, local_dummies=1), rng=0)
    >>> seen = traffic_per_node(plain, run.transcript, ("S->C",))
    >>> [(t["unprotected"], t["protected"]) for t in seen]
    [([3, 1], [4, 4])]
    """
    out = Rows()
    for name in routes:
        route = unprotected.route(name)
        sender = unprotected.group(route.sender)
        receiver = unprotected.group(route.receiver)
        if route.by is None or sender.data is None:
            continue
        true_target = np.asarray(route.by(sender.data), dtype=np.int64)
        plain = np.bincount(true_target, minlength=receiver.size)
        first, size = transcript.groups[route.receiver]
        hits = transcript.target[(transcript.target >= first) & (transcript.target < first + size)]
        seen = np.bincount(hits.astype(np.int64) - first, minlength=size)
        out.append(
            {
                "route": name,
                "receiver": route.receiver,
                "unprotected": [int(v) for v in plain],
                "protected": [int(v) for v in seen],
            }
        )
    return out
