"""The lower bound on the composed profile pair's δ (``_profile_floor``, docs/proofs/
profile-pair.md §22): below the exact R-fold composition of the pair's own masses, below
every answer of the pair, and ``best`` asking the rounds-apart members first where it
proves the pair loses changes no answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _profile_floor as floor_module
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle._profile_floor import (
    log_binomial_floor,
    log_delta_floor,
    profile_floor,
)
from crowdhide.accounting.shuffle.composition import composed_shuffle


def _exact_log_delta(eps0: float, n: int, rounds: int, epsilons: list[float]) -> list[float]:
    """``log Σ_l ω^{*R}(l) (1 − e^{x − l})_+`` of the pair's composition grid, by direct
    convolution in floats (relative error ~1e-12 at these sizes)."""
    grid, step = pp._composed_grid(eps0, n, rounds)
    lo = min(grid)
    dense = np.zeros(max(grid) - lo + 1)
    for i, mass in grid.items():
        dense[i - lo] = mass
    composed = np.ones(1)
    for _ in range(rounds):
        composed = np.convolve(composed, dense)
    loss = (np.arange(composed.size) + rounds * lo) * step
    out = []
    for x in epsilons:
        above = loss > x
        out.append(math.log(float((composed[above] * -np.expm1(x - loss[above])).sum())))
    return out


@pytest.mark.parametrize(("eps0", "n", "rounds"), [
    (1.0, 1000, 2), (1.0, 1000, 4), (4.0, 10**4, 3), (0.5, 10**6, 3), (8.0, 10**6, 2),
])  # fmt: skip
def test_below_the_exact_composition(eps0: float, n: int, rounds: int) -> None:
    """At ε from 0 to just below the cap the bound is at most the exact composed δ of the
    pair's masses; and it is not vacuous (within 60 nats of it somewhere)."""
    grid, step = pp._composed_grid(eps0, n, rounds)
    top = max(grid) * step
    xs = [f * top * rounds for f in (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99)]
    exact = _exact_log_delta(eps0, n, rounds, xs)
    floors = [log_delta_floor(eps0, n, rounds, x) for x in xs]
    assert all(f <= e + 1e-9 for f, e in zip(floors, exact, strict=True))
    assert max(f - e for f, e in zip(floors, exact, strict=True)) > -60.0


def test_binomial_floor_against_exact_integers() -> None:
    """``log_binomial_floor`` is at most ``log C(n, k)`` (exact integers) and within 2 nats."""
    for total in [*range(1, 120), 1000, 10_000]:
        for chosen in range(0, total + 1, max(1, total // 150)):
            exact = math.log(math.comb(total, chosen))
            assert exact - 2.0 < log_binomial_floor(total, chosen) <= exact


@pytest.mark.parametrize(("eps0", "n", "rounds"), [
    (0.5, 10**4, 100), (1.0, 10**6, 100), (8.0, 10**6, 100), (2.0, 10**9, 10),
])  # fmt: skip
def test_every_answer_of_the_pair_is_above_it(eps0: float, n: int, rounds: int) -> None:
    """The claim the skip rests on, on the pair's real answers at δ = 1e-300."""
    floor = profile_floor(eps0, n, rounds, 1e-300)
    assert floor is not None
    pair = composed_shuffle(eps0=eps0, n=n, delta=1e-300, rounds=rounds, pair="profile_pair")
    assert pair.epsilon > floor


_CELLS = [(e, n, r) for r in (10, 100) for e in (0.5, 2.0, 8.0) for n in (10**6, 10**9)]


def _answers(monkeypatch: pytest.MonkeyPatch, mode: str) -> list[float]:
    with monkeypatch.context() as patch:
        if mode == "off":
            patch.setattr(floor_module, "rounds_apart_first", lambda *args: None)
        if mode == "inflated":  # the floor 1.5 times too high: a wrong skip rule
            real = floor_module.profile_floor

            def inflated(*args: float) -> float | None:
                found = real(*args)  # type: ignore[arg-type]
                return None if found is None else 1.5 * found

            patch.setattr(floor_module, "profile_floor", inflated)
        return [composed_shuffle(eps0=e, n=n, delta=1e-300, rounds=r).epsilon for e, n, r in _CELLS]


def test_asking_the_rounds_apart_first_changes_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over 12 cells at δ = 1e-300 (10 and 100 rounds) ``best`` answers the same floats with
    and without the rule, and the rule fired somewhere. With the floor 1.5 times too high
    (so the pair's answer may lie below it) some answer changes: the comparison can fail."""
    fired = []
    real = floor_module.rounds_apart_first

    def counted(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        fired.append(found is not None)
        return found

    with monkeypatch.context() as patch:
        patch.setattr(floor_module, "rounds_apart_first", counted)
        on = [composed_shuffle(eps0=e, n=n, delta=1e-300, rounds=r).epsilon for e, n, r in _CELLS]
    assert any(fired)
    assert on == _answers(monkeypatch, "off")
    assert on != _answers(monkeypatch, "inflated")
