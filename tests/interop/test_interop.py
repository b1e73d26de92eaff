"""crowdhide's certificates in dp_accounting, as privacy profiles and for federated clients,
each checked against crowdhide's own answer; and the upstream RR ``count`` bug, pinned."""

from __future__ import annotations

import math

import mpmath
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.privacy_accountant import NeighboringRelation

import crowdhide
from crowdhide.accounting import DiscretePairCurve, compose_curves
from crowdhide.accounting.shuffle.composition import composed_shuffle_epsilon
from crowdhide.accounting.shuffle.generic import shuffle_bound_curve
from crowdhide.errors import InvalidParameterError
from crowdhide.interop import (
    dp_accounting_pld,
    flower_shuffled_epsilon,
    opendp_profile,
    privacy_profile,
    to_dp_accounting,
    to_dp_accounting_curve,
)


@pytest.mark.parametrize(
    ("eps0", "n", "k", "rounds"), [(2.0, 10_000, 4, 1), (1.0, 2_000, None, 3), (4.0, 10_000, 2, 2)]
)
def test_exported_pld_is_crowdhides_composed_shuffle(
    eps0: float, n: int, k: int | None, rounds: int
) -> None:
    pld = dp_accounting_pld(eps0=eps0, n=n, k=k, rounds=rounds)
    pair = "feldman2023" if k is not None else "feldman2021"  # the clone pair exported
    ours = composed_shuffle_epsilon(
        eps0=eps0,
        n=n,
        k=k,
        rounds=rounds,
        delta=1e-6,
        value_discretization_interval=1e-4,
        pair=pair,
    )
    theirs = float(pld.get_epsilon_for_delta(1e-6))
    # crowdhide reads the same PLD and adds its float allowance on the safe side
    assert theirs <= ours.epsilon <= theirs * (1 + 1e-6) + 1e-12
    # crowdhide's best answer is at most the exported pair's (for generic composed rounds
    # the profile pair, which is not exported, is tighter)
    best = composed_shuffle_epsilon(eps0=eps0, n=n, k=k, rounds=rounds, delta=1e-6)
    assert best.epsilon <= ours.epsilon


@pytest.mark.parametrize(("eps0", "n", "rounds"), [(1.0, 2_000, 3), (2.0, 10_000, 200)])
def test_exported_profile_pair_is_crowdhides_composed_profile_pair(
    eps0: float, n: int, rounds: int
) -> None:
    pld = dp_accounting_pld(eps0=eps0, n=n, rounds=rounds, pair="profile_pair")
    ours = composed_shuffle_epsilon(eps0=eps0, n=n, rounds=rounds, delta=1e-6, pair="profile_pair")
    assert ours.source == "profile_pair"
    theirs = float(pld.get_epsilon_for_delta(1e-6))
    assert theirs <= ours.epsilon <= theirs * (1 + 1e-6) + 1e-12
    clone = float(dp_accounting_pld(eps0=eps0, n=n, rounds=rounds).get_epsilon_for_delta(1e-6))
    assert theirs < clone  # the smaller of the two exports here
    best = composed_shuffle_epsilon(eps0=eps0, n=n, rounds=rounds, delta=1e-6)
    assert best.source == "profile_pair"
    assert best.epsilon == ours.epsilon


def test_the_profile_pair_export_refuses_where_it_does_not_apply() -> None:
    with pytest.raises(InvalidParameterError, match="no k"):
        dp_accounting_pld(eps0=1.0, n=1000, k=2, rounds=2, pair="profile_pair")
    with pytest.raises(InvalidParameterError, match="pair must be"):
        dp_accounting_pld(eps0=1.0, n=1000, pair="fmt21")


def test_composes_with_a_gaussian_in_dp_accounting() -> None:
    shuffled = dp_accounting_pld(eps0=2.0, n=10_000, k=4)
    gaussian = pld_lib.from_gaussian_mechanism(5.0, value_discretization_interval=1e-4)
    both = float(shuffled.compose(gaussian).get_epsilon_for_delta(1e-6))
    alone = [float(p.get_epsilon_for_delta(1e-6)) for p in (shuffled, gaussian)]
    assert max(alone) < both < sum(alone)
    assert both == pytest.approx(0.845, abs=5e-4)


def test_a_statement_exports_as_its_worst_case_pair() -> None:
    pld = to_dp_accounting(crowdhide.PrivacyStatement(epsilon=1.0, delta=1e-6))
    assert float(pld.get_epsilon_for_delta(1e-6)) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(ValueError, match="certificate"):
        to_dp_accounting(crowdhide.PrivacyStatement(epsilon=1.0, delta=1e-6, kind="lower"))


def test_privacy_profile_is_the_curve_and_is_validated() -> None:
    curve = shuffle_bound_curve(bound="feldman2023", eps0=4.0, n=10_000, k=2)
    profile = privacy_profile(curve)
    grid = [0.0, 0.05, 0.1, 0.3, 1.0, 4.0]
    values = [profile(e) for e in grid]
    assert values == [curve.delta(e) for e in grid]
    assert values == sorted(values, reverse=True)
    assert all(0.0 <= v <= 1.0 for v in values)
    for bad in (-1.0, math.nan):
        with pytest.raises(InvalidParameterError, match="epsilon"):
            profile(bad)


def test_dp_accounting_pld_reads_back_as_a_curve() -> None:
    curve = to_dp_accounting_curve(dp_accounting_pld(eps0=4.0, n=10_000, k=2))
    assert curve.epsilon(1e-6) == pytest.approx(
        composed_shuffle_epsilon(eps0=4.0, n=10_000, k=2, delta=1e-6).epsilon, rel=1e-6
    )


def test_opendp_profile_matches_crowdhide() -> None:
    pytest.importorskip("opendp", reason="the opendp extra is not installed")
    curve = shuffle_bound_curve(bound="feldman2023", eps0=4.0, n=10_000, k=2)
    profile = opendp_profile(curve)
    for eps in (0.05, 0.1, 0.5):
        assert profile.delta(eps) == curve.delta(eps)
    for delta in (1e-3, 1e-6):
        eps = profile.epsilon(delta)
        assert curve.delta(eps) <= delta  # OpenDP's inverse stays on the safe side
        assert eps == pytest.approx(curve.epsilon(delta), rel=1e-3)


def test_flower_fixed_sampling_is_the_shuffle_of_the_round_composed() -> None:
    r = flower_shuffled_epsilon(clients=2_000, eps0=1.0, rounds=3, delta=1e-6, fraction=0.5)
    same = crowdhide.shuffle_epsilon(eps0=1.0, n=1_000, delta=1e-6, rounds=3)
    assert r.epsilon == same.epsilon
    assert r.is_certificate
    assert r.epsilon < 3 * 1.0  # what local DP alone gives
    assert r.inputs["clients_per_shuffle"] == 1_000
    assert r.inputs["sampling"] == "fixed"
    assert any("shuffler" in note for note in r.notes)
    assert any("rounds * eps0 = 3" in note for note in r.notes)


def test_flower_poisson_sampling_is_the_subsampled_shuffle() -> None:
    r = flower_shuffled_epsilon(
        clients=2_000, eps0=1.0, rounds=3, delta=1e-6, fraction=0.5, sampling="poisson"
    )
    same = crowdhide.shuffle_epsilon(eps0=1.0, n=2_000, delta=1e-6, rounds=3, sample_rate=0.5)
    assert r.epsilon == same.epsilon
    assert r.inputs["clients_per_shuffle"] == 2_000


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"sampling": "stratified"}, "sampling"),
        ({"fraction": 0.0001}, "at least one client"),
        ({"fraction": 0.0}, "fraction"),
        ({"clients": 0}, "clients"),
        ({"rounds": 0}, "rounds"),
    ],
)
def test_flower_refuses_bad_input(options: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"clients": 100, "eps0": 1.0, "rounds": 2, "delta": 1e-6}
    with pytest.raises(InvalidParameterError, match=match):
        flower_shuffled_epsilon(**{**args, **options})  # type: ignore[arg-type]


def _exact_krr_composition_epsilon(eps0: float, k: int, count: int, delta: float) -> float:
    """ε at ``delta`` of ``count`` composed k-RR (exact, mpmath): each step's privacy loss is
    +ε0 (prob p), −ε0 (prob q) or 0 (prob (k − 2) q) under the first distribution."""
    mpmath.mp.dps = 50
    e = mpmath.e ** mpmath.mpf(eps0)
    p, q = e / (e + k - 1), 1 / (e + k - 1)

    def delta_at(eps: mpmath.mpf) -> mpmath.mpf:
        total = mpmath.mpf(0)
        for a in range(count + 1):
            for b in range(count - a + 1):
                c = count - a - b
                loss = eps0 * (a - b)
                if loss > eps:
                    mass = mpmath.factorial(count) / (
                        mpmath.factorial(a) * mpmath.factorial(b) * mpmath.factorial(c)
                    )
                    total += (
                        mass * p**a * q**b * ((k - 2) * q) ** c * (1 - mpmath.e ** (eps - loss))
                    )
        return total

    low, high = mpmath.mpf(0), mpmath.mpf(count * eps0)
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if delta_at(mid) > delta else (low, mid)
    return float(high)


def test_dp_accounting_pld_accountant_ignores_rr_count_and_crowdhide_does_not() -> None:
    """Upstream bug (dp-accounting 0.6.0): ``PLDAccountant.compose(RandomizedResponseDpEvent,
    count=10)`` counts it once. If this test fails on the first assertion, upstream fixed
    it: drop the warning from crowdhide.interop and docs/interop.md."""
    eps0, k, count, delta = 2.0, 4, 10, 1e-6
    noise = k / (math.exp(eps0) + k - 1)  # dp_accounting: uniform output with this probability
    event = dp_event.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=k)
    relation = NeighboringRelation.REPLACE_ONE

    counted = pld_privacy_accountant.PLDAccountant(relation)
    counted.compose(event, count=count)
    assert counted.get_epsilon(delta) == pytest.approx(eps0, abs=1e-4)  # the bug: 2, not 20

    one_by_one = pld_privacy_accountant.PLDAccountant(relation)
    for _ in range(count):
        one_by_one.compose(event)
    exact = _exact_krr_composition_epsilon(eps0, k, count, delta)
    assert one_by_one.get_epsilon(delta) == pytest.approx(exact, abs=1e-3)

    p, q = math.exp(eps0) / (math.exp(eps0) + k - 1), 1 / (math.exp(eps0) + k - 1)
    pair = DiscretePairCurve.from_probabilities([p, q, q, q], [q, p, q, q])
    ours = compose_curves([(pair, count)]).epsilon(delta)
    # each round's loss (2 plus a fraction of an ulp as floats) is rounded up one 1e-4 step
    assert exact <= ours <= exact + count * 1e-4 + 1e-5
    fine = compose_curves([(pair, count)], value_discretization_interval=1e-6).epsilon(delta)
    assert exact <= fine <= exact + 1e-4
