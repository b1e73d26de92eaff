"""The shuffler: a uniformly random, CSPRNG-driven permutation of the collected messages."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from crowdhide.protocols import shuffler as shuffler_module
from crowdhide.protocols.shuffler import Shuffler, secure_permutation, shuffle_messages


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000, 70_000])
def test_secure_permutation_is_a_permutation(n: int) -> None:
    perm = secure_permutation(n)
    assert perm.dtype == np.int64
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))


def test_secure_permutation_is_uniform_on_four_elements() -> None:
    trials = 4800
    index = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.zeros(24)
    for _ in range(trials):
        counts[index[tuple(secure_permutation(4).tolist())]] += 1
    assert chisquare(counts).pvalue > 1e-4


def test_ties_are_broken_uniformly(monkeypatch: pytest.MonkeyPatch) -> None:
    # With an all-zero "random" source every key ties; the result must still be a uniformly
    # random permutation (from SystemRandom), never the identity by construction.
    monkeypatch.setattr(shuffler_module.os, "urandom", lambda size: bytes(size))
    seen = set()
    for _ in range(200):
        perm = secure_permutation(3)
        np.testing.assert_array_equal(np.sort(perm), np.arange(3))
        seen.add(tuple(perm.tolist()))
    assert len(seen) == math.factorial(3)


def test_shuffler_forwards_the_multiset_only() -> None:
    shuffler = Shuffler()
    shuffler.submit(np.array([3, 1, 2]))
    shuffler.submit(np.array([7]))
    assert shuffler.pending == 4
    batch = shuffler.release()
    assert batch.secure
    assert batch.count == 4
    assert sorted(batch.messages.tolist()) == [1, 2, 3, 7]
    assert not batch.messages.flags.writeable
    assert shuffler.pending == 0


def test_shuffler_handles_vector_messages_and_seeded_simulation() -> None:
    msgs = np.arange(20).reshape(10, 2)
    a = shuffle_messages(msgs, rng=3)
    b = shuffle_messages(msgs, rng=3)
    assert not a.secure
    np.testing.assert_array_equal(a.messages, b.messages)
    assert sorted(map(tuple, a.messages.tolist())) == sorted(map(tuple, msgs.tolist()))


def test_large_shuffle_moves_almost_everything() -> None:
    batch = shuffle_messages(np.arange(100_000))
    assert np.mean(batch.messages == np.arange(100_000)) < 0.001


def test_release_without_messages_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"no messages were submitted to the shuffler"):
        Shuffler().release()


def test_mismatched_message_shapes_are_rejected() -> None:
    shuffler = Shuffler()
    shuffler.submit(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"messages must all have the same shape"):
        shuffler.submit(np.zeros((2, 4)))


def test_negative_length_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"n must be >= 0, got -1"):
        secure_permutation(-1)


def test_scalar_messages_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"messages must be an array of messages"):
        shuffle_messages(np.int64(3))
