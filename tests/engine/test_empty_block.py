"""A block that no message reaches still runs, on an empty delivery (every backend).

Found in session 15: ``Inbox.only`` promised "empty if nothing arrived" but raised
``KeyError`` — so a GROUP BY whose key range of one compute block nobody chose, or a block
whose every message was lost on a daemon link, crashed the node program (every program
of the library reads its messages with ``only``) instead of counting zeros and letting the
backend report the loss.
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.backends.local import LocalBackend
from crowdhide.engine.executor import execute
from crowdhide.engine.messages import Inbox
from crowdhide.engine.plan import PlanBuilder


def _plan(route: str = "S->C") -> object:
    b = PlanBuilder()
    b.sources("S", {"g": np.zeros(100, dtype=np.int64)})  # every user picks node 0
    b.compute(
        "C",
        size=40,
        process=lambda inbox, rng: {
            "count": np.bincount(inbox.only(route).target, minlength=inbox.block.size),
            "sum": np.full(inbox.block.size, inbox.only(route).gather("g").sum()),
        },
    )
    b.route("S", "C", by=lambda s: s["g"], columns=("g",))
    return b.build()


def test_a_block_no_message_reaches_counts_zeros() -> None:
    run = execute(_plan(), backend=LocalBackend(), rng=0, block_size=20)
    count = run.states["C"]["count"]
    assert count.tolist() == [100] + [0] * 39  # block 1 (nodes 20-39) got nothing


def test_a_route_that_does_not_lead_to_the_group_is_still_an_error() -> None:
    with pytest.raises(Exception, match="routes into this group: \\['S->C'\\]"):
        execute(_plan("S->X"), backend=LocalBackend(), rng=0, block_size=20)


def test_an_empty_delivery_gathers_nothing() -> None:
    empty = Inbox(expected=("S->C",)).only("S->C")
    assert len(empty) == 0
    assert empty.gather("anything").size == 0
    with pytest.raises(KeyError, match="routes into this group"):
        Inbox(expected=("S->C",)).only("T->C")
