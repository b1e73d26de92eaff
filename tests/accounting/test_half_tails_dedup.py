"""``binomial_tails.half_tails`` evaluates each distinct ``(a*, s)`` once (issue 32 speed): the
same floats, bit for bit, as the three tails taken element by element — including the
clipped ranges where a tail is exactly 0 or 1 and the arrays too small or not integral to
take the shortcut."""

from __future__ import annotations

import numpy as np
import pytest

from crowdhide.accounting import _half_memo, binomial_tails
from crowdhide.accounting._half_memo import PairMemo, pair_keys


def _direct(a: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
    half_sf = binomial_tails.half_sf
    return half_sf(a - 1.0, s - 1.0), half_sf(a, s), half_sf(a - 1.0, s)


@pytest.mark.parametrize("size", [7, 600, 20_000])
def test_deduplicated_tails_equal_the_direct_ones(size: int) -> None:
    rng = np.random.default_rng(size)
    s = rng.integers(0, 400, size=size).astype(np.float64)
    s[: size // 10] = rng.integers(10**8, 10**9, size=size // 10)  # large counts too
    a = np.floor(s / 2.0 + rng.normal(0.0, 30.0, size=size)) + 1.0
    a[::17] = -3.0  # every tail 1
    a[::23] = s[::23] + 5.0  # every tail 0
    a[::29] = s[::29] + 1.0  # at the edge
    got = binomial_tails.half_tails(a, s)
    for mine, ref in zip(got, _direct(a, s), strict=True):
        assert np.array_equal(mine, ref)


def test_non_integral_arrays_take_the_direct_path() -> None:
    s = np.full(1000, 40.5)
    a = np.linspace(0.0, 45.0, 1000)
    for mine, ref in zip(binomial_tails.half_tails(a, s), _direct(a, s), strict=True):
        assert np.array_equal(mine, ref)


def test_the_memo_gives_the_same_floats_whatever_its_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tails kept across calls are those an evaluation gives: from an empty memo, a full
    one (a small memo that must start afresh), one whose recent keys are merged into the
    large ones, and a warm one alike."""
    rng = np.random.default_rng(3)
    s = rng.integers(1, 3000, size=5000).astype(np.float64)
    a = np.floor(s / 2.0 + rng.normal(0.0, 20.0, size=s.size)) + 1.0
    ref = _direct(a, s)
    memos = (
        PairMemo(1 << 20),
        PairMemo(1 << 20, recent=1000),  # merged into the large arrays on every call
        PairMemo(16_000),  # one call fits (about 12 000 pairs), two do not
        PairMemo(100),  # no call fits: evaluated, not kept
    )
    for memo in memos:
        monkeypatch.setattr(binomial_tails, "_TAIL_MEMO", memo)
        for shift in (0.0, 1.0, 0.0, -2.0):  # nearby thresholds, as at nearby ε
            got = binomial_tails.half_tails(a + shift, s)
            for mine, want in zip(got, _direct(a + shift, s), strict=True):
                assert np.array_equal(mine, want)
        for keys, held in ((memo.keys, memo.held), (memo.recent_keys, memo.recent_held)):
            assert np.all(np.diff(keys) > 0)  # the held keys stay sorted and distinct
            assert keys.size == held.size
        assert memo.size <= memo.capacity
        memo.cache_clear()
        for mine, want in zip(binomial_tails.half_tails(a, s), ref, strict=True):
            assert np.array_equal(mine, want)


def test_the_memo_holds_what_it_evaluated() -> None:
    """A pair asked twice is evaluated once; held pairs decode to the (k, m) asked (the
    memo hands the function the decoded pairs, so a wrong packing gives wrong tails)."""
    calls: list[int] = []

    def fn(k: np.ndarray, m: np.ndarray) -> np.ndarray:
        calls.append(k.size)
        return k * 1000.0 + m

    memo = PairMemo(1 << 10, recent=4)
    k = np.array([-1.0, 0.0, 5.0, 2.0**30])
    m = np.array([-1.0, 3.0, 7.0, 2.0**30 - 1.0])
    keys = pair_keys(k, m)
    order = np.argsort(keys)
    assert np.array_equal(memo.values(keys[order], fn), (k * 1000.0 + m)[order])
    assert np.array_equal(memo.values(keys[order], fn), (k * 1000.0 + m)[order])
    assert calls == [4]


def test_merged_keys_are_those_np_insert_gives() -> None:
    """The memo's merge (a stable sort of two sorted runs) gives the arrays that inserting
    the new keys at their ``searchsorted`` places gave, values along; empty sides too."""
    rng = np.random.default_rng(9)
    every = rng.permutation(np.unique(rng.integers(0, 1 << 40, 30_000)))
    for size in (0, 1, 700, 20_000):
        keys, more = np.sort(every[:size]), np.sort(every[size : size + 5_000])
        held, values = rng.random(keys.size), rng.random(more.size)
        at = np.searchsorted(keys, more)
        got_keys, got_held = _half_memo._merged(keys, held, more, values)
        assert np.array_equal(got_keys, np.insert(keys, at, more))
        assert np.array_equal(got_held, np.insert(held, at, values))
        assert np.array_equal(_half_memo._merged(more, values, keys, held)[1], got_held)


@pytest.mark.parametrize("wide", [False, True])
def test_distinct_keys_and_places_are_those_of_unique(wide: bool) -> None:
    """``_distinct``'s packed sort (narrow keys) and its argsort (keys too wide to pack an
    index below) both give ``np.unique``'s sorted values and inverse; a shuffled inverse
    (the places of another order) is caught."""
    rng = np.random.default_rng(5)
    key = rng.integers(0, 50, size=(40, 30)).astype(np.int64)
    if wide:
        key = (key << 55) | rng.integers(0, 3, size=key.shape)
    values, inverse = binomial_tails._distinct(key)
    expected, expected_inverse = np.unique(key.ravel(), return_inverse=True)
    assert np.array_equal(values, expected)
    assert np.array_equal(inverse, expected_inverse.ravel())
    assert np.array_equal(values[inverse], key.ravel())
    assert not np.array_equal(rng.permutation(inverse), expected_inverse.ravel())
