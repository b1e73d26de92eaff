"""The profile's batched excesses are ``excess_half``'s floats (s28-rounds, issue 32).

``_profile_excess.excess_upper`` forms the pair terms of ``excess_half(upper=True)`` once
per distinct ``(a*, s)`` and only the θ terms per element; every element must be the float
``excess_half`` gives (docs/proofs/profile-pair.md §11). Compared bit for bit on the
batches a real profile asks, on batches with untrusted (deep) tails, and on the fallbacks.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.shuffle import _krr_fast, _profile_batch, _profile_excess
from crowdhide.accounting.shuffle._profile_excess import distinct_pairs, excess_upper

FloatArray = npt.NDArray[np.float64]


def _same_floats(a: FloatArray, b: FloatArray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


def _reference(s: FloatArray, theta: FloatArray) -> FloatArray:
    return _krr_fast.excess_half(np.broadcast_to(s, theta.shape), theta, upper=True)


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 1000), (4.0, 10_000)])
def test_every_batch_of_a_profile_is_excess_halfs(
    monkeypatch: pytest.MonkeyPatch, eps0: float, n: int
) -> None:
    """Each batch the variation-ratio profile asks (cells, tops, bottoms: the blocks'
    units and thresholds at every ε) gives excess_half's floats."""
    seen: list[int] = []

    def checked(s: FloatArray, theta: FloatArray) -> FloatArray:
        got = excess_upper(s, theta)
        assert _same_floats(got, _reference(s, theta))
        seen.append(theta.size)
        return got

    monkeypatch.setattr(_profile_batch, "excess_upper", checked)
    _profile_batch._POINT_MEMO.cache_clear()
    eps = np.linspace(0.0, 0.9 * eps0, 9)
    _profile_batch.variation_ratio_log_deltas(n, eps0, eps, -40.0)
    _profile_batch._POINT_MEMO.cache_clear()
    assert len(seen) >= 5
    assert max(seen) >= 10_000  # the deduplicated path was taken


def test_untrusted_tails_take_excess_halfs_deep_branch() -> None:
    """Thresholds near the top of A's range at large s (tails like 2^-s, below
    BETAINC_TRUSTED) beside ordinary ones, in one batch: the same floats."""
    rng = np.random.default_rng(7)
    s = np.floor(rng.uniform(1.0, 3000.0, 400))
    offsets = np.stack([s * f for f in (0.0, 0.05, 0.2, 0.45, 0.499)])
    theta = s / 2.0 + offsets + rng.uniform(0.0, 1.0, offsets.shape)
    theta[-1] = s - 1.5  # a* = s: P(Bin(s, 1/2) >= s) = 2^-s
    assert theta.size >= 512
    assert _same_floats(excess_upper(s, theta), _reference(s, theta))


def test_the_fallbacks_give_excess_halfs_floats() -> None:
    """Small batches, non-integral units and thresholds beyond the range (a* clipped)."""
    rng = np.random.default_rng(3)
    s = np.floor(rng.uniform(1.0, 500.0, 60))
    theta = s / 2.0 + rng.uniform(-5.0, 400.0, (3, s.size))
    assert _same_floats(excess_upper(s, theta), _reference(s, theta))  # 180 < 512
    big = s / 2.0 + rng.uniform(-300.0, 600.0, (12, s.size))
    assert _same_floats(excess_upper(s, big), _reference(s, big))
    halves = s + 0.5
    assert _same_floats(excess_upper(halves, big), _reference(halves, big))


def test_distinct_pairs_are_the_sorted_distinct_pairs() -> None:
    """The same pairs, in (k, m) order, as numpy's unique rows, and each element's place;
    also where the codes are too wide for the packed sort (the argsort fallback)."""
    rng = np.random.default_rng(11)
    for high in (50, 40_000, 2**25, 2**40):
        k = rng.integers(-2, high, 20_000)
        m = rng.integers(-2, high, 20_000)
        k_u, m_u, place = distinct_pairs(k, m)
        rows = np.unique(np.stack([k, m], axis=1), axis=0)
        assert np.array_equal(k_u, rows[:, 0].astype(np.float64))
        assert np.array_equal(m_u, rows[:, 1].astype(np.float64))
        assert np.array_equal(k_u[place], k.astype(np.float64))
        assert np.array_equal(m_u[place], m.astype(np.float64))


def test_the_three_distinct_paths_give_unique_rows() -> None:
    """The table of codes (a range within ``DENSE_RATIO`` of the elements), the merge of
    sorted runs (``runs``: the three tails of sorted distinct pairs, as ``_pair_table`` asks)
    and the packed sort give the same pairs and places as numpy's unique rows."""
    rng = np.random.default_rng(13)
    a = np.unique(rng.integers(0, 3000, 4000) * 5000 + rng.integers(1, 4000, 4000))
    a_u, s_u = a // 5000, a % 5000  # distinct (a*, s) in (a*, s) order, as distinct_pairs
    tails = (np.concatenate([a_u - 1, a_u, a_u - 1]), np.concatenate([s_u - 1, s_u, s_u]))
    dense = (rng.integers(0, 40, 30_000), rng.integers(5, 60, 30_000))  # 2,200 codes
    assert _profile_excess.DENSE_RATIO * 30_000 >= 40 * 55
    for k, m in (tails, dense):
        rows, inverse = np.unique(np.stack([k, m], axis=1), axis=0, return_inverse=True)
        for runs in (False, True):
            k_u, m_u, place = distinct_pairs(k, m, runs=runs)
            assert np.array_equal(k_u, rows[:, 0].astype(np.float64))
            assert np.array_equal(m_u, rows[:, 1].astype(np.float64))
            assert np.array_equal(place, inverse.ravel())
    codes = rng.permutation(rng.integers(0, 1 << 40, 5000))  # not runs: still the sorted set
    keys, place = _profile_excess._merged_distinct(codes)
    assert np.array_equal(keys[place], codes)
    assert bool(np.all(np.diff(keys) > 0))


def test_a_moved_constant_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison is sharp: θ's rounding allowance 1 % larger in the batched form only
    moves its floats (so the tests above would fail)."""
    rng = np.random.default_rng(5)
    s = np.floor(rng.uniform(10.0, 2000.0, 300))
    theta = s / 2.0 + rng.uniform(0.0, 40.0, (4, s.size))
    want = _reference(s, theta)
    monkeypatch.setattr(_profile_excess._krr_fast, "_THETA_RTOL", 1.01 * _krr_fast._THETA_RTOL)
    assert not _same_floats(excess_upper(s, theta), want)
