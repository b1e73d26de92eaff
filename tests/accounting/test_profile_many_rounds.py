"""Many rounds of the profile pair against an exact composition.

Compositions of ``FINE_BELOW_ROUNDS`` rounds or more use the coarse profile
(``certified_profile(fine=False)``). It is checked where the truth is known: one report
(n = 1) is one binary RR report, whose profile the certificate gives exactly, and R rounds of
it have an exact binomial law. The coarse path must stay above that law, and a coarse profile
lowered by 1 % must fall below it somewhere (the check can fail).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle.composition import composed_shuffle

#: (ε0, rounds) on the coarse path (rounds >= FINE_BELOW_ROUNDS)
CASES = [(0.5, 1000), (1.0, 1000), (0.2, 5000)]
#: standard deviations of the composed loss above its mean where δ is compared (δ ≈ 0.14 to
#: 1e-13)
ZS = (1.0, 3.0, 5.0, 7.0)


def _exact_delta(eps0: float, rounds: int, eps: float) -> float:
    """δ(ε) of ``rounds`` composed binary RR reports: the loss is ``ε0 (2K − R)``, K the
    count of truthful reports, binomial under P (terms in [0, 1], relative error ~1e-13)."""
    k = np.arange(rounds + 1)
    p = math.exp(eps0) / (1.0 + math.exp(eps0))
    loss = eps0 * (2 * k - rounds)
    with np.errstate(over="ignore"):
        weight = -np.expm1(np.minimum(eps - loss, 0.0))
    return float(np.sum(binom.pmf(k, rounds, p) * weight))


def _points(eps0: float, rounds: int) -> list[float]:
    """ε at :data:`ZS` standard deviations above the composed loss's mean."""
    mean = rounds * eps0 * math.tanh(eps0 / 2.0)
    sd = eps0 * math.sqrt(rounds) / math.cosh(eps0 / 2.0)
    return [mean + z * sd for z in ZS]


def _ratios(eps0: float, rounds: int) -> list[float]:
    """The profile pair's δ over the exact one at :func:`_points`."""
    out = []
    for eps in _points(eps0, rounds):
        res = composed_shuffle(epsilon=eps, eps0=eps0, n=1, rounds=rounds, pair="profile_pair")
        assert res.delta is not None
        out.append(res.delta / _exact_delta(eps0, rounds, eps))
    return out


def _clear() -> None:
    for cached in (pp._composed, pp._pair_items, pp._tilted):
        cached.cache_clear()


@pytest.mark.parametrize(("eps0", "rounds"), CASES)
def test_many_rounds_of_one_report_stay_above_the_exact_composition(
    eps0: float, rounds: int
) -> None:
    assert rounds >= pp.FINE_BELOW_ROUNDS  # the coarse profile's path
    ratios = _ratios(eps0, rounds)
    # never below the truth (beyond the exact sum's own 1e-12); tight: within 1 % (measured
    # 1 + 2e-8 to 1 + 8e-3: the loss grid and the pair's top one lattice step beyond ε0)
    assert all(1.0 - 1e-12 <= r <= 1.01 for r in ratios), ratios


@pytest.fixture
def coarse_lowered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The coarse profile (``fine=False``) scaled down by 1 %; the fine one as it is."""
    original = pp.certified_profile

    def scaled(eps0: float, n: int, fine: bool = True) -> tuple[tuple[int, ...], tuple[float, ...]]:
        idx, deltas = original(eps0, n, fine)
        return idx, deltas if fine else tuple(0.99 * d for d in deltas)

    monkeypatch.setattr(pp, "certified_profile", scaled)
    _clear()  # compositions kept from other tests are of the true profile
    yield
    _clear()  # ... and those made here of the lowered one


@pytest.mark.parametrize(("eps0", "rounds"), CASES)
def test_a_coarse_profile_lowered_by_one_percent_falls_below_the_exact_composition(
    coarse_lowered: None, eps0: float, rounds: int
) -> None:
    assert min(_ratios(eps0, rounds)) < 1.0
