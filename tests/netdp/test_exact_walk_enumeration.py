"""Independent exact check of the per-pair network-DP certificates on tiny complete graphs.

Every walk of T steps on n users (``n^T`` token paths, self-loops allowed) and every binary
RR output sequence (``2^T``) is enumerated. The view of the observer v (or of a coalition) is
built literally from the transcript: which steps it holds the token, the token value (the
histogram of all earlier outputs) it receives each time, its own outputs, and with known
peers who sent it the token and whom it sent the token to. The probabilities of all views are
summed for two neighbouring datasets (user u's value 0 vs 1 in every contribution, every
assignment of the other users' values), and the exact δ(ε) is taken *conditionally on what
the certificate is allowed to depend on* (v's receipt times, and the known peers' identities),
which is what :func:`account_walk` certifies for a realised walk. Each certificate must be at
least the exact ε at its δ, for every such pattern; the certificates must also be
non-vacuous (within a factor of the exact value somewhere), so a certificate that was too
small by that factor would fail here.

Nothing here uses the accountant's decomposition into cycles, binomial participation or
lattice PLDs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.netdp.cycle_privacy import CycleMechanism
from crowdhide.netdp.walk_accounting import account_walk, account_walk_known_peers

EPS0 = 1.0


def _rr_log(eps0: float) -> np.ndarray:
    """log P(output | value) of binary randomized response, [value, output]."""
    keep = math.exp(eps0) / (math.exp(eps0) + 1.0)
    return np.log(np.array([[keep, 1 - keep], [1 - keep, keep]]))


def _all_sequences(base: int, length: int) -> np.ndarray:
    return np.array(list(itertools.product(range(base), repeat=length)), dtype=np.int64)


def _views(
    walks: np.ndarray, outs: np.ndarray, observers: tuple[int, ...], known_peers: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per (walk, output) pair: the observers' view key and the pattern key (view parts that
    do not depend on the data: receipt times and, with known peers, the peers)."""
    n_w, steps = walks.shape
    n_y = outs.shape[0]
    w = np.repeat(walks, n_y, axis=0)
    y = np.tile(outs, (n_w, 1))
    mine = np.isin(w, observers)
    before = np.cumsum(y, axis=1) - y  # token value (count of ones, with the step count)
    token = np.where(mine, before, -1)
    own = np.where(mine, y, -1)
    holder = np.where(mine, w, -1)  # which coalition member holds it
    parts = [mine.astype(np.int64), holder]
    if known_peers:
        sender = np.where(mine[:, 1:], w[:, :-1], -1)
        receiver = np.where(mine[:, :-1], w[:, 1:], -1)
        parts += [sender, receiver]
    pattern = np.concatenate(parts, axis=1)
    view = np.concatenate([pattern, token, own], axis=1)
    del steps
    return view, pattern


class _Enumeration:
    """All views of the observers with their probabilities under every neighbouring pair."""

    def __init__(
        self, n: int, steps: int, observers: tuple[int, ...], u: int, known_peers: bool
    ) -> None:
        walks = _all_sequences(n, steps)
        outs = _all_sequences(2, steps)
        view, pattern = _views(walks, outs, observers, known_peers)
        _, view_id = np.unique(view, axis=0, return_inverse=True)
        patterns, pat_id = np.unique(pattern, axis=0, return_inverse=True)
        view_id, pat_id = view_id.ravel(), pat_id.ravel()
        self.view_pat = np.zeros(view_id.max() + 1, dtype=np.int64)
        self.view_pat[view_id] = pat_id  # a view determines its pattern
        self.n_patterns = patterns.shape[0]
        n_y = outs.shape[0]
        first = np.zeros(self.n_patterns, dtype=np.int64)
        first[pat_id[::-1]] = np.arange(pat_id.size)[::-1] // n_y
        self.walks = walks[first]  # a representative walk per pattern
        rr = _rr_log(EPS0)
        w_rep = np.repeat(walks, n_y, axis=0)
        y_rep = np.tile(outs, (walks.shape[0], 1))
        others = [x for x in range(n) if x != u and x not in observers]
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        for assignment in itertools.product((0, 1), repeat=len(others)):
            probs = []
            for x_u in (0, 1):
                values = np.zeros(n, dtype=np.int64)
                values[u] = x_u
                values[others] = assignment
                log_p = rr[values[w_rep], y_rep].sum(axis=1) - steps * math.log(n)
                probs.append(np.bincount(view_id, weights=np.exp(log_p)))
            self.pairs += [(probs[0], probs[1]), (probs[1], probs[0])]
        self.mass = np.bincount(self.view_pat, weights=self.pairs[0][0])

    def delta(self, eps_per_pattern: np.ndarray) -> np.ndarray:
        """Exact conditional δ of every pattern at its own ε, worst case over the datasets."""
        factor = np.exp(eps_per_pattern)[self.view_pat]
        worst = np.zeros(self.n_patterns)
        for a, b in self.pairs:
            excess = np.bincount(
                self.view_pat, weights=np.maximum(a - factor * b, 0.0), minlength=self.n_patterns
            )
            worst = np.maximum(worst, excess / self.mass)
        return worst


def _check(enum: _Enumeration, certs: np.ndarray, delta: float) -> None:
    exact = enum.delta(certs)
    assert np.all(exact <= delta * (1 + 1e-9)), (certs[exact > delta], exact[exact > delta])
    # non-vacuous: at half the certified ε the exact δ exceeds δ for some pattern, so a
    # certificate that was 2x too small would fail the assertion above
    assert np.any(enum.delta(0.5 * certs) > delta)


@pytest.mark.parametrize(("n", "steps", "delta"), [(3, 6, 1e-2), (3, 7, 1e-3), (4, 5, 1e-3)])
def test_hidden_path_certificate_above_exact_enumeration(n: int, steps: int, delta: float) -> None:
    v, u = 0, 1
    mech = CycleMechanism(kind="krr", eps0=EPS0, domain_size=2)
    enum = _Enumeration(n, steps, (v,), u, known_peers=False)
    assert enum.n_patterns == 2**steps  # every receipt-time pattern of v
    certs = np.array(
        [account_walk(w, n=n, mechanism=mech, delta=delta).observer_epsilon[v] for w in enum.walks]
    )
    _check(enum, certs, delta)


def test_coalition_certificate_above_exact_enumeration() -> None:
    n, steps, delta = 4, 5, 1e-3
    mech = CycleMechanism(kind="krr", eps0=EPS0, domain_size=2)
    # account_walk's coalition of observer 0 with colluders=2 is {0, 1}; protect u = 2
    enum = _Enumeration(n, steps, (0, 1), 2, known_peers=False)
    certs = np.array(
        [
            account_walk(w, n=n, mechanism=mech, delta=delta, colluders=2).observer_epsilon[0]
            for w in enum.walks
        ]
    )
    _check(enum, certs, delta)


@pytest.mark.slow
def test_known_peers_certificate_above_exact_enumeration() -> None:
    n, steps, delta, v, u = 3, 6, 1e-3, 0, 1
    mech = CycleMechanism(kind="krr", eps0=EPS0, domain_size=2)
    enum = _Enumeration(n, steps, (v,), u, known_peers=True)
    certs = []
    for walk in enum.walks:
        res = account_walk_known_peers(walk, n=n, mechanism=mech, delta=delta)
        pairs = res.details["adjacent_pairs"]
        hit = pairs[(pairs[:, 0] == v) & (pairs[:, 1] == u)]
        certs.append(float(hit[0, 2]) if hit.size else float(res.observer_epsilon[v]))
    _check(enum, np.array(certs), delta)
