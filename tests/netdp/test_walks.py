"""Tests of crowdhide.netdp.walks: walks and the visit index, against direct loops."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.netdp.walks import (
    VisitIndex,
    complete_walk,
    contribution_rank,
    ring_walk,
    visit_index,
)


def test_ring_walk_goes_round_in_order() -> None:
    assert ring_walk(n=4, rounds=3).tolist() == [0, 1, 2, 3] * 3


def test_walk_statistics() -> None:
    walk = complete_walk(n=50, steps=200_000, rng=4)
    counts = visit_index(walk, n=50).counts()
    assert abs(counts.mean() - 4000) < 1e-9
    assert abs(counts.var() / (200_000 * (1 / 50) * (49 / 50)) - 1) < 0.5
    _owner, m = visit_index(walk, n=50).cycle_lengths()
    assert abs(m[m < 10**6].mean() - 50) < 2.0  # return time ~ G(1/n)
    assert contribution_rank([0, 0, 1, 0]).tolist() == [0, 1, 0, 2]


def test_complete_walk_is_reproducible_and_in_range() -> None:
    a = complete_walk(n=7, steps=500, rng=3)
    assert np.array_equal(a, complete_walk(n=7, steps=500, rng=3))
    assert a.min() >= 0
    assert a.max() < 7
    assert set(np.unique(a)) == set(range(7))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_visit_index_and_rank_match_direct_loops(seed: int) -> None:
    walk = complete_walk(n=6, steps=80, rng=seed)
    idx = visit_index(walk, n=6)
    assert isinstance(idx, VisitIndex)
    seen: dict[int, int] = {}
    ranks = []
    for h in walk.tolist():
        ranks.append(seen.get(h, 0))
        seen[h] = seen.get(h, 0) + 1
    assert contribution_rank(walk).tolist() == ranks
    owners, lengths = [], []
    for v in range(6):
        times = [t + 1 for t, h in enumerate(walk.tolist()) if h == v]
        assert idx.visits(v).tolist() == times
        prev = 0
        for t in times:
            owners.append(v)
            lengths.append(t - prev)
            prev = t
    owner, m = idx.cycle_lengths()
    assert owner.tolist() == owners
    assert m.tolist() == lengths


def test_visit_index_rejects_bad_holders() -> None:
    with pytest.raises(ValueError, match="holders"):
        visit_index([0, 5], n=3)
