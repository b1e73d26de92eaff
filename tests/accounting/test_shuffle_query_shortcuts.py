"""The shortcuts of issue 32's k-RR query (s18-startup) change no answer.

- ``best`` skips krr_clone (feldman2021, feldman2023) when one evaluation shows that its ε
  is above a certificate already found: the answer must equal ``best`` with every bound
  solved, source included, also where krr_clone wins.
- The k-RR lower bound's search starts at the root of its O(1) member: every ε it returns
  must fail its own curve (the truth needs at least that ε), sit within 1e-7 of the root a
  plain search finds to 1e-12, and take a few evaluations of the O(n) member, not 13.
"""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.registry import best_certificate
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import _best, _pairs, curves, generic

# (eps0, n, k): krr_blanket wins (k >= 3, n <= 1e5); krr_clone wins (k = 3 at n = 5e4 and
# 1e5, and where krr_blanket is capped at ε0); k = 2 (exact, binary blocks, feldman2023).
CELLS = [
    (0.5, 1000, 4), (2.0, 1000, 10), (2.0, 20_000, 4), (6.0, 50_000, 3), (2.0, 100_000, 3),
    (6.0, 200, 4), (1.0, 300, 2), (1.0, 20_000, 2), (4.0, 2_000_000, 2), (1.0, 200_000, 4),
]  # fmt: skip


def _best_of_everything(params: generic.ShuffleParams, delta: float) -> tuple[float, str]:
    """``best`` as before the shortcut: every candidate solved, the smallest certificate."""
    query = {"delta": delta}
    names = [
        b.name
        for b in generic._BOUNDS
        if b.listed_for(params.k) and b.kind != "lower" and b.in_best(params)
    ]
    best = best_certificate(
        lambda name: generic._evaluate(name, params, query), names, by="epsilon"
    )
    return best.epsilon, best.source


@pytest.mark.parametrize(("eps0", "n", "k"), CELLS)
@pytest.mark.parametrize("delta", [1e-6, 1e-10])
def test_best_answers_as_with_every_bound_solved(eps0: float, n: int, k: int, delta: float) -> None:
    params = generic.ShuffleParams(eps0=eps0, n=n, k=k)
    got = generic.shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, lower=False)
    assert (got.epsilon, got.source) == _best_of_everything(params, delta)


def test_best_answers_as_with_every_bound_solved_without_k() -> None:
    params = generic.ShuffleParams(eps0=1.0, n=1000)
    got = generic.shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6, lower=False)
    assert (got.epsilon, got.source) == _best_of_everything(params, 1e-6)


def test_the_shortcut_is_taken_where_krr_blanket_wins() -> None:
    params = generic.ShuffleParams(eps0=1.0, n=1000, k=4)
    query = {"delta": 1e-6}
    names = ["balle2019_hoeffding", "krr_clone", "krr_blanket"]
    rows = _best.best_rows(
        names, lambda name: generic._evaluate(name, params, query), generic._BY_NAME, params, 1e-6
    )
    assert set(rows) == {"balle2019_hoeffding", "krr_blanket"}  # krr_clone was not solved


@pytest.mark.parametrize(("eps0", "n", "k"), [(1.0, 1000, 4), (0.5, 50_000, 10)])
def test_epsilon_above_tells_the_side_of_the_answer(eps0: float, n: int, k: int) -> None:
    params = generic.ShuffleParams(eps0=eps0, n=n, k=k)
    curve = generic.SHUFFLE_REGISTRY["krr_clone"].curve(params)
    eps = curve.epsilon(1e-6)
    assert not _best.epsilon_above(curve, 1e-6, eps)  # at its own answer: not above
    assert not _best.epsilon_above(curve, 1e-6, eps * (1.0 + 1e-6))
    assert _best.epsilon_above(curve, 1e-6, eps * (1.0 - 1e-6))
    assert not _best.epsilon_above(curve, 1e-6, eps0)  # the cap: never above it
    lower = generic.SHUFFLE_REGISTRY["krr_lower"].curve(params)
    assert not _best.epsilon_above(lower, 1e-6, 0.5 * eps)  # only for certificates


@pytest.mark.parametrize(
    ("eps0", "n", "k", "delta"),
    [(1.0, 1000, 4, 1e-6), (1.0, 1000, 4, 1e-10), (0.5, 300, 10, 1e-8), (4.0, 1000, 3, 1e-6)],
)
def test_lower_search_from_its_floor_fails_and_finds_the_root(
    eps0: float, n: int, k: int, delta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    third = _pairs.krr_third_log_delta

    def counted(*args: float) -> float:
        calls.append(args)
        return third(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_pairs, "krr_third_log_delta", counted)
    curve = curves._krr_lower_curve(eps0, n, k)
    got = curve.epsilon(delta)
    assert len(calls) <= 6  # the plain search from ε = 0 took 13 at (1.0, 1000, 4, 1e-6)
    target = math.log(delta)
    assert isinstance(curve, curves._LowerCurve)
    for adaptive in curve._adaptive:
        adaptive.solving_for(target)
    try:
        assert curve.log_delta(got) > target  # fails: a lower bound
        plain = safe_root(curve.log_delta, target, 0.0, eps0, xtol=1e-12, lower_side=True)
    finally:
        for adaptive in curve._adaptive:
            adaptive.solving_for(None)
    assert plain * (1.0 - 1e-7) <= got <= plain + 2e-12


def test_a_floor_must_be_a_member() -> None:
    with pytest.raises(ValueError, match="one of its members"):
        curves._LowerCurve([lambda e: -e], 1.0, floor=lambda e: -2.0 * e)
