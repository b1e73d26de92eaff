"""The exact max-load table is refused before any work beyond a bound that keeps every
accepted table well inside the 60 s CPU bound of issue 28 (the fuzz audit found
``qif scrambler --targets 3284 --n 10 --dummies 5393495``: 100 s of CPU), naming the largest
accepted number of balls."""

from __future__ import annotations

import re

import pytest

from crowdhide.errors import ResourceLimitError
from crowdhide.qif import _maxload
from crowdhide.qif.scrambler import scrambler_vulnerability


def test_the_fuzzed_case_is_refused_naming_the_largest_accepted_n() -> None:
    with pytest.raises(ResourceLimitError, match=r"at most n=\d+ balls in 3284 bins") as info:
        scrambler_vulnerability(targets=3284, sigma=0.92, n=10, dummies=5_393_495)
    largest = int(re.search(r"at most n=(\d+)", str(info.value)).group(1))  # type: ignore[union-attr]
    assert _maxload._work(largest, largest, 3284) <= _maxload.MAX_WORK
    assert _maxload._work(largest + 1, largest + 1, 3284) > _maxload.MAX_WORK


@pytest.mark.parametrize("bins", [3, 10, 1000])
def test_largest_accepted_is_the_edge_of_the_bound(bins: int) -> None:
    largest = _maxload._largest_accepted(bins)
    assert _maxload._work(largest, largest, bins) <= _maxload.MAX_WORK
    assert _maxload._work(largest + 1, largest + 1, bins) > _maxload.MAX_WORK
