"""Generic ε0-LDP shuffle certificates against exact enumeration (issue 15, item 2).

For a randomizer given as a row-stochastic matrix ``R`` (inputs x outputs), the law of the
shuffled output (the histogram of the n reports) is built by convolving one user at a time;
the exact δ(ε) of every neighbouring pair (target on x vs x', every multiset of the other
users' inputs) is the hockey-stick divergence of two such laws (``DiscretePairCurve``).
The randomizers are random matrices (their exact LDP level is computed and used as ε0) and
extremal designs that are not randomized response: asymmetric "informative or silent"
outputs, k-subset-like 0/1 patterns and a discretized Laplace.

The certificates for every ε0-LDP randomizer are ``feldman2021`` and ``variation_ratio`` (the
split clone system maximised over the total variation; docs/shuffle.md), the latter also
restricted to each randomizer's own largest variation. The FMT23 pair
(``feldman2023``) itself is also compared; a deliberately weakened pair (too many clones)
must be caught, which shows the search can fail.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting import DiscretePairCurve
from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle.generic import shuffle_bound_curve
from crowdhide.accounting.shuffle.variation_ratio import variation_ratio_log_delta

Matrix = npt.NDArray[np.float64]


def ldp_level(r: Matrix) -> float:
    """The exact ε0 of a randomizer matrix: the largest log ratio between two rows."""
    logs = np.log(r)
    return float(max(np.max(a - b) for a, b in itertools.permutations(logs, 2)))


def shuffled_law(r: Matrix, values: tuple[int, ...]) -> Matrix:
    """Law of the output histogram of the given users (dense array, flattened)."""
    m, n = r.shape[1], len(values)
    law = np.zeros((n + 1,) * m)
    law[(0,) * m] = 1.0
    for v in values:
        new = np.zeros_like(law)
        for y in range(m):
            src, dst = [slice(None)] * m, [slice(None)] * m
            src[y], dst[y] = slice(0, n), slice(1, n + 1)
            new[tuple(dst)] += law[tuple(src)] * r[v, y]
        law = new
    return law.ravel()


def worst_curves(r: Matrix, n: int) -> Iterator[DiscretePairCurve]:
    """Curves of every neighbouring pair (x, x') and every dataset of the other users."""
    d = r.shape[0]
    for x, x2 in itertools.combinations(range(d), 2):
        for others in itertools.combinations_with_replacement(range(d), n - 1):
            px, py = shuffled_law(r, (*others, x)), shuffled_law(r, (*others, x2))
            keep = (px > 0) | (py > 0)
            yield DiscretePairCurve.from_probabilities(px[keep], py[keep])


def random_randomizers(rng: np.random.Generator, count: int) -> list[Matrix]:
    out = []
    for _ in range(count):
        d, m = int(rng.integers(2, 4)), int(rng.integers(2, 4))
        r = rng.dirichlet(np.full(m, 0.7), size=d) + 1e-3
        out.append(r / r.sum(axis=1, keepdims=True))
    return out


def extremal_randomizers(eps0: float) -> list[Matrix]:
    e = math.exp(eps0)
    out = []
    # "informative or silent": outputs a/b carry the bit, c is shared (not RR; see docs).
    for w in (0.3, 0.7, (e + 1) / (e + 2)):
        out.append(
            np.array(
                [
                    [w * e / (e + 1), w / (e + 1), 1 - w],
                    [w / (e + 1), w * e / (e + 1), 1 - w],
                    [w / (e + 1), w / (e + 1), 1 - 2 * w / (e + 1)],
                ]
            )
        )
    # k-subset-like 0/1 patterns (each input marks 2 of 4 outputs as likely).
    pattern = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], dtype=float)
    out.append(np.exp(eps0 * pattern) / np.exp(eps0 * pattern).sum(axis=1, keepdims=True))
    # discretized Laplace on 3 inputs and 4 outputs.
    grid = np.linspace(0.0, 1.0, 4)
    lap = np.exp(-eps0 * np.abs(grid[None, :] - np.array([[0.0], [0.5], [1.0]])))
    out.append(lap / lap.sum(axis=1, keepdims=True))
    return out


def _pair_delta(n: int, eps0: float, beta: float, eps: float) -> float:
    return math.exp(pairs.clone_pair_log_delta(n, eps0, beta, eps, -60.0))


def _violations(randomizers: list[Matrix], beta_of: object, ns: tuple[int, ...]) -> list[str]:
    found = []
    for r in randomizers:
        eps0 = ldp_level(r)
        for n in ns:
            curves = list(worst_curves(r, n))
            for frac in (0.0, 0.1, 0.3, 0.6):
                eps = frac * eps0
                truth = max(c.delta(eps) for c in curves)
                bound = _pair_delta(n, eps0, beta_of(eps0), eps)  # type: ignore[operator]
                if truth > bound * (1 + 1e-9) + 1e-15:
                    found.append(f"eps0={eps0:.3f} n={n} eps={eps:.3f}: {truth} > {bound}")
    return found


@pytest.mark.parametrize("bound", ["feldman2021", "variation_ratio"])
def test_generic_certificate_dominates_random_and_extremal_randomizers(bound: str) -> None:
    rng = np.random.default_rng(15)
    randomizers = random_randomizers(rng, 12) + extremal_randomizers(1.0)
    randomizers += extremal_randomizers(2.5)
    for r in randomizers:
        eps0 = ldp_level(r)
        for n in (2, 3):
            cert = shuffle_bound_curve(bound=bound, eps0=eps0, n=n)
            curves = list(worst_curves(r, n))
            for eps in (0.0, 0.2 * eps0, 0.5 * eps0):
                truth = max(c.delta(eps) for c in curves)
                assert truth <= cert.delta(eps) * (1 + 1e-9)


def largest_mu(r: Matrix, eps0: float) -> float:
    """The randomizer's largest ``μ = TV/tanh(ε0/2)`` over pairs of inputs."""
    tv = max(0.5 * float(np.abs(a - b).sum()) for a, b in itertools.combinations(r, 2))
    return min(1.0, tv / math.tanh(eps0 / 2.0) * (1 + 1e-12))


def test_restricted_variation_ratio_dominates_with_each_randomizers_own_mu() -> None:
    """``variation_ratio`` restricted to ``μ <= mu_max`` (the piecewise mechanism's
    certificate), each randomizer with its own largest μ: never below the exact worst case.
    With the cap taken 0.6x too small the same search fails (it can fail)."""
    rng = np.random.default_rng(16)
    randomizers = random_randomizers(rng, 12) + extremal_randomizers(1.0)
    randomizers += extremal_randomizers(2.5)
    caught = False
    for r in randomizers:
        eps0 = ldp_level(r)
        mu_max = largest_mu(r, eps0)
        for n in (2, 3):
            curves = list(worst_curves(r, n))
            for eps in (0.0, 0.2 * eps0, 0.5 * eps0):
                truth = max(c.delta(eps) for c in curves)
                cert = math.exp(variation_ratio_log_delta(n, eps0, eps, -60.0, mu_max=mu_max))
                assert truth <= cert * (1 + 1e-9) + 1e-15
                low = math.exp(variation_ratio_log_delta(n, eps0, eps, -60.0, mu_max=0.6 * mu_max))
                caught |= truth > low * (1 + 1e-9) + 1e-15
    assert caught


@pytest.mark.slow
def test_variation_ratio_wider_search() -> None:
    rng = np.random.default_rng(77)
    randomizers = random_randomizers(rng, 30) + extremal_randomizers(0.5)
    randomizers += extremal_randomizers(3.0)
    for r in randomizers:
        eps0 = ldp_level(r)
        cert = shuffle_bound_curve(bound="variation_ratio", eps0=eps0, n=4)
        curves = list(worst_curves(r, 4))
        for frac in (0.0, 0.1, 0.3, 0.6):
            truth = max(c.delta(frac * eps0) for c in curves)
            assert truth <= cert.delta(frac * eps0) * (1 + 1e-9)


def test_fmt23_pair_is_not_violated_by_the_searched_randomizers() -> None:
    """Evidence only (not a proof): the FMT23 / variation-ratio value over the searched
    ε0-LDP randomizers. It stays ``valid=False`` without k (docs/shuffle.md)."""
    rng = np.random.default_rng(2024)
    randomizers = random_randomizers(rng, 10) + extremal_randomizers(1.0)
    assert _violations(randomizers, lambda e0: 2.0 / (math.exp(e0) + 1.0), (2, 3)) == []


def test_search_catches_a_too_small_parameter() -> None:
    """The same search must fail for a pair with too many clones (β × 1.6)."""
    randomizers = extremal_randomizers(1.0)
    found = _violations(randomizers, lambda e0: min(1.0, 3.2 / (math.exp(e0) + 1.0)), (2, 3))
    assert found


@pytest.mark.slow
def test_fmt23_pair_wider_search() -> None:
    rng = np.random.default_rng(7)
    randomizers = random_randomizers(rng, 30) + extremal_randomizers(0.5)
    randomizers += extremal_randomizers(3.0)
    assert _violations(randomizers, lambda e0: 2.0 / (math.exp(e0) + 1.0), (2, 3, 4)) == []
