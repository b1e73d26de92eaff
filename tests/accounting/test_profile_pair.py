"""The profile pair (``accounting.shuffle.profile_pair``): composed shuffles certified by a
dominating pair built from the single-round certificate's own privacy profile.

Soundness: for tiny n the exact law of the shuffled k-RR histogram is enumerated for every
dataset of the other users (k-RR is an ε0-LDP randomizer, so the generic certificate covers
it), and the exact hockey-stick divergence of the product of ``rounds`` such rounds — each
round with its own dataset of the others, both directions — must stay at or below the
certificate on a grid of ε. At n = 1 the certificate is tight (one binary RR report), so a
profile lowered by 1 % is caught by the same enumeration (the perturbation tests).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _profile_grid as pg
from crowdhide.accounting.shuffle import profile_pair as pp
from crowdhide.accounting.shuffle.certificate import shuffle_curve
from crowdhide.accounting.shuffle.composition import ComposedShuffleParams, composed_shuffle
from crowdhide.accounting.shuffle.curves import _summed_like_epsilon_at

EPS = np.linspace(0.0, 3.0, 61)
#: Absolute rounding error of the enumeration's δ (sums of at most ~1e5 products in [0, 1]:
#: truth 0 is computed as 1.1e-16 at ε = ε0); the certificate has no tolerance of its own.
EXACT_ERROR = 1e-13


def _law(values: tuple[int, ...], k: int, eps0: float) -> dict[tuple[int, ...], float]:
    """Exact law of the histogram of the k-RR reports of ``values``."""
    e = math.exp(eps0)
    keep, other = e / (e + k - 1), 1.0 / (e + k - 1)
    law: dict[tuple[int, ...], float] = {(0,) * k: 1.0}
    for v in values:
        new: dict[tuple[int, ...], float] = {}
        for hist, mass in law.items():
            for y in range(k):
                key = tuple(c + (i == y) for i, c in enumerate(hist))
                new[key] = new.get(key, 0.0) + mass * (keep if y == v else other)
        law = new
    return law


def _round_pairs(n: int, k: int, eps0: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(P, Q)`` on a common support for every multiset of the others' values (target 0
    against 1)."""
    out = []
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        law_x, law_y = _law((*others, 0), k, eps0), _law((*others, 1), k, eps0)
        keys = sorted(set(law_x) | set(law_y))
        p = np.array([law_x.get(h, 0.0) for h in keys])
        out.append((p, np.array([law_y.get(h, 0.0) for h in keys])))
    return out


def _exact_delta(rounds: list[tuple[np.ndarray, np.ndarray]], eps: np.ndarray) -> np.ndarray:
    """Exact ``max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P))`` of the product of the rounds' pairs."""
    p, q = np.ones(1), np.ones(1)
    for a, b in rounds:
        p, q = np.outer(p, a).ravel(), np.outer(q, b).ravel()
    t = np.exp(eps)[:, None]
    forward = np.maximum(p[None, :] - t * q[None, :], 0.0).sum(axis=1)
    backward = np.maximum(q[None, :] - t * p[None, :], 0.0).sum(axis=1)
    out: np.ndarray = np.maximum(forward, backward)
    return out


def _certificate(eps0: float, n: int, rounds: int) -> Callable[[float], float]:
    curve = pp.ProfilePairBound().curve(ComposedShuffleParams(eps0=eps0, n=n, rounds=rounds))
    return curve.delta


def _one_round_of_the_pair(eps0: float, n: int) -> Callable[[float], float]:
    """δ(ε) of the (fine) pair itself, uncomposed (one round of the profile pair answers
    with the certificate, so this is how the pair's own single round is checked)."""
    pld = pp.profile_pair_pld(eps0, n)
    assert pld is not None
    return pld.delta


def _violations(
    eps0: float,
    n: int,
    k: int,
    rounds: int,
    cases: Iterator[tuple[int, ...]] | None = None,
    certificate: Callable[[float], float] | None = None,
) -> tuple[int, list[tuple[float, float, float]]]:
    """(comparisons, [(ε, exact, certificate) where exact > certificate]) over every
    choice of the others' dataset per round (``cases``: indices into the datasets);
    ``certificate`` defaults to the profile pair's answer for ``rounds``."""
    pairs = _round_pairs(n, k, eps0)
    if certificate is None:
        certificate = _certificate(eps0, n, rounds)
    cert = np.array([certificate(float(e)) for e in EPS])
    chosen = cases if cases is not None else itertools.product(range(len(pairs)), repeat=rounds)
    count, bad = 0, []
    for combo in chosen:
        exact = _exact_delta([pairs[i] for i in combo], EPS)
        count += EPS.size
        over = exact > cert + EXACT_ERROR
        rows = zip(EPS[over], exact[over], cert[over], strict=True)
        bad += [(float(e), float(x), float(c)) for e, x, c in rows]
    return count, bad


GRID = [
    # 8 datasets cubed at n = 8, R = 3 (up to 11 s a case): slow tier
    pytest.param(eps0, n, k, rounds, marks=[pytest.mark.slow] if (n, rounds) == (8, 3) else [])
    for eps0 in (0.5, 1.0, 2.0, 4.0)
    for n in (1, 2, 4, 8)
    for k in (2, 3)
    for rounds in (1, 2, 3)
    if not (k == 3 and n == 8)  # 3-RR at n = 8: 36 datasets, 45 histograms (slow tier)
]


@pytest.mark.parametrize(("eps0", "n", "k", "rounds"), GRID)
def test_exact_composition_of_shuffled_krr_is_below_the_certificate(
    eps0: float, n: int, k: int, rounds: int
) -> None:
    cases = None
    if k == 3 and rounds == 3:  # every dataset the same in all rounds, plus mixed pairs
        size = len(_round_pairs(n, k, eps0))
        cases = iter([(i, i, i) for i in range(size)] + [(0, size - 1, 0), (size - 1, 0, 0)])
    count, bad = _violations(eps0, n, k, rounds, cases)
    assert count > 0
    assert not bad, bad[:3]


@pytest.mark.slow
@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_exact_composition_of_3rr_at_n8_is_below_the_certificate(eps0: float, rounds: int) -> None:
    size = len(_round_pairs(8, 3, eps0))
    cases: Iterator[tuple[int, ...]] = itertools.product(range(size), repeat=rounds)
    if rounds == 3:
        cases = iter([(i, i, i) for i in range(size)])
    assert not _violations(eps0, 8, 3, rounds, cases)[1]


@pytest.fixture
def lowered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The certificate's profile scaled down by 1 % before the pair is built."""
    original = pp.certified_profile

    def scaled(eps0: float, n: int, fine: bool = True) -> tuple[tuple[int, ...], tuple[float, ...]]:
        idx, deltas = original(eps0, n, fine)
        return idx, tuple(0.99 * d for d in deltas)

    monkeypatch.setattr(pp, "certified_profile", scaled)
    pp._composed.cache_clear()  # compositions kept from other tests are of the true profile
    pp._pair_items.cache_clear()  # (and the pairs, s23-comp)
    yield
    pp._composed.cache_clear()  # ... and those made here of the lowered one
    pp._pair_items.cache_clear()


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_a_profile_lowered_by_one_percent_is_caught_by_the_enumeration(
    lowered: None, rounds: int
) -> None:
    # n = 1: the certificate is one binary RR report's profile, which is tight (one round:
    # the pair itself, since the profile pair answers one round with the certificate)
    one = _one_round_of_the_pair(1.0, 1) if rounds == 1 else None
    _, bad = _violations(1.0, 1, 2, rounds, certificate=one)
    assert bad


@pytest.mark.parametrize(("eps0", "n"), [(0.5, 1), (1.0, 2), (2.0, 4), (4.0, 8)])
def test_one_round_of_the_pair_is_above_the_exact_profile(eps0: float, n: int) -> None:
    _, bad = _violations(eps0, n, 2, 1, certificate=_one_round_of_the_pair(eps0, n))
    assert not bad, bad[:3]


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 10_000), (4.0, 10_000), (0.5, 1000)])
def test_one_round_is_the_single_round_certificate_up_to_the_grid(eps0: float, n: int) -> None:
    assert not _single_round_gaps(eps0, n)
    idx, deltas = pp.certified_profile(eps0, n)
    one = _one_round_of_the_pair(eps0, n)
    for i, d in zip(idx, deltas, strict=True):  # at the grid: at most δ̄ raised by _RAISE
        # (plus the PLD's absolute rounding, ~1e-30, that matters only far below FLOOR)
        assert one(i * pp.PROFILE_STEP) <= d * (1.0 + 2.0 * pp._RAISE) + 1e-25
    pld = pp.profile_pair_pld(eps0, n)
    assert pld is not None
    target = shuffle_curve(eps0=eps0, n=n).epsilon(1e-6)
    # the pair alone, one round: within 3-4.5 % (measured) of the certificate on its 22
    # points; one round of the profile pair answers with the certificate itself
    assert target <= pld.epsilon(1e-6) <= target * 1.06
    params = ComposedShuffleParams(eps0=eps0, n=n, rounds=1)
    single = pp.PROFILE_PAIR_REGISTRY.statement("profile_pair", params, delta=1e-6)
    assert single.epsilon == target


def _envelope(points: list[tuple[float, float]], t: float) -> float:
    """The lower convex envelope (in t) of ``points`` at ``t``, by brute force over every
    chord: an upper bound on any convex profile that is below every point."""
    best = min((d for x, d in points if x == t), default=math.inf)
    for (xa, da), (xb, db) in itertools.combinations(sorted(points), 2):
        if xa < t < xb:
            best = min(best, da + (db - da) * (t - xa) / (xb - xa))
    return best


def _single_round_gaps(eps0: float, n: int) -> list[tuple[float, float, float]]:
    """Points (the grid and 12 midpoints) where one round of the pair is below the least
    upper bound on the true profile that the certificate gives there: its value, or the
    envelope of its values at all those points and of the profile's own grid values, their
    mirror images ``(1/t, 1 − (1 − δ)/t)`` and ``(0, 1)`` (the true profile is convex in t
    and symmetric). The certificate is summed to the tail level the profile used."""
    idx, _ = pp.certified_profile(eps0, n)
    with _summed_like_epsilon_at(pg._LOG_LEVEL):
        single = shuffle_curve(eps0=eps0, n=n)
        one = _one_round_of_the_pair(eps0, n)
        mids = [0.5 * (a + b) * pp.PROFILE_STEP for a, b in itertools.pairwise(idx)]
        eps = [i * pp.PROFILE_STEP for i in idx] + mids[:: max(1, len(mids) // 12)]
        values = [(math.exp(e), single.delta(e)) for e in eps]
    # the profile's own values at the grid (the same certificate refined per (ε0, n), at
    # some points below the one-point values): also upper bounds on the true profile
    chosen = pg._placement(eps0, n)[1]
    grid = pg._certified_values(eps0, n, chosen)
    known = values + [(math.exp(i * pp.PROFILE_STEP), d) for i, d in zip(chosen, grid, strict=True)]
    points = [*known, (0.0, 1.0)] + [(1.0 / t, 1.0 - (1.0 - d) / t) for t, d in known if t > 1]
    gaps = []
    for e, (t, _) in zip(eps, values, strict=True):
        bound = _envelope(points, t) * (1.0 + 1e-12)  # the envelope's own rounding
        if one(e) < bound:
            gaps.append((e, one(e), bound))
    return gaps


def test_a_profile_lowered_by_one_percent_falls_below_the_certificate(lowered: None) -> None:
    assert _single_round_gaps(1.0, 10_000)


def test_composed_shuffle_reports_the_smaller_and_names_both() -> None:
    r = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=10)
    assert r.source == "profile_pair"
    assert r.is_certificate
    note = r.notes[-1]
    assert "feldman2021" in note
    assert "profile_pair" in note
    forced = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=10, pair="feldman2021")
    assert forced.source == "feldman2021"
    assert forced.epsilon > r.epsilon
    alone = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=10, pair="profile_pair")
    assert alone.source == "profile_pair"
    assert alone.epsilon == r.epsilon
    krr = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=10, k=2, pair="profile_pair")
    assert not krr.conditions_met
    assert "no k" in " ".join(krr.notes)
    sampled = composed_shuffle(eps0=1.0, n=1000, delta=1e-6, rounds=2, sample_rate=0.5)
    assert sampled.source == "feldman2021"
    assert "profile_pair" not in " ".join(sampled.notes)


def test_the_pair_is_a_probability_pair_and_symmetric() -> None:
    masses = pp._pair_masses(4.0, 10_000)
    assert masses is not None
    total = sum(masses.values())
    assert 1.0 <= total <= 1.0 + 1e-12
    for j, mass in masses.items():
        if j > 0:  # the mirror outcome: P(−j) = Q(j) = P(j) e^{−j h}
            assert masses[-j] == pytest.approx(mass * math.exp(-j * pp.PROFILE_STEP), rel=1e-12)


def test_many_rounds_compose_fmt21_only_when_the_profile_pair_says_nothing() -> None:
    """Above FMT21_ROUNDS_MAX rounds ``best`` skips FMT21's slow composition unless the
    profile pair is capped at R·ε0 or does not apply; the answer is still the smaller here."""
    from dataclasses import replace

    from crowdhide.accounting.shuffle.composition import FMT21_ROUNDS_MAX

    rounds = FMT21_ROUNDS_MAX + 1
    best = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=rounds)
    assert best.source == "profile_pair"
    assert "feldman2021 not composed" in best.notes[-1]
    fmt21 = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=rounds, pair="feldman2021")
    assert best.epsilon < fmt21.epsilon
    below = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=FMT21_ROUNDS_MAX)
    assert "the smaller of feldman2021" in below.notes[-1]
    params = ComposedShuffleParams(eps0=2.0, n=1000, rounds=rounds)
    assert pp.capped(replace(best, epsilon=2.0 * rounds), params)
    assert not pp.capped(replace(best, epsilon=1.9 * rounds), params)
    assert pp.capped(replace(best, conditions_met=False), params)


def test_many_rounds_past_dp_accountings_overflow_get_a_finite_epsilon() -> None:
    """ε0 = 4, n = 1e3, 10^4 rounds: dp_accounting's ε search overflows (composed losses in
    the hundreds) and used to leave the cap R·ε0 = 4e4; the safe-side search on δ(ε) finds
    an ε that its own δ certifies (FMT21 gives 1304 there)."""
    params = ComposedShuffleParams(eps0=4.0, n=1000, rounds=10_000)
    curve = pp.ProfilePairBound().curve(params)
    eps = curve.epsilon(1e-6)
    assert 100.0 < eps < 1000.0
    assert curve.delta(eps) <= 1e-6
    assert curve.delta(0.99 * eps) > 1e-6  # the search closed in on the root


def test_the_grid_is_a_lattice_the_composition_keeps() -> None:
    """The grid's points are multiples of one lattice step, so the PLD composes on it (or
    a multiple) without rounding any loss; the coarse grid is part of the fine one."""
    coarse, every, top = pg._placement(4.0, 10_000)
    step = pg._lattice(4.0, 10_000)[0]
    assert step > 1
    assert all(i % step == 0 for i in (*every, top))
    assert set(coarse) <= set(every)
    assert len(coarse) <= pp.COARSE_EVALUATIONS
    assert len(every) <= pp.COARSE_EVALUATIONS + pp.FINE_LEVELS
    masses = pp._pair_masses(4.0, 10_000, fine=False)
    assert masses is not None
    lattice = math.gcd(*masses)
    assert lattice % step == 0
    assert pp._coarse_factor(masses, 100) == lattice


def test_a_composed_shuffle_curve_offers_the_profile_pair_and_names_the_winner() -> None:
    curve = shuffle_curve(eps0=1.0, n=10_000, rounds=10)
    assert curve.members == ("clone_pair_pld", "profile_pair", "rounds_apart", "advanced_rounds")
    statement = curve.statement(1e-6)
    assert statement.source == "best:profile_pair"
    alone = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=10, pair="profile_pair")
    assert statement.epsilon == alone.epsilon
    clone = composed_shuffle(eps0=1.0, n=10_000, delta=1e-6, rounds=10, pair="feldman2021")
    assert statement.epsilon < clone.epsilon
    assert curve.delta(0.2) <= min(alone.delta or 1.0, 1.0)  # the least of both, pointwise
    # where the profile pair does not apply, the clone pair (and the rounds one at a time,
    # n users every round and substitute, basic and advanced: profile-pair.md §19, §20c)
    krr = shuffle_curve(eps0=1.0, n=10_000, rounds=10, k=2)
    assert krr.members == ("clone_pair_pld", "rounds_apart", "advanced_rounds")
    sampled = shuffle_curve(eps0=1.0, n=10_000, rounds=10, sample_rate=0.5)
    assert sampled.members == ("clone_pair_pld",)


@pytest.mark.parametrize(
    ("eps0", "n"), [(0.5, 1000), (1.0, 10**4), (4.0, 10**6), (8.0, 1000), (40.0, 100)]
)
def test_the_batched_proxy_is_the_one_point_proxy(eps0: float, n: int) -> None:
    """The placement's proxy at every candidate at once gives the one-point floats (so the
    grid, and every ε from it, is what the one-point proxy places), past ε0 and past the
    clone system's reach (ε >= 2 atanh κ) included."""
    idx = np.unique(np.round(np.linspace(0, eps0 / pp.PROFILE_STEP + 5, 97)).astype(np.int64))
    one_point = [pg._proxy_log_delta(eps0, n, int(i)) for i in idx]
    assert np.array_equal(pg._proxy_log_deltas(eps0, n, idx), np.array(one_point))


def test_a_composition_is_kept_across_deltas_and_answers_as_a_fresh_one() -> None:
    # the composed PLD does not depend on δ: the second δ of one (ε0, n, rounds) reuses it
    # and answers what a cold composition answers; another round count is its own entry
    params = ComposedShuffleParams(eps0=1.0, n=10_000, rounds=20)
    bound = pp.ProfilePairBound()
    pp._composed.cache_clear()
    first = bound.curve(params).epsilon(1e-6)
    kept = pp._composed.cache_info()
    again = bound.curve(params).epsilon(1e-8)
    assert pp._composed.cache_info().hits == kept.hits + 1
    pp._composed.cache_clear()
    assert bound.curve(params).epsilon(1e-8) == again
    assert bound.curve(params).epsilon(1e-6) == first
    assert bound.curve(replace(params, rounds=21)).epsilon(1e-6) > first
    assert pp._composed.cache_info().currsize == 2


def test_pair_masses_are_cached_as_a_fresh_dict_of_the_same_floats() -> None:
    # s23-comp: the hull is built once per (ε0, n, fine); each caller gets its own dict
    pp._pair_items.cache_clear()
    first = pp._pair_masses(2.0, 10_000, fine=False)
    assert first is not None
    first[0] = 0.0  # a caller changing its dict does not change the cache
    again = pp._pair_masses(2.0, 10_000, fine=False)
    assert pp._pair_items.cache_info().hits == 1
    assert again is not None
    assert again[0] > 0.0
    fresh = pp._pair_items.__wrapped__(2.0, 10_000, False)
    assert fresh is not None
    assert list(again.items()) == list(fresh)
