"""Real sums: randomized rounding, unary encoding, exact privacy by enumeration, estimators."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting import PrivacyStatement, advanced_composition
from crowdhide.protocols import _accountant
from crowdhide.protocols.realsum import (
    _per_bit_budget,
    randomized_rounding,
    run_real_sum,
    run_single_message_sum,
    simulate_real_sum,
    simulate_single_message_sum,
    unary_encode,
)
from tests.oracles.protocols import bitsum_worst_delta, realsum_worst_delta


def test_randomized_rounding_is_unbiased_and_exact_at_grid_points() -> None:
    u = np.array([0.0, 0.3, 0.37, 1.0])
    reps = 20_000
    rounded = randomized_rounding(np.tile(u, reps), levels=10, rng=1).reshape(reps, 4)
    assert rounded[:, 0].max() == 0
    assert (rounded[:, 1] == 3).all()  # 0.3 · 10 must not become ⌊2.999…⌋
    assert (rounded[:, 3] == 10).all()
    assert abs(rounded[:, 2].mean() - 3.7) < 5 * math.sqrt(0.21 / reps)


def test_unary_encoding_sums_to_the_level() -> None:
    levels = np.array([0, 1, 4])
    enc = unary_encode(levels, r=4)
    np.testing.assert_array_equal(enc.sum(axis=1), levels)


def test_per_bit_budget_composes_back_to_the_target() -> None:
    for r in (1, 2, 8, 64):
        budget, advanced = _per_bit_budget(1.0, 1e-6, r)
        if advanced:
            total = advanced_composition(
                epsilon=budget.epsilon, delta=budget.delta, count=r, delta_slack=5e-7
            )
        else:
            total = PrivacyStatement(epsilon=r * budget.epsilon, delta=r * budget.delta)
        assert total.epsilon <= 1.0 + 1e-9
        assert total.delta <= 1e-6 * (1 + 1e-9)


@pytest.mark.parametrize(("n", "r", "lam"), [(3, 2, 1.2), (3, 3, 2.0), (4, 2, 2.5)])
def test_composition_certificate_bounds_the_exact_real_sum(n: int, r: int, lam: float) -> None:
    # Per-bit exact (ε_b, δ_b) composed r times (basic) must bound the exact protocol, which
    # is enumerated over every target pair and every multiset of the others' levels.
    delta_b = 0.02
    lo, hi = 0.0, 10.0
    for _ in range(40):  # exact per-bit ε at δ_b
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if bitsum_worst_delta(n, lam, mid) <= delta_b else (mid, hi)
    per_bit = hi
    assert realsum_worst_delta(n, r, lam, r * per_bit) <= r * delta_b + 1e-12
    # …and composition is really needed: the per-bit guarantee alone does not hold.
    assert realsum_worst_delta(n, r, lam, per_bit) > delta_b


def test_multi_message_estimator_is_unbiased() -> None:
    rng = np.random.default_rng(2)
    u = rng.beta(2, 5, size=400)
    reps = 300
    results = np.array([simulate_real_sum(u, r=4, lam=60.0, rng=rng)[:2] for _ in range(reps)])
    sd = results[:, 1].mean()
    assert abs(results[:, 0].mean() - u.sum()) < 5 * sd / math.sqrt(reps)
    assert results[:, 0].std(ddof=1) == pytest.approx(sd, rel=0.2)


def test_single_message_estimator_is_unbiased() -> None:
    rng = np.random.default_rng(3)
    u = rng.random(500)
    reps = 300
    results = np.array(
        [simulate_single_message_sum(u, levels=8, eps0=2.0, rng=rng)[:2] for _ in range(reps)]
    )
    sd = results[:, 1].mean()
    assert abs(results[:, 0].mean() - u.sum()) < 5 * sd / math.sqrt(reps)
    assert results[:, 0].std(ddof=1) == pytest.approx(sd, rel=0.2)


def test_paper_calibrated_real_sum_runs_end_to_end() -> None:
    x = np.random.default_rng(4).uniform(20, 60, size=30_000)
    run = run_real_sum(
        x, lower=0, upper=100, epsilon=1.0, delta=1e-6, calibration="paper", messages=1, rng=5
    )
    assert run.certificate.valid
    assert run.messages == 30_000
    assert abs(run.error) < 6 * run.std_error
    assert run.parameters["messages_per_user"] == 1


@pytest.mark.slow
def test_exact_real_sum_is_certified() -> None:
    x = np.random.default_rng(6).random(20_000)
    run = run_real_sum(x, lower=0, upper=1, epsilon=1.0, delta=1e-6, messages=2, rng=7)
    assert run.certificate.valid
    assert run.messages == 40_000
    assert abs(run.error) < 6 * run.std_error


@pytest.mark.slow
def test_exact_real_sum_chooses_messages() -> None:
    x = np.random.default_rng(6).random(20_000)
    run = run_real_sum(x, lower=0, upper=1, epsilon=1.0, delta=1e-6, rng=7)
    assert run.certificate.valid
    assert run.parameters["messages_per_user"] in (1, 2, 4, 8, 16, 32, 64)


@pytest.mark.slow
def test_exact_single_message_sum_is_certified() -> None:
    x = np.random.default_rng(8).random(20_000)
    run = run_single_message_sum(x, lower=0, upper=1, epsilon=1.0, delta=1e-6, levels=8, rng=9)
    assert run.certificate.valid
    assert run.messages == 20_000
    assert abs(run.error) < 6 * run.std_error


# ---- invalid inputs -----------------------------------------------------------------------


def test_values_outside_bounds_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"values must lie in the declared bounds \[0, 1\]"):
        run_real_sum([0.5, 1.5], lower=0, upper=1, epsilon=1.0, delta=1e-6)


def test_inverted_bounds_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"upper must be > lower"):
        run_single_message_sum([0.5, 0.5], lower=1, upper=0, epsilon=1.0, delta=1e-6)


def test_rounding_outside_unit_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"values must lie in \[0, 1\]"):
        randomized_rounding([1.5], levels=4)


def test_zero_messages_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"messages must be >= 1, got 0"):
        run_real_sum([0.5, 0.5], lower=0, upper=1, epsilon=1.0, delta=1e-6, messages=0)


def test_non_numeric_values_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"values must be a numeric array"):
        run_real_sum(["a", "b"], lower=0, upper=1, epsilon=1.0, delta=1e-6)


def _single_message_hist_law(
    level_laws: list[dict[int, float]], m: int, eps0: float
) -> dict[tuple[int, ...], float]:
    """Exact law of the report histogram when user i's rounded level has law level_laws[i]."""
    import itertools

    k = m + 1
    e = math.exp(eps0)
    p, q = e / (e + k - 1), 1 / (e + k - 1)
    law: dict[tuple[int, ...], float] = {}
    for reports in itertools.product(range(k), repeat=len(level_laws)):
        prob = 1.0
        for y, levels in zip(reports, level_laws, strict=True):
            prob *= sum(w * (p if y == v else q) for v, w in levels.items())
        h = tuple(np.bincount(reports, minlength=k).tolist())
        law[h] = law.get(h, 0.0) + prob
    return law


def _rounding_law(x: float, m: int) -> dict[int, float]:
    lo = math.floor(x * m)
    frac = x * m - lo
    return {lo: 1 - frac, min(lo + 1, m): frac} if frac > 0 else {lo: 1.0}


@pytest.mark.parametrize(("target", "neighbour"), [(0.0, 1.0), (0.3, 0.9), (0.5, 0.0)])
def test_single_message_privacy_by_enumeration(target: float, neighbour: float) -> None:
    # n = 3 users, m = 2 levels (3-RR), rounding included: every multiset of the others'
    # values on a grid, both neighbours enumerated exactly; the certificate must cover them.
    from crowdhide.accounting import DiscretePairCurve

    n, m, eps0 = 3, 2, 1.5
    grid = (0.0, 0.25, 0.5, 1.0)
    for eps in (0.0, 0.3, 0.8):
        certificate, _ = _accountant.krr_delta_certificate(eps0=eps0, n=n, k=m + 1, epsilon=eps)
        worst = 0.0
        for others in ((a, b) for i, a in enumerate(grid) for b in grid[i:]):
            laws = [_rounding_law(v, m) for v in others]
            p = _single_message_hist_law([_rounding_law(target, m), *laws], m, eps0)
            q = _single_message_hist_law([_rounding_law(neighbour, m), *laws], m, eps0)
            keys = sorted(set(p) | set(q))
            curve = DiscretePairCurve.from_probabilities(
                [p.get(h, 0.0) for h in keys], [q.get(h, 0.0) for h in keys]
            )
            worst = max(worst, curve.delta(eps))
        assert worst <= certificate + 1e-12
