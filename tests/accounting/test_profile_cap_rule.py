"""The profile pair's cap rule for composed rounds (``profile_pair._log_delta_at_cap_lower``,
docs/proofs/profile-pair.md §8): where all R rounds drawing the pair's top atom (loss just
above ε0) already put δ at the cap R·ε0 above the target, the tilted compositions are not
made and the answer is the cap, the float the full computation reports. Checked against
the full computation (the rule disabled) on both sides of its threshold, and a rule moved
by a nat, or a top loss taken 1 % larger, fires where the full answer is below the cap."""

from __future__ import annotations

import math

import pytest

from crowdhide.accounting.logmath import product_up
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle.composition import composed_shuffle
from crowdhide.accounting.statement import PrivacyStatement

#: (ε0, n, rounds): the lower bound is tight here (the full answer half a nat above it is
#: below the cap), so a rule firing there is caught.
CELLS = [
    (1.0, 10**4, 10),
    (0.5, 10**3, 3),
    pytest.param(4.0, 10**6, 10, marks=pytest.mark.slow),
    pytest.param(2.0, 10**4, 2, marks=pytest.mark.slow),
]


def _ask(eps0: float, n: int, rounds: int, delta: float) -> PrivacyStatement:
    return composed_shuffle(eps0=eps0, n=n, delta=delta, rounds=rounds, pair="profile_pair")


def _full(
    monkeypatch: pytest.MonkeyPatch, eps0: float, n: int, rounds: int, delta: float
) -> PrivacyStatement:
    """The answer with the rule disabled (every tilted composition made)."""
    with monkeypatch.context() as m:
        m.setattr(pp, "_log_delta_at_cap_lower", lambda key, cap: -math.inf)
        return _ask(eps0, n, rounds, delta)


def _floor(eps0: float, n: int, rounds: int) -> float:
    return pp._log_delta_at_cap_lower((eps0, n, rounds), product_up(rounds, eps0))


@pytest.mark.parametrize(("eps0", "n", "rounds"), CELLS)
def test_fires_only_where_the_full_answer_is_the_cap(
    eps0: float, n: int, rounds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap, floor = product_up(rounds, eps0), _floor(eps0, n, rounds)
    assert -700.0 < floor < -10.0  # the cells are chosen where δ = e^floor is a double
    below = math.exp(floor - 3.0)  # the rule fires
    assert _ask(eps0, n, rounds, below).epsilon == cap
    assert _ask(eps0, n, rounds, below) == _full(monkeypatch, eps0, n, rounds, below)
    above = math.exp(floor + 0.5)  # the full answer is below the cap here
    full = _full(monkeypatch, eps0, n, rounds, above)
    assert full.epsilon is not None
    assert full.epsilon < cap
    assert _ask(eps0, n, rounds, above) == full


@pytest.mark.parametrize(("eps0", "n", "rounds"), CELLS[:2])
def test_a_perturbed_rule_is_caught(
    eps0: float, n: int, rounds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The margin moved from +1 to −1 nat, or the top loss taken 1 % larger (the gap
    ``R L − cap`` of the bound grows from about ``R h`` to ``0.01 R ε0``): the rule then
    fires half a nat (two nats) above the bound, where the full answer is below the cap."""
    cap, floor = product_up(rounds, eps0), _floor(eps0, n, rounds)
    original = pp._log_delta_at_cap_lower
    with monkeypatch.context() as m:
        m.setattr(pp, "_log_delta_at_cap_lower", lambda key, c: original(key, c) + 2.0)
        assert _ask(eps0, n, rounds, math.exp(floor + 0.5)).epsilon == cap
    grid, step = pp._composed_grid(eps0, n, rounds)
    top = max(grid)
    gap = rounds * top * step * 1.01 - cap
    larger = rounds * math.log(grid[top]) + math.log(-math.expm1(-gap))
    assert larger > floor + 2.0 + 1.0  # it would fire at e^(floor + 2) ...
    far = _full(monkeypatch, eps0, n, rounds, math.exp(floor + 2.0)).epsilon
    assert far is not None
    assert far < cap


def test_statements_unchanged_on_the_benchmark_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """R = 10 at δ = 1e-300 (``bench_shuffle.py --table --rows R=10``): the rule fires and
    the statement, notes included, is the full computation's."""
    for eps0, n in ((1.0, 10**4), (0.5, 10**3)):
        assert _floor(eps0, n, 10) > math.log(1e-300) + 1.0
        assert _ask(eps0, n, 10, 1e-300) == _full(monkeypatch, eps0, n, 10, 1e-300)


def test_no_bound_where_the_rounds_cannot_pass_the_cap() -> None:
    """A top loss not above the cap per round gives no bound (−inf): nothing is claimed."""
    key = (1.0, 10**4, 10)
    grid, step = pp._composed_grid(*key)
    reach = 10 * max(grid) * step
    assert pp._log_delta_at_cap_lower(key, reach) == -math.inf
    assert pp._log_delta_at_cap_lower(key, reach * 0.999) > -math.inf
