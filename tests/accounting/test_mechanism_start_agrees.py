"""A mechanism's certificate curve and its query answer the same float (issue 32,
s25-start): the certificate's ε search starts at the lower bound's ε at the same δ, an
explicit argument computed from the question alone. s24-start passed that start through a
context variable set by the query only, so ``shuffle_curve(mechanism=...).epsilon(δ)`` and
``shuffle_epsilon`` differed (OUE ε0 = 1, n = 1e3, δ = 1e-6: 5e-6 apart); these tests use
only the public entry points, so they fail there."""

from __future__ import annotations

import pytest

import crowdhide
from crowdhide.accounting.shuffle.mechanisms import mechanism_curve, mechanism_epsilon
from crowdhide.accounting.shuffle.randomizers import MECHANISMS

#: The domain sizes of ``benchmarks/bench_shuffle.py``'s mechanism rows (k = 4 for subset).
DOMAIN: dict[str, int | None] = {
    "krr": 16, "oue": 16, "rappor": 16, "subset": 16, "olh": 8, "hadamard": 16,
    "piecewise": None, "laplace": None,
}  # fmt: skip

FAST_CELLS = [(1.0, 1000, 1e-6), (4.0, 10**4, 1e-300)]
SLOW_CELLS = [
    (eps0, n, delta)
    for eps0 in (0.5, 2.0, 8.0)
    for n in (1000, 10**6, 10**9)
    for delta in (1e-10, 1e-300)
]


def _agree(name: str, eps0: float, n: int, delta: float) -> None:
    d, k = DOMAIN[name], 4 if MECHANISMS[name].needs_k else None
    own = f"mechanism:{name}"
    query = crowdhide.shuffle_epsilon(
        eps0=eps0, n=n, delta=delta, mechanism=name, d=d, k=k, bound=own
    )
    assert query.source == own
    # a fresh curve (nothing asked of it before) and the query: the same float
    assert mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d, k=k).epsilon(delta) == (
        query.epsilon
    ), (name, eps0, n, delta)
    best = crowdhide.shuffle_epsilon(eps0=eps0, n=n, delta=delta, mechanism=name, d=d, k=k)
    curve = crowdhide.shuffle_curve(eps0=eps0, n=n, mechanism=name, d=d, k=k)
    if best.source != "feldman2021":  # the query's extra bound below 1e-200 (not a member)
        assert curve.epsilon(delta) == best.epsilon, (name, eps0, n, delta)
    shortcut = mechanism_epsilon(mechanism=name, eps0=eps0, n=n, delta=delta, d=d, k=k)
    if shortcut.source == own:
        assert shortcut.epsilon == query.epsilon


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize(("eps0", "n", "delta"), FAST_CELLS)
def test_curve_and_query_agree(name: str, eps0: float, n: int, delta: float) -> None:
    _agree(name, eps0, n, delta)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_curve_and_query_agree_over_the_grid(name: str) -> None:
    for eps0, n, delta in SLOW_CELLS:
        _agree(name, eps0, n, delta)
