"""Token walks: who holds the token at each step, and each user's visit times.

Conventions (Cyffers & Bellet 2022, Sections 3-4 and App. D). Users are ``0..n-1``. A walk of
``T`` steps is the array ``holders`` of length T: at step ``t`` user ``holders[t]`` receives
the token (the value before its contribution), adds its contribution and forwards it.

* Ring (Section 3): ``holders = [0, 1, ..., n-1, 0, 1, ...]`` (K laps, public order).
* Complete graph (Section 4): i.i.d. uniform holders, self-loops allowed (Alg. 3-5 draw
  ``u ~ U(1..n)`` at every step, including the first one).

Per-pair accounting only needs, for each user ``v``, its *cycle lengths*
``m_i = k_i − k_{i−1}`` (``k_0 = 0``, 1-based step times): cycle ``i`` contains the
``m_i − 1`` contributions of other users between two receipts of ``v``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int
from crowdhide.errors import InvalidParameterError

__all__ = [
    "VisitIndex",
    "complete_walk",
    "contribution_rank",
    "ring_walk",
    "visit_index",
]

IntArray = npt.NDArray[np.int64]


def ring_walk(*, n: int, rounds: int) -> IntArray:
    """Holders of the token on the directed ring for ``rounds`` laps.

    Parameters
    ----------
    n
        Number of users.
    rounds
        Laps K.

    Returns
    -------
    numpy.ndarray
        ``holders[t] = t mod n``, length ``K n``.

    See Also
    --------
    complete_walk : The random walk on the complete graph.

    Examples
    --------
    >>> ring_walk(n=3, rounds=2).tolist()
    [0, 1, 2, 0, 1, 2]
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    return np.tile(np.arange(n, dtype=np.int64), k)


def complete_walk(*, n: int, steps: int, rng: object = None) -> IntArray:
    """Holders of a uniform random walk with self-loops on the complete graph.

    Parameters
    ----------
    n
        Number of users.
    steps
        Walk length T.
    rng
        Generator or seed.

    Returns
    -------
    numpy.ndarray
        ``holders[t]``, the holder at every step (length T).

    See Also
    --------
    ring_walk : The deterministic walk on the ring.

    Examples
    --------
    >>> w = complete_walk(n=5, steps=1000, rng=0)
    >>> w.shape, int(w.min()) >= 0, int(w.max()) < 5
    ((1000,), True, True)
    """
    n = check_int("n", n, low=2)
    t = check_int("steps", steps, low=1)
    gen = as_rng(rng)
    dtype = np.int32 if n < 2**31 else np.int64
    return gen.integers(0, n, size=t, dtype=dtype).astype(np.int64, copy=False)


def contribution_rank(holders: npt.ArrayLike) -> IntArray:
    """The visit counter ``k_u − 1`` of the holder at every step (0 for a first visit).

    Parameters
    ----------
    holders
        The holder at every step.

    Returns
    -------
    numpy.ndarray
        The holder's previous visits at every step.

    See Also
    --------
    visit_index : Every user's visit times.

    Examples
    --------
    >>> contribution_rank([2, 0, 2, 2, 0]).tolist()
    [0, 0, 1, 2, 1]
    """
    h = np.asarray(holders, dtype=np.int64)
    order = np.argsort(h, kind="stable")
    sorted_h = h[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_h)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, h.size]))
    rank = np.empty_like(h)
    rank[order] = np.arange(h.size) - first
    return rank


@dataclass(frozen=True)
class VisitIndex:
    """CSR index of the visit times of every user (1-based step times).

    Parameters
    ----------
    n
        Number of users.
    steps
        Walk length T.
    indptr
        ``times[indptr[v]:indptr[v+1]]`` are v's visit times in increasing order.
    times
        Concatenated visit times (1-based).

    See Also
    --------
    visit_index : Builds it.
    """

    n: int
    steps: int
    indptr: IntArray
    times: IntArray

    def visits(self, user: int) -> IntArray:
        """Sorted 1-based visit times of ``user``."""
        u = check_int("user", user, low=0, high=self.n - 1)
        return self.times[self.indptr[u] : self.indptr[u + 1]]

    def counts(self) -> IntArray:
        """Number of visits of every user."""
        return np.diff(self.indptr)

    def cycle_lengths(self) -> tuple[IntArray, IntArray]:
        """``(owner, m)``: every cycle ``m_i = k_i − k_{i−1}`` (``k_0 = 0``) with its user.

        A cycle of length m ends with a receipt by ``owner`` and contains ``m − 1``
        contributions of other users.
        """
        prev = np.empty_like(self.times)
        prev[1:] = self.times[:-1]
        firsts = self.indptr[:-1][np.diff(self.indptr) > 0]
        prev[firsts] = 0
        owner = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))
        return owner, self.times - prev


def visit_index(holders: npt.ArrayLike, *, n: int) -> VisitIndex:
    """Build the :class:`VisitIndex` of a walk in O(T log T) (stable argsort).

    Parameters
    ----------
    holders
        The holder at every step.
    n
        Number of users.

    Returns
    -------
    VisitIndex
        The visit times of every user.

    See Also
    --------
    contribution_rank : The visit counter at every step.

    Examples
    --------
    >>> idx = visit_index([1, 0, 1, 1], n=3)
    >>> idx.visits(1).tolist(), idx.counts().tolist()
    ([1, 3, 4], [1, 3, 0])
    >>> owner, m = idx.cycle_lengths()
    >>> owner.tolist(), m.tolist()
    ([0, 1, 1, 1], [2, 1, 2, 1])
    """
    n = check_int("n", n, low=1)
    h = np.asarray(holders, dtype=np.int64)
    if h.ndim != 1:
        raise InvalidParameterError(f"holders must be one-dimensional, got shape {h.shape}")
    if h.size and (h.min() < 0 or h.max() >= n):
        raise InvalidParameterError(
            f"holders must lie in [0, n-1] = [0, {n - 1}], got {h.min()}..{h.max()}"
        )
    order = np.argsort(h, kind="stable")
    counts = np.bincount(h, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return VisitIndex(n=n, steps=int(h.size), indptr=indptr, times=order.astype(np.int64) + 1)
