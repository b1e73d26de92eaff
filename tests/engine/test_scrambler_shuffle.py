"""The scramblers' shuffle: grouped by scrambler, every order of a scrambler's messages
equally likely (also when scramblers hold different numbers of inputs)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from crowdhide.engine.program import _scrambler_order, block_rng


def _chi2_ok(counts: dict[tuple[int, ...], int], cells: int, draws: int) -> bool:
    expected = draws / cells
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    chi2 += (cells - len(counts)) * expected  # cells never drawn
    # mean cells-1, sd sqrt(2(cells-1)): 6 sd is a generous bound that a wrong law exceeds.
    return chi2 < (cells - 1) + 6 * math.sqrt(2 * (cells - 1))


def test_every_order_of_one_scrambler_is_equally_likely() -> None:
    scr = np.zeros(3, dtype=np.int64)  # 3 inputs (entries 0..2) + 2 dummies (3, 4)
    draws = 12_000
    counts: dict[tuple[int, ...], int] = {}
    for seed in range(draws):
        order = tuple(_scrambler_order(scr, 1, 2, block_rng(seed, 0, "x", 0)).tolist())
        counts[order] = counts.get(order, 0) + 1
    assert set(counts) <= set(itertools.permutations(range(5)))
    assert _chi2_ok(counts, 120, draws)


def test_uneven_scramblers_stay_grouped_and_uniform() -> None:
    scr = np.array([1, 0, 0], dtype=np.int64)  # scrambler 0: entries 1, 2 (+ dummy 4)
    draws = 6000
    first: dict[tuple[int, ...], int] = {}
    for seed in range(draws):
        out = _scrambler_order(scr, 2, 1, block_rng(seed, 0, "y", 0)).tolist()
        assert sorted(out[:3]) == [1, 2, 3]  # scrambler 0: inputs 1, 2 and dummy 3
        assert sorted(out[3:]) == [0, 4]  # scrambler 1: input 0 and dummy 4
        key = tuple(out[:3])
        first[key] = first.get(key, 0) + 1
    assert _chi2_ok(first, 6, draws)


def test_the_uniformity_check_can_fail() -> None:
    biased = {(0, 1, 2): 3000, (1, 0, 2): 1000, (2, 1, 0): 2000}
    assert not _chi2_ok(biased, 6, 6000)
