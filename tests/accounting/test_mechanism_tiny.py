"""The finite-output mechanisms at δ = 1e-300 (issue 32, s29-mechtiny): three shortcuts.

* A mechanism query below ``UNDERFLOW_DELTA`` skips ``feldman2021`` where one evaluation of
  its curve puts its ε above the mechanism's own: the statement is the one evaluating it
  gives, and the check flips within 1 % of the bound's answer.
* The split clone system alone is a certificate member where its rates are the one-rate
  system's up to their rounding allowance (``_split_suffices``): exactly summed, it is
  never above the one-rate system it replaces; a 1 % shortfall of the uninformative rate
  is refused (there the one-rate system is the smaller, exactly summed).
* ``upper_root``'s probe next to ε0 is in ``tests/accounting/test_shuffle_roots.py``.
"""

from __future__ import annotations

import pytest

from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.registry import best_of
from crowdhide.accounting.shuffle import generic, query
from crowdhide.accounting.shuffle import mechanisms as mech
from crowdhide.accounting.shuffle.mechanisms import MECHANISM_REGISTRY, MechanismParams
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, certificate_cells
from crowdhide.accounting.statement import PrivacyStatement
from tests.accounting.test_mechanism_shortcuts import asked_bounds
from tests.accounting.test_shuffle_mechanisms import split_reference_delta

#: The benchmark's finite-output rows: (mechanism, d, k).
ROWS = [("oue", 16, 1), ("rappor", 16, 1), ("subset", 16, 4), ("olh", 8, 1), ("hadamard", 16, 1)]


def _full(name: str, eps0: float, n: int, d: int, k: int | None, delta: float) -> PrivacyStatement:
    """The mechanism's statements and ``feldman2021`` solved in full, the best taken."""
    mp = MechanismParams(eps0=eps0, n=n, d=d, k=k)
    names = (f"mechanism:{name}", f"mechanism_lower:{name}")
    rows = list(MECHANISM_REGISTRY.all(mp, names=names, delta=delta))
    rows.append(
        generic.shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="feldman2021", lower=False)
    )
    return best_of(rows, by="epsilon")


@pytest.mark.parametrize(("name", "eps0", "n"), [("oue", 1.0, 10**4), ("olh", 0.5, 10**6)])
def test_fmt21_skip_gives_the_full_statement(
    name: str, eps0: float, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = 16 if name == "oue" else 8
    delta = 1e-300
    asked = asked_bounds(monkeypatch)
    answer = query.shuffle_epsilon(eps0=eps0, n=n, delta=delta, mechanism=name, d=d)
    monkeypatch.undo()
    assert "feldman2021" not in asked
    full = _full(name, eps0, n, d, None, delta)
    assert (answer.epsilon, answer.source) == (full.epsilon, full.source)
    assert answer.lower is not None
    assert full.lower is not None
    assert answer.lower.epsilon == full.lower.epsilon


def test_fmt21_skip_flips_within_one_percent_of_its_answer() -> None:
    """The check says "above" for an own ε 1 % below the bound's answer and not for one 1 %
    above it: a check off by 1 % either way fails here (skipping a winner, or paying)."""
    eps0, n, delta = 1.0, 10**4, 1e-300
    fmt21 = generic.shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="feldman2021").epsilon
    assert 0.0 < fmt21 < eps0
    params = {"eps0": eps0, "n": n}

    def own(epsilon: float) -> PrivacyStatement:
        return PrivacyStatement(epsilon=epsilon, delta=delta, source="mechanism:oue")

    assert query._fmt21_cannot_win(own(0.99 * fmt21), params, {"delta": delta})
    assert not query._fmt21_cannot_win(own(1.01 * fmt21), params, {"delta": delta})
    assert not query._fmt21_cannot_win(own(0.99 * fmt21), params, {"epsilon": 0.1})


def _exact_pair(
    n: int,
    eps0: float,
    mu2: float,
    rates: tuple[float, float],
    one: tuple[float, float],
    eps: float,
) -> tuple[float, float]:
    """Exact (unblocked) δ of the split system at ``rates`` and of the one-rate one ``one``."""
    kappa = kappa_up(eps0)
    split = split_reference_delta(n, kappa, mu2, rates[0], rates[1], eps)
    return split, split_reference_delta(n, kappa, mu2, one[0], one[1], eps)


@pytest.mark.parametrize(("name", "d", "k"), ROWS)
def test_split_alone_is_never_above_the_one_rate_system(name: str, d: int, k: int) -> None:
    """Where ``_split_suffices`` holds (every row at the table's ε0), the split system,
    exactly summed, is at most the one-rate system it replaces (1e-9: float sums), and the
    rates' shortfall is within the documented range."""
    m = MECHANISMS[name]
    assert m.split is not None
    for eps0 in (0.5, 2.0, 8.0):
        ((mu2, rho),), rates = certificate_cells(m, eps0, d, k), m.split(eps0, d, k)
        assert mech._split_suffices(mu2, rho, rates), (name, eps0)
        assert 0.0 <= 1.0 - rates[1] / (rho * (1.0 - mu2)) < mech.SAME_RATE_RTOL
        for n in (3, 40):
            for eps in (0.0, 0.2 * eps0):
                one = (rho * mu2, rho * (1.0 - mu2))
                split, full = _exact_pair(n, eps0, mu2, rates, one, eps)
                assert split <= full * (1.0 + 1e-9), (name, eps0, n, eps)


def test_a_one_percent_shortfall_keeps_the_one_rate_system() -> None:
    """With the informative rate at the one-rate system's and the uninformative one 1 %
    short, the check refuses, and rightly: exactly summed the split system is then above
    the one-rate one (fewer clones), so dropping the latter would lose tightness."""
    eps0, n = 1.0, 40
    ((mu2, rho),) = certificate_cells(MECHANISMS["oue"], eps0, 16, 1)
    one = (rho * mu2, rho * (1.0 - mu2))
    short = (one[0], 0.99 * one[1])
    assert mech._split_suffices(mu2, rho, one)
    assert not mech._split_suffices(mu2, rho, short)
    above = False
    for eps in (0.0, 0.1, 0.3):
        split, full = _exact_pair(n, eps0, mu2, short, one, eps)
        above |= split > full * (1.0 + 1e-9)
    assert above
