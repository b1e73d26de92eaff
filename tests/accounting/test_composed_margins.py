"""Composed answers (ledger ε, composed shuffle δ and ε) against 50-digit compositions
(issue 28, R2): no answer on the wrong side, not even by one ulp.

The ledger composes (ε, δ) guarantees through their dominating pairs, so the truth of its ε
is the exact δ of the composed dominating pairs there; the composed shuffle's truth is the
composition of its clone pair.
"""

from __future__ import annotations

import itertools

import mpmath as mp
import pytest

from crowdhide.accounting.ledger import spent
from crowdhide.accounting.shuffle.composition import CLONE_PAIR_REGISTRY, ComposedShuffleParams
from crowdhide.accounting.statement import PrivacyStatement
from tests.oracles import exact_mp

LEDGER_RUNS = [
    [(1.0, 1e-6)] * 2,
    [(1.0, 1e-6)] * 3,
    [(0.5, 1e-8)] * 4,
    [(2.0, 1e-7), (0.3, 1e-9)],
    [(1.0, 1e-6), (0.5, 1e-6), (0.25, 1e-6)],
]


@pytest.mark.parametrize("runs", LEDGER_RUNS)
@pytest.mark.parametrize("budget", [1e-4, 1e-5])
def test_ledger_epsilon_meets_its_delta_exactly(
    runs: list[tuple[float, float]], budget: float
) -> None:
    """``ledger show`` after two runs at (1, 1e-6) printed ε = 1.99982 whose exact δ was
    1.0000000000003e-4, over a 1e-4 budget."""
    s = spent([PrivacyStatement(epsilon=e, delta=d) for e, d in runs], delta=budget)
    truth = exact_mp.hockey_stick(
        *exact_mp.compose(*(exact_mp.approximate_dp_pair(e, d) for e, d in runs)), s.epsilon
    )
    assert truth <= budget, f"{s.method} ε = {s.epsilon!r}: exact δ {mp.nstr(truth, 17)}"


@pytest.mark.parametrize("name", CLONE_PAIR_REGISTRY.names)
@pytest.mark.parametrize(("n", "eps0", "rounds"), [(3, 1.0, 2), (4, 2.0, 2), (2, 0.5, 3)])
def test_composed_clone_pair_is_never_below_its_composition(
    name: str, n: int, eps0: float, rounds: int
) -> None:
    e = mp.exp(mp.mpf(eps0))
    beta = {"feldman2021": 1 / e, "feldman2023": 2 / (e + 1)}[name]
    pair = exact_mp.clone_pair(n, eps0, beta)
    composed = exact_mp.compose(*([pair] * rounds))
    params = ComposedShuffleParams(eps0=eps0, n=n, k=2, rounds=rounds, discretization=1e-4)
    curve = CLONE_PAIR_REGISTRY[name].curve(params)
    top = rounds * eps0
    for eps in itertools.chain((top * f for f in (0.0, 0.1, 0.3, 0.6)), (top - 1e-9, top - 1e-12)):
        truth = exact_mp.hockey_stick(*composed, eps)
        assert mp.mpf(curve.delta(eps)) >= truth, f"{name} eps={eps!r}"
    for target in (1e-3, 1e-6, 1e-9):
        eps = curve.epsilon(target)
        assert exact_mp.hockey_stick(*composed, eps) <= target, f"{name} delta={target}"
