"""A block's generator keyed by a host's secret (issue #27 review: every tls host received
the seed and could replay every other host's sampling, dummies and shuffles).

Without a secret the keying is unchanged (the local and Ray backends, and a tls run with a
shared seed, reproduce earlier runs); with one, the same seed gives other draws — and the
same message counts, since only *which* targets and orders are drawn changes.
"""

from __future__ import annotations

import zlib

import numpy as np

from crowdhide.engine.messages import Block
from crowdhide.engine.plan import ExecutionPlan, PlanBuilder
from crowdhide.engine.program import block_rng, step
from crowdhide.plans.semantics import protect

SOURCES = 200


def _plan() -> ExecutionPlan:
    b = PlanBuilder().sources("S", {"g": np.arange(SOURCES) % 4})
    _ = b.compute("C", size=4, process=lambda inbox, rng: {})
    _ = b.route("S", "C", by=lambda state: np.asarray(state["g"], dtype=np.int64))
    return protect(b.build(), sigma=0.5, local_dummies=2)


def test_without_a_secret_the_keying_is_the_seeds_as_before() -> None:
    """The reproducible mode is exactly the old key (seed, round, group, block)."""
    words = [7, 2, zlib.crc32(b"S"), 3]
    old = np.random.Generator(np.random.Philox(np.random.SeedSequence(words)))
    np.testing.assert_array_equal(
        block_rng(7, 2, "S", 3).integers(0, 2**62, 8), old.integers(0, 2**62, 8)
    )


def test_a_secret_changes_every_draw_and_a_seed_alone_does_not_reveal_it() -> None:
    draws = {
        secret: block_rng(7, 2, "S", 3, secret=secret).integers(0, 2**62, 8).tolist()
        for secret in (None, 1, 2**255 + 1, 2**255 + 2)
    }
    assert len({tuple(v) for v in draws.values()}) == 4
    # Same secret, same seed: the host itself reproduces its own block.
    again = block_rng(7, 2, "S", 3, secret=2**255 + 1).integers(0, 2**62, 8).tolist()
    assert again == draws[2**255 + 1]


def test_secret_keys_change_targets_and_orders_not_counts() -> None:
    plan = _plan()
    block = Block.cut("S", size=SOURCES, block_size=SOURCES)[0]

    def emitted(secret: int | None) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        result = step(plan, block, [], seed=5, secret=secret)
        (batch,) = result.batches
        return batch.dst, batch.order, {"messages": result.stats["S->C"]["messages"]}

    shared_a, shared_b = emitted(None), emitted(None)
    secret_a, secret_b = emitted(2**200 + 11), emitted(2**200 + 12)
    np.testing.assert_array_equal(shared_a[0], shared_b[0])
    np.testing.assert_array_equal(shared_a[1], shared_b[1])
    assert not np.array_equal(secret_a[0], secret_b[0])
    assert not np.array_equal(secret_a[1], secret_b[1])
    assert not np.array_equal(secret_a[0], shared_a[0])
    # Every sender sends 1 + 2 messages whatever it drew: the counts do not move.
    assert shared_a[2] == secret_a[2] == secret_b[2] == {"messages": 3 * SOURCES}
